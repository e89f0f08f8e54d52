"""Gemini CLI's append-only session logs (v0.39 on): the records of one file, rebuilt into its session.

Not a format of its own: `gemini_cli` reads `.jsonl` chats with it, then turns the messages into
events as it does a `.json` file's (one format, one SOURCE).

Since google-gemini/gemini-cli#23749 the CLI appends one JSON record a line to
`chats/session-<YYYY-MM-DDTHH-MM>-<id8>.jsonl` (`appendRecord` in
packages/core/src/services/chatRecordingService.ts) instead of rewriting one object:

- a metadata record, first: `{sessionId, projectHash, startTime, lastUpdated, kind, directories}`;
- message records (`{id, timestamp, type, content, toolCalls, ...}`), each appended again whole
  whenever it changes (its tool calls ran, its tokens were counted): the last version of an id
  wins, in the place of its first, as the CLI's `loadConversationRecord` rebuilds it;
- `{"$set": {...}}`, metadata updates (`lastUpdated`, `summary`, `directories`, ...);
- `{"$rewindTo": id}`: the person rewound the conversation; that message and all after it are
  gone from the session.

Records are told apart in the CLI's order: a string `$rewindTo`, a string `id`, an object `$set`,
then metadata (string `sessionId` and `projectHash`). Any other object is quarantined.

`$set.messages` is not read. The CLI writes it (`updateMessagesFromHistory`) to make the model's
current context the conversation a resume starts from: after a compression that is a summary
plus copies of the latest turns under new ids and times, their tool calls left as bare
function-call parts; after masking, tool output swapped for a pointer to a file; after an aborted
turn, the history without it; on resume, the history without its info and error messages. Each
turn it restates was appended as a record of its own, so replacing the history with it would lose
every turn before a compression and the tool calls of the turns it keeps, and reading it as well
would read them twice. (The CLI's loader keeps the last restatement alone, and so loses what was
appended after it.) A `$rewindTo` naming a message that only a restatement holds, or one whose
line was quarantined, drops nothing here, where the CLI's loader would empty the session.

Subagents log to `chats/<parent session id>/<agent id>.jsonl`, metadata `kind: "subagent"`:
`subagent_parent` names the parent session, `parent_start` reads its start from the parent's log.

    from trajectory_pipeline.ingest.parsers.gemini_jsonl import read_log
    log = read_log(Path("session-2026-05-22T14-59-0f1e2d3c.jsonl"), "gemini_cli")
    log.meta["sessionId"], [record["id"] for _, record in log.messages]
"""

from __future__ import annotations

import functools
import os
import re
from pathlib import Path
from typing import Any, NamedTuple

import orjson

from trajectory_pipeline.ingest.parsers.common import SNIFF_LINES, Clock, bad_record, sniff_lines
from trajectory_pipeline.ingest.parsers.lines import MAX_LINE_BYTES, read_head, read_json_lines
from trajectory_pipeline.schema import UNKNOWN_RECORD_TYPE, WRONG_FIELD_TYPE, BadLine

Record = dict[str, Any]

_REWIND, _MESSAGE, _SET, _META = "rewind", "message", "set", "meta"
# The keys that make a record one of those kinds: present with another type, the record is broken.
_KIND_KEYS = ("$rewindTo", "id", "$set", "sessionId", "projectHash")
# A metadata line the head cuts short, as JSON.stringify writes it (its keys in this order).
_META_PREFIX = re.compile(rb'\{"sessionId":"[^"]*","projectHash":"')


class Log(NamedTuple):
    meta: Record  # the metadata record, updated by `$set` (less `messages`)
    messages: list[tuple[int, Record]]  # the session's messages in order, each with its last version's line
    bad: list[BadLine]  # lines that are no record, and records of no kind, in file order


def read_log(path: Path, source: str, max_line_bytes: int = MAX_LINE_BYTES) -> Log:
    """The session the log holds, rebuilt record by record (see the module docstring)."""
    meta: Record = {}
    messages: dict[str, tuple[int, Record]] = {}  # insertion order is the session's order
    bad: list[BadLine] = []
    for item in read_json_lines(path, source, max_line_bytes):
        if isinstance(item, BadLine):  # a torn last line (a write cut short) among them
            bad.append(item)
            continue
        line_no, record = item
        kind = record_kind(record)
        if kind == _REWIND:
            _rewind(messages, record["$rewindTo"])
        elif kind == _MESSAGE:
            messages[record["id"]] = (line_no, record)  # a known id keeps its place
        elif kind == _SET:
            meta.update((key, value) for key, value in record["$set"].items() if key != "messages")
        elif kind == _META:
            meta.update((key, value) for key, value in record.items() if key != "messages")
        else:
            reason = WRONG_FIELD_TYPE if any(key in record for key in _KIND_KEYS) else UNKNOWN_RECORD_TYPE
            bad.append(bad_record(source, str(path), line_no, reason, record))
    return Log(meta, list(messages.values()), bad)


def record_kind(record: Record) -> str | None:
    """Which record of the log this is, tested in the order the CLI's loader tests them."""
    if isinstance(record.get("$rewindTo"), str):
        return _REWIND
    if isinstance(record.get("id"), str):
        return _MESSAGE
    if isinstance(record.get("$set"), dict):
        return _SET
    if isinstance(record.get("sessionId"), str) and isinstance(record.get("projectHash"), str):
        return _META
    return None


def _rewind(messages: dict[str, tuple[int, Record]], target: str) -> None:
    if target not in messages:  # see the module docstring: nothing here to rewind to
        return
    ids = list(messages)
    for message_id in ids[ids.index(target) :]:
        del messages[message_id]


def sniff(head: bytes) -> bool:
    """Whether the head is such a log: one of its first records is the metadata record."""
    return sniff_lines(head, lambda record: record_kind(record) == _META, _META_PREFIX)


def head_metadata(head: bytes) -> Record | None:
    """The metadata record among the first lines of a log's head, if one parses."""
    for line in head.split(b"\n")[:SNIFF_LINES]:
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(record, dict) and record_kind(record) == _META:
            return record
    return None


def subagent_parent(path: Path, meta: Record | None) -> str | None:
    """The parent session of a subagent's log: the folder it sits in, under `chats`, is named after
    the parent's session id. None for a main session (or a subagent's log moved out of place)."""
    if meta is None or meta.get("kind") != "subagent":
        return None
    folder = path.parent
    return folder.name if folder.name and folder.parent.name == "chats" else None


@functools.lru_cache(maxsize=64)
def _session_logs(chats: str, mtime_ns: int) -> tuple[str, ...]:
    """The session logs in a chats folder, sorted: listed once per folder and version of it (a log
    added or removed changes the folder's mtime), not once per subagent log, twice (plan, parse)."""
    with os.scandir(chats) as entries:
        names = (entry.name for entry in entries)
        return tuple(sorted(n for n in names if n.startswith("session-") and n.endswith(".jsonl")))


def parent_start(path: Path, parent: str) -> int | None:
    """The parent session's start, as parsing its log gives it when its metadata holds a believed
    `startTime`: `chats/session-*-<first 8 of its id>.jsonl` whose metadata names `parent`.

    None when no such log is found or it holds no believed start: the subagent's own start is the
    next best (a parent being written, unreadable or deleted must not cost the subagent's events).
    """
    chats = path.parent.parent
    try:
        logs = _session_logs(str(chats), os.stat(chats).st_mtime_ns)
    except OSError:
        return None
    suffix = f"-{parent[:8]}.jsonl"
    for name in (name for name in logs if name.endswith(suffix)):
        candidate = chats / name
        try:
            meta = head_metadata(read_head(candidate))
        except OSError:
            continue
        if meta is not None and meta.get("sessionId") == parent:
            start = Clock(candidate).believe(meta.get("startTime"))
            if start is not None:
                return start
    return None
