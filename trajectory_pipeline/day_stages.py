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

from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import pandas as pd
import pyarrow as pa
import pyarrow.dataset as pads
import pyarrow.parquet as pq

from trajectory_pipeline.decisions import DECISION_SCHEMA, DecisionConfig, extract_decision_points, learnable
from trajectory_pipeline.mining import TRAJECTORY_SCHEMA, MiningConfig, mine_trajectories
from trajectory_pipeline.parallel import imap_in_processes
from trajectory_pipeline.parquet_io import write_table_atomic

# Below this many events in the range, worker processes cost more to start than they save.
PARALLEL_MIN_EVENTS = 100_000


@dataclass(frozen=True)
class DayEvents:
    """A day partition: its key, its raw_sessions files and (for cutting) its mined_trajectories files."""

    key: str
    files: tuple[str, ...]
    attempt_files: tuple[str, ...] = ()

    @classmethod
    def of(
        cls, key: str, events: pads.FileSystemDataset, attempts: pads.FileSystemDataset | None = None
    ) -> DayEvents:
        return cls(key, tuple(events.files), tuple(attempts.files) if attempts is not None else ())

    def read(self) -> pd.DataFrame:
        return _read(self.files)

    def read_attempts(self) -> pd.DataFrame:
        return _read(self.attempt_files)


def _read(files: tuple[str, ...]) -> pd.DataFrame:
    return pads.dataset(list(files), format="parquet").to_table().to_pandas()


class MinedDay(NamedTuple):
    """What a day's mining wrote to `path`: how many attempts, the columns asked for, the first rows."""

    key: str
    path: Path
    rows: int
    columns: pd.DataFrame  # every attempt, the requested columns only
    head: pd.DataFrame  # the first attempts, every column


class DayPoints(NamedTuple):
    """What a day's cut wrote to `path`: its learnable decision points, summarized."""

    key: str
    path: Path
    rows: int
    extracted: int  # decision points cut, before the unlearnable ones were set aside
    set_aside: dict[str, int]  # by reason
    included_attempts: int  # the day's attempts in the included tiers
    by_tool: dict[str, int]
    by_action_class: dict[str, int]
    decisive: int
    after_guard: int
    history_dropped: int  # history messages dropped to fit the budget, all points together
    preview: pd.DataFrame  # the first rows, a few columns


PREVIEW_COLUMNS = ["source", "tier", "step", "action_class", "target_name", "target_arguments"]
PREVIEW_ROWS = 8


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


def _store(frame: pd.DataFrame, schema: pa.Schema, dest: Path) -> None:
    write_table_atomic(pa.Table.from_pandas(frame, schema=schema, preserve_index=False), dest)


def _mine(task: _MineTask) -> MinedDay:
    attempts = mine_trajectories(task.day.read(), task.config)
    _store(attempts, TRAJECTORY_SCHEMA, task.dest)
    head = attempts.head(PREVIEW_ROWS).reset_index(drop=True)
    return MinedDay(task.day.key, task.dest, len(attempts), attempts[list(task.columns)], head)


def _cut(task: _CutTask) -> DayPoints:
    attempts = task.day.read_attempts()
    points = extract_decision_points(task.day.read(), attempts, task.config)
    kept, set_aside = learnable(points)
    _store(kept, DECISION_SCHEMA, task.dest)
    return DayPoints(
        key=task.day.key,
        path=task.dest,
        rows=len(kept),
        extracted=len(points),
        set_aside=set_aside,
        included_attempts=int(attempts["tier"].isin(task.config.included_tiers).sum()),
        by_tool=dict(Counter(kept["target_name"])),
        by_action_class=dict(Counter(kept["action_class"])),
        decisive=int(kept["decisive"].sum()),
        after_guard=int(kept["after_guard"].sum()),
        history_dropped=int(kept["history_dropped"].sum()),
        preview=kept[PREVIEW_COLUMNS].head(PREVIEW_ROWS).reset_index(drop=True),
    )


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
