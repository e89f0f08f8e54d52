"""decision_points: every assistant tool call of the day's kept attempts, with the history before it.

The target call is in the canonical tool vocabulary; the history is the chat the
agent had just before it, oldest messages dropped first beyond a size budget.

    trajectory-pipeline materialize --select decision_points --partition 2026-11-20
"""

from collections import Counter
from collections.abc import Iterator
from typing import Any

import dagster as dg
import pyarrow.dataset as pads
from pydantic import Field

from assets import OWNERS
from assets.metadata import counter_md, frame_md, single_or_dict
from assets.partitions import daily_partitions
from assets.workers import resolve_workers, workers_field
from resources.core_config import derive, to_core
from trajectory_pipeline.day_stages import DayEvents, DayPoints, cut_days
from trajectory_pipeline.decisions.points import DecisionConfig
from trajectory_pipeline.parquet_io import SpooledParquet, spool_dir

_DecisionKnobs: Any = derive("DecisionKnobs", DecisionConfig)


class DecisionPointsConfig(_DecisionKnobs):
    """Which attempts give decision points, how much history each carries, and the audit minimum."""

    workers: int = workers_field()
    min_decision_points: int = Field(
        default=1, ge=0, description="Audit: decision points needed per run (days with kept attempts)."
    )
    max_incomplete_share: float = Field(
        default=0.05,
        ge=0.0,
        le=1.0,
        description="Audit: largest share of targets missing a required argument (they are set aside).",
    )

    def core(self) -> DecisionConfig:
        return to_core(DecisionConfig, self)


@dg.asset(
    partitions_def=daily_partitions,
    backfill_policy=dg.BackfillPolicy.single_run(),
    group_name="ingest",
    compute_kind="pandas",
    owners=OWNERS,
    tags={"stage": "decisions"},
    check_specs=[
        dg.AssetCheckSpec("enough_decision_points", asset="decision_points"),
        dg.AssetCheckSpec(
            "targets_have_required_arguments",
            asset="decision_points",
            blocking=True,
            description="Few target calls lack a required argument (those are set aside, never trained).",
        ),
    ],
)
def decision_points(
    context: dg.AssetExecutionContext,
    config: DecisionPointsConfig,
    raw_sessions: dict[str, pads.Dataset],
    mined_trajectories: dict[str, pads.Dataset],
) -> Iterator[dg.Output[Any] | dg.AssetCheckResult]:
    """One row per assistant tool call in gold and silver attempts: history, canonical target, labels."""
    core = config.core()
    days = [DayEvents.of(key, raw_sessions[key], mined_trajectories[key]) for key in context.partition_keys]
    # Each day goes to a private spool file as it comes: a long range never sits in memory whole.
    kept: dict[str, SpooledParquet] = {}
    extracted, included_attempts, set_aside = 0, 0, Counter[str]()
    with spool_dir("trajectory-decision-points-") as spool:
        for day in cut_days(days, core, spool, resolve_workers(config.workers)):
            kept[day.key] = SpooledParquet(day.path, day.rows)
            extracted += day.extracted
            included_attempts += day.included_attempts
            set_aside.update(day.set_aside)
            context.add_asset_metadata(decision_metadata(day), partition_key=day.key)
    yield dg.Output(single_or_dict(kept, context.partition_keys))
    total_kept = sum(spooled.row_count for spooled in kept.values())
    yield from audits(total_kept, extracted, set_aside, included_attempts, config)


def audits(
    kept: int,
    extracted: int,
    set_aside: Counter[str],
    kept_attempts: int,
    config: DecisionPointsConfig,
) -> Iterator[dg.AssetCheckResult]:
    yield dg.AssetCheckResult(
        check_name="enough_decision_points",
        # Days without kept attempts have nothing to cut into decision points.
        passed=kept_attempts == 0 or kept >= config.min_decision_points,
        metadata={
            "decision_points": kept,
            "kept_attempts": kept_attempts,
            "minimum": config.min_decision_points,
        },
    )
    incomplete = set_aside["missing_required_arguments"]
    share = incomplete / extracted if extracted else 0.0
    yield dg.AssetCheckResult(
        check_name="targets_have_required_arguments",
        passed=share <= config.max_incomplete_share,
        metadata={
            "missing_required_arguments": incomplete,
            "extracted": extracted,
            "share": round(share, 4),
            "maximum_share": config.max_incomplete_share,
        },
    )


def decision_metadata(day: DayPoints) -> dict[str, Any]:
    return {
        "decision_points": day.rows,
        "set_aside": counter_md(Counter(day.set_aside), ("reason", "decision points")),
        "by_tool": counter_md(Counter(day.by_tool), ("tool", "decision points")),
        "by_action_class": counter_md(Counter(day.by_action_class), ("action class", "decision points")),
        "decisive": day.decisive,
        "after_guard": day.after_guard,
        "history_dropped_messages": day.history_dropped,
        "preview": frame_md(day.preview),
    }
