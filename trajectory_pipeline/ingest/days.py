"""Ingest UTC days of sessions from every source root, each day into two Parquet files.

A day's partition holds every session whose *first event* falls on that day,
so a session that runs past midnight stays whole. Files that cannot hold such
a session are skipped before they are parsed (modification time, dates in
the path, the start read from the file's head); the rest are streamed, their
texts redacted, and written in batches, so memory stays flat. A range of days
reads each file once for all the days it can hold, in chunks of days that can
run in worker processes; each day's files are the same as ingesting it alone.

A session is written once however many copies of its file there are (`_Copies`: the same file in
two folders, a renamed copy, an older backup): a day reads its files in path order, and the
events of a later copy that repeat what an earlier one gave are skipped, counted
(`IngestStats.duplicate_events`) and reported by one `duplicate_session` row per copy naming
both files. A file found under another format's root is parsed by its own format and reported
(`wrong_source_folder`, and `misassigned_files`, its path redacted) on its first session's day.

Event stores (`stores.py`: a database of agent events, `sql_events.py`) are not files: each pass
of days asks each store once for the sessions that start on its days, and their events go through
the same day writers (redaction, caps, duplicate checks, statistics, quarantine) as a file's.

    stats = ingest_day(roots, datetime.date(2026, 11, 20), events_path, quarantine_path)
    by_day = ingest_days(roots, {day: (events_path, quarantine_path), ...}, workers=2, stores=[store])
"""

from __future__ import annotations

import bisect
import contextlib
import datetime as dt
import itertools
import math
import os
import re
import stat
from array import array
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatch
from pathlib import Path
from typing import Any, NamedTuple, TypeVar, cast, overload

from trajectory_pipeline import parallel
from trajectory_pipeline.config import knob
from trajectory_pipeline.ingest.formats import FORMATS
from trajectory_pipeline.ingest.listing import CandidateFile, FileListing
from trajectory_pipeline.ingest.parsers.lines import MAX_LINE_BYTES, read_head
from trajectory_pipeline.ingest.redact import Redactor
from trajectory_pipeline.ingest.stores import EventStore
from trajectory_pipeline.parquet_io import BatchWriter, SharedBudget
from trajectory_pipeline.schema import (
    DAY_US,
    DUPLICATE_SESSION,
    EVENT_SCHEMA,
    EXCERPT_CHARS,
    QUARANTINE_SCHEMA,
    REPAIR_REASONS,
    TEXT_CAP_CHARS,
    BadLine,
    Event,
    cap_text,
    excerpt,
)

# Sources whose tools write the session's (local) start date into the file path.
# Local time may be a day off UTC, so a path date only rules a file out when it
# is more than a day away from the partition.
_PATH_DATE = re.compile(r"(\d{4})[-/](\d{2})[-/](\d{2})")

# Event fields that can carry free text from the session, and so secrets.
REDACTED_FIELDS = ("text", "tool_input", "cwd")

# The most days one pass holds writers open for. A file whose sessions may start in two passes'
# days is parsed by both: a 40-day range in 7-day passes parsed 1.40 times its bytes, in two
# 20-day passes 1.08 times, most of it chat exports, whose head bounds nothing (read by every
# pass up to their last write until `session_starts` narrowed them to their conversations'
# days). But a pass's memory grows by about 3 MiB per open day (writers, statistics), and two
# 20-day passes on two cores took the bench past 1 GiB for a few percent of speed.
CHUNK_DAYS = 7
# Rows a day's writer holds before writing them out, and what all the writers of a pass may hold
# together (SharedBudget), however many days it has open.
DAY_BATCH_ROWS = 4096
PASS_BUFFER_ROWS = 7 * DAY_BATCH_ROWS
PASS_BUFFER_BYTES = 64 * 1024 * 1024
# Below this much to read, worker processes cost more to start than they save: on 2 cores a
# busy user's own-agent logs (6.5 MB a day) broke even at about 16 MB (3 days: 1.91 s in two
# processes, 2.09 s in one; 6 days: 2.7 s against 3.9 s). The weekly retrain's range is above it.
PARALLEL_MIN_BYTES = 16 * 1024 * 1024
# Planning looks into every file that may hold a session of the range (`_verdicts`: its head, or
# a chat export's whole body): 45,000 files of the bench's mixed corpus took 4.5 s of one core
# while the workers waited. From this many files to look into, the workers look, in parts, when
# the range has PARALLEL_MIN_BYTES to read (else no fork server is started for the looks alone).
PARALLEL_LOOK_FILES = 2048

MODIFIED_BEFORE_DAY = "modified_before_day"
PATH_DATE = "path_date"
STARTS_AFTER_DAY = "starts_after_day"
WRONG_SOURCE_FOLDER = "wrong_source_folder"
UNRECOGNIZED_FORMAT = "unrecognized_format"
UNREADABLE_FILE = "unreadable_file"
NO_SESSION_STARTS = "no_session_starts"  # the file was read through: none of its sessions starts that day
# A parser that raised past its own per-record guard: what it gave before stays, the rest of the
# file is not read, and this row (line 0, the exception and the last line read) says so.
PARSER_FAILED = "parser_failed"

# The range of a Parquet int64 column: a value outside it would fail the whole day's write.
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


@dataclass(frozen=True)
class IngestOptions:
    """How lines are read and what is redacted besides secrets."""

    max_line_bytes: int = knob(MAX_LINE_BYTES, "Lines longer than this are quarantined as oversize_line.")
    redact_emails: bool = knob(True, "Replace e-mail addresses with a placeholder.")
    redact_home_paths: bool = knob(True, "Replace user names in home-folder paths (/home/<user>/...).")

    def __post_init__(self) -> None:
        if isinstance(self.max_line_bytes, bool) or self.max_line_bytes < 1:
            raise ValueError(
                f"max_line_bytes must be a positive number of bytes, got {self.max_line_bytes!r}"
            )

    def redactor(self) -> Redactor:
        return Redactor(emails=self.redact_emails, home_paths=self.redact_home_paths)


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
    # Sessions per source: counts, not ids. A day is written by one pass, which keeps its ids while
    # it runs; a range run holds every day's stats until its end (a year: hundreds of thousands of ids).
    sessions_by_source: Counter[str] = field(default_factory=Counter)
    quarantined: Counter[str] = field(default_factory=Counter)
    redactions: Counter[str] = field(default_factory=Counter)
    truncated_texts: int = 0
    misassigned_files: list[str] = field(default_factory=list)
    # Lines kept by mending them (a lone surrogate read as U+FFFD), by what was mended.
    repaired: Counter[str] = field(default_factory=Counter)
    # Events not written because another copy of their session's file gave them (duplicate_session).
    duplicate_events: int = 0
    # Rows an event store (a database) gave this day, events and quarantined rows, by store label.
    database_rows: Counter[str] = field(default_factory=Counter)

    @property
    def sessions(self) -> int:
        return self.sessions_by_source.total()


def day_bounds(day: dt.date) -> tuple[int, int]:
    """[start, end) of a UTC day in µs since the epoch."""
    start = int(dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC).timestamp()) * 1_000_000
    return start, start + DAY_US


class SourceUnreadableError(Exception):
    """A folder under a source root cannot be listed: ingesting around it would lose data silently."""


def candidate_files(roots: Sequence[SourceRoot]) -> FileListing:
    """Every file under the roots that matches its parser's patterns, sniffed, in a stable order.

    A file reachable twice (overlapping roots, symlinks) is listed once, by inode. A folder
    that cannot be listed raises SourceUnreadableError rather than being skipped.
    """
    seen: set[int] = set()  # device and inode as one int (a tuple each took twice the memory)
    found = FileListing()
    for root in roots:
        for path in matching_files(root):
            try:
                info = os.stat(path)
            except OSError as err:  # a dangling link, or a file deleted since the listing
                found.append(_unreadable(root.source, path, err))
                continue
            inode = info.st_dev << 128 | info.st_ino  # inode numbers may be 128-bit (Windows, ReFS)
            if not stat.S_ISREG(info.st_mode) or inode in seen:
                continue
            seen.add(inode)
            found.append(_sniffed(root.source, path, info.st_mtime_ns // 1000, info.st_size))
    return found


def matching_files(root: SourceRoot) -> list[str]:
    """Every file under the root whose name fits the source's globs, in path order (as sorted Paths
    compare, part by part); listing only, nothing is opened (the file sensor stats these). A folder
    that cannot be listed is an error.

    Paths as strings, walked folder by folder in name order: a year of transcripts is hundreds of
    thousands of files, and a Path for each, held until sorted, took a hundred megabytes that the
    process kept after the listing.
    """
    names = [pattern.removeprefix("**/") for pattern in FORMATS[root.source].globs]
    matches: list[str] = []

    def walk(folder: str) -> None:
        try:
            with os.scandir(folder) as entries:
                listed = sorted(entries, key=lambda entry: entry.name)
        except OSError as err:
            raise SourceUnreadableError(
                f"{root.source}: cannot list {err.filename} ({err.strerror}). Give this user read "
                f"access to everything under {root.root}, or move that folder out of it."
            ) from None
        for entry in listed:
            path = entry.name if folder == "." else os.path.join(folder, entry.name)
            try:
                is_dir = entry.is_dir()
            except OSError:  # as os.walk: what cannot be told a folder is a file
                is_dir = False
            if not is_dir:
                if any(fnmatch(entry.name, name) for name in names):
                    matches.append(path)
            elif not entry.is_symlink():  # as os.walk: a linked folder is not followed
                walk(path)

    walk(str(Path(root.root)))
    return matches


def _unreadable(source: str, path: str, err: OSError) -> CandidateFile:
    try:
        mtime_us = os.lstat(path).st_mtime_ns // 1000
    except OSError:
        mtime_us = 0
    return CandidateFile(source, source, path, mtime_us, 0, UNREADABLE_FILE, f"{err.strerror}: {path}")


def _sniffed(placed_under: str, location: str, mtime_us: int, size: int) -> CandidateFile:
    """Read the file's head once, to know which parser reads it (and to report a wrong folder)."""
    path = Path(location)
    try:
        head = read_head(path)
    except OSError as err:
        return _unreadable(placed_under, location, err)
    if _sniff(placed_under, path, head):
        return CandidateFile(placed_under, placed_under, location, mtime_us, size)
    detected = next((name for name in FORMATS if _sniff(name, path, head)), None)
    if detected is None:
        note = f"no parser recognizes this file (placed under the {placed_under} root)"
        return CandidateFile(placed_under, placed_under, location, mtime_us, size, UNRECOGNIZED_FORMAT, note)
    note = f"looks like {detected}, found under the {placed_under} root; parsed as {detected}"
    return CandidateFile(detected, placed_under, location, mtime_us, size, None, note)


def _sniff(source: str, path: Path, head: bytes) -> bool:
    """Whether the head looks like `source`'s format; a sniffer that fails on it says no."""
    try:
        return FORMATS[source].sniff(path, head)
    except Exception:
        return False


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


def day_index(day: dt.date) -> int:
    """Days since the epoch: the day of a µs timestamp is `micros // DAY_US`."""
    return day.toordinal() - _EPOCH_ORDINAL


_EPOCH_ORDINAL = dt.date(1970, 1, 1).toordinal()


_Found = TypeVar("_Found")
Verdict = tuple[str | None, int, int]  # (why the file is skipped, or None: it is read), first day, last day


def _verdicts(
    source: str, path: Path, mtime_us: int, first: int, last: int, max_line_bytes: int = MAX_LINE_BYTES
) -> list[Verdict]:
    """Which days of [first, last] (day indexes) must read the file (reason None), and why the
    others need not, as (reason, lo, hi) spans: every check rules out a run of days, so a range
    of any length costs one look at the file (its head at most; the whole file for a format whose
    head bounds nothing, `session_starts`, where the days left are those its sessions start on
    and its last write's and the next, where rows without a session land).
    """
    # A session starting on day d writes on or after it; a day of slack covers agents that write
    # local times without a zone (read as UTC), which can put a start after the mtime.
    last_write = mtime_us // DAY_US + 1
    spans: list[Verdict] = [(MODIFIED_BEFORE_DAY, max(first, last_write + 1), last)]
    lo, hi = first, min(last, last_write)
    spec = FORMATS[source]
    dated = path_date(path) if spec.path_dated else None
    if dated is not None:
        d = day_index(dated)
        spans += [(PATH_DATE, lo, min(hi, d - 2)), (PATH_DATE, max(lo, d + 2), hi)]
        lo, hi = max(lo, d - 1), min(hi, d + 1)
    starts = _looked(spec.session_starts, path, max_line_bytes) if lo <= hi and spec.session_starts else None
    if starts is not None:
        # The days its sessions start on, its last write's (rows without a session land there) and
        # the day of slack above (a file written again before it is parsed may move its fallback
        # start there).
        days = {start // DAY_US for start in starts} | {last_write - 1, last_write}
        spans += _runs_of(lo, hi, lambda day: None if day in days else NO_SESSION_STARTS)
    else:
        earliest = _looked(spec.earliest_start, path) if lo <= hi else None
        if earliest is not None:
            spans.append((STARTS_AFTER_DAY, lo, min(hi, earliest // DAY_US - 1)))
            lo = max(lo, earliest // DAY_US)
        spans.append((None, lo, hi))
    return [span for span in spans if span[1] <= span[2]]


def _looked(look: Callable[..., _Found], *args: object) -> _Found | None:
    """What a look into the file finds, or None where it fails: the file is then read for every
    day, and parsing reports what is wrong with it. A file that cannot be read raises OSError."""
    try:
        return look(*args)
    except OSError:
        raise
    except Exception:
        return None


def _runs_of(lo: int, hi: int, reason_of: Callable[[int], str | None]) -> list[Verdict]:
    """The days lo..hi as spans of one reason each."""
    spans: list[Verdict] = []
    for day in range(lo, hi + 1):
        reason = reason_of(day)
        if spans and spans[-1][0] == reason:
            spans[-1] = (reason, spans[-1][1], day)
        else:
            spans.append((reason, day, day))
    return spans


class _Texts:
    """Redaction of the texts that repeat across a file's events (its path, the working folder)."""

    LIMIT = 4096

    def __init__(self, redactor: Redactor) -> None:
        self.redactor = redactor
        self._done: dict[str, tuple[str, dict[str, int]]] = {}

    def redact(self, text: str) -> tuple[str, dict[str, int]]:
        done = self._done.get(text)
        if done is None:
            if len(self._done) >= self.LIMIT:
                self._done.clear()
            done = self._done[text] = self.redactor.redact(text)
        return done


_EVENT_FIELD = {name: i for i, name in enumerate(Event._fields)}
_TEXT, _TEXT_TRUNCATED = _EVENT_FIELD["text"], _EVENT_FIELD["text_truncated"]
_SOURCE_PATH, _REDACTIONS = _EVENT_FIELD["source_path"], _EVENT_FIELD["redactions"]
_EXIT_CODE = _EVENT_FIELD["exit_code"]


def _count_into(counts: Counter[str], found: dict[str, int]) -> int:
    """Add a redaction's counts (Counter.update's generic path costs more than the redaction
    of a short text) and return how many there were."""
    total = 0
    for kind, n in found.items():
        counts[kind] += n
        total += n
    return total


class _DayWriter:
    """Redacts one day's events and bad lines and streams them to its two Parquet files."""

    def __init__(self, day: dt.date, events: BatchWriter, quarantine: BatchWriter, texts: _Texts) -> None:
        self.events = events
        self.quarantine = quarantine
        self.redactor = texts.redactor
        self.texts = texts
        self.stats = IngestStats(day.isoformat())  # its sessions counted only in `finished`
        self._sessions: dict[str, set[str]] = {}  # ids by source, counted into the stats at the end
        self._copies: dict[tuple[str, str], _Copies] = {}  # by (source, session_id)
        self._file = -1  # which file (in reading order) the events now added come from
        self._shown_path = ""
        # The working folder repeats across a file's events: its redaction is remembered.
        self._redacted_fields = (
            (_TEXT, self.redactor.redact),
            (_EVENT_FIELD["tool_input"], self.redactor.redact),
            (_EVENT_FIELD["cwd"], texts.redact),
        )

    def begin_file(self, shown_path: str) -> None:
        """The events added next come from this file (files come in listing order)."""
        self._file += 1
        self._shown_path = shown_path

    def _copied(self, item: Event) -> bool:
        """Whether the event repeats its session as another file gave it (see `_Copies`): it is then
        counted, reported once per file and session as `duplicate_session`, and not written."""
        key = (item.source, item.session_id)
        copies = self._copies.get(key)
        if copies is None:
            copies = self._copies[key] = _Copies(self._file, self._shown_path)
        if not copies.repeats(item, self._file):
            return False
        self.stats.duplicate_events += 1
        if self._file not in copies.reported:
            copies.reported.add(self._file)
            # The kept file first: the excerpt is cut to EXCERPT_CHARS, and this row names the copy.
            note = (
                f"{copies.first_path} holds this session too and was read first; the events of this "
                f"copy that repeat it are skipped (session {item.session_id})"
            )
            row = BadLine(
                item.source,
                item.source_path,
                item.line_no,
                DUPLICATE_SESSION,
                note,
                0,
                item.session_id,
                item.session_start,
            )
            self.add_bad_line(row, self._shown_path)
        return True

    def add_event(self, item: Event, shown_path: str) -> None:
        # Runs once per event: a few attribute reads, no per-event tuples or dicts unless a
        # field changes (most events carry no secret and are written as parsed).
        if self._copied(item):
            return
        stats = self.stats
        changed: list[Any] | None = None
        for index, redact in self._redacted_fields:
            value = cast("str | None", item[index])  # text, tool_input, cwd
            if value:
                cleaned, found = redact(value)
                if found:
                    changed = changed or list(item)
                    changed[index] = cleaned
                    changed[_REDACTIONS] += _count_into(stats.redactions, found)
        if item.source_path != shown_path:
            changed = changed or list(item)
            changed[_SOURCE_PATH] = shown_path
        if item.exit_code is not None and not _INT64_MIN <= item.exit_code <= _INT64_MAX:
            changed = changed or list(item)
            changed[_EXIT_CODE] = None  # "Exit code 99999999999999999999": no status, and no failed day
        text = item.text if changed is None else changed[_TEXT]
        if text is not None and len(text) > TEXT_CAP_CHARS:
            changed = changed or list(item)
            changed[_TEXT] = cap_text(text)[0]
            changed[_TEXT_TRUNCATED] = True
            stats.truncated_texts += 1
        elif item.text_truncated:
            stats.truncated_texts += 1
        if changed is not None:
            item = Event._make(changed)
        self.events.add(item, len(item.text or "") + len(item.tool_input or ""))
        stats.rows += 1
        stats.rows_by_source_kind[(item.source, item.kind)] += 1
        sessions = self._sessions.get(item.source)
        if sessions is None:
            sessions = self._sessions[item.source] = set()
        sessions.add(item.session_id)

    def finished(self) -> IngestStats:
        """The day's stats once its pass has read everything: its sessions counted."""
        self.stats.sessions_by_source = Counter({source: len(ids) for source, ids in self._sessions.items()})
        return self.stats

    def add_bad_line(self, bad: BadLine, shown_path: str) -> None:
        if bad.reason in REPAIR_REASONS:  # the line was kept: a repair to count, not a row
            self.stats.repaired[bad.reason] += 1
            return
        cleaned, found = self.redactor.redact_excerpt(bad.excerpt)
        _count_into(self.stats.redactions, found)
        bad = bad._replace(excerpt=cleaned[:EXCERPT_CHARS], source_path=shown_path)
        self.quarantine.add(bad)
        self.stats.quarantined[bad.reason] += 1


class _Copies:
    """What one session's files gave a day, to read the session once however many copies of its
    files there are (the same file in two folders, a renamed copy, a backup taken mid-session).

    An event repeats the session when a file read before this one gave an event with the same
    content (time, role, kind, text, tool call, ids: all but where it sits), or when a file of
    the same name gave the session an event at this position or later (`seq`): ids downstream are
    made of session, file name and position, and a same-named copy that went on differently
    would give two decisions one id. So of identical copies the first in listing (path) order is
    kept; of a copy and a longer one, the longer one's extra events are kept too; and files that
    are parts of one session (a sub-agent's, the next day's log) add to it, their events differing.
    """

    __slots__ = ("first_path", "last_seq", "name_owner", "reported", "seen")

    def __init__(self, file: int, shown_path: str) -> None:
        self.first_path = shown_path
        self.seen: dict[int, int] = {}  # content hash -> the file that gave it first
        self.name_owner: dict[str, int] = {}  # file name -> the first file of that name
        self.last_seq: dict[str, int] = {}  # file name -> the last position kept under it
        self.reported: set[int] = set()

    def repeats(self, item: Event, file: int) -> bool:
        fingerprint = hash(
            (
                item.ts,
                item.role,
                item.kind,
                item.text,
                item.tool_name,
                item.tool_call_id,
                item.tool_input,
                item.event_id,
                item.parent_id,
                item.agent_id,
                item.is_sidechain,
                item.is_error,
                item.exit_code,
            )
        )
        if self.seen.setdefault(fingerprint, file) != file:
            return True
        name = item.source_path.rpartition("/")[2]
        owner = self.name_owner.setdefault(name, file)
        if owner != file and item.seq <= self.last_seq[name]:
            return True
        if item.seq > self.last_seq.get(name, -1):
            self.last_seq[name] = item.seq
        return False


def _file_level_bad_line(file: CandidateFile, reason: str) -> BadLine:
    return BadLine(file.source, file.location, 0, reason, excerpt(file.note), file.size, None, file.mtime_us)


def _ingest_file(
    writers: Mapping[int, _DayWriter], file: CandidateFile, texts: _Texts, max_line_bytes: int
) -> None:
    """Parse one file once and hand each event to the writer of the day its session started on.

    `writers` holds the days (indexes) the file is read for; what belongs to other days is dropped.
    """
    path_text = file.location
    shown_path = texts.redact(path_text)[0]

    def shown(source_path: str) -> str:  # a line may name another file (a sub-agent's parent)
        return shown_path if source_path == path_text else texts.redact(source_path)[0]

    mtime_writer = writers.get(file.mtime_us // DAY_US)
    for day_writer in writers.values():
        day_writer.begin_file(shown_path)
    # A file in another format's folder is reported once, on the day of its first session (where
    # its rows are), not on its modification day; on that day when it gives nothing.
    misplaced = file.placed_under != file.source
    last_line = 0
    try:
        for item in FORMATS[file.source].parse(file.path, max_line_bytes=max_line_bytes):
            start = item.session_start
            last_line = item.line_no
            if misplaced:
                misplaced = False
                _report_misplaced(writers, file, shown_path, item.session_id, start)
            if isinstance(item, Event):
                if start is not None and (writer := writers.get(start // DAY_US)) is not None:
                    writer.add_event(item, shown(item.source_path))
                continue
            bad_day = (start if start is not None else file.mtime_us) // DAY_US
            if (writer := writers.get(bad_day)) is not None:
                writer.add_bad_line(item, shown(item.source_path))
    except OSError as err:  # deleted or truncated by its agent while being read
        if mtime_writer is not None:
            failed = file._replace(note=f"{err.strerror} while reading {file.location}")
            mtime_writer.add_bad_line(_file_level_bad_line(failed, UNREADABLE_FILE), shown_path)
    except Exception as err:  # a parser's own failure costs the rest of its file, never the run
        if mtime_writer is not None:
            note = f"{type(err).__name__}: {err} (after line {last_line}; the rest of the file is not read)"
            mtime_writer.add_bad_line(
                _file_level_bad_line(file._replace(note=note), PARSER_FAILED), shown_path
            )
    if misplaced:  # it gave nothing
        _report_misplaced(writers, file, shown_path, None, None)


def _report_misplaced(
    writers: Mapping[int, _DayWriter],
    file: CandidateFile,
    shown_path: str,
    session_id: str | None,
    session_start: int | None,
) -> None:
    """The `wrong_source_folder` row and note of a file read from another format's folder, on the
    day of its first session (its modification day when it has none), its path redacted."""
    start = session_start if session_start is not None else file.mtime_us
    writer = writers.get(start // DAY_US)
    if writer is None:  # that day is another run's (or another pass's) to report
        return
    writer.stats.misassigned_files.append(f"{shown_path}: {file.note}")
    bad = _file_level_bad_line(file, WRONG_SOURCE_FOLDER)
    writer.add_bad_line(bad._replace(session_id=session_id, session_start=start), shown_path)


@dataclass(frozen=True)
class _Chunk:
    """Consecutive days ingested by one pass over the files they need (in one process)."""

    days: tuple[dt.date, ...]
    outputs: tuple[tuple[Path, Path], ...]  # each day's events and quarantine files
    # In listing order, each read for the days [first_days[k], last_days[k]]; as columns, as
    # the listing is: the caller holds every pass's files until the last is done.
    files: FileListing
    first_days: array[int]
    last_days: array[int]
    redactor: Redactor
    max_line_bytes: int
    stores: tuple[EventStore, ...] = ()


def _ingest_store(writers: Mapping[int, _DayWriter], store: EventStore, texts: _Texts) -> None:
    """Ask the store once for the sessions starting on the writers' days (consecutive, as a pass's
    are), and hand each event and bad row to the writer of its session's day."""
    shown_path = texts.redact(store.label)[0]
    for day_writer in writers.values():
        day_writer.begin_file(shown_path)
    lo, hi = min(writers) * DAY_US, (max(writers) + 1) * DAY_US
    for item in store.read(lo, hi):
        start = item.session_start
        writer = writers.get(start // DAY_US) if start is not None else None
        if writer is None:  # a day between two of the pass's days that it does not write
            continue
        writer.stats.database_rows[shown_path] += 1
        if isinstance(item, Event):
            writer.add_event(item, shown_path)
        else:
            writer.add_bad_line(item, shown_path)


def _ingest_chunk(chunk: _Chunk) -> list[IngestStats]:
    texts = _Texts(chunk.redactor)
    budget = SharedBudget(PASS_BUFFER_ROWS, PASS_BUFFER_BYTES)
    with contextlib.ExitStack() as stack:
        writers: dict[int, _DayWriter] = {}
        for day, (events_path, quarantine_path) in zip(chunk.days, chunk.outputs, strict=True):
            events = stack.enter_context(
                BatchWriter(events_path, EVENT_SCHEMA, batch_rows=DAY_BATCH_ROWS, budget=budget)
            )
            quarantine = stack.enter_context(BatchWriter(quarantine_path, QUARANTINE_SCHEMA, budget=budget))
            writers[day_index(day)] = _DayWriter(day, events, quarantine, texts)
        for file, lo, hi in zip(chunk.files, chunk.first_days, chunk.last_days, strict=True):
            targets = {d: writer for d, writer in writers.items() if lo <= d <= hi}
            if not targets:
                continue
            if file.problem is not None:  # lo == hi == its modification day
                bad = _file_level_bad_line(file, file.problem)
                targets[lo].add_bad_line(bad, texts.redact(file.location)[0])
                continue
            _ingest_file(targets, file, texts, chunk.max_line_bytes)
        for store in chunk.stores:
            _ingest_store(writers, store, texts)
    return [writer.finished() for writer in writers.values()]


def ingest_days(
    roots: Sequence[SourceRoot],
    outputs: Mapping[dt.date, tuple[Path, Path]],
    *,
    redactor: Redactor | None = None,
    max_line_bytes: int = MAX_LINE_BYTES,
    files: Sequence[CandidateFile] | None = None,
    workers: int = 1,
    chunk_days: int = CHUNK_DAYS,
    parallel_min_bytes: int = PARALLEL_MIN_BYTES,
    stores: Sequence[EventStore] = (),
) -> dict[dt.date, IngestStats]:
    """Ingest several days, each into its (events, quarantine) pair of files, reading each file once,
    and asking each event store in `stores` once per chunk of days.

    Days go in chunks of at most `chunk_days` consecutive days (what one pass holds open), and
    chunks run in up to `workers` processes once the files to read add up to `parallel_min_bytes`.
    Each day's files are the same, row for row, as `ingest_day` writes for it alone.
    """
    if not outputs:
        return {}
    redactor = redactor if redactor is not None else Redactor()
    files = candidate_files(roots) if files is None else files
    listing = files if isinstance(files, FileListing) else FileListing(files)
    days = sorted(outputs)
    indexes = [day_index(day) for day in days]
    # Likely to run in processes: the fork server's start overlaps the planning, whose looks into
    # files go to the workers too. Otherwise the looks stay here, with no server to start for them.
    likely_in_processes = (
        workers > 1 and listing.bytes_modified_since(indexes[0] * DAY_US) >= parallel_min_bytes
    )
    if likely_in_processes:
        parallel.warm_up(workers)
    # Per reason (None: read), +1/-1 at the first and past the last day of each span: a file
    # costs the same whether the range is a day or a year.
    tallies: dict[str | None, list[int]] = defaultdict(lambda: [0] * (len(days) + 1))
    planned = _Plan(listing)
    read_bytes = 0
    looking = workers if likely_in_processes else 1
    for position, file, look in _looks(listing, indexes[0], indexes[-1], max_line_bytes, looking):
        verdicts: list[Verdict] = []
        if isinstance(look, _Gone):  # gone (or locked) since the listing: quarantined on its listed day
            file = file._replace(problem=UNREADABLE_FILE, note=f"{look.strerror}: {file.location}")
            planned.replaced[position] = file
        else:
            verdicts = look
        if file.problem is not None:
            verdicts = [(file.problem, indexes[0], indexes[-1])]
            planned.add(position, file.mtime_us // DAY_US, file.mtime_us // DAY_US)
        read = False
        for reason, lo, hi in verdicts:
            a, b = bisect.bisect_left(indexes, lo), bisect.bisect_right(indexes, hi)
            if a < b:
                tallies[reason][a] += 1
                tallies[reason][b] -= 1
                if reason is None:
                    planned.add(position, lo, hi)
                    read = True
        read_bytes += file.size if read else 0
    stats = {day: IngestStats(day.isoformat()) for day in days}
    for reason, tally in tallies.items():
        for day, count in zip(days, itertools.accumulate(tally), strict=False):
            if not count:
                continue
            if reason is None:
                stats[day].files_read = count
            else:
                stats[day].files_skipped[reason] = count
    in_processes = workers > 1 and read_bytes >= parallel_min_bytes
    count = pass_count(len(days), chunk_days, workers if in_processes else 1)
    chunks = []
    for part in _balanced_parts(days, planned.spans(), count, chunk_days):
        chunk_files, first_days, last_days = planned.files_of(day_index(part[0]), day_index(part[-1]))
        chunks.append(
            _Chunk(
                tuple(part),
                tuple(outputs[day] for day in part),
                chunk_files,
                first_days,
                last_days,
                redactor,
                max_line_bytes,
                tuple(stores),
            )
        )
    for chunk_stats in parallel.map_in_processes(_ingest_chunk, chunks, workers if in_processes else 1):
        for found in chunk_stats:
            _merge(stats[dt.date.fromisoformat(found.day)], found)
    return stats


class _Gone(NamedTuple):
    """A file that could not be looked into since the listing: why (`OSError.strerror`)."""

    strerror: str | None


def _looked_into(file: CandidateFile, first: int, last: int, max_line_bytes: int) -> list[Verdict] | _Gone:
    """`_verdicts` of a listed file (none for a file with a problem), or why it is gone."""
    if file.problem is not None:
        return []
    try:
        return _verdicts(file.source, file.path, file.mtime_us, first, last, max_line_bytes)
    except OSError as err:
        return _Gone(err.strerror)


_LookTask = tuple[FileListing, int, int, int]  # files, first and last day index, max_line_bytes


class _LookParts(Sequence[_LookTask]):
    """The files at `positions` of the listing in parts of `size`, as `_looked_into_part`'s tasks,
    each part's files copied out of the listing only when a worker is about to take it: built up
    front, the parts held a second copy of the recent files for the whole planning (4.8 MiB more
    than the listing's 28 at 182,000 files)."""

    def __init__(
        self, listing: FileListing, positions: array[int], size: int, bounds: tuple[int, int, int]
    ) -> None:
        self._listing, self._positions, self._size, self._bounds = listing, positions, size, bounds

    def __len__(self) -> int:
        return -(-len(self._positions) // self._size)

    @overload
    def __getitem__(self, index: int) -> _LookTask: ...

    @overload
    def __getitem__(self, index: slice) -> _LookParts: ...

    def __getitem__(self, index: int | slice) -> _LookTask | _LookParts:
        size = self._size
        if isinstance(index, slice):  # the parts a pool of workers takes: still not copied
            start, stop, step = index.indices(len(self))
            if step != 1:
                raise ValueError("parts are taken in runs, without a step")
            return _LookParts(self._listing, self._positions[start * size : stop * size], size, self._bounds)
        if not -len(self) <= index < len(self):
            raise IndexError(f"part {index} of {len(self)}")
        index %= len(self)
        return (self._listing.take(self._positions[index * size : (index + 1) * size]), *self._bounds)


def _looked_into_part(task: _LookTask) -> list[list[Verdict] | _Gone]:
    files, first, last, max_line_bytes = task
    return [_looked_into(file, first, last, max_line_bytes) for file in files]


def _looks(
    listing: FileListing, first: int, last: int, max_line_bytes: int, workers: int
) -> Iterator[tuple[int, CandidateFile, list[Verdict] | _Gone]]:
    """Each listed file's position, the file and `_looked_into` it for the day indexes [first,
    last], in listing order; the looks in `workers` processes from `PARALLEL_LOOK_FILES` files that
    may hold a session of those days (those written since the day before `first`: the others are
    ruled out by their time alone, without a look)."""
    recent = listing.positions_modified_since((first - 1) * DAY_US)
    if workers <= 1 or len(recent) < PARALLEL_LOOK_FILES:
        for position, file in enumerate(listing):
            yield position, file, _looked_into(file, first, last, max_line_bytes)
        return
    # Parts of at most PARALLEL_LOOK_FILES files, so what they find comes back in small pieces (parts
    # of a pool's worth, 11,000 files each of 182,000, were no faster), and at least one per worker.
    size = min(PARALLEL_LOOK_FILES, -(-len(recent) // workers))
    parts = _LookParts(listing, recent, size, (first, last, max_line_bytes))
    found = itertools.chain.from_iterable(parallel.imap_in_processes(_looked_into_part, parts, workers))
    upcoming = iter(recent)
    next_recent = next(upcoming, None)
    for position, file in enumerate(listing):
        if position == next_recent:
            next_recent = next(upcoming, None)
            yield position, file, next(found)
        else:
            yield position, file, _looked_into(file, first, last, max_line_bytes)


class _Plan:
    """The files a range run reads, one row per file and span of days it is read for, in listing
    order (a file's spans one after another, in day order); positions in the listing, not files."""

    def __init__(self, listing: FileListing) -> None:
        self.listing = listing
        self.positions = array("q")
        self.first_days = array("q")
        self.last_days = array("q")
        self.replaced: dict[int, CandidateFile] = {}  # files found gone since the listing, as planned

    def add(self, position: int, first: int, last: int) -> None:
        self.positions.append(position)
        self.first_days.append(first)
        self.last_days.append(last)

    def spans(self) -> Iterator[tuple[int, int, int]]:
        """(bytes, first day, last day) of each row."""
        sizes = (self.listing.size(position) for position in self.positions)
        return zip(sizes, self.first_days, self.last_days, strict=True)

    def files_of(self, lo: int, hi: int) -> tuple[FileListing, array[int], array[int]]:
        """What a pass over the day indexes lo..hi reads, each file once with its first and last
        day: a file read on days apart (a chat export's conversations, `session_starts`) is planned
        as a span per run of days, and is parsed once per pass over all of them (its events reach
        only the days they start on)."""
        positions: list[int] = []
        first_days, last_days = array("q"), array("q")
        for position, first, last in zip(self.positions, self.first_days, self.last_days, strict=True):
            if first > hi or last < lo:
                continue
            if positions and positions[-1] == position:
                last_days[-1] = last
            else:
                positions.append(position)
                first_days.append(first)
                last_days.append(last)
        files = FileListing(self.replaced.get(position) or self.listing[position] for position in positions)
        return files, first_days, last_days


def pass_count(days: int, chunk_days: int, workers: int) -> int:
    """How many passes may read `days` days on `workers` processes: at most `chunk_days` days each,
    and in processes a multiple of the workers, so that every round can keep them all busy (20 days
    in three 7-day passes leave one of two workers idle while the last runs; four 5-day passes do
    not). `_balanced_parts` may make fewer where the days' weights do not split any better."""
    return min(days, math.ceil(math.ceil(days / chunk_days) / workers) * workers)


def _balanced_parts(
    days: list[dt.date], spans: Iterable[tuple[int, int, int]], count: int, chunk_days: int
) -> list[list[dt.date]]:
    """At most `count` runs of consecutive days, each of at most `chunk_days`, whose files to read
    weigh about the same: the passes run side by side, and the heaviest decides when all are done.

    Days are not equal: a pass reads every file that may hold a session starting on one of its
    days, so the earlier passes of a range also read the files that no head bounds (those read up
    to their last write), and busy days weigh more. A pass over positions p..q reads the files
    with lo <= day q and hi >= day p: the bytes of files starting by q less those ended before p.
    """
    at = [day_index(day) for day in days]
    by_lo: list[tuple[int, int]] = []
    by_hi: list[tuple[int, int]] = []
    for size, lo, hi in spans:  # (bytes, first day, last day) of each file and span it is read for
        by_lo.append((lo, size))
        by_hi.append((hi, size))
    by_lo.sort()
    by_hi.sort()
    sizes_by_lo = list(itertools.accumulate(size for _, size in by_lo))
    sizes_by_hi = list(itertools.accumulate(size for _, size in by_hi))

    def weight_upto(q: int) -> int:  # bytes of files read from day q on, or before
        k = bisect.bisect_right(by_lo, (at[q], math.inf))
        return sizes_by_lo[k - 1] if k else 0

    def weight_before(p: int) -> int:  # bytes of files whose last day to read is before day p
        k = bisect.bisect_left(by_hi, (at[p], -1))
        return sizes_by_hi[k - 1] if k else 0

    upto = [weight_upto(q) for q in range(len(days))]
    before = [weight_before(p) for p in range(len(days))]

    def runs(limit: int) -> list[list[dt.date]]:
        """Greedy runs of days each weighing at most `limit` (or one day, whatever it weighs)."""
        parts, p = [], 0
        while p < len(days):
            q = p
            while q + 1 < len(days) and q + 1 - p < chunk_days and upto[q + 1] - before[p] <= limit:
                q += 1
            parts.append(days[p : q + 1])
            p = q + 1
        return parts

    low, high = 0, max(upto[-1], 1)  # the least heaviest-run weight that needs no more than `count` runs
    while low < high:
        mid = (low + high) // 2
        if len(runs(mid)) <= count:
            high = mid
        else:
            low = mid + 1
    return runs(low)


def _merge(into: IngestStats, found: IngestStats) -> None:
    """What a chunk saw of a day, added to what the planning counted (files read and skipped)."""
    into.rows += found.rows
    into.rows_by_source_kind.update(found.rows_by_source_kind)
    into.sessions_by_source.update(found.sessions_by_source)  # a day's sessions come from one pass
    into.quarantined.update(found.quarantined)
    into.redactions.update(found.redactions)
    into.truncated_texts += found.truncated_texts
    into.misassigned_files.extend(found.misassigned_files)
    into.repaired.update(found.repaired)
    into.duplicate_events += found.duplicate_events
    into.database_rows.update(found.database_rows)


def ingest_day(
    roots: Sequence[SourceRoot],
    day: dt.date,
    events_path: Path,
    quarantine_path: Path,
    *,
    redactor: Redactor | None = None,
    max_line_bytes: int = MAX_LINE_BYTES,
    files: Sequence[CandidateFile] | None = None,
    stores: Sequence[EventStore] = (),
) -> IngestStats:
    """Write the events and quarantined lines of sessions starting on `day` to two Parquet files.

    `files` lets a run over many days list the roots once; by default they are listed here.
    """
    outputs = {day: (events_path, quarantine_path)}
    return ingest_days(
        roots, outputs, redactor=redactor, max_line_bytes=max_line_bytes, files=files, stores=stores
    )[day]
