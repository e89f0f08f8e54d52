"""What a stored Dagster event costs: Dagster's SQLite event log against the instance's own
(assets/instance_storage.py), on the events a range run stores per day partition.

A range run over days stores, per partition of each asset, a planned materialization, a
materialization (with the day's metadata) and a check result, each into the run's database and
Dagster's index database: about 1,800 events for 150 days of four assets. Each storage writes the
same events into a fresh folder; the figure is milliseconds per event, the median of `--repeat`
alternating runs. The instance's storage is timed twice: every event on its own, and as Dagster
hands them over when `DAGSTER_EVENT_BATCH_SIZE` is set (the planned materializations in one
`store_event_batch`, each asset's materializations in another, the check results one by one).

    python bench/bench_event_log.py --days 150 --repeat 3
"""

from __future__ import annotations

import argparse
import datetime as dt
import logging
import platform
import statistics
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import dagster as dg
from dagster._core.definitions.asset_checks.asset_check_evaluation import AssetCheckEvaluation
from dagster._core.events import (
    AssetMaterializationPlannedData,
    DagsterEvent,
    DagsterEventType,
    StepMaterializationData,
)
from dagster._core.events.log import EventLogEntry
from dagster._core.storage.event_log.base import EventLogStorage
from dagster._core.storage.event_log.sqlite.sqlite_event_log import SqliteEventLogStorage

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sections import markdown_table, write_section  # noqa: E402  (bench/sections.py, beside this script)

from assets.instance_storage import EngineKeepingSqliteEventLogStorage  # noqa: E402

ASSETS = ("raw_sessions", "raw_sessions_quarantine", "mined_trajectories", "decision_points")
JOB = "__ASSET_JOB"


def range_run_events(days: int) -> list[EventLogEntry]:
    """A range run's asset events for `days` daily partitions of the four ingest-to-cut assets."""
    run_id = str(uuid.uuid4())
    keys = [(dt.date(2026, 1, 1) + dt.timedelta(days=n)).isoformat() for n in range(days)]

    def entry(event: DagsterEvent) -> EventLogEntry:
        return EventLogEntry(
            error_info=None,
            level=logging.DEBUG,
            user_message="",
            run_id=run_id,
            timestamp=time.time(),
            step_key=event.step_key,
            job_name=JOB,
            dagster_event=event,
        )

    def step_event(kind: DagsterEventType, data: object, asset: str) -> EventLogEntry:
        return entry(DagsterEvent(kind.value, JOB, event_specific_data=data, step_key=asset))

    events = []
    for asset in ASSETS:
        for key in keys:
            planned = AssetMaterializationPlannedData(dg.AssetKey(asset), partition=key)
            events.append(entry(DagsterEvent.build_asset_materialization_planned_event(JOB, asset, planned)))
    for asset in ASSETS:
        for key in keys:
            metadata = {
                "rows": dg.MetadataValue.int(25_000),
                "path": dg.MetadataValue.path(f"/w/{asset}/{key}.parquet"),
            }
            materialization = dg.AssetMaterialization(asset, partition=key, metadata=metadata)
            events.append(
                step_event(
                    DagsterEventType.ASSET_MATERIALIZATION, StepMaterializationData(materialization), asset
                )
            )
            check = AssetCheckEvaluation(
                asset_key=dg.AssetKey(asset),
                check_name="day_is_complete",
                passed=True,
                metadata={"rows": dg.MetadataValue.int(25_000)},
                partition=key,
            )
            events.append(step_event(DagsterEventType.ASSET_CHECK_EVALUATION, check, asset))
    return events


def dagster_batches(events: list[EventLogEntry]) -> list[list[EventLogEntry]]:
    """The events as Dagster hands them to the storage when batching: the planned materializations
    together, each asset's materializations together (one output's days), every other event alone."""
    planned, by_asset, alone = [], defaultdict(list), []
    for event in events:
        kind = event.dagster_event_type
        if kind == DagsterEventType.ASSET_MATERIALIZATION_PLANNED:
            planned.append(event)
        elif kind == DagsterEventType.ASSET_MATERIALIZATION:
            by_asset[event.step_key].append(event)
        else:
            alone.append([event])
    return [planned, *by_asset.values(), *alone]


def ms_per_event(
    storage_class: Callable[[str], EventLogStorage], events: list[EventLogEntry], batched: bool = False
) -> float:
    with tempfile.TemporaryDirectory() as folder:
        storage = storage_class(folder)
        storage.store_event(events[0])  # the run's database created
        start = time.perf_counter()
        if batched:
            for batch in dagster_batches(events[1:]):
                storage.store_event_batch(batch)
        else:
            for event in events[1:]:
                storage.store_event(event)
        elapsed = time.perf_counter() - start
        storage.dispose()
    return elapsed / (len(events) - 1) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--days", type=int, default=150)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--results", type=Path, default=ROOT / "bench" / "RESULTS.md")
    args = parser.parse_args()

    events = range_run_events(args.days)
    storages: dict[str, tuple[Callable[[str], EventLogStorage], bool]] = {
        "Dagster's `SqliteEventLogStorage`": (SqliteEventLogStorage, False),
        "the instance's (`assets.instance_storage`), one by one": (EngineKeepingSqliteEventLogStorage, False),
        "the instance's, in Dagster's batches": (EngineKeepingSqliteEventLogStorage, True),
    }
    times: dict[str, list[float]] = {name: [] for name in storages}
    for _ in range(args.repeat):
        for name, (storage_class, batched) in storages.items():
            times[name].append(ms_per_event(storage_class, events, batched))
    medians = {name: statistics.median(values) for name, values in times.items()}
    stock, ours, batched = medians.values()

    rows = [("event log storage", "ms per stored event", f"seconds for {len(events):,} events")]
    rows += [(name, f"{value:.2f}", f"{value * len(events) / 1000:.1f}") for name, value in medians.items()]
    today = dt.date.today().isoformat()
    text = "\n".join(
        [
            f"## Stored Dagster events: the instance's event log ({today}, {platform.machine()}, "
            f"Python {platform.python_version()})",
            f"`python bench/bench_event_log.py --days {args.days} --repeat {args.repeat}`",
            "",
            f"A range run's asset events for {args.days} days of the four ingest-to-cut assets (a planned "
            "materialization, a materialization and a check result per partition), stored into a fresh "
            f"folder; medians of {args.repeat} alternating runs.",
            "",
            *markdown_table(rows),
            "",
            f"- {stock / ours:.1f}x less per event: each database keeps its engine (compiled statements), "
            "the index its connection (no close and checkpoint per event), and the index's tables and "
            "columns, once found, are not looked up again before each event.",
            f"- {ours / batched:.1f}x less again as Dagster batches them (`DAGSTER_EVENT_BATCH_SIZE`, which "
            "the storage sets): a batch is one transaction per database; the check results still come "
            "one by one.",
        ]
    )
    print(text)
    write_section(args.results, "bench_event_log", text)


if __name__ == "__main__":
    main()
