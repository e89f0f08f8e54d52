"""Codex CLI rollouts: `~/.codex/sessions/YYYY/MM/DD/rollout-<local time>-<uuid>.jsonl`.

One session per file. Lines are `{"timestamp", "type", "payload"}`; which become events:

- `session_meta` (the first one): a meta event holding the system prompt (`instructions`,
  or `base_instructions.text` in newer versions), timed at the session's creation; its
  id, cwd and git remote/branch label every event. Later session_meta lines are ignored
  (but see forks below).
- `turn_context`: no event; its cwd and model label the events that follow.
- `response_item`: the canonical conversation. Messages (user / assistant; developer and
  system, and the context codex injects as user text such as AGENTS.md,
  `<environment_context>`, /review's `<user_action>` findings or a hook's `<hook_prompt>`,
  become meta/system); reasoning (encrypted content becomes the placeholder "[encrypted
  reasoning]"); function_call, custom_tool_call (apply_patch), local_shell_call,
  web_search_call, image_generation_call and tool_search_call (deferred-tool discovery) as
  tool calls; their outputs as tool results (a tool_search_output's text is the loaded
  tools' names, one a line). agent_message (a message between the agents of a multi-agent
  run) is a meta event: context the agent reads, not the user's instruction. compaction,
  compaction_summary and context_compaction are a meta placeholder for the encrypted
  summary. ghost_snapshot (an undo checkpoint) and additional_tools (tool definitions added
  mid-session) give no event.
- `event_msg`: `error` (kind error) and `turn_aborted` (an interrupted meta event) become
  events. `exec_command_end`, `patch_apply_end` and `mcp_tool_call_end` set the exit code /
  error flag of the matching tool result (an MCP call's `result` is `{"Err": ...}`, or
  `{"Ok": {..., "isError"}}`). `user_message` repeats the user's prompt, which the
  response_item user message also holds; but some rollouts (Codex Desktop's, among others)
  record a prompt only there. So a `user_message` becomes the user message when no
  response_item user message pairs with it: prompts and their echoes pair up, in either
  order, until the agent next acts (a reasoning, a reply, a call), so no prompt is counted
  twice and none is lost. The rest (event_msg's agent_message, agent_reasoning, token_count,
  task_started...) repeat response items or are UI telemetry, and new kinds appear with every
  release, so they are skipped rather than quarantined.
- Tool names: a function_call with a `namespace` (Codex Desktop's MCP tools: `"namespace":
  "mcp__<server>__", "name": "js"`) is named as Claude Code names MCP tools,
  `mcp__<server>__js`; the same server's tools stay apart from the built-in tools, and the
  vocabulary keeps such a name as it is.
- `compacted`: a meta event with the compaction summary.

Sub-agents and forks. A sub-agent's rollout (spawned by a parent thread, or a /review or
compaction task) is its own file, whose session_meta says so: `source: {"subagent": ...}` or
`thread_source: "subagent"`. Its events are marked as Claude Code marks a sub-agent's,
`is_sidechain` with `agent_id` its own thread id, so the prompt its parent wrote is not taken
for a user's instruction. (Its events stay in its own session, the thread id; they do not
join the parent's session as Claude Code's sub-agent files do.) A fork (`forked_from_id`:
/fork, or a sub-agent given its parent's context) starts with its own session_meta, then
copies its parent's rollout: the parent's session_meta, then the parent's lines, then the
fork's own turns. The copy is the parent's session, already read from the parent's file, so
it is skipped: from a later session_meta with another id up to the first `task_started`
whose turn id is not older than the fork's own id. Both are UUIDv7, which carry their
creation time. When the ages cannot be compared, less is skipped: nothing when the fork's id
is no UUIDv7, and the skip ends at a task_started whose turn id is none; a copy that no turn
of the fork ends (by the end of the file, or within _COPY_CAP lines) is read after all. The
parent's turns counted twice are the lesser harm; skipping too far would lose the fork's own.

Times are believed only from 2015 to a day past the file's last write (`common.Clock`): the
session starts at the earliest believed one, and a line with another is kept untimed, with an
`implausible_timestamp` row.

Legacy rollouts (codex-rs before the wrapped lines above, mid-2025) have no wrapper and no
per-line time: the first line is a bare session header `{"id", "timestamp", "instructions",
"git"?, "cwd"?, ...}`, read like a session_meta payload, and every later line is a bare
response item, read like a response_item payload (untimed: `ts` is None), or a
`{"record_type": "state"}` resume bookkeeping line, which gives no event. A file may
hold both shapes (a legacy session resumed by a newer codex), so each line is read by
its own shape. Quarantine notes of bare lines name the fields without `payload.`.

Exit codes come from the output's own metadata (`{"output", "metadata": {"exit_code"}}`,
codex <= 0.77 and apply_patch), from an `Exit code:` / `Process exited with code` header
on the output of the call that launched the command, or from `exec_command_end`. In
newer versions a command still running when its exec_command returns ("Process running
with session ID N") is finished by later write_stdin polls of session N. Its result is held
back (with everything after it, so file order is kept), at most _HOLD_CAP items, until its
exit code arrives: in the exec_command_end a few lines later, or, where codex persists no
exec_command_end, in the `Process exited with code` header of the poll that saw the command
exit. The exit code is given to the launching call only, never to the polls, so each failed
command counts once.

    from trajectory_pipeline.ingest.parsers import codex
    events = list(codex.parse(Path("~/.codex/sessions/2026/05/11/rollout-....jsonl").expanduser()))
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import orjson

from trajectory_pipeline.ingest.parsers.common import (
    Clock,
    RecordError,
    UnknownRecordType,
    WrongFieldType,
    bad_record,
    content_text,
    failure,
    fallback_start,
    get_dict,
    get_int,
    get_list,
    get_str,
    new_event,
    parse_arguments,
    sniff_lines,
)
from trajectory_pipeline.ingest.parsers.lines import MAX_LINE_BYTES, JsonLine, JsonLines, head_objects
from trajectory_pipeline.schema import BadLine, Event, canonical_json, repo_name

SOURCE = "codex"
GLOBS = ("**/rollout-*.jsonl",)
TITLE = "Codex CLI"
DEFAULT_ROOT = "~/.codex/sessions"  # where the tool writes
HOLDS = "rollouts (YYYY/MM/DD/rollout-*.jsonl)"
VOCABULARY = "codex"  # its table in mining/vocabulary.py
PATH_DATED = True  # whether file paths carry the session's date


ENCRYPTED_REASONING = "[encrypted reasoning]"
IMAGE_PLACEHOLDER = "[image]"  # what content_text leaves for an image part

_TOP_TYPES = ("session_meta", "turn_context", "response_item", "event_msg", "compacted")
_HOLD_CAP = 256  # items held while a result waits for its exit code (real gaps: under 20 lines)
# Lines of a fork's copy of its parent skipped before its end is given up on and they are read.
_COPY_CAP = 25_600
_MEMORY_CAP = 4096  # call ids remembered for linking results to calls

_UUID_PATTERN = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
_UUID = re.compile(_UUID_PATTERN + "$")
# Context codex injects as user-role text (codex-rs contextual_user_message.rs); not a user instruction.
_CONTEXT_PREFIXES = (
    "# agents.md instructions for ",
    "<user_instructions>",
    "<environment_context>",
    "<skill",
    "<user_shell_command>",
    "<turn_aborted>",
    "<subagent_notification>",
    "<user_action>",  # /review's findings, handed to the parent thread (templates/review/exit_*.xml)
    "<hook_prompt",  # a hook's continuation prompt (`<hook_prompt hook_run_id=...>`)
)
_LAUNCHERS = frozenset({"exec_command", "shell", "shell_command", "local_shell", "container.exec"})
_HEADER_CHARS = 512
_EXITED = re.compile(r"^(?:Process exited with code|Exit code:)\s*(-?\d+)\s*$", re.MULTILINE)
_RUNNING = "Process running with session ID"  # at the start of a line of the header
_RUNNING_LINE = "\n" + _RUNNING
_RUNNING_ID = re.compile(r"^Process running with session ID (\d+)", re.MULTILINE)

# Keys of a legacy session header (SessionMeta, flattened with its `git` since codex-rs 0.1.x).
_LEGACY_HEADER_KEYS = frozenset(
    {"id", "timestamp", "instructions", "git", "cwd", "originator", "cli_version"}
)

_CODEX_PREFIX = re.compile(
    rb'\{\s*"timestamp"\s*:\s*"[^"]*"\s*,\s*"type"\s*:\s*"(?:'
    + "|".join(_TOP_TYPES).encode()
    + rb')"\s*,\s*"payload"'
    + rb'|\{\s*"id"\s*:\s*"'
    + _UUID_PATTERN.encode()
    + rb'"\s*,\s*"timestamp"\s*:\s*"'
)


def sniff(path: Path, head: bytes) -> bool:
    """One of the first records (`common.sniff_lines`) is `{"timestamp", "type": <a rollout line
    type>, "payload": {...}}`, or a legacy session header `{"id": <uuid>, "timestamp", ...}`."""
    return sniff_lines(head, _looks_like_rollout, _CODEX_PREFIX)


def _looks_like_rollout(obj: dict[str, Any]) -> bool:
    if obj.get("type") in _TOP_TYPES:
        return isinstance(obj.get("payload"), dict)
    return _is_legacy_header(obj)


def _is_legacy_header(obj: dict[str, Any]) -> bool:
    """A legacy rollout's first line; the exact key set keeps other `{id, timestamp}` logs out."""
    session_id = obj.get("id")
    return (
        isinstance(session_id, str)
        and _UUID.match(session_id) is not None
        and isinstance(obj.get("timestamp"), str)
        and obj.keys() <= _LEGACY_HEADER_KEYS
    )


class _Head(NamedTuple):
    """What the first lines say about the session, known before streaming the rest."""

    session_id: str
    session_start: int
    cwd: str | None
    remote_url: str | None
    git_branch: str | None
    model: str | None
    agent_id: str | None  # a sub-agent's rollout: its own thread id, else None
    fork_ms: int | None  # a fork with a UUIDv7 id: its creation time (ms), else None


def _read_head(path: Path, clock: Clock, objects: Iterable[dict[str, Any]] | None = None) -> _Head:
    """The session as the file's first lines describe it: `objects`, the lines `head_objects`
    gives, when the caller has them."""
    meta, first_ts, model = _scan_head(head_objects(path) if objects is None else objects, clock)
    git_value = meta.get("git")
    git: dict[str, Any] = git_value if isinstance(git_value, dict) else {}
    session_id = _text_or_none(meta.get("id")) or _id_from_name(path)
    source = meta.get("source")
    subagent = (isinstance(source, dict) and "subagent" in source) or meta.get("thread_source") == "subagent"
    forked = _text_or_none(meta.get("forked_from_id")) is not None
    return _Head(
        session_id=session_id,
        session_start=_session_start(path, meta, first_ts, clock),
        cwd=_text_or_none(meta.get("cwd")),
        remote_url=_text_or_none(git.get("repository_url")),
        git_branch=_text_or_none(git.get("branch")),
        model=model,
        agent_id=session_id if subagent else None,
        fork_ms=_uuid7_ms(session_id) if forked else None,
    )


def _scan_head(
    objects: Iterable[dict[str, Any]], clock: Clock, start_only: bool = False
) -> tuple[dict[str, Any], int | None, str | None]:
    """The session_meta payload (or legacy header), the first believed line timestamp (`clock`)
    and the first turn_context model among the head's `objects`.

    `start_only`: the caller needs only what `_session_start` reads, so the scan ends once both
    are settled (what follows cannot change them) instead of reading on to the model.
    """
    meta: dict[str, Any] = {}
    first_ts: int | None = None
    model: str | None = None
    for obj in objects:
        if first_ts is None:
            first_ts = clock.believe(obj.get("timestamp"))
        if not meta and _is_legacy_header(obj):
            meta = obj
        else:
            payload = obj.get("payload")
            if not isinstance(payload, dict):
                continue
            if not meta and obj.get("type") == "session_meta":
                meta = payload
            elif (
                model is None and obj.get("type") == "turn_context" and isinstance(payload.get("model"), str)
            ):
                model = payload["model"]
            if meta and model is not None:
                break
        if start_only and meta and first_ts is not None:
            break
    return meta, first_ts, model


def _session_start(path: Path, meta: dict[str, Any], first_ts: int | None, clock: Clock) -> int:
    """The earliest of the session_meta's creation time and the first line's believed timestamp."""
    starts = [ts for ts in (clock.believe(meta.get("timestamp")), first_ts) if ts is not None]
    return min(starts) if starts else fallback_start(path)


def _text_or_none(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _id_from_name(path: Path) -> str:
    match = _UUID.search(path.stem)
    return match.group(0) if match else path.stem


def _uuid7_ms(value: object) -> int | None:
    """The creation time (Unix ms, its first 48 bits) a UUIDv7 carries; None for anything else."""
    if isinstance(value, str) and _UUID.match(value) and value[14] == "7":
        return int(value[:8] + value[9:13], 16)
    return None


def earliest_start(path: Path) -> int:
    """The session's start as parse() will report it: the earliest of the session_meta's
    creation time and the first line's timestamp."""
    clock = Clock(path)
    meta, first_ts, _ = _scan_head(head_objects(path), clock, start_only=True)
    return _session_start(path, meta, first_ts, clock)


def parse(path: Path, max_line_bytes: int = MAX_LINE_BYTES) -> Iterator[Event | BadLine]:
    """Stream the events of the rollout at `path`."""
    clock = Clock(path)
    with JsonLines(path, SOURCE, max_line_bytes) as lines:
        rollout = _Rollout(path, _read_head(path, clock, lines.head_objects()), clock)
        released = rollout.hold.released
        for item in lines:
            rollout.feed(item)
            if released:
                yield from released
                released.clear()
    rollout.end_copy()  # a copy no fork turn ended: its lines are read after all
    rollout.hold.drain()
    yield from released


class _Outcome(NamedTuple):
    exit_code: int | None
    failed: bool | None


def _is_error(exit_code: int | None, failed: bool | None) -> bool | None:
    if failed or (exit_code is not None and exit_code != 0):
        return True
    if exit_code == 0 or failed is False:
        return False
    return None


def _settled(item: Event | BadLine, outcome: _Outcome) -> Event | BadLine:
    if not isinstance(item, Event):
        return item
    exit_code = item.exit_code if item.exit_code is not None else outcome.exit_code
    return item._replace(exit_code=exit_code, is_error=_is_error(exit_code, outcome.failed))


def _remember(memory: dict[str, Any], key: str, value: Any) -> None:
    """Insert into a dict used as a bounded memory: the oldest key goes once it is full."""
    memory[key] = value
    if len(memory) > _MEMORY_CAP:
        del memory[next(iter(memory))]


class _Holdback:
    """Releases items in file order, holding everything from the first result that still
    waits for its exit code until that code arrives or the hold reaches its cap.

    Released items are appended to `released`, for the reader to take.
    """

    def __init__(self, cap: int = _HOLD_CAP) -> None:
        self._cap = cap
        self._items: deque[Event | BadLine] = deque()
        self._first = 0  # the position in the file's item order of _items[0]
        self._waiting: dict[str, int] = {}  # call id -> position of its held result
        self.released: list[Event | BadLine] = []

    def push(self, item: Event | BadLine, wait_for: str | None = None) -> None:
        if wait_for is None and not self._items:  # nothing held (so nothing waits): straight out
            self._first += 1
            self.released.append(item)
            return
        if wait_for is not None:
            self._waiting[wait_for] = self._first + len(self._items)
        self._items.append(item)
        if len(self._items) > self._cap and self._waiting:
            del self._waiting[next(iter(self._waiting))]  # positions rise with insertion: the oldest
        self._release()

    def waits_for(self, call_id: str) -> bool:
        return call_id in self._waiting

    def settle(self, call_id: str, update: Callable[[Event | BadLine], Event | BadLine]) -> None:
        index = self._waiting.pop(call_id) - self._first
        self._items[index] = update(self._items[index])
        self._release()

    def drain(self) -> None:
        self._waiting.clear()
        self._release()

    def _release(self) -> None:
        blocked_at = min(self._waiting.values(), default=None)
        while self._items and (blocked_at is None or self._first < blocked_at):
            self.released.append(self._items.popleft())
            self._first += 1


class _Rollout:
    """The running state of one rollout file: labels for the next event, and calls awaiting results."""

    def __init__(self, path: Path, head: _Head, clock: Clock) -> None:
        self.source_path = str(path)
        self.clock = clock
        self._line_no = 0  # the line being read, and its record: for an implausible_timestamp row
        self._record: dict[str, Any] = {}
        self._refused_line = 0  # the last line given that row
        self.session_id = head.session_id
        self.session_start = head.session_start
        self.remote_url = head.remote_url
        self.git_branch = head.git_branch
        self.model = head.model
        self.cwd = head.cwd
        self.repo = repo_name(head.cwd, head.remote_url, head.git_branch)
        self._repo_remote = head.remote_url  # the remote `repo` was named with
        self.seq = 0
        self.seen_meta = False
        self.agent_id = head.agent_id
        self._fork_ms = head.fork_ms
        self._copying = False  # inside a fork's copy of its parent's rollout (see the docstring)
        self._copied: list[JsonLine] = []  # its lines, read after all if no fork turn ends it
        self.call_names: dict[str, str] = {}
        # Prompts given as response_item user messages, and as event_msg user_message echoes, that
        # the other has not paired with yet; both reset when the agent acts (see the docstring).
        self._unechoed_prompts = 0
        self._prompts_from_echoes = 0
        self.early_outcomes: dict[str, _Outcome] = {}  # exits reported before their result
        # A command still running when its launching call returned: its process session id -> the
        # launching call; and a write_stdin poll of such a session -> that launching call.
        self._running: dict[str, str] = {}
        self._polls: dict[str, str] = {}
        self.hold = _Holdback()

    def feed(self, item: JsonLine | BadLine) -> None:
        """Read one line; what it releases goes to `hold.released`."""
        if isinstance(item, BadLine):
            self.hold.push(self._label(item))
            return
        line_no, obj = item
        self._line_no, self._record = line_no, obj
        try:
            kind = obj.get("type")
            if self._copying and not self._copy_ends(kind, obj.get("payload")):
                self._copied.append(item)  # the parent's session, copied into a fork: its own file has it
                if len(self._copied) > _COPY_CAP:
                    self.end_copy()  # no fork turn in sight: better the parent's turns twice than none
                return
            self._copied.clear()
            handler = _RECORDS.get(kind) if isinstance(kind, str) else None
            if handler is None:
                self._bare_record(line_no, obj, kind)
                return
            payload = obj.get("payload")
            if not isinstance(payload, dict):
                raise WrongFieldType("payload", "an object", payload)
            handler(self, line_no, obj.get("timestamp"), payload)
        except Exception as err:  # whatever one line does, it costs that line alone
            reason, note = failure(err)
            if isinstance(err, RecordError) and "payload" not in obj:
                note = note.removeprefix("payload.")
            bad = bad_record(SOURCE, self.source_path, line_no, reason, obj, note)
            self.hold.push(self._label(bad))

    def end_copy(self) -> None:
        """Read the lines skipped as a fork's copy of its parent when no fork turn ended the copy:
        skipped for good, they would be lost without a trace."""
        copied, self._copied, self._copying, self._fork_ms = self._copied, [], False, None
        for item in copied:
            self.feed(item)

    def _copy_ends(self, kind: object, payload: object) -> bool:
        """Whether this line of a fork's copy of its parent is the fork's own first turn: a
        task_started whose turn id is not older than the fork. A turn id that is no UUIDv7
        ends the copy too: better keep the parent's turns twice than lose the fork's own."""
        if kind != "event_msg" or not isinstance(payload, dict):
            return False
        if payload.get("type") not in ("task_started", "turn_started"):
            return False
        turn_ms = _uuid7_ms(payload.get("turn_id"))
        self._copying = turn_ms is not None and self._fork_ms is not None and turn_ms < self._fork_ms
        return not self._copying

    def _label(self, bad: BadLine) -> BadLine:
        return bad._replace(session_id=self.session_id, session_start=self.session_start)

    def _emit(
        self,
        line_no: int,
        stamp: object,
        role: str,
        kind: str,
        text: str | None = None,
        *,
        tool_name: str | None = None,
        tool_call_id: str | None = None,
        tool_input: str | None = None,
        is_error: bool | None = None,
        exit_code: int | None = None,
        interrupted: bool = False,
        wait_for: str | None = None,
    ) -> None:
        """Emit an event timed by `stamp`, a line's raw `timestamp` (read only for lines that emit)."""
        if role in ("assistant", "tool"):  # the agent acts: the prompt before it is settled
            self._unechoed_prompts = self._prompts_from_echoes = 0
        ts, implausible = self.clock.read(stamp)
        new = new_event(
            (
                SOURCE,
                self.session_id,
                self.session_start,
                self.source_path,
                line_no,
                self.seq,
                ts,
                role,
                kind,
                text,
                tool_name,
                tool_call_id,
                tool_input,
                is_error,
                exit_code,
                self.cwd,
                self.repo,
                self.git_branch,
                self.model,
                self.agent_id is not None,  # is_sidechain
                self.agent_id,
                None,  # event_id
                None,  # parent_id
                interrupted,
                None,  # confidence
                False,  # text_truncated
                0,  # redactions
            )
        )
        self.seq += 1
        self.hold.push(new, wait_for)
        if implausible and self._refused_line != line_no:  # kept untimed; one row for the line
            self._refused_line = line_no
            record = self._record if self._line_no == line_no else {"timestamp": stamp}
            self.hold.push(self._label(self.clock.bad_row(SOURCE, self.source_path, line_no, stamp, record)))

    def _bare_record(self, line_no: int, obj: dict[str, Any], kind: object) -> None:
        """A line whose type is no rollout line type: a legacy bare line, or an unknown record."""
        if isinstance(kind, str) and kind in _RESPONSE_ITEMS and "payload" not in obj:
            self.response_item(line_no, None, obj)  # legacy: a bare, untimed response item
        elif kind is None and obj.get("record_type") == "state":
            pass  # legacy: resume bookkeeping (previous_response_id), not conversation
        elif _is_legacy_header(obj):
            self.session_meta(line_no, None, obj)
        else:
            raise UnknownRecordType(f"type {kind!r}")

    # --- top-level records ---

    def session_meta(self, line_no: int, stamp: object, payload: dict[str, Any]) -> None:
        other = payload.get("id")
        if self._fork_ms is not None and isinstance(other, str) and other != self.session_id:
            self._copying = True  # the parent's session_meta: a copy of its rollout follows
            return
        if self.seen_meta:
            return
        git = get_dict(payload, "git", "payload.") or {}
        remote_url = get_str(git, "repository_url", "payload.git.")
        branch = get_str(git, "branch", "payload.git.")
        cwd = get_str(payload, "cwd", "payload.")
        instructions = get_str(payload, "instructions", "payload.")
        base = get_dict(payload, "base_instructions", "payload.")
        if instructions is None and base is not None:
            instructions = get_str(base, "text", "payload.base_instructions.")
        # Every field is read before any state changes, so a malformed session_meta changes nothing.
        self.seen_meta = True
        self.remote_url = remote_url or self.remote_url
        self.git_branch = branch or self.git_branch
        self._set_cwd(cwd)
        created = payload.get("timestamp")
        when = created if self.clock.believe(created) is not None else stamp
        self._emit(line_no, when, "system", "meta", instructions)

    def turn_context(self, line_no: int, stamp: object, payload: dict[str, Any]) -> None:
        cwd = get_str(payload, "cwd", "payload.")
        self.model = get_str(payload, "model", "payload.") or self.model
        self._set_cwd(cwd)

    def response_item(self, line_no: int, stamp: object, payload: dict[str, Any]) -> None:
        kind = get_str(payload, "type", "payload.")
        handler = _RESPONSE_ITEMS.get(kind or "")
        if handler is None:
            raise UnknownRecordType(f"response_item type {kind!r}")
        handler(self, line_no, stamp, payload)

    def event_msg(self, line_no: int, stamp: object, payload: dict[str, Any]) -> None:
        # agent_message repeats the response_item assistant message, so it is skipped; user_message
        # may be a prompt's only record (`_user_message`, and the docstring).
        kind = get_str(payload, "type", "payload.")
        if kind == "exec_command_end":
            exit_code = get_int(payload, "exit_code", "payload.")
            self._settle(get_str(payload, "call_id", "payload."), _Outcome(exit_code, None))
        elif kind == "patch_apply_end":
            success = payload.get("success")
            failed = None if not isinstance(success, bool) else not success
            self._settle(get_str(payload, "call_id", "payload."), _Outcome(None, failed))
        elif kind == "mcp_tool_call_end":
            failed = _mcp_failed(get_dict(payload, "result", "payload."))
            self._settle(get_str(payload, "call_id", "payload."), _Outcome(None, failed))
        elif kind == "error":
            text = get_str(payload, "message", "payload.")
            self._emit(line_no, stamp, "system", "error", text, is_error=True)
        elif kind == "turn_aborted":
            reason = get_str(payload, "reason", "payload.") or "unknown"
            self._emit(line_no, stamp, "system", "meta", f"turn aborted: {reason}", interrupted=True)
        elif kind == "user_message":
            self._user_message(line_no, stamp, payload)

    def _user_message(self, line_no: int, stamp: object, payload: dict[str, Any]) -> None:
        """A prompt's echo: the user message itself when no response_item message pairs with it."""
        text = get_str(payload, "message", "payload.")
        images = sum(len(get_list(payload, key, "payload.") or ()) for key in ("images", "local_images"))
        if images:
            text = "\n".join([*([text] if text else []), *[IMAGE_PLACEHOLDER] * images])
        if not text or _is_injected_context(text):
            return
        if self._unechoed_prompts:
            self._unechoed_prompts -= 1  # the response_item gave this prompt already
            return
        self._prompts_from_echoes += 1
        self._emit(line_no, stamp, "user", "message", text)

    def compacted(self, line_no: int, stamp: object, payload: dict[str, Any]) -> None:
        text = get_str(payload, "message", "payload.")
        self._emit(line_no, stamp, "system", "meta", text)

    # --- response items ---

    def message(self, line_no: int, stamp: object, payload: dict[str, Any]) -> None:
        role = get_str(payload, "role", "payload.")
        text = content_text(payload.get("content"), "payload.content")
        if role == "user" and not _is_injected_context(text):
            if self._prompts_from_echoes:  # its event_msg echo came first and gave it
                self._prompts_from_echoes -= 1
                return
            self._unechoed_prompts += 1
            self._emit(line_no, stamp, "user", "message", text)
        elif role == "assistant":
            self._emit(line_no, stamp, "assistant", "message", text)
        elif role in ("user", "developer", "system"):
            self._emit(line_no, stamp, "system", "meta", text)
        else:
            raise UnknownRecordType(f"message role {role!r}")

    def reasoning(self, line_no: int, stamp: object, payload: dict[str, Any]) -> None:
        text = _parts_text(get_list(payload, "summary", "payload.")) or _parts_text(
            get_list(payload, "content", "payload.")
        )
        if not text and payload.get("encrypted_content"):
            text = ENCRYPTED_REASONING
        self._emit(line_no, stamp, "assistant", "reasoning", text or None)

    def function_call(self, line_no: int, stamp: object, payload: dict[str, Any]) -> None:
        arguments = parse_arguments(payload.get("arguments"), "payload.arguments")
        self._call(line_no, stamp, payload, arguments)
        if payload.get("name") == "write_stdin":
            self._note_poll(payload.get("call_id"), arguments.get("session_id"))

    def custom_tool_call(self, line_no: int, stamp: object, payload: dict[str, Any]) -> None:
        self._call(line_no, stamp, payload, {"input": get_str(payload, "input", "payload.")})

    def local_shell_call(self, line_no: int, stamp: object, payload: dict[str, Any]) -> None:
        call_id = get_str(payload, "call_id", "payload.") or get_str(payload, "id", "payload.")
        action = get_dict(payload, "action", "payload.") or {}
        self._call(line_no, stamp, {"name": "local_shell", "call_id": call_id}, action)

    def web_search_call(self, line_no: int, stamp: object, payload: dict[str, Any]) -> None:
        action = get_dict(payload, "action", "payload.") or {}
        self._call(
            line_no, stamp, {"name": "web_search", "call_id": get_str(payload, "id", "payload.")}, action
        )

    def image_generation_call(self, line_no: int, stamp: object, payload: dict[str, Any]) -> None:
        prompt = {"prompt": get_str(payload, "revised_prompt", "payload.")}
        self._call(
            line_no,
            stamp,
            {"name": "image_generation", "call_id": get_str(payload, "id", "payload.")},
            prompt,
        )

    def tool_output(self, line_no: int, stamp: object, payload: dict[str, Any]) -> None:
        call_id = get_str(payload, "call_id", "payload.")
        name = self.call_names.get(call_id) if call_id is not None else None
        text, exit_code = _output_text(payload.get("output"))
        header = text[:_HEADER_CHARS] if text and name in _LAUNCHERS else ""
        if exit_code is None and _may_hold_exit(header) and (match := _EXITED.search(header)):
            exit_code = int(match.group(1))
        early = self.early_outcomes.pop(call_id, None) if call_id is not None else None
        failed = early.failed if early is not None else None
        if exit_code is None and early is not None:
            exit_code = early.exit_code
        waits = call_id is not None and exit_code is None and _still_running(header)
        if call_id is not None:
            if waits and (running := _RUNNING_ID.search(header)):
                _remember(self._running, running.group(1), call_id)  # its polls will name this session
            launcher = self._polls.pop(call_id, None)
            if launcher is not None and text:
                self._poll_saw_exit(launcher, text[:_HEADER_CHARS])
        self._emit(
            line_no,
            stamp,
            "tool",
            "tool_result",
            text,
            tool_name=name,
            tool_call_id=call_id,
            exit_code=exit_code,
            is_error=_is_error(exit_code, failed),
            wait_for=call_id if waits else None,
        )

    def tool_search_call(self, line_no: int, stamp: object, payload: dict[str, Any]) -> None:
        """Deferred-tool discovery: `arguments` (`{"query", "limit"}`) is an object, not a JSON string."""
        arguments = parse_arguments(payload.get("arguments"), "payload.arguments")
        call = {"name": "tool_search", "call_id": get_str(payload, "call_id", "payload.")}
        self._call(line_no, stamp, call, arguments)

    def tool_search_output(self, line_no: int, stamp: object, payload: dict[str, Any]) -> None:
        """The tools a tool_search loaded (their full specs): the result is their names, one a line."""
        call_id = get_str(payload, "call_id", "payload.")
        names = _loaded_tool_names(get_list(payload, "tools", "payload.") or ())
        name = (self.call_names.get(call_id) if call_id is not None else None) or "tool_search"
        self._emit(
            line_no, stamp, "tool", "tool_result", "\n".join(names), tool_name=name, tool_call_id=call_id
        )

    def agent_message(self, line_no: int, stamp: object, payload: dict[str, Any]) -> None:
        """A message between the agents of a multi-agent run (a task for a sub-agent, its report):
        context the agent reads, not the user's instruction."""
        author = get_str(payload, "author", "payload.") or "?"
        recipient = get_str(payload, "recipient", "payload.") or "?"
        text = content_text(payload.get("content"), "payload.content")
        self._emit(line_no, stamp, "system", "meta", f"[agent message {author} -> {recipient}]\n{text or ''}")

    def compaction(self, line_no: int, stamp: object, payload: dict[str, Any]) -> None:
        self._emit(line_no, stamp, "system", "meta", "[encrypted compaction summary]")

    def ignore(self, line_no: int, stamp: object, payload: dict[str, Any]) -> None:
        pass

    # --- helpers ---

    def _call(self, line_no: int, stamp: object, payload: dict[str, Any], arguments: dict[str, Any]) -> None:
        name = get_str(payload, "name", "payload.")
        if name is None:
            raise WrongFieldType("payload.name", "a string", None)
        name = qualified_name(get_str(payload, "namespace", "payload."), name)
        call_id = get_str(payload, "call_id", "payload.")
        if call_id is not None:
            _remember(self.call_names, call_id, name)
        self._emit(
            line_no,
            stamp,
            "assistant",
            "tool_call",
            tool_name=name,
            tool_call_id=call_id,
            tool_input=canonical_json(arguments),
        )

    def _settle(self, call_id: str | None, outcome: _Outcome) -> None:
        if call_id is None:
            return
        if self.hold.waits_for(call_id):
            self.hold.settle(call_id, lambda item: _settled(item, outcome))
        else:
            _remember(self.early_outcomes, call_id, outcome)

    def _note_poll(self, call_id: object, session: object) -> None:
        """A write_stdin call polling `session`: linked to the call that launched it, if still running."""
        launcher = self._running.get(str(session)) if isinstance(session, int | str) else None
        if launcher is not None and isinstance(call_id, str):
            _remember(self._polls, call_id, launcher)

    def _poll_saw_exit(self, launcher: str, header: str) -> None:
        """A write_stdin poll whose output says the command exited settles the launching call's
        held result; the poll's own result gets no exit code (see the docstring)."""
        if self.hold.waits_for(launcher) and _may_hold_exit(header) and (exited := _EXITED.search(header)):
            self._settle(launcher, _Outcome(int(exited.group(1)), None))

    def _set_cwd(self, cwd: str | None) -> None:
        if cwd and (cwd != self.cwd or self.remote_url != self._repo_remote):  # else the repo stands
            self.cwd = cwd
            self.repo = repo_name(cwd, self.remote_url, self.git_branch)
            self._repo_remote = self.remote_url


def qualified_name(namespace: str | None, name: str) -> str:
    """A namespaced tool's full name, as Claude Code names MCP tools: `mcp__<server>__<tool>`.

    Codex Desktop writes the namespace as `mcp__<server>__` (or `mcp__<server>`); a name that
    already carries its namespace is kept as it is.
    """
    if not namespace or name.startswith(namespace):
        return name
    return namespace + name if namespace.endswith("__") else f"{namespace}__{name}"


# Plain substring tests first: most headers hold neither, and a regex search through one costs more.
def _may_hold_exit(header: str) -> bool:
    return "Process exited with code" in header or "Exit code:" in header


def _still_running(header: str) -> bool:
    return header.startswith(_RUNNING) or _RUNNING_LINE in header


def _is_injected_context(text: str | None) -> bool:
    return text is not None and text.lstrip()[:40].lower().startswith(_CONTEXT_PREFIXES)


def _mcp_failed(result: dict[str, Any] | None) -> bool | None:
    """Whether an MCP call failed, from mcp_tool_call_end's `result`: serde's form of Rust's
    `Result<CallToolResult, String>`, `{"Err": message}` or `{"Ok": {..., "isError": bool}}`; MCP
    reads a missing isError as false. None when the result is missing or of another shape."""
    if result is None:
        return None
    if "Err" in result:
        return True
    ok = result.get("Ok")
    if not isinstance(ok, dict):
        return None
    return ok.get("isError", ok.get("is_error")) is True


def _loaded_tool_names(tools: Iterable[Any]) -> list[str]:
    """The names of the tool specs a tool_search_output loaded: a namespace's tools by the
    names their calls will have (`qualified_name`), a lone function by its own."""
    names: list[str] = []
    for spec in tools:
        if not isinstance(spec, dict) or not isinstance(spec.get("name"), str):
            continue
        inner = spec.get("tools")
        if not isinstance(inner, list):
            names.append(spec["name"])
            continue
        for tool in inner:
            if isinstance(tool, dict) and isinstance(tool.get("name"), str):
                names.append(qualified_name(spec["name"], tool["name"]))
    return names


def _parts_text(parts: list[Any] | None) -> str:
    """Joined text of reasoning summary/content parts (`{"type": "summary_text", "text": ...}`)."""
    texts = [
        part["text"] for part in parts or () if isinstance(part, dict) and isinstance(part.get("text"), str)
    ]
    return "\n\n".join(texts)


def _output_text(output: object) -> tuple[str | None, int | None]:
    """A tool output's text and, when its metadata records one, the exit code.

    Older shells and apply_patch wrap the output as the JSON string
    `{"output": ..., "metadata": {"exit_code", "duration_seconds"}}`.
    """
    if output is None or isinstance(output, list):
        return content_text(output, "payload.output"), None
    if not isinstance(output, str):
        raise WrongFieldType("payload.output", "a string or a list of content items", output)
    if not output.startswith('{"output"'):
        return output, None
    try:
        wrapped = orjson.loads(output)
    except orjson.JSONDecodeError:
        return output, None
    inner = wrapped.get("output") if isinstance(wrapped, dict) else None
    if not isinstance(inner, str):
        return output, None
    metadata = wrapped.get("metadata")
    exit_code = metadata.get("exit_code") if isinstance(metadata, dict) else None
    if not isinstance(exit_code, int) or isinstance(exit_code, bool):
        exit_code = None
    return inner, exit_code


_Handler = Callable[[_Rollout, int, object, dict[str, Any]], None]

_RECORDS: dict[str, _Handler] = {
    "session_meta": _Rollout.session_meta,
    "turn_context": _Rollout.turn_context,
    "response_item": _Rollout.response_item,
    "event_msg": _Rollout.event_msg,
    "compacted": _Rollout.compacted,
}

_RESPONSE_ITEMS: dict[str, _Handler] = {
    "message": _Rollout.message,
    "reasoning": _Rollout.reasoning,
    "function_call": _Rollout.function_call,
    "custom_tool_call": _Rollout.custom_tool_call,
    "local_shell_call": _Rollout.local_shell_call,
    "web_search_call": _Rollout.web_search_call,
    "image_generation_call": _Rollout.image_generation_call,
    "function_call_output": _Rollout.tool_output,
    "custom_tool_call_output": _Rollout.tool_output,
    "tool_search_call": _Rollout.tool_search_call,
    "tool_search_output": _Rollout.tool_search_output,
    "agent_message": _Rollout.agent_message,
    "compaction": _Rollout.compaction,
    "compaction_summary": _Rollout.compaction,
    "context_compaction": _Rollout.compaction,
    "ghost_snapshot": _Rollout.ignore,
    "additional_tools": _Rollout.ignore,
}
