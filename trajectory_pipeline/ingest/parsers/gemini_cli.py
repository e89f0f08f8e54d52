"""Gemini CLI chats: `~/.gemini/tmp/<project>/chats/`, one file per session, in two layouts.

`session-*.json`, before v0.39: one JSON object, rewritten whole by the CLI after every message,
`{sessionId, projectHash, startTime, lastUpdated, messages: [...]}`.

`session-*.jsonl`, from v0.39 on (google-gemini/gemini-cli#23749): an append-only log of the same
messages, re-appended whole when they change, with metadata updates and rewinds between them;
`gemini_jsonl` rebuilds the session from it (and says why a `$set.messages` restatement of the
history is not read). A subagent logs to
`chats/<parent session id>/<agent id>.jsonl` (`kind: "subagent"`): its events belong to the parent
session, marked `is_sidechain` with `agent_id` its own id, and start when the parent started (read
from the parent's log), as Claude Code's sub-agents do, so both land in the parent's partition.

Messages are `user`, `gemini` (the assistant), `info`, `warning` or `error`. One `gemini`
record can hold several model turns: its thoughts and tool calls carry their own
timestamps, so they are replayed in time order, each batch of parallel calls (same
timestamp) followed by its results, which is what the model saw before its next call.
Function-call and function-response parts in a message's content are not read as text: they
restate its `toolCalls` (the JSONL CLI records each batch of tool results as a `user` message
holding only such parts).

`logs.json` beside the chats (a list of the user's prompts) is deliberately not read:
every prompt in it is also a user message of the session file, and it has no tool
calls. It does not match GLOBS, does not sniff as this format, and `parse` refuses
it as `not_an_object`.

    from trajectory_pipeline.ingest.parsers import gemini_cli
    events = list(gemini_cli.parse(Path("session-2025-12-01T21-45-5b959dae.json")))
"""

from __future__ import annotations

import codecs
import itertools
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from trajectory_pipeline.ingest.parsers import gemini_jsonl
from trajectory_pipeline.ingest.parsers.common import (
    MAX_FILE_BYTES,
    Clock,
    Fields,
    bad_record,
    failure,
    load_json_document,
    stamp_events,
)
from trajectory_pipeline.ingest.parsers.lines import MAX_LINE_BYTES, file_mtime_us, read_head
from trajectory_pipeline.schema import (
    UNKNOWN_RECORD_TYPE,
    WRONG_FIELD_TYPE,
    BadLine,
    Event,
    canonical_json,
    parse_ts,
)

SOURCE = "gemini_cli"
# The listing matches file names, not folders: a subagent's log is told by its name, the CLI's
# agent id (a UUID), so that no other `.jsonl` under the root is listed and flagged unrecognized.
GLOBS: tuple[str, ...] = (
    "**/session-*.json",  # before v0.39
    "**/session-*.jsonl",  # from v0.39 on
    "**/????????-????-????-????-????????????.jsonl",  # a subagent's, in chats/<parent session id>/
)
TITLE = "Gemini CLI"
DEFAULT_ROOT = "~/.gemini/tmp"  # where the tool writes
HOLDS = "chats (<project>/chats/session-*.json or .jsonl, subagents' <session>/<agent>.jsonl)"
VOCABULARY = "gemini_cli"  # its table in mining/vocabulary.py
PATH_DATED = True  # whether file paths carry the session's date


_ROLE_KIND = {
    "user": ("user", "message"),
    "gemini": ("assistant", "message"),
    "info": ("system", "meta"),
    "warning": ("system", "meta"),
    "error": ("system", "error"),
}
_FAILED = frozenset({"error", "cancelled"})
# A call in any other status (scheduled, executing, awaiting_approval) has no result yet.
_FINISHED = _FAILED | {"success"}

_SNIFF_KEYS = tuple(
    re.compile(pattern)
    for pattern in (rb'"sessionId"\s*:\s*"', rb'"projectHash"\s*:\s*"', rb'"messages"\s*:\s*\[')
)
_START_TIME = re.compile(rb'"startTime"\s*:\s*"([^"]{1,64})"')
_TIMESTAMP = re.compile(rb'"timestamp"\s*:\s*"([^"]{1,64})"')

IdCall = tuple[str, dict[str, Any]]


def sniff(path: Path, head: bytes) -> bool:
    """A JSON object that opens with the chat record's keys, or a log whose metadata record is
    among its first lines.

    Keys are matched with their unescaped quotes, so a JSONL transcript that merely
    mentions them inside a string does not match.
    """
    head = head.removeprefix(codecs.BOM_UTF8)
    if head.lstrip()[:1] != b"{":
        return False
    return all(key.search(head) for key in _SNIFF_KEYS) or gemini_jsonl.sniff(head)


def earliest_start(path: Path) -> int | None:
    """`startTime`, or the first message's timestamp, from the file's head (believed ones only);
    for a subagent's log, its parent's start, which `parse` gives its events."""
    head = read_head(path)
    if path.suffix == ".jsonl":
        parent = gemini_jsonl.subagent_parent(path, gemini_jsonl.head_metadata(head))
        start = gemini_jsonl.parent_start(path, parent) if parent is not None else None
        if start is not None:
            return start
    clock = Clock(path)
    found = (pattern.search(head) for pattern in (_START_TIME, _TIMESTAMP))
    stamps = [clock.believe(match.group(1).decode("utf-8", "replace")) for match in found if match]
    known = [stamp for stamp in stamps if stamp is not None]
    return min(known) if known else None


def parse(path: Path, max_line_bytes: int = MAX_LINE_BYTES) -> Iterator[Event | BadLine]:
    """Events of the one session in the file. A `.json` file is read whole, capped by
    MAX_FILE_BYTES; a `.jsonl` log line by line, each line capped by `max_line_bytes`."""
    if path.suffix == ".jsonl":
        yield from _parse_log(path, max_line_bytes)
        return
    doc = load_json_document(path, SOURCE, MAX_FILE_BYTES)
    if isinstance(doc, BadLine):
        yield doc
        return
    messages = doc.get("messages")
    session_id = doc.get("sessionId") if isinstance(doc.get("sessionId"), str) else path.stem
    clock = Clock(path)
    session_start = _session_start(path, doc.get("startTime"), messages, clock)
    if not isinstance(messages, list):
        broken = {"messages": messages}
        yield bad_record(
            SOURCE, str(path), 0, WRONG_FIELD_TYPE, broken, session_id=session_id, session_start=session_start
        )
        return
    common = {
        "source": SOURCE,
        "session_id": session_id,
        "session_start": session_start,
        "source_path": str(path),
    }
    yield from stamp_events(_message_stream(path, enumerate(messages, start=1), clock), common)


def _parse_log(path: Path, max_line_bytes: int) -> Iterator[Event | BadLine]:
    """The session of an append-only log; its unreadable lines first, then its messages' events.

    The whole log is read before the first event: a later record can replace or rewind an earlier
    one. Memory is the session's messages, not the file (a message's older versions are dropped).
    """
    log = gemini_jsonl.read_log(path, SOURCE, max_line_bytes)
    own_id = log.meta.get("sessionId")
    if not isinstance(own_id, str) or not own_id:
        own_id = path.stem
    clock = Clock(path)
    messages = [message for _, message in log.messages]
    common: Fields = {
        "source": SOURCE,
        "session_id": own_id,
        "session_start": _session_start(path, log.meta.get("startTime"), messages, clock),
        "source_path": str(path),
    }
    if log.meta.get("kind") == "subagent":
        common |= {"is_sidechain": True, "agent_id": own_id}
        parent = gemini_jsonl.subagent_parent(path, log.meta)
        if parent is not None:
            common["session_id"] = parent
            start = gemini_jsonl.parent_start(path, parent)
            if start is not None:
                common["session_start"] = start
    yield from stamp_events(itertools.chain(log.bad, _message_stream(path, log.messages, clock)), common)


def _session_start(path: Path, start_time: Any, messages: Any, clock: Clock) -> int:
    """`startTime`, else the earliest message time, else the file's mtime: believed times only."""
    start = clock.believe(start_time)
    if start is not None:
        return start
    if isinstance(messages, list):
        stamps = [clock.believe(m.get("timestamp")) for m in messages if isinstance(m, dict)]
        known = [stamp for stamp in stamps if stamp is not None]
        if known:
            return min(known)
    return file_mtime_us(path)


def _message_stream(
    path: Path, messages: Iterable[tuple[int, Any]], clock: Clock
) -> Iterator[Fields | BadLine]:
    """Each message's events, with the line (or, in a `.json` file, the position) it was read at."""
    for line_no, message in messages:
        problem = _why_unusable(message)
        if problem is not None:
            yield bad_record(SOURCE, str(path), line_no, problem, message)
            continue
        stamp = message.get("timestamp")
        ts, implausible = clock.read(stamp)
        try:  # whole, before any is given: whatever one message does, it costs that message alone
            fields = list(_message_fields(message, line_no, ts))
        except Exception as err:
            reason, note = failure(err)
            yield bad_record(SOURCE, str(path), line_no, reason, message, note)
            continue
        yield from fields
        if implausible:
            yield clock.bad_row(SOURCE, str(path), line_no, stamp, message)


def _why_unusable(message: Any) -> str | None:
    """The quarantine reason for a message that cannot be loaded whole, else None."""
    if not isinstance(message, dict) or not isinstance(message.get("type"), str):
        return WRONG_FIELD_TYPE
    if message["type"] not in _ROLE_KIND:
        return UNKNOWN_RECORD_TYPE
    if not isinstance(message.get("content"), str | list | dict | None):
        return WRONG_FIELD_TYPE
    thoughts, calls = message.get("thoughts"), message.get("toolCalls")
    if not isinstance(thoughts, list | None) or not isinstance(calls, list | None):
        return WRONG_FIELD_TYPE
    if any(not isinstance(thought, dict | str) for thought in thoughts or ()):
        return WRONG_FIELD_TYPE
    if any(not isinstance(call, dict) or not isinstance(call.get("name"), str) for call in calls or ()):
        return WRONG_FIELD_TYPE
    return None


def _message_fields(message: dict[str, Any], line_no: int, ts: int | None) -> Iterator[Fields]:
    role, kind = _ROLE_KIND[message["type"]]
    base: Fields = {
        "line_no": line_no,
        "ts": ts,
        "role": role,
        "event_id": message.get("id") if isinstance(message.get("id"), str) else None,
    }
    text = parts_text(message.get("content"))
    if role != "assistant":
        if text:
            yield {**base, "kind": kind, "text": text, "is_error": True if kind == "error" else None}
        return
    if isinstance(message.get("model"), str):
        base["model"] = message["model"]
    yield from _assistant_fields(message, base, text)


def _assistant_fields(message: dict[str, Any], base: Fields, text: str | None) -> Iterator[Fields]:
    """Thoughts, text and tool-call batches of one `gemini` record, in time order.

    The text goes before the first batch: a reply that follows tool results is
    recorded by the CLI as a new message.
    """
    thoughts = [(_thought_ts(thought), thought) for thought in message.get("thoughts") or ()]
    pending_thoughts = iter(thoughts)
    next_thought = next(pending_thoughts, None)
    calls = [(_call_id(call, base, index), call) for index, call in enumerate(message.get("toolCalls") or ())]
    for batch_ts, batch in _batches(calls):
        while next_thought is not None and _not_after(next_thought[0], batch_ts):
            yield _thought_fields(next_thought, base)
            next_thought = next(pending_thoughts, None)
        if text:
            yield {**base, "kind": "message", "text": text}
            text = None
        yield from (_call_fields(call_id, call, base) for call_id, call in batch)
        for call_id, call in batch:
            result = _result_fields(call_id, call, base)
            if result is not None:
                yield result
    while next_thought is not None:
        yield _thought_fields(next_thought, base)
        next_thought = next(pending_thoughts, None)
    if text:
        yield {**base, "kind": "message", "text": text}


def _not_after(ts: int | None, other: int | None) -> bool:
    return ts is None or other is None or ts <= other


def _batches(calls: list[IdCall]) -> Iterator[tuple[int | None, list[IdCall]]]:
    """Runs of consecutive calls with the same timestamp: the calls of one model turn."""
    batch: list[IdCall] = []
    for call in calls:
        if batch and call[1].get("timestamp") != batch[0][1].get("timestamp"):
            yield parse_ts(batch[0][1].get("timestamp")), batch
            batch = []
        batch.append(call)
    if batch:
        yield parse_ts(batch[0][1].get("timestamp")), batch


def _thought_ts(thought: dict[str, Any] | str) -> int | None:
    return parse_ts(thought.get("timestamp")) if isinstance(thought, dict) else None


def _ts_or(value: Any, default: int | None) -> int | None:
    ts = parse_ts(value)
    return ts if ts is not None else default


def _thought_fields(thought: tuple[int | None, dict[str, Any] | str], base: Fields) -> Fields:
    ts, body = thought
    if isinstance(body, str):
        text = body
    else:
        parts = (body.get("subject"), body.get("description"))
        text = "\n".join(part.strip() for part in parts if isinstance(part, str) and part.strip())
    return {**base, "ts": ts if ts is not None else base["ts"], "kind": "reasoning", "text": text}


def _call_fields(call_id: str, call: dict[str, Any], base: Fields) -> Fields:
    args = call.get("args")
    return {
        **base,
        "ts": _ts_or(call.get("timestamp"), base["ts"]),
        "kind": "tool_call",
        "tool_name": call["name"],
        "tool_call_id": call_id,
        "tool_input": canonical_json(args if args is not None else {}),
    }


def _result_fields(call_id: str, call: dict[str, Any], base: Fields) -> Fields | None:
    status = call.get("status") if isinstance(call.get("status"), str) else None
    result = call.get("result")
    if status not in _FINISHED and result is None:
        return None
    text, error_in_response = _result_text(result)
    if text is None and isinstance(call.get("resultDisplay"), str):
        text = call["resultDisplay"]
    is_error = True if status in _FAILED or error_in_response else (False if status == "success" else None)
    return {
        **{key: value for key, value in base.items() if key != "model"},
        "ts": _ts_or(call.get("timestamp"), base["ts"]),
        "role": "tool",
        "kind": "tool_result",
        "text": text,
        "tool_name": call["name"],
        "tool_call_id": call_id,
        "is_error": is_error,
    }


def _call_id(call: dict[str, Any], base: Fields, index: int) -> str:
    """The CLI's own call id; a deterministic one (message, position) when it is missing."""
    if isinstance(call.get("id"), str) and call["id"]:
        return call["id"]
    return f"{base['event_id'] or base['line_no']}:{index}"


def _result_text(result: Any) -> tuple[str | None, bool]:
    """The text of a tool result (a Part list, one Part or a string) and whether it reports an error."""
    if result is None:
        return None, False
    parts = result if isinstance(result, list) else [result]
    texts: list[str] = []
    error = False
    for part in parts:
        wrapper = part.get("functionResponse") if isinstance(part, dict) else None
        response = wrapper.get("response") if isinstance(wrapper, dict) else None
        if isinstance(response, dict) and "error" in response and "output" not in response:
            error = True
            texts.append(_as_text(response["error"]))
        elif isinstance(response, dict) and "output" in response:
            texts.append(_as_text(response["output"]))
        elif response is not None:
            texts.append(_as_text(response))
        else:
            texts.append(_part_text(part))
    joined = "\n".join(text for text in texts if text)
    return joined or None, error


def parts_text(value: Any) -> str | None:
    """Plain text of a Gemini content value: a string, one Part, or a list of Parts."""
    if value is None:
        return None
    parts = value if isinstance(value, list) else [value]
    texts = (_part_text(part) for part in parts if not _is_function_part(part))
    joined = "\n".join(text for text in texts if text)
    return joined or None


def _is_function_part(part: Any) -> bool:
    """A function call or response in a message's content: the message's `toolCalls` hold it."""
    return isinstance(part, dict) and ("functionCall" in part or "functionResponse" in part)


def _part_text(part: Any) -> str:
    if isinstance(part, str):
        return part
    if isinstance(part, dict) and isinstance(part.get("text"), str):
        return part["text"]
    if isinstance(part, dict) and isinstance(part.get("inlineData"), dict):
        return f"[inline data: {part['inlineData'].get('mimeType', 'unknown type')}]"
    return canonical_json(part)


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else canonical_json(value)
