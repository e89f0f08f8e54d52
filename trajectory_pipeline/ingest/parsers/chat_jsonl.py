"""Chat-format JSONL: one OpenAI-style conversation per line.

Each line is `{"messages": [...], "tools": [...]?}` with roles system/developer, user,
assistant (optional `tool_calls`, legacy `function_call`, `reasoning_content`) and tool
(legacy `function`), `content` a string or a list of parts. Optional per-line `id` or
`session_id`, `timestamp` / `created_at` / `metadata.timestamp`, `model`, and `cwd` /
`metadata.cwd`; without a cwd field, the working folder the first system prompt names (`You are
working in /home/me/src/app`, `Working directory: ...`, `<cwd>...</cwd>`) is the session's cwd, and
its repository is named from it as for the agents that record one.

A line is a session: its id is the line's own id, else a short sha256 of the line's
canonical JSON (so copies of a conversation dedupe, and the id is the same on every
machine). Its start is the line's timestamp, else a YYYY-MM-DD date in the file name,
else the file's mtime. A line that is not JSON is quarantined with the next session in
the file; a line that is JSON but breaks the format (an empty `messages` list included) is
quarantined with its own session, whole, so no conversation reaches training with a hole in
it. A time the line gives that is not believed (`common.Clock`: before 2015, or past the
file's last write and a day) is not used: the conversation is kept, timed by its other times
or the file's start, and the line gets an `implausible_timestamp` row.

    from trajectory_pipeline.ingest.parsers import chat_jsonl
    events = list(chat_jsonl.parse(Path("export_2025-01-31.jsonl")))
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from trajectory_pipeline.ingest.parsers.common import (
    Clock,
    Orphans,
    UnknownRecordType,
    WrongFieldType,
    bad_record,
    content_text,
    failure,
    fallback_start,
    get_dict,
    get_list,
    get_str,
    new_event,
    parse_arguments,
    prompt_cwd,
    sniff_lines,
)
from trajectory_pipeline.ingest.parsers.lines import MAX_LINE_BYTES, read_json_lines
from trajectory_pipeline.schema import BadLine, Event, canonical_json, repo_name

SOURCE = "chat_jsonl"
GLOBS = ("**/*.jsonl",)
TITLE = "chat-format JSONL"
DEFAULT_ROOT = "~/.agent/chats"  # where the tool writes
HOLDS = 'JSONL files, one {"messages": [...]} conversation a line'
VOCABULARY = "home_made"  # its table in mining/vocabulary.py
PATH_DATED = False  # whether file paths carry the session's date


_SESSION_ID_HEX = 16


def _looks_like_chat(obj: dict[str, Any]) -> bool:
    messages = obj.get("messages")
    if not isinstance(messages, list):
        return False
    first = messages[0] if messages else None
    return isinstance(first, dict) and isinstance(first.get("role"), str)


_CHAT_PREFIX = re.compile(rb'\{.{0,2000}?"messages"\s*:\s*\[\s*\{\s*"', re.DOTALL)


def sniff(path: Path, head: bytes) -> bool:
    """One of the first records (`common.sniff_lines`) is a JSON object holding a `messages` list
    of role-tagged objects (a first `{"messages": []}` or header line costs the file nothing)."""
    return sniff_lines(head, _looks_like_chat, _CHAT_PREFIX)


def earliest_start(path: Path) -> int | None:
    """None: the lines of a chat file are independent sessions in no particular order, so the head
    bounds nothing (`session_starts` reads the whole file instead)."""
    return None


def session_starts(path: Path, max_line_bytes: int = MAX_LINE_BYTES) -> set[int]:
    """Every start `parse` can give the file's sessions: each line's believed time, and the file's
    fallback start (a line without a time, or whose reading fails, gets it). Lines are parsed as
    JSON but no event is built: a range run then parses the file only in the passes of these days,
    not in every pass up to its last write (a daily export, in a 160-day backfill in 7-day passes,
    was parsed 12 times over)."""
    clock = Clock(path)
    starts = {fallback_start(path)}
    for item in read_json_lines(path, SOURCE, max_line_bytes):
        if isinstance(item, BadLine):  # quarantined with the next session, or at the fallback start
            continue
        try:
            line_ts, _ = _line_ts(item[1], clock)
        except Exception:  # parse quarantines the line at the fallback start, already in
            continue
        if line_ts is not None:
            starts.add(line_ts)
    return starts


def _line_id(obj: dict[str, Any]) -> str:
    for key in ("id", "session_id"):
        value = obj.get(key)
        if isinstance(value, str) and value:
            return value
        if isinstance(value, int) and not isinstance(value, bool):
            return str(value)
    return hashlib.sha256(canonical_json(obj).encode()).hexdigest()[:_SESSION_ID_HEX]


def _line_ts(obj: dict[str, Any], clock: Clock) -> tuple[int | None, object]:
    """The line's believable time, and the first time it gives that is not believed (None if none)."""
    metadata = obj.get("metadata")
    candidates = [obj.get("timestamp"), obj.get("created_at")]
    if isinstance(metadata, dict):
        candidates.append(metadata.get("timestamp"))
    refused: object = None
    for value in candidates:
        ts, implausible = clock.read(value)
        if ts is not None:
            return ts, refused
        if implausible and refused is None:
            refused = value
    return None, refused


def parse(path: Path, max_line_bytes: int = MAX_LINE_BYTES) -> Iterator[Event | BadLine]:
    """Stream the events of every conversation in `path`, one line at a time."""
    source_path = str(path)
    orphans = Orphans(path)
    clock = Clock(path)
    file_start: int | None = None
    seq = 0
    for item in read_json_lines(path, SOURCE, max_line_bytes):
        if isinstance(item, BadLine):
            yield from orphans.hold(item)
            continue
        line_no, obj = item
        session_id: str | None = None
        session_start: int | None = None
        try:
            session_id = _line_id(obj)
            line_ts, refused = _line_ts(obj, clock)
            if line_ts is None and file_start is None:
                file_start = fallback_start(path)
            session_start = line_ts if line_ts is not None else file_start
            rows, model, refused_inner = _conversation(obj, line_ts, clock)
            cwd = _cwd(obj)
        except Exception as err:  # whatever one line does, it costs that line alone
            reason, note = failure(err)
            if session_start is None:
                session_start = file_start = file_start if file_start is not None else fallback_start(path)
            yield from orphans.release(session_id, session_start)
            yield bad_record(
                SOURCE,
                source_path,
                line_no,
                reason,
                obj,
                note,
                session_id=session_id,
                session_start=session_start,
            )
            continue
        yield from orphans.release(session_id, session_start)
        # After the row's fields: is_error, exit_code, cwd, repo, git_branch (never known here),
        # the model, and the defaults of the rest.
        rest = (None, None, cwd, repo_name(cwd), None, model, False, None, None, None, False, None, False, 0)
        for row in rows:
            yield new_event((SOURCE, session_id, session_start, source_path, line_no, seq, *row, *rest))
            seq += 1
        if refused is not None or refused_inner is not None:
            value = refused if refused is not None else refused_inner
            yield clock.bad_row(
                SOURCE, source_path, line_no, value, obj, session_id=session_id, session_start=session_start
            )
    yield from orphans.release(None, None)


def _cwd(obj: dict[str, Any]) -> str | None:
    """The conversation's working folder: the line's own `cwd` (or `metadata.cwd`), else the one its
    first system or developer prompt names (`common.prompt_cwd`), so its repository is known.
    Called after `_conversation` has checked the messages."""
    metadata = obj.get("metadata")
    for holder in (obj, metadata if isinstance(metadata, dict) else {}):
        value = holder.get("cwd")
        if isinstance(value, str) and value.strip():
            return value.strip()
    for message in obj["messages"]:
        if message.get("role") in ("system", "developer"):
            return prompt_cwd(content_text(message.get("content")))
    return None


# One event's own fields, in `Event` order: ts, role, kind, text, tool_name, tool_call_id and
# tool_input. A plain tuple: a line has dozens, each spliced into its event at once.
_Row = tuple[int | None, str, str, str | None, str | None, str | None, str | None]


def _conversation(
    obj: dict[str, Any], line_ts: int | None, clock: Clock
) -> tuple[list[_Row], str | None, object]:
    """All events of one line, its model and the first message time not believed (None if none),
    read before any is yielded so a broken line is quarantined whole."""
    messages = get_list(obj, "messages")
    if messages is None:
        raise UnknownRecordType("not a chat record: no messages list")
    if not messages:
        raise UnknownRecordType("an empty conversation: the messages list holds nothing")
    model = get_str(obj, "model")
    out: list[_Row] = []
    tools = get_list(obj, "tools")
    if tools:
        out.append((line_ts, "system", "meta", canonical_json({"tools": tools}), None, None, None))
    call_names: dict[str, str] = {}
    refused: object = None
    for index, message in enumerate(messages):
        where = f"messages[{index}]."
        if not isinstance(message, dict):
            raise WrongFieldType(where.rstrip("."), "an object", message)
        raw = message.get("timestamp")
        ts, implausible = clock.read(raw)
        if implausible and refused is None:
            refused = raw
        out.extend(_message_events(message, where, ts if ts is not None else line_ts, call_names))
    return out, model, refused


def _message_events(
    message: dict[str, Any], where: str, ts: int | None, call_names: dict[str, str]
) -> list[_Row]:
    role = get_str(message, "role", where)
    text = content_text(message.get("content"), where + "content")
    if role in ("system", "developer"):
        return [(ts, "system", "meta", text, None, None, None)]
    if role == "user":
        return [(ts, "user", "message", text, None, None, None)]
    if role == "assistant":
        return _assistant_events(message, where, ts, text, call_names)
    if role in ("tool", "function"):
        call_id = get_str(message, "tool_call_id", where)
        name = get_str(message, "name", where) or call_names.get(call_id or "")
        return [(ts, "tool", "tool_result", text, name, call_id, None)]
    raise UnknownRecordType(f"{where}role: unknown role {role!r}")


def _assistant_events(
    message: dict[str, Any], where: str, ts: int | None, text: str | None, call_names: dict[str, str]
) -> list[_Row]:
    out: list[_Row] = []
    reasoning = get_str(message, "reasoning_content", where)
    if reasoning:
        out.append((ts, "assistant", "reasoning", reasoning, None, None, None))
    calls = list(enumerate(get_list(message, "tool_calls", where) or []))
    legacy = get_dict(message, "function_call", where)
    if legacy is not None:
        calls.append((-1, {"function": legacy}))
    if text or not calls:
        out.append((ts, "assistant", "message", text, None, None, None))
    for index, call in calls:
        call_where = f"{where}tool_calls[{index}]." if index >= 0 else f"{where}function_call."
        out.append(_tool_call(call, call_where, ts, call_names))
    return out


def _tool_call(call: object, where: str, ts: int | None, call_names: dict[str, str]) -> _Row:
    if not isinstance(call, dict):
        raise WrongFieldType(where.rstrip("."), "an object", call)
    # Some exports flatten {name, arguments} into the call instead of nesting them under `function`.
    function = get_dict(call, "function", where) or call
    name = get_str(function, "name", where + "function.")
    if name is None:
        raise WrongFieldType(where + "function.name", "a string", None)
    call_id = get_str(call, "id", where)
    if call_id is not None:
        call_names[call_id] = name
    arguments = parse_arguments(function.get("arguments"), where + "function.arguments")
    return (ts, "assistant", "tool_call", None, name, call_id, canonical_json(arguments))
