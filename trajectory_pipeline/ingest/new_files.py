"""Which day partitions new or grown transcript files can hold: the pure core of `new_sessions_sensor`.

Each tick the sensor stats the transcript files under the source roots (the listing ingestion
uses; no file is opened), fingerprints each one (path, size, modification time) and compares
the fingerprints with the ones it kept from the last tick. A file whose fingerprint is new was
created or has grown, and the days it can hold become *pending*. A pending day is handed out for
ingestion once its partition exists (the UTC day is over) and nothing touching it has changed for
`QUIET_SECONDS`, so a session still being written is ingested once it pauses, not at every tick.

Which days a file can hold follows ingestion's `ingest._verdicts`: a session starting on day d writes on or
after d, and a day of slack covers agents that write local times without a zone, so a file last
modified on day m can hold new events of sessions that started on m - 1 (one still running past
midnight), m, or m + 1. Files untouched for more than `HORIZON_DAYS` when first seen (turning
the sensor on over an old corpus, or copying archives in) are left to backfills and to the daily
schedule, which ingests every never-ingested day of the training window; that keeps the cursor
small. A session resumed days after it started appends to a file whose start day is not among
these days: re-ingest that day by hand if it matters.

    watch = Watch.from_cursor(cursor)
    update = advance(watch, file_states(roots), now_us, first_day, last_day)
    update.spans  # [(first, last), ...] contiguous days to ingest now, one run each
    update.watch.to_cursor()
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import stat
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from trajectory_pipeline.ingest.days import SourceRoot, matching_files
from trajectory_pipeline.schema import DAY_US

HORIZON_DAYS = 7
QUIET_SECONDS = 10 * 60
CURSOR_VERSION = 1


class FileState(NamedTuple):
    """What a stat tells about a transcript file."""

    path: str
    size: int
    mtime_us: int


def file_states(roots: Sequence[SourceRoot]) -> list[FileState]:
    """Every transcript file under the roots, as ingestion lists them, with its size and mtime.

    Raises ingest.SourceUnreadableError when a folder cannot be listed. A file that vanishes
    between listing and stat is left out: ingestion reports it if it is still there then.
    """
    found = []
    for root in roots:
        for path in matching_files(root):
            try:
                info = os.stat(path)
            except OSError:
                continue
            if stat.S_ISREG(info.st_mode):
                found.append(FileState(str(path), info.st_size, info.st_mtime_ns // 1000))
    return found


def fingerprint(file: FileState) -> str:
    """16 hex characters that change whenever the file's path, size or mtime does."""
    text = f"{file.path}\0{file.size}\0{file.mtime_us}"
    return hashlib.blake2b(text.encode("utf-8", "surrogateescape"), digest_size=8).hexdigest()


def utc_day(us: int) -> dt.date:
    return dt.datetime.fromtimestamp(us / 1_000_000, dt.UTC).date()


def days_held(mtime_us: int) -> tuple[dt.date, dt.date, dt.date]:
    """The days whose sessions a file last modified at `mtime_us` can have new events for."""
    day = utc_day(mtime_us)
    return day - dt.timedelta(days=1), day, day + dt.timedelta(days=1)


def day_spans(days: Iterable[dt.date]) -> list[tuple[dt.date, dt.date]]:
    """Sorted days grouped into runs of consecutive days: [(first, last), ...]."""
    result: list[tuple[dt.date, dt.date]] = []
    for day in sorted(set(days)):
        if result and day == result[-1][1] + dt.timedelta(days=1):
            result[-1] = (result[-1][0], day)
        else:
            result.append((day, day))
    return result


@dataclass(frozen=True)
class Watch:
    """What the sensor saw: fingerprints of recent files, and days waiting to be ingested."""

    seen: frozenset[str] = frozenset()
    pending: Mapping[str, int] = field(default_factory=dict)  # ISO day -> last change, µs

    @classmethod
    def from_cursor(cls, cursor: str | None) -> Watch:
        if not cursor:
            return cls()
        try:
            data = json.loads(cursor)
            if data.get("v") != CURSOR_VERSION:
                raise ValueError(f"version {data.get('v')!r}")
            seen = frozenset(str(item) for item in data["seen"])
            pending = {str(day): int(last) for day, last in data["pending"].items()}
            for day in pending:
                dt.date.fromisoformat(day)
        except (ValueError, TypeError, KeyError, AttributeError) as err:
            raise ValueError(
                f'new_sessions_sensor cursor must be {{"v": {CURSOR_VERSION}, "seen": [...], '
                f'"pending": {{day: µs}}}} as the sensor writes it ({err}), got {cursor[:120]!r}. '
                "Clear the sensor's cursor in the UI to start over."
            ) from None
        return cls(seen, pending)

    def to_cursor(self) -> str:
        data = {"v": CURSOR_VERSION, "seen": sorted(self.seen), "pending": dict(sorted(self.pending.items()))}
        return json.dumps(data, separators=(",", ":"))


@dataclass(frozen=True)
class WatchUpdate:
    """One tick's outcome: the new state, what changed, and what to ingest now."""

    watch: Watch
    files: int  # recent files watched
    changed: int  # of which new or grown since the last tick
    ready: Mapping[str, int]  # days to ingest now -> their last change, µs
    waiting: list[str]  # pending days not ready yet (not over, or files still changing)

    @property
    def spans(self) -> list[tuple[dt.date, dt.date]]:
        """The ready days as runs of consecutive days, one ingestion run each."""
        return day_spans(dt.date.fromisoformat(day) for day in self.ready)

    def last_change(self, first: dt.date, last: dt.date) -> int:
        """The latest change behind a span of ready days: with the span, it names the run."""
        return max(us for day, us in self.ready.items() if first.isoformat() <= day <= last.isoformat())


def advance(
    watch: Watch,
    files: Iterable[FileState],
    now_us: int,
    first_day: dt.date,
    last_day: dt.date | None,
    *,
    horizon_days: int = HORIZON_DAYS,
    quiet_seconds: int = QUIET_SECONDS,
) -> WatchUpdate:
    """Compare `files` with what `watch` saw; days before `first_day` are not partitions and are
    dropped, days after `last_day` (the last day that is over, None before the first) wait."""
    horizon = now_us - horizon_days * DAY_US
    recent = {fingerprint(file): file for file in files if file.mtime_us >= horizon}
    pending = dict(watch.pending)
    changed = [file for key, file in recent.items() if key not in watch.seen]
    for file in changed:
        for held in days_held(file.mtime_us):
            if held >= first_day:
                pending[held.isoformat()] = max(pending.get(held.isoformat(), 0), file.mtime_us)
    quiet_us = quiet_seconds * 1_000_000
    ready = {
        day: last_change
        for day, last_change in pending.items()
        if last_day is not None
        and dt.date.fromisoformat(day) <= last_day
        and now_us - last_change >= quiet_us
    }
    for iso_day in ready:
        del pending[iso_day]
    return WatchUpdate(
        watch=Watch(frozenset(recent), pending),
        files=len(recent),
        changed=len(changed),
        ready=ready,
        waiting=sorted(pending),
    )
