"""Mining and cutting decision points over a range of days: a task per day, spread over processes.

`mined_trajectories` and `decision_points` run a backfill's days through these (as does the
benchmark), so a range uses every core while a single day stays in the step's own process.
A task carries its day's raw_sessions file paths, not frames: each worker reads its own day,
and results come back a few at a time, so memory holds a few days, never the whole range.

    for day in mine_days(days, MiningConfig(), spool_dir, workers=2, columns=["tier"]): ...
    for day in cut_days(days_with_attempts, DecisionConfig(), spool_dir, workers=2): ...

A worker writes its day's file itself and hands back a summary (and, for attempts, the few
columns the caller asks for): shipping whole frames back through a pipe costs more than the
second core saves, and the caller would hold them.
"""

from __future__ import annotations

import contextlib
import functools
from collections import Counter
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads
import pyarrow.parquet as pq

from trajectory_pipeline.decisions.points import (
    CUT_BATCH_EVENTS,
    DECISION_SCHEMA,
    EVENT_READ_COLUMNS,
    SET_ASIDE_REASONS,
    DecisionConfig,
    accepted_attempts,
    accepted_sessions,
    ordered_point_batches,
    set_aside_table,
)
from trajectory_pipeline.events import ORDER_COLUMNS, READ_COLUMNS, event_rows
from trajectory_pipeline.mining.attempts import TRAJECTORY_SCHEMA, MiningConfig, mine_table
from trajectory_pipeline.parallel import imap_in_processes
from trajectory_pipeline.parquet_io import BatchWriter, write_table_atomic

# Below this many events in the range, worker processes cost more to start than they save. On 2
# cores, 3 days of a busy user's logs (76k events) mined in 0.50 s on two workers against 0.65 in
# one and were cut in 0.80 against 1.13, once the fork server ran (ingestion starts it from 16 MiB
# to read); 2 days (50k) gained as much warm, but lost 0.5 s where mining had to start the server.
PARALLEL_MIN_EVENTS = 60_000


@dataclass(frozen=True)
class DayEvents:
    """A day partition: its key, its raw_sessions files and (for cutting) its mined_trajectories files."""

    key: str
    files: tuple[str, ...]
    attempt_files: tuple[str, ...] = ()

    @classmethod
    def of(cls, key: str, events: Path, attempts: Path | None = None) -> DayEvents:
        return cls(key, (str(events),), (str(attempts),) if attempts is not None else ())

    def read(self) -> pd.DataFrame:
        return _read(self.files).to_pandas()

    def read_attempts(self) -> pd.DataFrame:
        return _read(self.attempt_files).to_pandas()


def _read(files: tuple[str, ...], columns: Sequence[str] | None = None) -> pa.Table:
    """The files' rows as one Arrow table; with `columns`, only those of them the files hold."""
    dataset = pads.dataset(list(files), format="parquet")
    if columns is not None:
        columns = [name for name in dict.fromkeys(columns) if name in dataset.schema.names]
    return dataset.to_table(columns=columns)


def _read_ordered(
    files: tuple[str, ...], names: Sequence[str], sessions: Collection[str] | None = None
) -> pa.Table:
    """`ordered_table(_read(files), names, sessions)`, read a column at a time: the sort keys are
    read and ordered first, then each column is taken into that order as it is read. Reading the
    day first and ordering it held every column twice, the read and the ordered: a worker cutting a
    mixed-format day (42k events) peaks 20 MiB lower, the run's peak (the cut) 30 MiB lower.

    Only the cut reads so: a call per column and file costs 10 to 15 ms a day, 2 % of a day's cut
    but 10 % of its mining (150 days: mined_trajectories 25 -> 29 s), whose peak is not the run's.
    Dropping each column of a table read whole as it is taken held as much Arrow memory as this,
    but left the heap as high as before."""
    with contextlib.ExitStack() as stack:
        parts = [stack.enter_context(pq.ParquetFile(path)) for path in files]
        schema = parts[0].schema_arrow

        def column(name: str) -> pa.ChunkedArray:
            # In batches of a row group, as a dataset scan gives them: a file's column read whole is
            # its row groups concatenated into one more copy (the CLI's peak: 15 MiB higher).
            chunks = [
                batch.column(0)
                for part in parts
                if part.metadata.num_rows
                for batch in part.iter_batches(part.metadata.row_group(0).num_rows, columns=[name])
            ]
            return pa.chunked_array(chunks, schema.field(name).type)

        present = set(schema.names)
        keys = pa.table({name: column(name) for name in ORDER_COLUMNS if name in present})
        rows, ordinals = event_rows(keys, sessions)
        del keys
        keep = [name for name in dict.fromkeys(names) if name in present]
        arrays = [column(name).take(rows) for name in keep]
    fields = [*(schema.field(name) for name in keep), pa.field("ordinal", pa.int64())]
    ordered = pa.schema(fields, metadata=schema.metadata)
    return pa.Table.from_arrays([*arrays, pa.array(ordinals, pa.int64())], schema=ordered)


class MinedDay(NamedTuple):
    """What a day's mining wrote to `path`: how many attempts, the columns asked for, the first rows."""

    key: str
    path: Path
    rows: int
    sessions: int  # the day's sessions in raw_sessions, attempts or not
    columns: pd.DataFrame  # every attempt, the requested columns only
    head: pd.DataFrame  # the first attempts, every column
    landings: dict[str, int]  # the git check's outcomes of the attempts with edits (mining/landing.py)


class DayPoints(NamedTuple):
    """What a day's cut wrote to `path`: its learnable decision points, summarized."""

    key: str
    path: Path
    rows: int
    extracted: int  # decision points cut, before the unlearnable ones were set aside
    set_aside: dict[str, int]  # by reason (SET_ASIDE_REASONS, each counted)
    set_aside_by_tool: dict[tuple[str, str], int]  # by (reason, target tool)
    set_aside_examples: dict[tuple[str, str], tuple[str, ...]]  # the first decision ids of each
    included_attempts: int  # the day's attempts in the included tiers
    by_tool: dict[str, int]
    by_action_class: dict[str, int]
    decisive: int
    after_guard: int
    history_dropped: int  # history messages dropped to fit the budget, all points together
    preview: pd.DataFrame  # the first rows, a few columns


# The cut's learnable points are written in row groups of about this much Arrow data: runs of a
# few sessions make small groups, and a day's histories repeat one another, so Parquet compressed a
# day into 1.9 times the bytes in 30 groups as in one; in groups of 8 MiB, 13 % more.
ROW_GROUP_BYTES = 8 * 1024 * 1024
PREVIEW_COLUMNS = ["source", "tier", "step", "action_class", "target_name", "target_arguments"]
PREVIEW_ROWS = 8
SET_ASIDE_EXAMPLES = 3


@dataclass(frozen=True)
class _MineTask:
    day: DayEvents
    config: MiningConfig
    dest: Path
    columns: tuple[str, ...]


@dataclass(frozen=True)
class _CutTask:
    day: DayEvents
    config: DecisionConfig
    dest: Path
    batch_events: int = CUT_BATCH_EVENTS


@functools.cache
def _pandas_metadata(schema: pa.Schema) -> dict[bytes, bytes]:
    """The metadata `Table.from_pandas` gives a table of `schema` (how to read it back into pandas):
    it depends on the column types alone, so a table built in Arrow is stored as if from a frame."""
    empty = schema.empty_table().to_pandas()
    metadata = pa.Table.from_pandas(empty, schema=schema, preserve_index=False).schema.metadata
    return dict(metadata or {})


def _store(table: pa.Table, schema: pa.Schema, dest: Path) -> None:
    if not table.schema.equals(schema, check_metadata=False):
        raise ValueError(f"a day's table must have the schema\n{schema}\ngot\n{table.schema}")
    write_table_atomic(table.replace_schema_metadata(_pandas_metadata(schema)), dest)


def _mine(task: _MineTask) -> MinedDay:
    # Arrow from file to file: only the columns mining reads, and no pandas frame of the events.
    events = _read(task.day.files, READ_COLUMNS)
    landings: Counter[str] = Counter()
    attempts = mine_table(events, task.config, landings)
    _store(attempts, TRAJECTORY_SCHEMA, task.dest)
    head = attempts.slice(0, PREVIEW_ROWS).to_pandas()
    sessions = pc.count_distinct(events.column("session_id")).as_py() if events.num_rows else 0
    return MinedDay(
        task.day.key,
        task.dest,
        attempts.num_rows,
        int(sessions),
        attempts.select(list(task.columns)).to_pandas(),
        head,
        dict(landings),
    )


def _cut(task: _CutTask) -> DayPoints:
    """Cut a day run by run (`ordered_point_batches`), the learnable points written a row group at a
    time and the summary added up run by run: the day's points are never all in memory."""
    attempts = _read(task.day.attempt_files)
    records = accepted_attempts(attempts, task.config)
    batches: Iterator[pa.Table] = iter(())
    if records:  # none accepted, no decision point: the day's events are not read again
        events = _read_ordered(task.day.files, EVENT_READ_COLUMNS, accepted_sessions(records))
        batches = ordered_point_batches(events, records, task.config, task.batch_events)
    summary = _CutSummary()
    schema = DECISION_SCHEMA.with_metadata(_pandas_metadata(DECISION_SCHEMA))
    pending: list[pa.Table] = []
    pending_bytes = 0  # a sum over `pending` on every run took 4 % of the cut
    with BatchWriter(task.dest, schema) as writer:
        for points in batches:
            reasons = set_aside_table(points)
            kept = points.filter(pa.array(reasons == "")).replace_schema_metadata(schema.metadata)
            summary.add(points, reasons, kept)
            pending.append(kept)
            pending_bytes += kept.nbytes
            if pending_bytes >= ROW_GROUP_BYTES:
                writer.write_table(pa.concat_tables(pending))
                pending.clear()
                pending_bytes = 0
        if pending:
            writer.write_table(pa.concat_tables(pending))
    included = pc.is_in(attempts.column("tier"), pa.array(task.config.included_tiers, pa.string()))
    return summary.day(task.day.key, task.dest, _count(included))


@dataclass
class _CutSummary:
    """A day's DayPoints, added up over its runs of points."""

    rows: int = 0
    extracted: int = 0
    set_aside: Counter[str] = field(default_factory=Counter)
    set_aside_by_tool: Counter[tuple[str, str]] = field(default_factory=Counter)
    set_aside_ids: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    by_tool: Counter[str] = field(default_factory=Counter)
    by_action_class: Counter[str] = field(default_factory=Counter)
    decisive: int = 0
    after_guard: int = 0
    history_dropped: int = 0
    previews: list[pd.DataFrame] = field(default_factory=list)
    preview_rows: int = 0

    def add(self, points: pa.Table, reasons: np.ndarray, kept: pa.Table) -> None:
        self.rows += kept.num_rows
        self.extracted += points.num_rows
        self.set_aside.update(reason for reason in reasons.tolist() if reason)
        for group, ids in _set_aside_ids(points, reasons.tolist()).items():
            self.set_aside_by_tool[group] += len(ids)
            self.set_aside_ids.setdefault(group, []).extend(ids)
        self.by_tool.update(kept.column("target_name").to_pylist())
        self.by_action_class.update(kept.column("action_class").to_pylist())
        self.decisive += _count(kept.column("decisive"))
        self.after_guard += _count(kept.column("after_guard"))
        self.history_dropped += _count(kept.column("history_dropped"))
        if self.preview_rows < PREVIEW_ROWS and kept.num_rows:
            head = kept.select(PREVIEW_COLUMNS).slice(0, PREVIEW_ROWS - self.preview_rows).to_pandas()
            self.previews.append(head)
            self.preview_rows += len(head)

    def day(self, key: str, path: Path, included_attempts: int) -> DayPoints:
        preview = (
            pd.concat(self.previews, ignore_index=True)
            if self.previews
            else DECISION_SCHEMA.empty_table().select(PREVIEW_COLUMNS).to_pandas()
        )
        return DayPoints(
            key=key,
            path=path,
            rows=self.rows,
            extracted=self.extracted,
            set_aside={reason: self.set_aside[reason] for reason in SET_ASIDE_REASONS},
            set_aside_by_tool=dict(self.set_aside_by_tool),
            set_aside_examples={
                group: tuple(sorted(ids)[:SET_ASIDE_EXAMPLES]) for group, ids in self.set_aside_ids.items()
            },
            included_attempts=included_attempts,
            by_tool=dict(self.by_tool),
            by_action_class=dict(self.by_action_class),
            decisive=self.decisive,
            after_guard=self.after_guard,
            history_dropped=self.history_dropped,
            preview=preview,
        )


def _set_aside_ids(points: pa.Table, reasons: Sequence[str]) -> dict[tuple[str, str], list[str]]:
    """The decision ids of the set-aside points, by (reason, target tool)."""
    ids: dict[tuple[str, str], list[str]] = {}
    names, decision_ids = points.column("target_name").to_pylist(), points.column("decision_id").to_pylist()
    for reason, name, decision in zip(reasons, names, decision_ids, strict=True):
        if reason:
            ids.setdefault((reason, name), []).append(decision)
    return ids


def _count(values: pa.ChunkedArray | pa.Array) -> int:
    """The sum of a boolean or integer column; 0 when it is empty (Arrow's sum is then null)."""
    return int(pc.sum(values).as_py() or 0)


def _workers(days: Sequence[DayEvents], workers: int, min_events: int) -> int:
    """`workers` when the range is worth the processes' start-up, else 1 (row counts are in the footers)."""
    if workers <= 1 or len(days) <= 1:
        return 1
    events = sum(pq.ParquetFile(path).metadata.num_rows for day in days for path in day.files)
    return workers if events >= min_events else 1


def mine_days(
    days: Sequence[DayEvents],
    config: MiningConfig,
    out_dir: Path,
    workers: int = 1,
    columns: Sequence[str] = (),
    min_events: int = PARALLEL_MIN_EVENTS,
) -> Iterator[MinedDay]:
    """Mine each day's attempts into `out_dir/mined-<key>.parquet` (private, written atomically);
    summaries in order. The files hold what `mine_trajectories` gives day by day."""
    tasks = [_MineTask(day, config, out_dir / f"mined-{day.key}.parquet", tuple(columns)) for day in days]
    yield from imap_in_processes(_mine, tasks, _workers(days, workers, min_events))


def cut_days(
    days: Sequence[DayEvents],
    config: DecisionConfig,
    out_dir: Path,
    workers: int = 1,
    min_events: int = PARALLEL_MIN_EVENTS,
) -> Iterator[DayPoints]:
    """Cut each day's learnable decision points from its events and mined attempts into
    `out_dir/decision-points-<key>.parquet` (private, written atomically); summaries in order."""
    tasks = [_CutTask(day, config, out_dir / f"decision-points-{day.key}.parquet") for day in days]
    yield from imap_in_processes(_cut, tasks, _workers(days, workers, min_events))
