"""mined_trajectories: the task attempts of a day's sessions, their signals, tier and workflow family.

One row per attempt: a real user instruction and the agent's work until the next one.
The audits run with the asset as Dagster asset checks; their thresholds are run config.

    trajectory-pipeline materialize --select mined_trajectories --partition 2026-11-20
"""

from collections import Counter
from collections.abc import Iterator
from typing import Any

import dagster as dg
import pandas as pd
import pyarrow.dataset as pads
from pydantic import Field

from assets import OWNERS
from assets.metadata import counter_md, frame_md, single_or_dict
from assets.partitions import daily_partitions
from assets.workers import resolve_workers, workers_field
from resources.core_config import derive, to_core
from trajectory_pipeline.day_stages import DayEvents, mine_days
from trajectory_pipeline.mining.attempts import MiningConfig
from trajectory_pipeline.parquet_io import SpooledParquet, spool_dir

KEPT_TIERS = ("gold", "silver")
AUDITED_COLUMNS = [
    "attempt_id",
    "tier",
    "guard_denials",
    "guard_recoveries",
    "repeated_inspections_after_guard",
]
PREVIEW_COLUMNS = ["source", "repo", "intent", "tier", "quality", "shape", "tool_calls", "instruction"]
# What the per-day metadata reads of every attempt (the rest stays in the worker that mined it).
SUMMARY_COLUMNS = ["source", "family_id", "repo", "intent", "shape", "tier_reasons"]


_MiningKnobs: Any = derive("MiningKnobs", MiningConfig)


class MinedTrajectoriesConfig(_MiningKnobs):
    """Tiering thresholds, signal weights and the audits' minimums."""

    min_kept_attempts: int = Field(
        default=1, ge=0, description="Audit: gold + silver attempts needed per run (days with sessions)."
    )
    workers: int = workers_field()
    min_guard_recoveries: int = Field(
        default=1,
        ge=0,
        description="Audit (warning): recoveries expected when the run holds guard denials.",
    )


@dg.asset(
    partitions_def=daily_partitions,
    backfill_policy=dg.BackfillPolicy.single_run(),
    group_name="ingest",
    compute_kind="pandas",
    owners=OWNERS,
    tags={"stage": "mining"},
    check_specs=[
        dg.AssetCheckSpec("kept_attempts", asset="mined_trajectories", description="Enough gold + silver."),
        dg.AssetCheckSpec(
            "guard_recoveries", asset="mined_trajectories", description="Guard denials were recovered from."
        ),
        dg.AssetCheckSpec(
            "no_repeated_inspection_after_guard",
            asset="mined_trajectories",
            blocking=True,
            description="No kept attempt repeats an inspection after a guard denial.",
        ),
    ],
)
def mined_trajectories(
    context: dg.AssetExecutionContext,
    config: MinedTrajectoriesConfig,
    raw_sessions: dict[str, pads.Dataset],
) -> Iterator[dg.Output[Any] | dg.AssetCheckResult]:
    """One row per task attempt, with its signals, quality tier, score and workflow family."""
    mining = to_core(MiningConfig, config)
    days = [DayEvents.of(key, raw_sessions[key]) for key in context.partition_keys]
    # Each day goes to a private spool file as it comes, and the audits keep only the columns
    # they read: a long range never sits in memory whole.
    mined: dict[str, SpooledParquet] = {}
    audited = []
    workers = resolve_workers(config.workers)
    with spool_dir("trajectory-mined-") as spool:
        for day in mine_days(days, mining, spool, workers, columns=AUDITED_COLUMNS + SUMMARY_COLUMNS):
            mined[day.key] = SpooledParquet(day.path, day.rows)
            audited.append(day.columns[AUDITED_COLUMNS])
            context.add_asset_metadata(mining_metadata(day.columns, day.head), partition_key=day.key)
    yield dg.Output(single_or_dict(mined, context.partition_keys))
    yield from audits(pd.concat(audited, ignore_index=True), config)


def audits(attempts: pd.DataFrame, config: MinedTrajectoriesConfig) -> Iterator[dg.AssetCheckResult]:
    kept = attempts[attempts["tier"].isin(KEPT_TIERS)]
    # A day without sessions has nothing to audit; it should not look like a failure.
    enough = attempts.empty or len(kept) >= config.min_kept_attempts
    yield dg.AssetCheckResult(
        check_name="kept_attempts",
        passed=bool(enough),
        metadata={"kept": len(kept), "attempts": len(attempts), "minimum": config.min_kept_attempts},
    )
    recoveries = int(attempts["guard_recoveries"].sum())
    denials = int(attempts["guard_denials"].sum())
    yield dg.AssetCheckResult(
        check_name="guard_recoveries",
        # Without a denial there is nothing to recover from.
        passed=denials == 0 or recoveries >= config.min_guard_recoveries,
        severity=dg.AssetCheckSeverity.WARN,
        metadata={
            "guard_denials": denials,
            "guard_recoveries": recoveries,
            "minimum": config.min_guard_recoveries,
        },
    )
    repeated = kept[kept["repeated_inspections_after_guard"] > 0]
    yield dg.AssetCheckResult(
        check_name="no_repeated_inspection_after_guard",
        passed=repeated.empty,
        metadata={
            "attempts": len(repeated),
            "attempt_ids": dg.MetadataValue.json(repeated["attempt_id"].tolist()),
        },
    )


def mining_metadata(attempts: pd.DataFrame, head: pd.DataFrame) -> dict[str, Any]:
    """From every attempt's SUMMARY_COLUMNS, and the first attempts whole for the preview."""
    families = attempts["family_id"].value_counts()
    top = attempts.drop_duplicates("family_id").set_index("family_id").loc[families.index[:10]]
    top_families = top[["repo", "intent", "shape"]].assign(attempts=families.iloc[:10].to_numpy())
    reasons = Counter(reason for row in attempts["tier_reasons"] for reason in row)
    return {
        "attempts": len(attempts),
        "kept_attempts": int(attempts["tier"].isin(KEPT_TIERS).sum()),
        "attempts_by_tier": counter_md(Counter(attempts["tier"]), ("tier", "attempts")),
        "attempts_by_source_and_tier": counter_md(
            Counter(zip(attempts["source"], attempts["tier"], strict=True)), ("source", "tier", "attempts")
        ),
        "tier_reasons": counter_md(reasons, ("reason", "attempts")),
        "families": int(families.size),
        "repeated_families": int((families > 1).sum()),
        "top_families": frame_md(top_families.reset_index()),
        "preview": frame_md(head[PREVIEW_COLUMNS]),
    }
