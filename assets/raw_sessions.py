"""raw_sessions: every agent event of the sessions that started on a UTC day, normalized and redacted.

Its twin output, raw_sessions_quarantine, keeps each line that could not be
read (source, path, line, reason, a redacted excerpt), so nothing is dropped
silently. Both are written by the Parquet IO manager, one file per day.

    trajectory-pipeline materialize --select raw_sessions,raw_sessions_quarantine \
        --partition-range 2026-11-09...2026-11-22
"""

import datetime as dt
from pathlib import Path
from typing import Any

import dagster as dg
import pyarrow.parquet as pq

from assets import OWNERS
from assets.day_log import DayLog
from assets.metadata import counter_md, frame_md
from assets.partitions import daily_backfill_policy, daily_partitions
from assets.workers import resolve_workers, workers_field
from resources.core_config import derive, to_core
from resources.parquet_io_manager import spool_root
from resources.privacy import private_failure, private_log, private_metadata
from resources.session_sources import SessionSources
from trajectory_pipeline.ingest.days import (
    IngestOptions,
    IngestStats,
    SourceUnreadableError,
    candidate_files,
    ingest_days,
)
from trajectory_pipeline.parquet_io import SpooledParquet, spool_dir

PREVIEW_ROWS = 8
PREVIEW_COLUMNS = ("source", "session_id", "ts", "role", "kind", "tool_name", "text")


_IngestKnobs: Any = derive("IngestKnobs", IngestOptions)


class IngestConfig(_IngestKnobs):
    """How lines are read and what is redacted besides secrets."""

    workers: int = workers_field()


@dg.multi_asset(
    outs={
        "raw_sessions": dg.AssetOut(
            description="One row per agent event of the sessions that started that UTC day, redacted.",
            io_manager_key="io_manager",
            owners=OWNERS,
            tags={"stage": "ingest"},
        ),
        "raw_sessions_quarantine": dg.AssetOut(
            description="Lines that could not be read, with the reason and a redacted excerpt.",
            io_manager_key="io_manager",
            owners=OWNERS,
            tags={"stage": "ingest"},
        ),
    },
    partitions_def=daily_partitions,
    # A range of days runs as one process that streams day after day: no per-run start-up
    # cost per day, memory still bounded by one day's batch.
    backfill_policy=daily_backfill_policy(),
    group_name="ingest",
    compute_kind="python",
)
def raw_sessions(
    context: dg.AssetExecutionContext, config: IngestConfig, session_sources: SessionSources
) -> tuple[dg.Output[Any], dg.Output[Any]]:
    first_day = dt.date.fromisoformat(context.partition_keys[0])
    roots = session_sources.roots(private_log(context.log), first_day)
    stores = session_sources.stores(private_log(context.log))
    options = to_core(IngestOptions, config)
    redactor = options.redactor()
    try:
        files = candidate_files(roots)
    except SourceUnreadableError as err:
        raise private_failure(str(err)) from None
    with spool_dir(spool_root(context), "raw-sessions-") as spool:
        outputs = {
            dt.date.fromisoformat(key): (spool / f"events-{key}.parquet", spool / f"quarantine-{key}.parquet")
            for key in context.partition_keys
        }
        found = ingest_days(
            roots,
            outputs,
            redactor=redactor,
            max_line_bytes=options.max_line_bytes,
            files=files,
            workers=resolve_workers(config.workers),
            stores=stores,
        )
    events: dict[str, SpooledParquet] = {}
    quarantine: dict[str, SpooledParquet] = {}
    log = DayLog(context, len(found))
    for day, stats in found.items():
        key = day.isoformat()
        log(describe_day(stats))
        events[key], quarantine[key] = _report_partition(context, key, stats, *outputs[day])
    if len(context.partition_keys) == 1:  # one partition, one file; a range returns a dict
        (only,) = context.partition_keys
        return dg.Output(events[only], output_name="raw_sessions"), dg.Output(
            quarantine[only], output_name="raw_sessions_quarantine"
        )
    return dg.Output(events, output_name="raw_sessions"), dg.Output(
        quarantine, output_name="raw_sessions_quarantine"
    )


def _report_partition(
    context: dg.AssetExecutionContext, key: str, stats: IngestStats, events_path: Path, quarantine_path: Path
) -> tuple[SpooledParquet, SpooledParquet]:
    events = SpooledParquet(events_path, stats.rows)
    quarantine = SpooledParquet(quarantine_path, stats.quarantined.total())
    context.add_asset_metadata(
        private_metadata(events_metadata(stats, events)), asset_key="raw_sessions", partition_key=key
    )
    context.add_asset_metadata(
        private_metadata(quarantine_metadata(stats, quarantine)),
        asset_key="raw_sessions_quarantine",
        partition_key=key,
    )
    return events, quarantine


def describe_day(stats: IngestStats) -> str:
    return (
        f"{stats.day}: {stats.sessions} sessions, {stats.rows} events from {stats.files_read} files "
        f"({stats.files_skipped.total()} skipped)"
        + (f" and {stats.database_rows.total()} database rows" if stats.database_rows else "")
        + f", {stats.quarantined.total()} lines quarantined, "
        f"{stats.redactions.total()} redactions"
    )


def _preview(spooled: SpooledParquet, columns: tuple[str, ...]) -> dg.MetadataValue:
    """The first rows of the day, read back from the written file."""
    if not spooled.row_count:
        return dg.MetadataValue.md("_no rows_")
    batch = next(pq.ParquetFile(spooled.path).iter_batches(batch_size=PREVIEW_ROWS, columns=list(columns)))
    return frame_md(batch.to_pandas())


def events_metadata(stats: IngestStats, spooled: SpooledParquet) -> dict[str, Any]:
    return {
        "sessions": stats.sessions,
        "sessions_by_source": counter_md(stats.sessions_by_source, ("source", "sessions")),
        "rows_by_source_and_kind": counter_md(stats.rows_by_source_kind, ("source", "kind", "rows")),
        "files_read": stats.files_read,
        "files_skipped": stats.files_skipped.total(),
        "files_skipped_by_reason": counter_md(stats.files_skipped, ("reason", "files")),
        "database_rows_read": stats.database_rows.total(),
        "database_rows_by_table": counter_md(stats.database_rows, ("table", "rows")),
        "quarantined_lines": stats.quarantined.total(),
        "redactions": stats.redactions.total(),
        "redactions_by_kind": counter_md(stats.redactions, ("kind", "count")),
        "truncated_texts": stats.truncated_texts,
        "repaired_lines_by_reason": counter_md(stats.repaired, ("repair", "lines")),
        "duplicate_events_skipped": stats.duplicate_events,
        "misassigned_files": dg.MetadataValue.json(stats.misassigned_files),
        "preview": _preview(spooled, PREVIEW_COLUMNS),
    }


def quarantine_metadata(stats: IngestStats, spooled: SpooledParquet) -> dict[str, Any]:
    return {
        "quarantined_lines": stats.quarantined.total(),
        "quarantined_by_reason": counter_md(stats.quarantined, ("reason", "lines")),
        "preview": _preview(spooled, ("source", "source_path", "line_no", "reason", "excerpt")),
    }
