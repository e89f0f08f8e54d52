"""Asset checks judged day by day, and the days a failing day-check keeps out of rendered_splits.

A range of days is one run (single-run backfills) and each daily asset one step over the whole
range. Dagster's own means fall short of "one bad day never blocks the good ones" there, which is
why the daily checks work this way (Dagster 1.13):

- A blocking check gates a whole step: when it fails, Dagster skips every downstream step of the
  run, so one bad day of ten left all ten without `rendered_splits`.
- An `AssetCheckResult` takes its partition from the run's single partition key: a range step can
  only report one result for all its days.
- An asset's output covers every partition of the step's range: after the IO manager stores it,
  Dagster records a materialization for each day of the range. A step cannot materialize nine
  days and leave the tenth out through its output.

What the pipeline does instead:

1. Every daily check (but `guard_recoveries`, a warning about the whole run's data) is declared
   with the daily partitions (`day_check`) and judged per day:
   each day gets its own result, logged as an `AssetCheckEvaluation` of that partition
   (`report`), so the UI shows which day failed and why, and the storage keeps a verdict per day.
   The daily assets are multi-assets that may leave a check's output unset (`can_subset`), since
   their results come as these per-day events.
2. The checks that used to block (`no_repeated_inspection_after_guard` on mined_trajectories,
   `targets_have_required_arguments` on decision_points) gate per day instead (`GATES`): the
   assets they check are still written for every day, as a blocking check would leave them, and
   `rendered_splits`, the table training reads, leaves out each day whose latest verdict of a gate
   failed (`withheld_days`). When it leaves one out it stores the other days itself, reports their
   materializations one by one, and fails at the end with a message that names each day, the check,
   the tools, counts and example decision ids, and what to do. Dagster then shows the good days
   materialized and the bad one failed.

The alternative, a check that stays blocking and an asset that writes the good days and raises,
loses the good days' materializations (a failed step records none); splitting the range into a
run per day costs about 9 s of start-up per day (bench/bench_backfill.py). Because the verdicts live
in the instance, a later run of `rendered_splits` alone honours them too, until `decision_points`
(or `mined_trajectories`) is materialized again for the day and its check passes.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import dagster as dg
from dagster._core.definitions.asset_checks.asset_check_evaluation import (
    AssetCheckEvaluationTargetMaterializationData,
)
from dagster._core.event_api import PartitionKeyFilter
from dagster._core.storage.asset_check_execution_record import AssetCheckExecutionRecordStatus

from assets.partitions import daily_partitions
from resources.privacy import private, private_metadata

# (asset, check): a day that failed one of these is not rendered (see the module docstring).
GATES = (
    ("mined_trajectories", "no_repeated_inspection_after_guard"),
    ("decision_points", "targets_have_required_arguments"),
)
_EVALUATED = {AssetCheckExecutionRecordStatus.SUCCEEDED, AssetCheckExecutionRecordStatus.FAILED}


def day_check(name: str, asset: str, description: str) -> dg.AssetCheckSpec:
    """A check with a result per daily partition."""
    return dg.AssetCheckSpec(name, asset=asset, description=description, partitions_def=daily_partitions)


@dataclass(frozen=True)
class Verdict:
    """One day's result of one check."""

    day: str
    passed: bool
    metadata: Mapping[str, Any] = field(default_factory=dict)
    description: str | None = None
    warn: bool = False  # a warning, not an error, when it fails


def report(
    context: dg.AssetExecutionContext, asset: str, check: str, verdicts: Iterable[Verdict]
) -> Iterator[dg.AssetCheckEvaluation]:
    """Each day's verdict as the check's result for that partition, against the materialization of
    the day this run made (when it made one). The asset yields them after its output, so those
    materializations are stored by then."""
    key = dg.AssetCheckKey(dg.AssetKey(asset), check)
    if key not in context.selected_asset_check_keys:
        return
    verdicts = list(verdicts)
    days = [verdict.day for verdict in verdicts]
    targets = _materializations(context.instance, dg.AssetKey(asset), days, context.run.run_id)
    for verdict in verdicts:
        yield dg.AssetCheckEvaluation(
            asset_key=dg.AssetKey(asset),
            check_name=check,
            passed=verdict.passed,
            partition=verdict.day,
            metadata=private_metadata({"day": verdict.day, **verdict.metadata}),
            description=private(verdict.description) if verdict.description else None,
            severity=dg.AssetCheckSeverity.WARN if verdict.warn else dg.AssetCheckSeverity.ERROR,
            target_materialization_data=targets.get(verdict.day),
        )


def _materializations(
    instance: dg.DagsterInstance, asset: dg.AssetKey, days: Sequence[str], run_id: str
) -> dict[str, AssetCheckEvaluationTargetMaterializationData]:
    """This run's materialization of each of `days`, as a check result's target."""
    if not days:
        return {}
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=asset, asset_partitions=list(days)), limit=len(days)
    ).records
    found: dict[str, AssetCheckEvaluationTargetMaterializationData] = {}
    for record in records:
        if record.run_id == run_id and record.partition_key is not None:
            found.setdefault(
                record.partition_key,
                AssetCheckEvaluationTargetMaterializationData(
                    storage_id=record.storage_id, run_id=record.run_id, timestamp=record.timestamp
                ),
            )
    return found


@dataclass(frozen=True)
class Withheld:
    """A day a gate's latest verdict failed: which check, and what its result said."""

    day: str
    check: str
    description: str


def withheld_days(instance: dg.DagsterInstance, days: Sequence[str]) -> dict[str, list[Withheld]]:
    """The days of `days` whose latest evaluated result of a gate (`GATES`) failed."""
    found: dict[str, list[Withheld]] = {}
    keys = [dg.AssetCheckKey(dg.AssetKey(asset), check) for asset, check in GATES]
    for day in days:
        for key in keys:
            history = instance.event_log_storage.get_asset_check_execution_history(
                key, limit=1, status=_EVALUATED, partition_filter=PartitionKeyFilter(key=day)
            )
            if history and history[0].status == AssetCheckExecutionRecordStatus.FAILED:
                evaluation = history[0].event.dagster_event.asset_check_evaluation_data  # type: ignore[union-attr]
                found.setdefault(day, []).append(
                    Withheld(
                        day, f"{key.asset_key.to_user_string()} {key.name}", evaluation.description or ""
                    )
                )
    return found
