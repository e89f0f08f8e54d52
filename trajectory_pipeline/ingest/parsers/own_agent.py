"""The home-made agent's own logs: one JSONL file per day, `session_YYYY-MM-DD.jsonl`.

Entries, each with a `timestamp`:

- `{"type": "message", "role": "user"|"timmy"|"assistant"|"system", "content", "confidence"?}`;
  timmy is the agent's own name and becomes role assistant;
- `{"type": "tool_call", "tool", "args", "result"}`: a tool_call event and, when the entry
  has a `result`, a tool_result event, linked by a generated id (`<file stem>-L<line>`);
- `{"type": "error", "error"}`: kind error;
- `{"type": "decision", "decision"}`: kind decision, role assistant.

A day file holds several sessions: a new one starts when MORE than five minutes pass
between consecutive entries (exactly five minutes stays one session). The session id is
`<file stem>-<HHMMSS UTC of its first entry>`, stable across runs and machines. Entries
are assumed to be appended in time order, as a log is. Timestamps without a zone are read
as UTC (see `parse_ts`), whatever the local zone the agent ran in. A time that is not believed
(`common.Clock`: before 2015, as a clock never set gives, or past a day after the file's last
write) neither opens nor splits a session: the entry is kept untimed in the session around it
(the first session, for entries before any believed time; one at the file's fallback start when
no entry has one) with an `implausible_timestamp` row, so no session lands on a day never ingested.

A session stays whole, in the partition of the day it started, even when the agent rotates
to the next day's file in the middle of it: when the first entry of `session_<D>.jsonl` is
within five minutes of the last entry of `session_<D-1>.jsonl` in the same folder, the file's
first session continues that file's last session, with its session id and start (so
`earliest_start` reports that earlier start). The previous file may itself continue the day
before it; the chain is followed back at most `CHAIN_FILES` files (a session that ran, without
a five-minute pause, through more day files than that is cut there, and files parsed from
different ends of such a chain may then disagree on its id). Events keep their own
`source_path` and per-file `seq`, as for any session spread over files.

    from trajectory_pipeline.ingest.parsers import own_agent
    events = list(own_agent.parse(Path("logs/session_2025-03-14.jsonl")))
"""

from __future__ import annotations

import codecs
import datetime as dt
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import orjson

from trajectory_pipeline.ingest.parsers.common import (
    Clock,
    Orphans,
    UnknownRecordType,
    WrongFieldType,
    bad_record,
    content_text,
    failure,
    fallback_start,
    get_number,
    get_str,
    new_event,
    parse_arguments,
    sniff_lines,
)
from trajectory_pipeline.ingest.parsers.lines import (
    MAX_LINE_BYTES,
    JsonLine,
    head_objects,
    loads_mended,
    read_json_lines,
)
from trajectory_pipeline.schema import BadLine, Event, canonical_json, ts_to_datetime

SOURCE = "own_agent"
GLOBS = ("**/session_*.jsonl",)
TITLE = "your agent's daily logs"
DEFAULT_ROOT = "~/.agent/logs"  # where the tool writes
HOLDS = "one JSONL file a day (session_YYYY-MM-DD.jsonl)"
VOCABULARY = "home_made"  # its table in mining/vocabulary.py
PATH_DATED = True  # whether file paths carry the session's date


SESSION_GAP_US = 5 * 60 * 1_000_000

# How many earlier day files a session may be followed back through (see the module docstring).
CHAIN_FILES = 7

# How much of a previous day file's end is read to find its last entry before scanning it all.
_TAIL_BYTES = 1024 * 1024

_DAY_STEM = re.compile(r"session_(\d{4}-\d{2}-\d{2})")

_ROLES = {"user": "user", "timmy": "assistant", "assistant": "assistant", "system": "system"}
_FOREIGN_KEYS = {"payload", "sessionId", "parentUuid", "messages"}  # codex, Claude Code, chat lines
_EXIT_KEYS = ("exit_code", "returncode", "exitCode")
_ERROR_TEXT = re.compile(r"\s*(error|traceback|exception)\b", re.IGNORECASE)


def _looks_like_own_agent(obj: dict[str, Any]) -> bool:
    kind = obj.get("type")
    return (
        isinstance(kind, str)
        and kind in _ENTRY_EVENTS
        and "timestamp" in obj
        and not (_FOREIGN_KEYS & obj.keys())
    )


_OWN_PREFIX = re.compile(rb'\{\s*"type"\s*:\s*"(message|tool_call|error|decision)"')


def sniff(path: Path, head: bytes) -> bool:
    """One of the first records (`common.sniff_lines`) is an entry of one of the four types, with a
    timestamp and none of the keys that mark codex, Claude Code or chat lines: a header line, an
    entry type added since or an entry without its time before it costs the file nothing."""
    return sniff_lines(head, _looks_like_own_agent, _OWN_PREFIX)


def earliest_start(path: Path) -> int | None:
    """The first session's start: the first entry's time or, when that entry continues the previous
    day file's last session, that session's start. Entries being in time order, every later
    session starts after it."""
    clock = Clock(path)
    first = next((ts for obj in head_objects(path) if (ts := clock.believe(obj.get("timestamp")))), None)
    if first is None:
        return None
    carried = _carried_session(path, first, MAX_LINE_BYTES, CHAIN_FILES)
    return first if carried is None else min(first, carried[1])


class _Sessions:
    """Splits a day file into sessions on gaps of more than five minutes; the first entry may
    instead continue the previous day file's last session (looked back `depth` files at most)."""

    def __init__(self, path: Path, max_line_bytes: int, depth: int) -> None:
        self._path = path
        self._max_line_bytes = max_line_bytes
        self._depth = depth
        self._last_ts: int | None = None
        self._used: set[str] = set()
        self.session_id: str | None = None
        self.session_start: int | None = None

    def advance(self, ts: int, line_no: int) -> bool:
        """Place an entry at `ts`; True when it begins a session in this file (a new one, or the
        previous day's continued)."""
        if self._last_ts is None:
            carried = _carried_session(self._path, ts, self._max_line_bytes, self._depth)
            if carried is not None:
                self._last_ts = ts
                self.session_id, self.session_start = carried
                return True
        opens = self._last_ts is None or ts - self._last_ts > SESSION_GAP_US
        self._last_ts = ts
        if opens:
            session_id = f"{self._path.stem}-{ts_to_datetime(ts):%H%M%S}"
            # Two sessions can only share a second when the log's clock went backwards.
            if session_id in self._used:
                session_id = f"{session_id}-L{line_no}"
            self._used.add(session_id)
            self.session_id, self.session_start = session_id, ts
        return opens

    def start_untimed(self, start: int) -> None:
        """Open the session of a file none of whose entries has a believable time, at `start`."""
        self.session_id, self.session_start = f"{self._path.stem}-{ts_to_datetime(start):%H%M%S}", start


def _previous_day_file(path: Path) -> Path | None:
    """`session_<D-1>.jsonl` beside `session_<D>.jsonl`, when the name has a date and it exists."""
    match = _DAY_STEM.fullmatch(path.stem)
    if match is None:
        return None
    try:
        day = dt.date.fromisoformat(match.group(1))
        previous = path.with_name(f"session_{day - dt.timedelta(days=1)}{path.suffix}")
    except (ValueError, OverflowError):
        return None
    return previous if previous.is_file() else None


def _carried_session(path: Path, first_ts: int, max_line_bytes: int, depth: int) -> tuple[str, int] | None:
    """The (session id, start) of the previous day file's last session, when this file's first
    entry, at `first_ts`, is within five minutes of that file's last entry; else None."""
    if depth <= 0:
        return None
    previous = _previous_day_file(path)
    if previous is None:
        return None
    try:
        last_ts = _last_timestamp(previous, max_line_bytes)
        if last_ts is None or abs(first_ts - last_ts) > SESSION_GAP_US:
            return None
        # The previous file's sessions as its own parse splits them, chain included.
        sessions = _Sessions(previous, max_line_bytes, depth - 1)
        for ts, line_no in _timestamps(previous, max_line_bytes):
            sessions.advance(ts, line_no)
    except OSError:  # unreadable neighbour: this file stands alone
        return None
    if sessions.session_id is None or sessions.session_start is None:
        return None
    return sessions.session_id, sessions.session_start


def _timestamps(path: Path, max_line_bytes: int) -> Iterator[tuple[int, int]]:
    """(ts, line_no) for every entry with a readable time: the entries that place sessions."""
    clock = Clock(path)
    for item in read_json_lines(path, SOURCE, max_line_bytes):
        if isinstance(item, JsonLine):
            ts = clock.believe(item.obj.get("timestamp"))
            if ts is not None:
                yield ts, item.line_no


def _last_timestamp(path: Path, max_line_bytes: int) -> int | None:
    """The time of the file's last entry with a readable one, read from the file's end; the whole
    file is scanned only when its last `_TAIL_BYTES` hold no such entry."""
    with open(path, "rb") as handle:
        size = handle.seek(0, os.SEEK_END)
        start = max(0, size - _TAIL_BYTES)
        handle.seek(start)
        lines = handle.read(size - start).split(b"\n")
    if start > 0:
        lines = lines[1:]  # the first piece may be the end of a longer line
    elif lines:
        lines[0] = lines[0].removeprefix(codecs.BOM_UTF8)
    clock = Clock(path)
    for line in reversed(lines):
        ts = _line_timestamp(line, max_line_bytes, clock)
        if ts is not None:
            return ts
    if start == 0:
        return None
    last = None
    for ts, _ in _timestamps(path, max_line_bytes):
        last = ts
    return last


def _line_timestamp(line: bytes, max_line_bytes: int, clock: Clock) -> int | None:
    """A line's believable `timestamp`, read as `read_json_lines` would read the line (oversize lines
    are not entries)."""
    body = line.strip()
    if not body or len(line) > max_line_bytes:
        return None
    try:
        obj, _ = loads_mended(body)
    except orjson.JSONDecodeError:
        return None
    return clock.believe(obj.get("timestamp")) if isinstance(obj, dict) else None


def parse(path: Path, max_line_bytes: int = MAX_LINE_BYTES) -> Iterator[Event | BadLine]:
    """Stream the events of every session in a day file."""
    source_path = str(path)
    stem = path.stem
    sessions = _Sessions(path, max_line_bytes, CHAIN_FILES)
    orphans = Orphans(path)
    clock = Clock(path)
    # Events of entries whose time is not believed, read before any session started: they join
    # the first session (or one at the file's fallback start, at the end). Built, in file order.
    waiting: list[tuple[int, int, _Row, float | None]] = []  # (line_no, seq, row, confidence)
    seq = 0
    for item in read_json_lines(path, SOURCE, max_line_bytes):
        if isinstance(item, BadLine):
            bad = item
        else:
            line_no, obj = item
            raw_ts = obj.get("timestamp")
            ts, implausible = clock.read(raw_ts)
            if ts is not None and sessions.advance(ts, line_no):
                yield from orphans.release(sessions.session_id, sessions.session_start)
                yield from _released(waiting, sessions, source_path)
            try:
                rows, confidence = _entry_events(obj, ts, f"{stem}-L{line_no}", untimed=implausible)
            except Exception as err:  # whatever one entry does, it costs that entry alone
                reason, note = failure(err)
                bad = bad_record(SOURCE, source_path, line_no, reason, obj, note)
            else:
                if sessions.session_id is None:  # untimed, and no session yet: it waits for one
                    for row in rows:
                        waiting.append((line_no, seq, row, confidence))
                        seq += 1
                    yield from orphans.hold(clock.bad_row(SOURCE, source_path, line_no, raw_ts, obj))
                    continue
                head = (SOURCE, sessions.session_id, sessions.session_start, source_path, line_no)
                # After the row: cwd, repo, git_branch, model, is_sidechain, agent_id, event_id,
                # parent_id and interrupted (none known here), the confidence, and the defaults.
                rest = (None, None, None, None, False, None, None, None, False, confidence, False, 0)
                for row in rows:
                    yield new_event((*head, seq, ts, *row, *rest))
                    seq += 1
                if implausible:
                    yield clock.bad_row(
                        SOURCE,
                        source_path,
                        line_no,
                        raw_ts,
                        obj,
                        session_id=sessions.session_id,
                        session_start=sessions.session_start,
                    )
                continue
        if sessions.session_id is None:
            yield from orphans.hold(bad)
        else:
            yield bad._replace(session_id=sessions.session_id, session_start=sessions.session_start)
    if waiting:  # no entry of the file had a believable time: one session, at its fallback start
        sessions.start_untimed(fallback_start(path))
        yield from orphans.release(sessions.session_id, sessions.session_start)
        yield from _released(waiting, sessions, source_path)
    yield from orphans.release(None, None)


def _released(
    waiting: list[tuple[int, int, _Row, float | None]], sessions: _Sessions, source_path: str
) -> Iterator[Event]:
    """The waiting events, now in the session just started; `waiting` is emptied."""
    rest = (None, None, None, None, False, None, None, None, False)
    for line_no, seq, row, confidence in waiting:
        head = (SOURCE, sessions.session_id, sessions.session_start, source_path, line_no, seq, None)
        yield new_event((*head, *row, *rest, confidence, False, 0))
    waiting.clear()


class _Row(NamedTuple):
    """One event's own fields, in `Event` order."""

    role: str
    kind: str
    text: str | None
    tool_name: str | None = None
    tool_call_id: str | None = None
    tool_input: str | None = None
    is_error: bool | None = None
    exit_code: int | None = None


def _entry_events(
    obj: dict[str, Any], ts: int | None, call_id: str, *, untimed: bool = False
) -> tuple[list[_Row], float | None]:
    """The events one entry gives and its confidence, or an exception saying why it cannot be read.

    `untimed`: the entry's time was refused as implausible, so its lack is no error.
    """
    if ts is None and not untimed:
        raise WrongFieldType("timestamp", "an ISO-8601 string or epoch number", obj.get("timestamp"))
    kind = obj.get("type")
    if not isinstance(kind, str) or kind not in _ENTRY_EVENTS:  # a list or object type is unhashable
        raise UnknownRecordType(f"type {kind!r}")
    confidence = get_number(obj, "confidence")
    return _ENTRY_EVENTS[kind](obj, call_id), confidence


def _message(obj: dict[str, Any], call_id: str) -> list[_Row]:
    role = get_str(obj, "role")
    if role not in _ROLES:
        raise WrongFieldType("role", f"one of {sorted(_ROLES)}", role)
    text = content_text(obj.get("content"))
    return [_Row(_ROLES[role], "meta" if role == "system" else "message", text)]


def _tool_call(obj: dict[str, Any], call_id: str) -> list[_Row]:
    tool = get_str(obj, "tool")
    if tool is None:
        raise WrongFieldType("tool", "a string", None)
    arguments = parse_arguments(obj.get("args"), "args")
    call = _Row("assistant", "tool_call", None, tool, call_id, canonical_json(arguments))
    if "result" not in obj:
        return [call]
    result = obj["result"]
    exit_code = _exit_code(result)
    text = result if isinstance(result, str) or result is None else canonical_json(result)
    is_error = _looks_like_error(result) or (exit_code is not None and exit_code != 0)
    return [call, _Row("tool", "tool_result", text, tool, call_id, None, is_error, exit_code)]


def _exit_code(result: object) -> int | None:
    if not isinstance(result, dict):
        return None
    for key in _EXIT_KEYS:
        value = result.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def _looks_like_error(result: object) -> bool:
    """An error dict (`error` set, or `success`/`ok` false) or text opening like an error report."""
    if isinstance(result, dict):
        return bool(result.get("error")) or result.get("success") is False or result.get("ok") is False
    if isinstance(result, str):
        return _ERROR_TEXT.match(result) is not None
    return False


def _error(obj: dict[str, Any], call_id: str) -> list[_Row]:
    return [_Row("system", "error", _text(obj, "error"), is_error=True)]


def _decision(obj: dict[str, Any], call_id: str) -> list[_Row]:
    return [_Row("assistant", "decision", _text(obj, "decision"))]


def _text(obj: dict[str, Any], key: str) -> str | None:
    """A free-form field as text: strings kept, structured values as canonical JSON."""
    value = obj.get(key)
    return value if value is None or isinstance(value, str) else canonical_json(value)


_ENTRY_EVENTS: dict[str, Callable[[dict[str, Any], str], list[_Row]]] = {
    "message": _message,
    "tool_call": _tool_call,
    "error": _error,
    "decision": _decision,
}
