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
are assumed to be appended in time order, as a log is.

    from trajectory_pipeline.parsers import own_agent
    events = list(own_agent.parse(Path("logs/session_2025-03-14.jsonl")))
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from trajectory_pipeline.parsers.common import (
    Orphans,
    RecordError,
    UnknownRecordType,
    WrongFieldType,
    bad_record,
    content_text,
    get_number,
    get_str,
    parse_arguments,
    sniff_first_line,
)
from trajectory_pipeline.parsers.lines import MAX_LINE_BYTES, first_timestamp, head_objects, read_json_lines
from trajectory_pipeline.schema import BadLine, Event, canonical_json, event, parse_ts, ts_to_datetime

SOURCE = "own_agent"
GLOBS = ("**/session_*.jsonl",)

SESSION_GAP_US = 5 * 60 * 1_000_000

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
    """A first line that is an entry of one of the four types, with a timestamp and none of the
    keys that mark codex, Claude Code or chat lines."""
    return sniff_first_line(head, _looks_like_own_agent, _OWN_PREFIX)


def earliest_start(path: Path) -> int | None:
    """The first entry's time: the first session starts there and, entries being in time order,
    every later one starts after it."""
    return first_timestamp(head_objects(path))


class _Sessions:
    """Splits a day file into sessions on gaps of more than five minutes."""

    def __init__(self, stem: str) -> None:
        self._stem = stem
        self._last_ts: int | None = None
        self._used: set[str] = set()
        self.session_id: str | None = None
        self.session_start: int | None = None

    def advance(self, ts: int, line_no: int) -> bool:
        """Place an entry at `ts`; True when it opens a new session."""
        opens = self._last_ts is None or ts - self._last_ts > SESSION_GAP_US
        self._last_ts = ts
        if opens:
            session_id = f"{self._stem}-{ts_to_datetime(ts):%H%M%S}"
            # Two sessions can only share a second when the log's clock went backwards.
            if session_id in self._used:
                session_id = f"{session_id}-L{line_no}"
            self._used.add(session_id)
            self.session_id, self.session_start = session_id, ts
        return opens


def parse(path: Path, max_line_bytes: int = MAX_LINE_BYTES) -> Iterator[Event | BadLine]:
    """Stream the events of every session in a day file."""
    source_path = str(path)
    sessions = _Sessions(path.stem)
    orphans = Orphans(path)
    seq = 0
    for item in read_json_lines(path, SOURCE, max_line_bytes):
        if isinstance(item, BadLine):
            bad = item
        else:
            ts = parse_ts(item.obj.get("timestamp"))
            if ts is not None and sessions.advance(ts, item.line_no):
                yield from orphans.release(sessions.session_id, sessions.session_start)
            try:
                fields = _entry_events(item.obj, ts, f"{path.stem}-L{item.line_no}")
            except RecordError as err:
                bad = bad_record(SOURCE, source_path, item.line_no, err.reason, item.obj, str(err))
            else:
                base = {
                    "source": SOURCE,
                    "session_id": sessions.session_id,
                    "session_start": sessions.session_start,
                    "source_path": source_path,
                    "line_no": item.line_no,
                    "ts": ts,
                }
                for offset, extra in enumerate(fields):
                    yield event(**base, seq=seq + offset, **extra)
                seq += len(fields)
                continue
        if sessions.session_id is None:
            yield from orphans.hold(bad)
        else:
            yield bad._replace(session_id=sessions.session_id, session_start=sessions.session_start)
    yield from orphans.release(None, None)


def _entry_events(obj: dict[str, Any], ts: int | None, call_id: str) -> list[dict[str, Any]]:
    """The event fields one entry gives, or an exception saying why it cannot be read."""
    if ts is None:
        raise WrongFieldType("timestamp", "an ISO-8601 string or epoch number", obj.get("timestamp"))
    kind = obj.get("type")
    if not isinstance(kind, str) or kind not in _ENTRY_EVENTS:  # a list or object type is unhashable
        raise UnknownRecordType(f"type {kind!r}")
    confidence = get_number(obj, "confidence")
    return [{**fields, "confidence": confidence} for fields in _ENTRY_EVENTS[kind](obj, call_id)]


def _message(obj: dict[str, Any], call_id: str) -> list[dict[str, Any]]:
    role = get_str(obj, "role")
    if role not in _ROLES:
        raise WrongFieldType("role", f"one of {sorted(_ROLES)}", role)
    text = content_text(obj.get("content"))
    return [{"role": _ROLES[role], "kind": "meta" if role == "system" else "message", "text": text}]


def _tool_call(obj: dict[str, Any], call_id: str) -> list[dict[str, Any]]:
    tool = get_str(obj, "tool")
    if tool is None:
        raise WrongFieldType("tool", "a string", None)
    arguments = parse_arguments(obj.get("args"), "args")
    call = {
        "role": "assistant",
        "kind": "tool_call",
        "tool_name": tool,
        "tool_call_id": call_id,
        "tool_input": canonical_json(arguments),
    }
    if "result" not in obj:
        return [call]
    result = obj["result"]
    exit_code = _exit_code(result)
    result_event = {
        "role": "tool",
        "kind": "tool_result",
        "tool_name": tool,
        "tool_call_id": call_id,
        "text": result if isinstance(result, str) or result is None else canonical_json(result),
        "exit_code": exit_code,
        "is_error": _looks_like_error(result) or (exit_code is not None and exit_code != 0),
    }
    return [call, result_event]


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


def _error(obj: dict[str, Any], call_id: str) -> list[dict[str, Any]]:
    return [{"role": "system", "kind": "error", "text": _text(obj, "error"), "is_error": True}]


def _decision(obj: dict[str, Any], call_id: str) -> list[dict[str, Any]]:
    return [{"role": "assistant", "kind": "decision", "text": _text(obj, "decision")}]


def _text(obj: dict[str, Any], key: str) -> str | None:
    """A free-form field as text: strings kept, structured values as canonical JSON."""
    value = obj.get(key)
    return value if value is None or isinstance(value, str) else canonical_json(value)


_ENTRY_EVENTS: dict[str, Callable[[dict[str, Any], str], list[dict[str, Any]]]] = {
    "message": _message,
    "tool_call": _tool_call,
    "error": _error,
    "decision": _decision,
}
