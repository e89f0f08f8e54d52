"""mined_trajectories: the task attempts of a day's sessions, their signals, tier and workflow family.

One row per attempt: a real user instruction and the agent's work until the next one.
The audits run with the asset as Dagster asset checks; their thresholds are run config.

    trajectory-pipeline materialize --select mined_trajectories --partition 2026-11-20
"""

from collections import Counter
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import dagster as dg
import pandas as pd
from pydantic import Field

from assets import OWNERS
from assets.day_checks import Verdict, day_check, report
from assets.day_log import DayLog
from assets.metadata import counter_md, frame_md, single_or_dict
from assets.partitions import daily_backfill_policy, daily_partitions
from assets.workers import resolve_workers, workers_field
from resources.core_config import derive, to_core
from resources.parquet_io_manager import spool_root
from resources.privacy import private_metadata
from trajectory_pipeline.day_stages import DayEvents, mine_days
from trajectory_pipeline.mining.attempts import MiningConfig
from trajectory_pipeline.mining.landing import OUTCOMES
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
SUMMARY_COLUMNS = ["source", "family_id", "repo", "intent", "shape", "tier_reasons", "landed_commit"]


_MiningKnobs: Any = derive("MiningKnobs", MiningConfig)


class MinedTrajectoriesConfig(_MiningKnobs):
    """Tiering thresholds, signal weights and the audits' minimums."""

    min_kept_attempts: int = Field(
        default=1, ge=0, description="Audit: gold + silver attempts needed per day (days with sessions)."
    )
    workers: int = workers_field()
    min_guard_recoveries: int = Field(
        default=1,
        ge=0,
        description="Audit (warning): recoveries expected on a day with guard denials.",
    )


NAME = "mined_trajectories"


@dg.multi_asset(
    outs={
        NAME: dg.AssetOut(
            description="One row per task attempt, with its signals, quality tier, score and workflow "
            "family.",
            owners=OWNERS,
            tags={"stage": "mining"},
            io_manager_key="io_manager",
        )
    },
    partitions_def=daily_partitions,
    backfill_policy=daily_backfill_policy(),
    group_name="ingest",
    compute_kind="pandas",
    # Each day gets its own check results (assets/day_checks.py); the check outputs stay unset.
    can_subset=True,
    check_specs=[
        day_check("kept_attempts", NAME, "Enough gold + silver attempts on a day with sessions."),
        # Over the run, not per day: whether the data holds recoveries to learn from at all.
        dg.AssetCheckSpec(
            "guard_recoveries",
            asset=NAME,
            description="The run's guard denials were recovered from (a warning).",
        ),
        day_check(
            "no_repeated_inspection_after_guard",
            NAME,
            "No kept attempt repeats an inspection after a guard denial; a day that fails is not "
            "rendered (rendered_splits).",
        ),
    ],
)
def mined_trajectories(
    context: dg.AssetExecutionContext,
    config: MinedTrajectoriesConfig,
    raw_sessions: dict[str, Path],
) -> Iterator[dg.Output[Any] | dg.AssetCheckEvaluation | dg.AssetCheckResult]:
    """One row per task attempt, with its signals, quality tier, score and workflow family."""
    mining = to_core(MiningConfig, config)
    days = [DayEvents.of(key, raw_sessions[key]) for key in context.partition_keys]
    # Each day goes to a private spool file and is audited as it comes; only the verdicts and guard
    # counts are kept: a range's attempts are never all held, not even their audited columns (70 KiB
    # a busy day).
    mined: dict[str, SpooledParquet] = {}
    verdicts: dict[str, list[Verdict]] = {}
    guards: dict[str, tuple[int, int]] = {}
    workers = resolve_workers(config.workers)
    log = DayLog(context, len(days))
    with spool_dir(spool_root(context), "mined-") as spool:
        for day in mine_days(days, mining, spool, workers, columns=AUDITED_COLUMNS + SUMMARY_COLUMNS):
            mined[day.key] = SpooledParquet(day.path, day.rows)
            for check, found in audits([(day.key, day.sessions, day.columns)], config).items():
                verdicts.setdefault(check, []).extend(found)
            guards[day.key] = guard_counts(day.columns)
            log(describe_day(day.key, day.sessions, day.columns))
            context.add_asset_metadata(
                private_metadata(mining_metadata(day.columns, day.head, day.landings)),
                asset_key=NAME,
                partition_key=day.key,
            )
    yield dg.Output(single_or_dict(mined, context.partition_keys), output_name=NAME)
    for check, found in verdicts.items():
        yield from report(context, NAME, check, found)
    if dg.AssetCheckKey(dg.AssetKey(NAME), "guard_recoveries") in context.selected_asset_check_keys:
        yield guard_recoveries(guards, config)


def describe_day(day: str, sessions: int, attempts: pd.DataFrame) -> str:
    """The day's one log line, even for a day without sessions."""
    kept = int(attempts["tier"].isin(KEPT_TIERS).sum())
    return f"{day}: {len(attempts)} attempts from {sessions} sessions, {kept} kept (gold + silver)"


def audits(
    days: list[tuple[str, int, pd.DataFrame]], config: MinedTrajectoriesConfig
) -> dict[str, list[Verdict]]:
    """Each check's verdict on each (day, sessions, attempts)."""
    verdicts: dict[str, list[Verdict]] = {"kept_attempts": [], "no_repeated_inspection_after_guard": []}
    for day, sessions, attempts in days:
        kept = attempts[attempts["tier"].isin(KEPT_TIERS)]
        # A day without sessions has nothing to audit; a day with sessions but no kept attempt
        # (even none at all) is what this check is for.
        enough = sessions == 0 or len(kept) >= config.min_kept_attempts
        verdicts["kept_attempts"].append(
            Verdict(
                day,
                bool(enough),
                {
                    "kept": len(kept),
                    "attempts": len(attempts),
                    "sessions": sessions,
                    "minimum": config.min_kept_attempts,
                },
                None
                if enough
                else f"{day}: {len(kept)} gold + silver attempts of {len(attempts)} from {sessions} "
                f"sessions, fewer than {config.min_kept_attempts}",
            )
        )
        repeated = kept[kept["repeated_inspections_after_guard"] > 0]
        ids = repeated["attempt_id"].tolist()
        verdicts["no_repeated_inspection_after_guard"].append(
            Verdict(
                day,
                repeated.empty,
                {"attempts": len(repeated), "attempt_ids": dg.MetadataValue.json(ids)},
                None
                if repeated.empty
                else f"{day}: {len(ids)} kept attempts repeat an inspection after a guard denial "
                f"(e.g. {', '.join(ids[:3])})",
            )
        )
    return verdicts


def guard_counts(attempts: pd.DataFrame) -> tuple[int, int]:
    """A day's guard denials and recoveries, all its attempts together."""
    return int(attempts["guard_denials"].sum()), int(attempts["guard_recoveries"].sum())


def guard_recoveries(
    per_day: Mapping[str, tuple[int, int]], config: MinedTrajectoriesConfig
) -> dg.AssetCheckResult:
    """A warning when the run's attempts hold guard denials but fewer recoveries than the minimum.

    Judged over the run, unlike the other checks: it asks whether the data holds recoveries to learn
    from at all, which no single day has to (a day's denials and recoveries, `guard_counts`, are in
    its metadata and in the result's)."""
    denials = sum(d for d, _ in per_day.values())
    recoveries = sum(r for _, r in per_day.values())
    return dg.AssetCheckResult(
        asset_key=NAME,
        check_name="guard_recoveries",
        # Without a denial there is nothing to recover from.
        passed=denials == 0 or recoveries >= config.min_guard_recoveries,
        severity=dg.AssetCheckSeverity.WARN,
        metadata={
            "guard_denials": denials,
            "guard_recoveries": recoveries,
            "minimum": config.min_guard_recoveries,
            "by_day": dg.MetadataValue.json(
                {day: {"denials": d, "recoveries": r} for day, (d, r) in per_day.items()}
            ),
        },
    )


def mining_metadata(
    attempts: pd.DataFrame, head: pd.DataFrame, landings: dict[str, int] | None = None
) -> dict[str, Any]:
    """From every attempt's SUMMARY_COLUMNS, the first attempts whole for the preview, and the git
    check's outcomes (mining/landing.py: landed, no_commit, no_repository, ...)."""
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
        "landed_in_commit": int(attempts["landed_commit"].notna().sum()),
        "git_outcomes": counter_md(
            Counter({o: (landings or {}).get(o, 0) for o in OUTCOMES if (landings or {}).get(o)}),
            ("outcome", "attempts with edits"),
        ),
        "families": int(families.size),
        "repeated_families": int((families > 1).sum()),
        "top_families": frame_md(top_families.reset_index()),
        "preview": frame_md(head[PREVIEW_COLUMNS]),
    }
