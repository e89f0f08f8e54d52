"""decision_points: every assistant tool call of the day's kept attempts, with the history before it.

The target call is in the canonical tool vocabulary; the history is the chat the
agent had just before it, oldest messages dropped first beyond a size budget.

    trajectory-pipeline materialize --select decision_points --partition 2026-11-20
"""

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dagster as dg
from pydantic import Field

from assets import OWNERS
from assets.day_checks import Verdict, day_check, report
from assets.day_log import DayLog
from assets.metadata import counter_md, frame_md, rows_md, single_or_dict
from assets.partitions import daily_backfill_policy, daily_partitions
from assets.workers import resolve_workers, workers_field
from resources.core_config import derive, to_core
from resources.parquet_io_manager import spool_root
from resources.privacy import private_metadata
from trajectory_pipeline.day_stages import DayEvents, DayPoints, cut_days
from trajectory_pipeline.decisions.points import DecisionConfig
from trajectory_pipeline.parquet_io import SpooledParquet, spool_dir

_DecisionKnobs: Any = derive("DecisionKnobs", DecisionConfig)


class DecisionPointsConfig(_DecisionKnobs):
    """Which attempts give decision points, how much history each carries, and the audit minimum."""

    workers: int = workers_field()
    min_decision_points: int = Field(
        default=1, ge=0, description="Audit: decision points needed per day (days with kept attempts)."
    )
    max_incomplete_share: float = Field(
        default=0.05,
        ge=0.0,
        le=1.0,
        description="Audit, per day: largest share of targets without usable arguments (unparseable, or "
        "missing a required one; they are set aside). A day over it is not rendered.",
    )

    def core(self) -> DecisionConfig:
        return to_core(DecisionConfig, self)


NAME = "decision_points"
INCOMPLETE_REASONS = ("unparseable_arguments", "missing_required_arguments")


@dg.multi_asset(
    outs={
        NAME: dg.AssetOut(
            description="One row per assistant tool call in gold and silver attempts (sub-agent calls "
            "only with include_sidechain): history, canonical target, labels.",
            owners=OWNERS,
            tags={"stage": "decisions"},
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
        day_check("enough_decision_points", NAME, "Enough decision points on a day with kept attempts."),
        day_check(
            "targets_have_required_arguments",
            NAME,
            "Few target calls lack usable arguments (unparseable, or a required one missing; those "
            "are set aside, never trained); a day that fails is not rendered (rendered_splits).",
        ),
    ],
)
def decision_points(
    context: dg.AssetExecutionContext,
    config: DecisionPointsConfig,
    raw_sessions: dict[str, Path],
    mined_trajectories: dict[str, Path],
) -> Iterator[dg.Output[Any] | dg.AssetCheckEvaluation]:
    """One row per assistant tool call in gold and silver attempts: history, canonical target, labels."""
    core = config.core()
    days = [DayEvents.of(key, raw_sessions[key], mined_trajectories[key]) for key in context.partition_keys]
    # Each day goes to a private spool file and is audited as it comes; only the verdicts are kept,
    # not the days' summaries: a long range never sits in memory whole.
    kept: dict[str, SpooledParquet] = {}
    verdicts: dict[str, list[Verdict]] = {}
    log = DayLog(context, len(days))
    with spool_dir(spool_root(context), "decision-points-") as spool:
        for day in cut_days(days, core, spool, resolve_workers(config.workers)):
            kept[day.key] = SpooledParquet(day.path, day.rows)
            for check, found in audits([day], config).items():
                verdicts.setdefault(check, []).extend(found)
            log(describe_day(day))
            context.add_asset_metadata(
                private_metadata(decision_metadata(day)), asset_key=NAME, partition_key=day.key
            )
    yield dg.Output(single_or_dict(kept, context.partition_keys), output_name=NAME)
    for check, found in verdicts.items():
        yield from report(context, NAME, check, found)


def describe_day(day: DayPoints) -> str:
    """The day's one log line, even for a day without kept attempts."""
    aside = ", ".join(f"{count} {reason}" for reason, count in day.set_aside.items() if count)
    return (
        f"{day.key}: {day.rows} decision points from {day.included_attempts} kept attempts; "
        f"{day.extracted - day.rows} set aside{f' ({aside})' if aside else ''}"
    )


def audits(days: list[DayPoints], config: DecisionPointsConfig) -> dict[str, list[Verdict]]:
    """Each check's verdict on each day."""
    verdicts: dict[str, list[Verdict]] = {"enough_decision_points": [], "targets_have_required_arguments": []}
    for day in days:
        # Days without kept attempts have nothing to cut into decision points.
        enough = day.included_attempts == 0 or day.rows >= config.min_decision_points
        verdicts["enough_decision_points"].append(
            Verdict(
                day.key,
                enough,
                {
                    "decision_points": day.rows,
                    "kept_attempts": day.included_attempts,
                    "minimum": config.min_decision_points,
                },
                None
                if enough
                else f"{day.key}: {day.rows} decision points from {day.included_attempts} kept attempts, "
                f"fewer than {config.min_decision_points}",
            )
        )
        verdicts["targets_have_required_arguments"].append(
            incomplete_verdict(day, config.max_incomplete_share)
        )
    return verdicts


def incomplete_verdict(day: DayPoints, maximum: float) -> Verdict:
    """Whether few enough of the day's targets lack usable arguments; a failure names the tools,
    counts and example decision ids."""
    incomplete = sum(day.set_aside[reason] for reason in INCOMPLETE_REASONS)
    share = incomplete / day.extracted if day.extracted else 0.0
    groups = sorted(
        (
            (count, reason, tool)
            for (reason, tool), count in day.set_aside_by_tool.items()
            if reason in INCOMPLETE_REASONS
        ),
        key=lambda group: (-group[0], group[1], group[2]),
    )
    rows = [
        (tool, reason, count, ", ".join(day.set_aside_examples[(reason, tool)]))
        for count, reason, tool in groups
    ]
    passed = share <= maximum
    description = None
    if not passed:
        listing = "; ".join(
            f"{tool}: {count} {reason} (e.g. {examples})" for tool, reason, count, examples in rows
        )
        description = (
            f"{day.key}: {incomplete} of {day.extracted} targets ({share:.0%}) lack usable arguments, "
            f"more than the {maximum:.0%} allowed: {listing}"
        )
    return Verdict(
        day.key,
        passed,
        {
            "extracted": day.extracted,
            **{reason: day.set_aside[reason] for reason in INCOMPLETE_REASONS},
            "share": round(share, 4),
            "maximum_share": maximum,
            "by_tool": rows_md(("tool", "reason", "decision points", "examples"), rows),
        },
        description,
    )


def decision_metadata(day: DayPoints) -> dict[str, Any]:
    return {
        "decision_points": day.rows,
        "set_aside": counter_md(Counter(day.set_aside), ("reason", "decision points")),
        "set_aside_by_tool": counter_md(
            Counter(day.set_aside_by_tool), ("reason", "tool", "decision points")
        ),
        "by_tool": counter_md(Counter(day.by_tool), ("tool", "decision points")),
        "by_action_class": counter_md(Counter(day.by_action_class), ("action class", "decision points")),
        "decisive": day.decisive,
        "after_guard": day.after_guard,
        "history_dropped_messages": day.history_dropped,
        "preview": frame_md(day.preview),
    }
