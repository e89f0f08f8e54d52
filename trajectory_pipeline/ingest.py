"""Ingest one UTC day of sessions from every source root into two Parquet files.

A day's partition holds every session whose *first event* falls on that day,
so a session that runs past midnight stays whole. Files that cannot hold such
a session are skipped before they are parsed (modification time, dates in
the path, the start read from the file's head); the rest are streamed, their
texts redacted, and written in batches, so memory stays flat.

    stats = ingest_day(roots, datetime.date(2026, 11, 20), events_path, quarantine_path)
"""

from __future__ import annotations

import datetime as dt
import os
import re
import stat
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatch
from pathlib import Path
from typing import Any, NamedTuple

from trajectory_pipeline.parquet_io import BatchWriter
from trajectory_pipeline.parsers import PARSERS, detect_source
from trajectory_pipeline.parsers.lines import MAX_LINE_BYTES, read_head
from trajectory_pipeline.redact import Redactor
from trajectory_pipeline.schema import (
    EVENT_SCHEMA,
    EXCERPT_CHARS,
    QUARANTINE_SCHEMA,
    BadLine,
    Event,
    cap_text,
    excerpt,
)

DAY_US = 86_400 * 1_000_000

# Sources whose tools write the session's (local) start date into the file path.
# Local time may be a day off UTC, so a path date only rules a file out when it
# is more than a day away from the partition.
PATH_DATED_SOURCES = frozenset({"codex", "own_agent", "gemini_cli"})
_PATH_DATE = re.compile(r"(\d{4})[-/](\d{2})[-/](\d{2})")

# Event fields that can carry free text from the session, and so secrets.
REDACTED_FIELDS = ("text", "tool_input", "cwd")

WRONG_SOURCE_FOLDER = "wrong_source_folder"
UNRECOGNIZED_FORMAT = "unrecognized_format"
UNREADABLE_FILE = "unreadable_file"


@dataclass(frozen=True)
class SourceRoot:
    """A folder that holds one source's transcripts."""

    source: str
    root: Path


@dataclass
class IngestStats:
    """What one day's ingestion read, skipped, kept, quarantined and redacted."""

    day: str
    files_read: int = 0
    files_skipped: Counter[str] = field(default_factory=Counter)
    rows: int = 0
    rows_by_source_kind: Counter[tuple[str, str]] = field(default_factory=Counter)
    sessions_by_source: dict[str, set[str]] = field(default_factory=dict)
    quarantined: Counter[str] = field(default_factory=Counter)
    redactions: Counter[str] = field(default_factory=Counter)
    truncated_texts: int = 0
    misassigned_files: list[str] = field(default_factory=list)

    @property
    def sessions(self) -> int:
        return sum(len(ids) for ids in self.sessions_by_source.values())


def day_bounds(day: dt.date) -> tuple[int, int]:
    """[start, end) of a UTC day in µs since the epoch."""
    start = int(dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC).timestamp()) * 1_000_000
    return start, start + DAY_US


class SourceUnreadableError(Exception):
    """A folder under a source root cannot be listed: ingesting around it would lose data silently."""


class CandidateFile(NamedTuple):
    source: str  # the format the file is read as (sniffed), or its root's when unrecognized
    placed_under: str  # the source whose root the file was found under
    path: Path
    mtime_us: int
    size: int
    problem: str | None = None  # a reason to quarantine the whole file instead of reading it
    note: str = ""


def candidate_files(roots: Sequence[SourceRoot]) -> list[CandidateFile]:
    """Every file under the roots that matches its parser's patterns, sniffed, in a stable order.

    A file reachable twice (overlapping roots, symlinks) is listed once, by inode. A folder
    that cannot be listed raises SourceUnreadableError rather than being skipped.
    """
    seen: set[tuple[int, int]] = set()
    found = []
    for root in roots:
        for path in matching_files(root):
            try:
                info = path.stat()
            except OSError as err:  # a dangling link, or a file deleted since the listing
                found.append(_unreadable(root.source, path, err))
                continue
            if not stat.S_ISREG(info.st_mode) or (info.st_dev, info.st_ino) in seen:
                continue
            seen.add((info.st_dev, info.st_ino))
            found.append(_sniffed(root.source, path, info.st_mtime_ns // 1000, info.st_size))
    return found


def matching_files(root: SourceRoot) -> list[Path]:
    """Every file under the root whose name fits the source's globs, sorted; listing only, nothing
    is opened (the file sensor stats these). A folder that cannot be listed is an error."""
    names = [pattern.removeprefix("**/") for pattern in PARSERS[root.source].globs]

    def refuse(err: OSError) -> None:
        raise SourceUnreadableError(
            f"{root.source}: cannot list {err.filename} ({err.strerror}). Give this user read access "
            f"to everything under {root.root}, or move that folder out of it."
        )

    matches = []
    for folder, _, files in os.walk(root.root, onerror=refuse):
        matches += [Path(folder, name) for name in files if any(fnmatch(name, n) for n in names)]
    return sorted(matches)


def _unreadable(source: str, path: Path, err: OSError) -> CandidateFile:
    try:
        mtime_us = path.lstat().st_mtime_ns // 1000
    except OSError:
        mtime_us = 0
    return CandidateFile(source, source, path, mtime_us, 0, UNREADABLE_FILE, f"{err.strerror}: {path}")


def _sniffed(placed_under: str, path: Path, mtime_us: int, size: int) -> CandidateFile:
    """Read the file's head once, to know which parser reads it (and to report a wrong folder)."""
    try:
        head = read_head(path)
    except OSError as err:
        return _unreadable(placed_under, path, err)
    if PARSERS[placed_under].sniff(path, head):
        return CandidateFile(placed_under, placed_under, path, mtime_us, size)
    detected = detect_source(path, head)
    if detected is None:
        note = f"no parser recognizes this file (placed under the {placed_under} root)"
        return CandidateFile(placed_under, placed_under, path, mtime_us, size, UNRECOGNIZED_FORMAT, note)
    note = f"looks like {detected}, found under the {placed_under} root; parsed as {detected}"
    return CandidateFile(detected, placed_under, path, mtime_us, size, None, note)


def path_date(path: Path) -> dt.date | None:
    """The last YYYY-MM-DD (or YYYY/MM/DD) date written in the path, if any."""
    found = _PATH_DATE.findall(str(path))
    if not found:
        return None
    year, month, day = map(int, found[-1])
    try:
        return dt.date(year, month, day)
    except ValueError:
        return None


def skip_reason(source: str, path: Path, day: dt.date, mtime_us: int) -> str | None:
    """Why `path` cannot hold a session starting on `day`, or None when it must be read."""
    start, end = day_bounds(day)
    # A session starting that day writes on or after it; a day of slack covers agents that
    # write local times without a zone (read as UTC), which can put a start after the mtime.
    if mtime_us < start - DAY_US:
        return "modified_before_day"
    if source in PATH_DATED_SOURCES:
        dated = path_date(path)
        if dated is not None and abs((dated - day).days) > 1:
            return "path_date"
    earliest = PARSERS[source].earliest_start(path)
    if earliest is not None and earliest >= end:
        return "starts_after_day"
    return None


class _DayWriter:
    """Filters parsed items to one day, redacts them, and streams them to Parquet."""

    def __init__(
        self, day: dt.date, events: BatchWriter, quarantine: BatchWriter, redactor: Redactor
    ) -> None:
        self.start, self.end = day_bounds(day)
        self.events = events
        self.quarantine = quarantine
        self.redactor = redactor
        self.stats = IngestStats(day.isoformat())
        self._path, self._shown_path = "", ""

    def start_file(self, path: Path) -> None:
        """Paths hold user names too (/home/dana/.claude/projects/-home-dana-app): redact once per file."""
        self._path = str(path)
        self._shown_path = self.redactor.redact(self._path)[0]

    def _shown(self, source_path: str) -> str:
        return self._shown_path if source_path == self._path else self.redactor.redact(source_path)[0]

    def on_day(self, session_start: int | None) -> bool:
        return session_start is not None and self.start <= session_start < self.end

    def add_event(self, item: Event) -> None:
        counts: Counter[str] = Counter()
        cleaned_fields: dict[str, Any] = {}
        for name in REDACTED_FIELDS:
            value = getattr(item, name)
            if value:
                cleaned, found = self.redactor.redact(value)
                if found:
                    counts.update(found)
                    cleaned_fields[name] = cleaned
        if counts:
            self.stats.redactions.update(counts)
            cleaned_fields["redactions"] = item.redactions + counts.total()
        if item.source_path != self._shown_path:
            cleaned_fields["source_path"] = self._shown(item.source_path)
        text, truncated = cap_text(cleaned_fields.get("text", item.text))
        if truncated:
            cleaned_fields.update(text=text, text_truncated=True)
        if cleaned_fields:
            item = item._replace(**cleaned_fields)
        self.events.add(item)
        stats = self.stats
        stats.rows += 1
        stats.rows_by_source_kind[(item.source, item.kind)] += 1
        stats.sessions_by_source.setdefault(item.source, set()).add(item.session_id)
        if item.text_truncated:
            stats.truncated_texts += 1

    def add_bad_line(self, bad: BadLine) -> None:
        cleaned, found = self.redactor.redact(bad.excerpt)
        self.stats.redactions.update(found)
        bad = bad._replace(excerpt=cleaned[:EXCERPT_CHARS], source_path=self._shown(bad.source_path))
        self.quarantine.add(bad)
        self.stats.quarantined[bad.reason] += 1


def _file_level_bad_line(file: CandidateFile, reason: str) -> BadLine:
    return BadLine(file.source, str(file.path), 0, reason, excerpt(file.note), file.size, None, file.mtime_us)


def ingest_file(writer: _DayWriter, file: CandidateFile, max_line_bytes: int) -> None:
    """Parse one file and keep what belongs to the writer's day."""
    if file.placed_under != file.source:
        writer.stats.misassigned_files.append(f"{file.path}: {file.note}")
        if writer.on_day(file.mtime_us):
            writer.add_bad_line(_file_level_bad_line(file, WRONG_SOURCE_FOLDER))
    writer.start_file(file.path)
    try:
        for item in PARSERS[file.source].parse(file.path, max_line_bytes=max_line_bytes):
            if isinstance(item, Event):
                if writer.on_day(item.session_start):
                    writer.add_event(item)
            elif writer.on_day(item.session_start if item.session_start is not None else file.mtime_us):
                writer.add_bad_line(item)
    except OSError as err:  # deleted or truncated by its agent while being read
        if writer.on_day(file.mtime_us):
            failed = file._replace(note=f"{err.strerror} while reading {file.path}")
            writer.add_bad_line(_file_level_bad_line(failed, UNREADABLE_FILE))


def ingest_day(
    roots: Sequence[SourceRoot],
    day: dt.date,
    events_path: Path,
    quarantine_path: Path,
    *,
    redactor: Redactor | None = None,
    max_line_bytes: int = MAX_LINE_BYTES,
    files: Sequence[CandidateFile] | None = None,
) -> IngestStats:
    """Write the events and quarantined lines of sessions starting on `day` to two Parquet files.

    `files` lets a run over many days list the roots once; by default they are listed here.
    """
    redactor = redactor if redactor is not None else Redactor()
    with (
        BatchWriter(events_path, EVENT_SCHEMA) as events,
        BatchWriter(quarantine_path, QUARANTINE_SCHEMA) as quarantine,
    ):
        writer = _DayWriter(day, events, quarantine, redactor)
        for file in candidate_files(roots) if files is None else files:
            if file.problem is not None:
                writer.stats.files_skipped[file.problem] += 1
                if writer.on_day(file.mtime_us):
                    writer.add_bad_line(_file_level_bad_line(file, file.problem))
                continue
            reason = skip_reason(file.source, file.path, day, file.mtime_us)
            if reason is not None:
                writer.stats.files_skipped[reason] += 1
                continue
            writer.stats.files_read += 1
            ingest_file(writer, file, max_line_bytes)
    return writer.stats
