"""raw_sessions: every agent event of the sessions that started on a UTC day, normalized and redacted.

Its twin output, raw_sessions_quarantine, keeps each line that could not be
read (source, path, line, reason, a redacted excerpt), so nothing is dropped
silently. Both are written by the Parquet IO manager, one file per day.

    dagster asset materialize -m trajectory_pipeline.definitions \
        --select raw_sessions,raw_sessions_quarantine --partition-range 2026-11-09...2026-11-22
"""

import datetime as dt
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

import dagster as dg
import pyarrow.parquet as pq
from pydantic import Field

from assets.partitions import daily_partitions
from resources.session_sources import SessionSources
from trajectory_pipeline.ingest import IngestStats, ingest_day
from trajectory_pipeline.parquet_io import SpooledParquet
from trajectory_pipeline.parsers.lines import MAX_LINE_BYTES
from trajectory_pipeline.redact import Redactor

PREVIEW_ROWS = 8
PREVIEW_COLUMNS = ("source", "session_id", "ts", "role", "kind", "tool_name", "text")


class IngestConfig(dg.Config):
    """How lines are read and what is redacted besides secrets."""

    max_line_bytes: int = Field(
        default=MAX_LINE_BYTES, description="Lines longer than this are quarantined as oversize_line."
    )
    redact_emails: bool = Field(default=True, description="Replace e-mail addresses with a placeholder.")
    redact_home_paths: bool = Field(
        default=True, description="Replace user names in home-folder paths (/home/<user>/...)."
    )


@dg.multi_asset(
    outs={
        "raw_sessions": dg.AssetOut(
            description="One row per agent event of the sessions that started that UTC day, redacted.",
            io_manager_key="io_manager",
        ),
        "raw_sessions_quarantine": dg.AssetOut(
            description="Lines that could not be read, with the reason and a redacted excerpt.",
            io_manager_key="io_manager",
        ),
    },
    partitions_def=daily_partitions,
    # A range of days runs as one process that streams day after day: no per-run start-up
    # cost per day, memory still bounded by one day's batch.
    backfill_policy=dg.BackfillPolicy.single_run(),
    group_name="ingest",
    compute_kind="python",
)
def raw_sessions(
    context: dg.AssetExecutionContext, config: IngestConfig, session_sources: SessionSources
) -> tuple[dg.Output[Any], dg.Output[Any]]:
    roots = session_sources.roots(context.log)
    redactor = Redactor(emails=config.redact_emails, home_paths=config.redact_home_paths)
    spool = Path(tempfile.mkdtemp(prefix="trajectory-raw-sessions-"))
    events: dict[str, SpooledParquet] = {}
    quarantine: dict[str, SpooledParquet] = {}
    all_stats = []
    for key in context.partition_keys:
        stats = ingest_day(
            roots,
            dt.date.fromisoformat(key),
            spool / f"events-{key}.parquet",
            spool / f"quarantine-{key}.parquet",
            redactor=redactor,
            max_line_bytes=config.max_line_bytes,
        )
        events[key] = SpooledParquet(spool / f"events-{key}.parquet", stats.rows)
        quarantine[key] = SpooledParquet(spool / f"quarantine-{key}.parquet", stats.quarantined.total())
        context.log.info(describe_day(stats))
        all_stats.append(stats)
    if len(context.partition_keys) == 1:
        key = context.partition_keys[0]
        events_value: Any = events[key]
        quarantine_value: Any = quarantine[key]
    else:
        events_value, quarantine_value = events, quarantine
    return (
        dg.Output(events_value, output_name="raw_sessions", metadata=events_metadata(all_stats, events)),
        dg.Output(
            quarantine_value,
            output_name="raw_sessions_quarantine",
            metadata=quarantine_metadata(all_stats, quarantine),
        ),
    )


def describe_day(stats: IngestStats) -> str:
    return (
        f"{stats.day}: {stats.sessions} sessions, {stats.rows} events from {stats.files_read} files "
        f"({stats.files_skipped.total()} skipped), {stats.quarantined.total()} lines quarantined, "
        f"{stats.redactions.total()} redactions"
    )


def _counter_md(counter: Counter[Any], headers: tuple[str, ...]) -> dg.MetadataValue:
    if not counter:
        return dg.MetadataValue.md("_none_")
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    for key, count in sorted(counter.items()):
        cells = key if isinstance(key, tuple) else (key,)
        lines.append("| " + " | ".join(str(cell) for cell in cells) + f" | {count} |")
    return dg.MetadataValue.md("\n".join(lines))


def _preview(spooled: dict[str, SpooledParquet], columns: tuple[str, ...]) -> dg.MetadataValue:
    """The first rows of the first non-empty day, read back from the spooled file."""
    for item in spooled.values():
        if item.row_count:
            batch = next(
                pq.ParquetFile(item.path).iter_batches(batch_size=PREVIEW_ROWS, columns=list(columns))
            )
            frame = batch.to_pandas()
            for name in frame.columns:
                if frame[name].dtype == object or str(frame[name].dtype).startswith("str"):
                    frame[name] = frame[name].map(
                        lambda v: v if not isinstance(v, str) else v[:80].replace("\n", " ").replace("|", "/")
                    )
            return dg.MetadataValue.md(frame.to_markdown(index=False))
    return dg.MetadataValue.md("_no rows_")


def _merge(all_stats: list[IngestStats], attribute: str) -> Counter[Any]:
    total: Counter[Any] = Counter()
    for stats in all_stats:
        total.update(getattr(stats, attribute))
    return total


def events_metadata(all_stats: list[IngestStats], spooled: dict[str, SpooledParquet]) -> dict[str, Any]:
    sessions_by_source: Counter[str] = Counter()
    for stats in all_stats:
        sessions_by_source.update({source: len(ids) for source, ids in stats.sessions_by_source.items()})
    skipped = _merge(all_stats, "files_skipped")
    misassigned = [path for stats in all_stats for path in stats.misassigned_files]
    return {
        "sessions": sum(sessions_by_source.values()),
        "sessions_by_source": _counter_md(sessions_by_source, ("source", "sessions")),
        "rows_by_source_and_kind": _counter_md(
            _merge(all_stats, "rows_by_source_kind"), ("source", "kind", "rows")
        ),
        "files_read": sum(stats.files_read for stats in all_stats),
        "files_skipped": skipped.total(),
        "files_skipped_by_reason": _counter_md(skipped, ("reason", "files")),
        "quarantined_lines": sum(stats.quarantined.total() for stats in all_stats),
        "redactions": sum(stats.redactions.total() for stats in all_stats),
        "redactions_by_kind": _counter_md(_merge(all_stats, "redactions"), ("kind", "count")),
        "truncated_texts": sum(stats.truncated_texts for stats in all_stats),
        "misassigned_files": dg.MetadataValue.json(misassigned),
        "preview": _preview(spooled, PREVIEW_COLUMNS),
    }


def quarantine_metadata(all_stats: list[IngestStats], spooled: dict[str, SpooledParquet]) -> dict[str, Any]:
    quarantined = _merge(all_stats, "quarantined")
    return {
        "quarantined_lines": quarantined.total(),
        "quarantined_by_reason": _counter_md(quarantined, ("reason", "lines")),
        "preview": _preview(spooled, ("source", "source_path", "line_no", "reason", "excerpt")),
    }
