"""Mining and cutting decision points over a range of days: a task per day, spread over processes.

`mined_trajectories` and `decision_points` run a backfill's days through these (as does the
benchmark), so a range uses every core while a single day stays in the step's own process.
A task carries its day's raw_sessions file paths, not frames: each worker reads its own day,
and results come back a few at a time, so memory holds a few days, never the whole range.

    for key, attempts in mine_days(days, MiningConfig(), workers=2): ...
    for day in cut_days(days_with_attempts, DecisionConfig(), workers=2): ...
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import pandas as pd
import pyarrow.dataset as pads
import pyarrow.parquet as pq

from trajectory_pipeline.decisions import DecisionConfig, extract_decision_points, learnable
from trajectory_pipeline.mining import MiningConfig, mine_trajectories
from trajectory_pipeline.parallel import imap_in_processes

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


class DayPoints(NamedTuple):
    """One day's learnable decision points, what was set aside (by reason), how many were cut, and
    how many of the day's attempts were in the included tiers."""

    key: str
    kept: pd.DataFrame
    set_aside: dict[str, int]
    extracted: int
    included_attempts: int


@dataclass(frozen=True)
class _MineTask:
    day: DayEvents
    config: MiningConfig


@dataclass(frozen=True)
class _CutTask:
    day: DayEvents
    config: DecisionConfig


def _mine(task: _MineTask) -> pd.DataFrame:
    return mine_trajectories(task.day.read(), task.config)


def _cut(task: _CutTask) -> DayPoints:
    attempts = task.day.read_attempts()
    points = extract_decision_points(task.day.read(), attempts, task.config)
    kept, set_aside = learnable(points)
    included = int(attempts["tier"].isin(task.config.included_tiers).sum())
    return DayPoints(task.day.key, kept, set_aside, len(points), included)


def _workers(days: Sequence[DayEvents], workers: int, min_events: int) -> int:
    """`workers` when the range is worth the processes' start-up, else 1 (row counts are in the footers)."""
    if workers <= 1 or len(days) <= 1:
        return 1
    events = sum(pq.ParquetFile(path).metadata.num_rows for day in days for path in day.files)
    return workers if events >= min_events else 1


def mine_days(
    days: Sequence[DayEvents],
    config: MiningConfig,
    workers: int = 1,
    min_events: int = PARALLEL_MIN_EVENTS,
) -> Iterator[tuple[str, pd.DataFrame]]:
    """(key, attempts) for each day, in order; the same frames `mine_trajectories` gives day by day."""
    tasks = [_MineTask(day, config) for day in days]
    mined = imap_in_processes(_mine, tasks, _workers(days, workers, min_events))
    yield from zip((day.key for day in days), mined, strict=True)


def cut_days(
    days: Sequence[DayEvents],
    config: DecisionConfig,
    workers: int = 1,
    min_events: int = PARALLEL_MIN_EVENTS,
) -> Iterator[DayPoints]:
    """Each day's learnable decision points, in order, from its events and its mined attempts."""
    tasks = [_CutTask(day, config) for day in days]
    yield from imap_in_processes(_cut, tasks, _workers(days, workers, min_events))
