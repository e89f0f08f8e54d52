"""Chat-format JSONL: one conversation per line, as OpenAI's or Anthropic's APIs take it.

Each line is `{"messages": [...], "tools": [...]?}`. Messages have roles system/developer, user,
assistant and tool (legacy `function`, and Llama 3's `ipython`), `content` a string, a list of parts
or a single part object. Besides its content, an assistant message may carry:

- `tool_calls`: function calls (`function: {name, arguments}`), or custom tools' calls
  (`{"type": "custom", "custom": {name, input}}`), whose free text is kept as `{"input": text}`, as
  Codex's own are; or a legacy `function_call`;
- its reasoning, as `reasoning_content` or `reasoning` (vLLM's newer name, and OpenRouter's);
- a `refusal`: a refused request's reply, kept as its text.

Anthropic Messages lines are read too: a top-level `system` prompt, and content blocks `tool_use` (a
call), `tool_result` (its result, with its `is_error`, although a user message holds it) and
`thinking` / `redacted_thinking` (reasoning); the parts between them are messages. Results are
linked to their calls by id, a string or an integer. Optional per-line `id` or `session_id`,
`timestamp` / `created_at` / `metadata.timestamp`, `model`, and `cwd` / `metadata.cwd`; without a
cwd field, the working folder the first system prompt (the top-level `system`, else the first system
or developer message) names (`You are working in /home/me/src/app`, `Working directory: ...`,
`<cwd>...</cwd>`) is the session's cwd, and its repository is named from it as for the agents that
record one.

A line is a session: its id is the line's own id, else a short sha256 of the line's canonical JSON
(so copies of a conversation dedupe, and the id is the same on every machine). An id that is a
number or a string of digits is a row number of its export (0, 1, ...), and names nothing outside
it: every export has a row 0. Such a line is named by its content, like a line without an id.

Its start is the line's timestamp, else a YYYY-MM-DD date in the file name, else the file's mtime.
A line that is not JSON is quarantined with the next session in the file; a line that is JSON but
breaks the format (an empty `messages` list included) is quarantined with its own session, whole,
so no conversation reaches training with a hole in it. A time the line gives that is not believed
(`common.Clock`: before 2015, or past the file's last write and a day) is not used: the
conversation is kept, timed by its other times or the file's start, and the line gets an
`implausible_timestamp` row.

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
    REDACTED_THINKING,
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


# A first line the head cuts short is judged by a `messages` key anywhere in what the head holds of
# it: the top-level `system` prompt (Anthropic's) or the tool specs may come first, tens of KB of them.
_CHAT_PREFIX = re.compile(rb'\{.*?"messages"\s*:\s*\[\s*\{\s*"', re.DOTALL)


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
    """The line's own `id` or `session_id` when it is a name, else a digest of the line.

    A number (or a string of digits, as a CSV or dataframe export writes one) is a row number: every
    export has a conversation 0, so taken as it is, conversations of different files (or of two
    exports joined into one) would merge into one session. The line's content names it instead: the
    same on every machine, and the same in a copied file, which then dedupes. Not the row number
    scoped by the file's name: two folders' `chats.jsonl` would still collide, and a renamed copy
    would be ingested twice."""
    for key in ("id", "session_id"):
        value = obj.get(key)
        if isinstance(value, str) and value and not value.isdecimal():
            return value
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
        # After the row's fields: exit_code, cwd, repo, git_branch (never known here), the model,
        # and the defaults of the rest.
        rest = (None, cwd, repo_name(cwd), None, model, False, None, None, None, False, None, False, 0)
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
    first system prompt names (`common.prompt_cwd`): Anthropic's top-level `system`, else the first
    system or developer message, so its repository is known. Called after `_conversation` has
    checked the line."""
    metadata = obj.get("metadata")
    for holder in (obj, metadata if isinstance(metadata, dict) else {}):
        value = holder.get("cwd")
        if isinstance(value, str) and value.strip():
            return value.strip()
    if obj.get("system") and (named := prompt_cwd(_text(obj["system"], "system"))):
        return named
    for message in obj["messages"]:
        if message.get("role") in ("system", "developer"):
            return prompt_cwd(_text(message.get("content")))
    return None


# One event's own fields, in `Event` order: ts, role, kind, text, tool_name, tool_call_id,
# tool_input and is_error. A plain tuple: a line has dozens, each spliced into its event at once.
_Row = tuple[int | None, str, str, str | None, str | None, str | None, str | None, bool | None]


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
        out.append((line_ts, "system", "meta", canonical_json({"tools": tools}), None, None, None, None))
    if obj.get("system") is not None:  # Anthropic keeps the system prompt beside the messages
        system = _text(obj["system"], "system")
        if system:
            out.append((line_ts, "system", "meta", system, None, None, None, None))
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
    content = message.get("content")
    if role in ("system", "developer"):
        return [(ts, "system", "meta", _text(content, where + "content"), None, None, None, None)]
    if role == "user":
        return _content_events("user", content, where + "content", ts, call_names)
    if role == "assistant":
        return _assistant_events(message, where, ts, call_names)
    if role in ("tool", "function", "ipython"):  # ipython: where Llama 3.x puts a tool's output
        call_id = _call_id(message, "tool_call_id", where)
        name = get_str(message, "name", where) or call_names.get(call_id or "")
        return [(ts, "tool", "tool_result", _text(content, where + "content"), name, call_id, None, None)]
    raise UnknownRecordType(f"{where}role: unknown role {role!r}")


def _assistant_events(
    message: dict[str, Any], where: str, ts: int | None, call_names: dict[str, str]
) -> list[_Row]:
    out: list[_Row] = []
    reasoning = get_str(message, "reasoning_content", where)
    if not reasoning:
        # vLLM's newer name for it, and OpenRouter's. Read only as text: the word is generic enough
        # that an export may keep something else there (effort settings, say), which is no reasoning.
        value = message.get("reasoning")
        reasoning = value if isinstance(value, str) else None
    if reasoning:
        out.append((ts, "assistant", "reasoning", reasoning, None, None, None, None))
    out.extend(_content_events("assistant", message.get("content"), where + "content", ts, call_names))
    refusal = get_str(message, "refusal", where)
    if refusal:  # OpenAI gives a refused request's reply here, its content null
        out.append((ts, "assistant", "message", refusal, None, None, None, None))
    calls = list(enumerate(get_list(message, "tool_calls", where) or []))
    legacy = get_dict(message, "function_call", where)
    if legacy is not None:
        calls.append((-1, {"function": legacy}))
    for index, call in calls:
        call_where = f"{where}tool_calls[{index}]." if index >= 0 else f"{where}function_call."
        out.append(_tool_call(call, call_where, ts, call_names))
    # An empty reply (content null beside the calls) is no event, unless it is all the turn holds.
    said = [row for row in out if row[2] != "message" or row[3]]
    return said or out


def _tool_call(call: object, where: str, ts: int | None, call_names: dict[str, str]) -> _Row:
    if not isinstance(call, dict):
        raise WrongFieldType(where.rstrip("."), "an object", call)
    custom = get_dict(call, "custom", where)
    if custom is not None:
        # An OpenAI custom tool takes free text, not JSON arguments (Codex's apply_patch is one):
        # kept as Codex's custom_tool_call is, so both read alike downstream.
        name = _name(custom, where + "custom.")
        arguments: dict[str, Any] = {"input": get_str(custom, "input", where + "custom.")}
    else:
        # Some exports flatten {name, arguments} into the call instead of nesting them under `function`.
        function = get_dict(call, "function", where) or call
        name = _name(function, where + "function.")
        arguments = parse_arguments(function.get("arguments"), where + "function.arguments")
    call_id = _call_id(call, "id", where)
    if call_id is not None:
        call_names[call_id] = name
    return (ts, "assistant", "tool_call", None, name, call_id, canonical_json(arguments), None)


# Anthropic content blocks that are not text; a user or assistant content list holding one is read
# block by block (`_content_events`), any other list as one message's parts.
_EVENT_BLOCKS = frozenset({"tool_use", "server_tool_use", "tool_result", "thinking", "redacted_thinking"})


def _content_events(
    role: str, content: object, where: str, ts: int | None, call_names: dict[str, str]
) -> list[_Row]:
    """A user or assistant message's content as events: one message, or, for Anthropic blocks, a
    call for each `tool_use`, a result for each `tool_result` (a user message carries them, but the
    tool said them), reasoning for `thinking`, and a message for each run of other parts between."""
    parts = _parts(content)
    if not isinstance(parts, list) or not any(map(_event_block, parts)):
        return [(ts, role, "message", content_text(parts, where), None, None, None, None)]
    out: list[_Row] = []
    run: list[Any] = []
    for index, part in enumerate(parts):
        kind = _event_block(part)
        if kind is None:
            run.append(part)
            continue
        if run:
            out.append((ts, role, "message", content_text(run, where), None, None, None, None))
            run = []
        out.append(_block_event(part, kind, f"{where}[{index}].", ts, call_names))
    if run:
        out.append((ts, role, "message", content_text(run, where), None, None, None, None))
    return out


def _event_block(part: object) -> str | None:
    """The type of an Anthropic block that is an event of its own, else None (a message's part)."""
    kind = part.get("type") if isinstance(part, dict) else None
    return kind if isinstance(kind, str) and kind in _EVENT_BLOCKS else None


def _block_event(
    block: dict[str, Any], kind: str, where: str, ts: int | None, call_names: dict[str, str]
) -> _Row:
    if kind == "thinking":
        return (ts, "assistant", "reasoning", get_str(block, "thinking", where), None, None, None, None)
    if kind == "redacted_thinking":  # encrypted: only that there was some is kept, as for Claude Code
        return (ts, "assistant", "reasoning", REDACTED_THINKING, None, None, None, None)
    if kind == "tool_result":
        call_id = _call_id(block, "tool_use_id", where)
        text = _text(block.get("content"), where + "content")
        is_error = block.get("is_error") is True
        return (ts, "tool", "tool_result", text, call_names.get(call_id or ""), call_id, None, is_error)
    name = _name(block, where)  # tool_use, or server_tool_use (a tool the API ran, such as web search)
    call_id = _call_id(block, "id", where)
    if call_id is not None:
        call_names[call_id] = name
    arguments = parse_arguments(block.get("input"), where + "input")
    return (ts, "assistant", "tool_call", None, name, call_id, canonical_json(arguments), None)


def _parts(content: object) -> object:
    """`content`, with a single part object (`{"type": "text", "text": ...}`, as some exports write a
    one-part content) read as a list of that part."""
    if isinstance(content, dict) and ("type" in content or "text" in content):
        return [content]
    return content


def _text(content: object, where: str = "content") -> str | None:
    """`common.content_text`, taking a single part object too (`_parts`)."""
    return content_text(_parts(content), where)


def _name(obj: dict[str, Any], where: str) -> str:
    """A tool's name, which a call cannot go without."""
    name = get_str(obj, "name", where)
    if name is None:
        raise WrongFieldType(where + "name", "a string", None)
    return name


def _call_id(obj: dict[str, Any], key: str, where: str) -> str | None:
    """A call id, or the id a result names: a string, or an integer some exports number calls by."""
    value = obj.get(key)
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return get_str(obj, key, where)
