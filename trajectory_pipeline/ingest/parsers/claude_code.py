"""Claude Code transcripts (`~/.claude/projects/<project>/<session>.jsonl`) into `Event`s.

Handles every shape seen from Claude Code 1.0.89 to 2.1.39, and later 2.x additions:
`message.content` as a string or a list of text / thinking / tool_use / tool_result / image
blocks, `system` lines with and without `subtype`, `summary` lines, compaction summaries,
slash-command and caveat lines, interruptions, prompts typed while the agent worked
(`queued_command` attachments, their prompt a string or content blocks), the IDE extensions' note
of the open file, sub-agent files in both layouts (`<session>/subagents/agent-<id>.jsonl` and the
older `agent-<8hex>.jsonl` beside the session file), metadata entries that hold no conversation
(titles, UI, cost and resume state: `BOOKKEEPING_TYPES`, no events), lines written twice
("Repeats" below), and 2.x hook refusals (a PreToolUse hook blocking a call: its
`hook_blocking_error` attachment or system line becomes a meta event carrying the refused call's
id, see "hook refusals" below).

Whose words. A user line is the person's (user/message) unless the CLI wrote it (system/meta):
`isMeta` lines (a command's expansion, skill instructions), `_META_PREFIXES` (local commands and
their output, caveats, reminders, notices, compaction summaries), and a text block that is only the
IDE's `<ide_opened_file>` note. A slash command the person typed that sends a prompt to the model
(a custom, skill or plugin command, or a built-in one such as /init or /review) is their request,
and often the only place its arguments are. Claude Code writes one `<command-message>` first, then
`<command-name>` with the slash (`/x`); a local command (/clear, /model, /mcp, /compact: no prompt)
opens with `<command-name>`, and the line of a skill the model invoked names it without the slash.
That order is Claude Code's own; a list of built-in command names would go stale with each release.

Repeats. Claude Code sometimes writes a line again: the same uuid, time and content with only
context fields changed (the IDE extensions re-append a session's lines on reopening it,
anthropics/claude-code#56196; hook attachments re-emitted). Such a repeat gives no events: a
session's events are read once. It is counted (`repeated_line`, a repair: nothing of it is lost),
not quarantined. Lines sharing a uuid but not their time or content (2.1.27 wrote every
`saved_hook_context` entry under one uuid) are all read.

Sessions. A line belongs to the session named by its `sessionId`; a line without one
(`summary`, `file-history-snapshot`) belongs to the session of the line before it, or to
the file's first session when it comes first; a file with no `sessionId` at all is one
session named after the file. A session's start is its first timestamp in the file of
that session (`<sessionId>.jsonl` beside it, or above a `subagents/` folder), so a
sub-agent's events fall in the same daily partition as its parent's. Lacking that, it is
the session's first timestamp in this file, and lacking any timestamp, the file's mtime.
Only believed times count (`common.Clock`: from 2015 to a day after the file's last write):
a line with another time (1970, epoch 0, the future) is kept untimed, with an
`implausible_timestamp` row, so its session lands on a day that is ingested.

    from trajectory_pipeline.ingest.parsers import claude_code
    for item in claude_code.parse(Path("~/.claude/projects/-home-me-repo/<uuid>.jsonl").expanduser()):
        ...
"""

from __future__ import annotations

import errno
import itertools
import os
import re
import stat
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import orjson

from trajectory_pipeline.ingest.parsers.common import (
    REDACTED_THINKING,
    Clock,
    WrongFieldType,
    bad_record,
    failure,
    new_event,
)
from trajectory_pipeline.ingest.parsers.lines import MAX_LINE_BYTES, JsonLine, file_mtime_us, read_json_lines
from trajectory_pipeline.schema import (
    OVERSIZE_LINE,
    REPEATED_LINE,
    UNKNOWN_RECORD_TYPE,
    BadLine,
    Event,
    canonical_json,
    repo_name,
)

SOURCE = "claude_code"
GLOBS = ("**/*.jsonl",)
TITLE = "Claude Code"
DEFAULT_ROOT = "~/.claude/projects"  # where the tool writes
HOLDS = "project folders (<project>/<session>.jsonl)"
VOCABULARY = "claude_code"  # its table in mining/vocabulary.py
PATH_DATED = False  # whether file paths carry the session's date


# Written beside the conversation and carrying nothing a trajectory needs: `progress`
# repeats sub-agent messages (their own file holds them) and partial hook/shell output
# (the tool result supersedes it); `file-history-snapshot` is undo backups; a
# `queue-operation` prompt reappears as an ordinary user line once dequeued, and one
# removed from the queue was never sent. The rest are 2.x titles, UI, cost and resume state:
# `content-replacement` records which tool results were swapped for a stored preview (the
# tool_result holds the preview), `marble-origami-*` is context-collapse state, `fork-context-ref`
# points a forked agent at its parent's conversation (in the parent's file). Any other type is
# quarantined as unknown_record_type, so a new record shape is seen rather than silently lost.
BOOKKEEPING_TYPES = frozenset(
    {
        "progress",
        "file-history-snapshot",
        "queue-operation",
        "permission-mode",
        "custom-title",
        "ai-title",
        "agent-name",
        "agent-color",
        "agent-setting",
        "last-prompt",
        "task-summary",
        "pr-link",
        "tag",
        "mode",
        "isolation-latch",
        "worktree-state",
        "bridge-session",
        "cost-state",
        "attribution-snapshot",
        "speculation-accept",
        "content-replacement",
        "fork-context-ref",
        "marble-origami-commit",
        "marble-origami-snapshot",
        "marble-origami-reset",
    }
)

INTERRUPTION_PREFIX = "[Request interrupted by user"
IMAGE_PLACEHOLDER = "[image]"

# User lines that the CLI writes, not the person: slash commands and their output, the
# caveat before them, hook reminders, background-task notices, compaction summaries.
_META_PREFIXES = (
    "<command-name>",
    "<command-message>",
    "<command-args>",
    "<local-command-stdout>",
    "<local-command-stderr>",
    "<local-command-caveat>",
    "Caveat: The messages below were generated by the user while running local commands",
    "<bash-input>",
    "<bash-stdout>",
    "<bash-stderr>",
    "<system-reminder>",
    "<task-notification>",
    "This session is being continued from a previous conversation",
)
# A slash command the person typed that sends a prompt to the model (see "Whose words" above).
_PROMPT_COMMAND = re.compile(r"<command-message>[^<]*</command-message>\s*<command-name>/")
# The VS Code and JetBrains extensions' note before a prompt ("The user opened the file ... This may
# or may not be related to the current task."): context, not a request. `<ide_selection>` is left
# to the person: it holds the code they chose.
_IDE_NOTE_OPEN, _IDE_NOTE_CLOSE = "<ide_opened_file>", "</ide_opened_file>"
_ERROR_LEVELS = frozenset({"error", "fatal", "critical"})
_SYNTHETIC_MODEL = "<synthetic>"  # the CLI's own stand-in replies (API errors, "No response requested.")
_EXIT_CODE = re.compile(r"Exit code (-?\d+)\b")
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")

_SNIFF_LINES = 20
# Lines `parse` reads before its first event, enough to learn the first session's start in any
# real transcript (one to five lines) without a second read of the file.
_HEAD_LINES = 16


# ---------------------------------------------------------------- module API


def sniff(path: Path, head: bytes) -> bool:
    """Whether the file's first lines are Claude Code records."""
    lines = head.split(b"\n")[:_SNIFF_LINES]
    parsed_any = False
    for raw in lines:
        try:
            obj = orjson.loads(raw)
        except orjson.JSONDecodeError:
            continue
        parsed_any = True
        if isinstance(obj, dict) and _is_claude_record(obj):
            return True
    # A first line longer than the head never parses; its opening still shows the shape.
    return not parsed_any and _looks_like_claude_prefix(head)


def parse(path: Path, max_line_bytes: int = MAX_LINE_BYTES) -> Iterator[Event | BadLine]:
    """Stream the file's events, and a BadLine for each line that cannot be read."""
    items = read_json_lines(path, SOURCE, max_line_bytes)
    head = list(itertools.islice(items, _HEAD_LINES))
    sessions = _Sessions(path, _first_timestamp_in_head(path, head, max_line_bytes))
    carry = _Carry(sessions.clock)
    source_path = str(path)
    seq = 0
    for item in itertools.chain(head, items):
        if isinstance(item, BadLine):
            session_id, start = sessions.now()
            yield item._replace(session_id=session_id, session_start=start)
            continue
        line_no, obj = item
        note: str | None = None
        try:
            session_id, start = sessions.advance(obj)
            read = _read_line(obj, carry)
        except Exception as err:  # whatever one line does, it costs that line alone
            session_id, start = sessions.now()
            read = None
            reason, note = failure(err)
            if isinstance(err, WrongFieldType):
                note = None  # the excerpt is the line itself, as it always was
        else:
            reason = UNKNOWN_RECORD_TYPE  # when there are no rows: a type this parser does not know
        if read is None:
            yield bad_record(
                SOURCE, source_path, line_no, reason, obj, note, session_id=session_id, session_start=start
            )
            continue
        line, rows = read
        if read is _REPEATED:  # read once: counted, not quarantined
            yield bad_record(
                SOURCE, source_path, line_no, REPEATED_LINE, obj, session_id=session_id, session_start=start
            )
            continue
        if carry.refused is not _NOTHING:  # a time not believed: the line is kept untimed, and said so
            yield carry.clock.bad_row(
                SOURCE, source_path, line_no, carry.refused, obj, session_id=session_id, session_start=start
            )
            carry.refused = _NOTHING
        ts, cwd, repo, git_branch, is_sidechain, agent_id, event_id, parent_id = line
        for row in rows:
            role, kind, text, model, tool_name, call_id, tool_input, is_error, exit_code, interrupted = row
            yield new_event(
                (
                    SOURCE,
                    session_id,
                    start,
                    source_path,
                    line_no,
                    seq,
                    ts,
                    role,
                    kind,
                    text,
                    tool_name,
                    call_id,
                    tool_input,
                    is_error,
                    exit_code,
                    cwd,
                    repo,
                    git_branch,
                    model,
                    is_sidechain,
                    agent_id,
                    event_id,
                    parent_id,
                    interrupted,
                    None,  # confidence
                    False,  # text_truncated
                    0,  # redactions
                )
            )
            seq += 1


def earliest_start(path: Path) -> int | None:
    """The start of the file's first session: the value `parse` gives its events.

    For a sub-agent file that is the parent session's start, read from the parent's head.
    """
    return _Sessions(path).now()[1]


# ---------------------------------------------------------------- sniffing


def _is_claude_record(obj: dict[str, Any]) -> bool:
    kind = obj.get("type")
    if kind == "summary":
        return "leafUuid" in obj
    if kind == "file-history-snapshot":
        return "snapshot" in obj or "messageId" in obj
    if "sessionId" not in obj:
        return False
    return (
        "parentUuid" in obj or "isSidechain" in obj or (isinstance(kind, str) and kind in BOOKKEEPING_TYPES)
    )


def _looks_like_claude_prefix(head: bytes) -> bool:
    start = head.lstrip()[:2048]
    if start.startswith(b'{"parentUuid":'):
        return b'"sessionId":' in start
    return start.startswith((b'{"type":"summary","summary":', b'{"type":"file-history-snapshot",'))


# ---------------------------------------------------------------- sessions


class _Sessions:
    """Which session each line belongs to, and when that session started (see module docstring)."""

    def __init__(self, path: Path, first: tuple[str | None, int | None] | None = None) -> None:
        """`first`: the file's first session and its first timestamp, when the caller has read them."""
        self._path = path
        self.clock = Clock(path)
        first_id, first_ts = _first_timestamp_of(path, None) if first is None else first
        self._home = first_id if first_id is not None else path.stem
        self._starts: dict[str, int | None] = {self._home: _session_start(path, self._home, first_ts)}
        self._current: str | None = None

    def now(self) -> tuple[str, int | None]:
        """The session of the line being read, as known so far."""
        current = self._current if self._current is not None else self._home
        return current, self._starts[current]

    def advance(self, obj: dict[str, Any]) -> tuple[str, int | None]:
        """Move to the next line's session, learning its start when it is new."""
        session_id = obj.get("sessionId")
        if session_id == self._current and session_id is not None:  # nearly every line: no change
            return session_id, self._starts[session_id]
        session_id = _session_id(obj)
        if session_id is None:
            return self.now()
        self._current = session_id
        if session_id not in self._starts:
            own = self.clock.believe(obj.get("timestamp"))
            if own is None:
                own = _first_timestamp_of(self._path, session_id)[1]
            self._starts[session_id] = _session_start(self._path, session_id, own)
        return session_id, self._starts[session_id]


def _session_id(obj: dict[str, Any]) -> str | None:
    value = obj.get("sessionId")
    return value if isinstance(value, str) and value else None


def _first_timestamp_of(path: Path, wanted: str | None) -> tuple[str | None, int | None]:
    """The first timestamp among the lines of session `wanted` (None: the file's first session).

    Streams only as far as needed, which is a line or two for any real transcript.
    Returns the session id it looked for (None when the file names none) and the timestamp.
    """
    found = _first_timestamp_in(read_json_lines(path, SOURCE, head_only=True), wanted, Clock(path))
    return found.session_id, found.ts


def _first_timestamp_in_head(
    path: Path, head: list[JsonLine | BadLine], max_line_bytes: int
) -> tuple[str | None, int | None]:
    """`_first_timestamp_of(path, None)`, from the first lines `parse` has read when they settle it.

    They do unless the answer lies past them, or a line among them reads differently at the
    default cap `_first_timestamp_of` uses (one over the parse's cap).
    """
    found = _first_timestamp_in(head, None, Clock(path))
    if (
        (found.at_end and len(head) == _HEAD_LINES)
        or max_line_bytes > MAX_LINE_BYTES
        or any(isinstance(item, BadLine) and item.reason == OVERSIZE_LINE for item in head)
    ):
        return _first_timestamp_of(path, None)
    return found.session_id, found.ts


class _FirstTimestamp(NamedTuple):
    session_id: str | None
    ts: int | None
    at_end: bool  # decided by running out of lines, not by a line


def _first_timestamp_in(
    items: Iterable[JsonLine | BadLine], wanted: str | None, clock: Clock
) -> _FirstTimestamp:
    """The first believed timestamp (`clock`) among the lines of session `wanted`."""
    first_session = wanted is None
    current: str | None = None
    early: int | None = None  # lines before any sessionId belong to the first session
    for item in items:
        if isinstance(item, BadLine):
            continue
        session_id = _session_id(item.obj)
        ts = clock.believe(item.obj.get("timestamp"))
        if current is None and session_id is None:
            early = ts if early is None else early
            continue
        if current is None:
            wanted = session_id if wanted is None else wanted
            if session_id == wanted and early is not None:
                return _FirstTimestamp(wanted, early, False)
        current = session_id if session_id is not None else current
        if current == wanted and ts is not None:
            return _FirstTimestamp(wanted, ts, False)
    # A file naming no session is one session, and not one named elsewhere.
    return _FirstTimestamp(wanted, early if current is None and first_session else None, True)


def _session_start(path: Path, session_id: str, own: int | None) -> int | None:
    """The session's start as its own file records it, else this file's, else the file's mtime."""
    for other in _session_files(path, session_id):
        try:
            start = _first_timestamp_of(other, session_id)[1]
        except OSError:
            continue  # an unreadable parent must not cost this file; its own start is next best
        if start is not None:
            return start
    return own if own is not None else file_mtime_us(path)


def _session_files(path: Path, session_id: str) -> list[Path]:
    """Other files that may be the session's own: old and new sub-agent layouts."""
    # On path strings and os.stat rather than pathlib: every file of a listing asks this twice
    # (planning, then parsing), and pathlib's joins and stats cost more than the reading.
    name = f"{session_id}.jsonl"
    folder, own_name = os.path.split(str(path))
    # Most often `path` is that file itself, which takes no asking the disk.
    candidates = [] if own_name == name else [os.path.join(folder, name)]
    if os.path.basename(folder) == "subagents":
        project, session_dir = os.path.split(os.path.dirname(folder))
        # The folder is named after the session; copies of a project may rename the file.
        candidates += [os.path.join(project, name), os.path.join(project, f"{session_dir}.jsonl")]
    found: list[Path] = []
    own: os.stat_result | None = None
    for candidate in dict.fromkeys(candidates):
        info = _stat_if_present(candidate)
        if info is None or not stat.S_ISREG(info.st_mode):
            continue
        if own is None:
            try:
                own = os.stat(path)
            except OSError:  # gone since it was listed: no candidate is the same file
                found.append(Path(candidate))
                continue
        if (info.st_ino, info.st_dev) != (own.st_ino, own.st_dev):
            found.append(Path(candidate))
    return found


def _stat_if_present(path: str) -> os.stat_result | None:
    """`os.stat(path)`, None when there is no such file; other errors raise, as `Path.is_file` does."""
    try:
        return os.stat(path)
    except (FileNotFoundError, NotADirectoryError, ValueError):  # ValueError: a NUL in a session id
        return None
    except OSError as err:
        if err.errno in (errno.EBADF, errno.ELOOP):
            return None
        raise


# ---------------------------------------------------------------- lines


_NOTHING = object()  # no refused timestamp on the line being read


class _Carry:
    """Working folder and branch carried forward to lines that lack them (summaries), the file's
    clock, and the timestamp of the line being read when the clock refused it."""

    def __init__(self, clock: Clock) -> None:
        self.cwd: str | None = None
        self.repo: str | None = None
        self.git_branch: str | None = None
        self.clock = clock
        self.refused: object = _NOTHING
        # PreToolUse hooks seen running (hook_progress lines) for a call id: (hook name, command).
        self.pre_tool_hooks: dict[str, list[tuple[str, str]]] = {}
        # Fingerprints of the lines read that have a uuid, to read a repeated line once (`_repeats`).
        self.seen: set[int] = set()


# The fields a line gives all its events: ts, cwd, repo, git_branch, is_sidechain, agent_id,
# event_id and parent_id. A plain tuple: there is one per line, and it is unpacked at once.
_Line = tuple[int | None, str | None, str | None, str | None, bool, str | None, str | None, str | None]


# One event's own fields (a content block's): role, kind, text, model, tool_name, tool_call_id,
# tool_input, is_error, exit_code and interrupted. A plain tuple, like `_Line`.
_Row = tuple[
    str, str, str | None, str | None, str | None, str | None, str | None, bool | None, int | None, bool
]


def _text_row(
    role: str, kind: str, text: str | None, model: str | None = None, interrupted: bool = False
) -> _Row:
    return (role, kind, text, model, None, None, None, None, None, interrupted)


def _read_line(obj: dict[str, Any], carry: _Carry) -> tuple[_Line, list[_Row]] | None:
    """The shared fields and the events of one line (none for bookkeeping); `_REPEATED` for a line
    read before; None for an unknown record type."""
    kind = obj.get("type")
    if not isinstance(kind, str):
        return None
    if kind in BOOKKEEPING_TYPES:
        if kind == "progress":
            _note_pre_tool_hook(obj, carry)
        return _NO_LINE, []
    handler = _HANDLERS.get(kind)
    if handler is None:
        return None
    line = _line(obj, carry)
    rows = handler(obj)
    if _repeats(obj, line, rows, carry):
        carry.refused = _NOTHING  # its first copy said so
        return _REPEATED
    if carry.pre_tool_hooks and kind == "user":
        rows = _with_hook_notices(rows, carry)
    if kind == "summary":
        # A summary titles the conversation that ends at `leafUuid`, often in another file.
        line = (*line[:7], _optional_str(obj, "leafUuid"))
    return line, rows


def _repeats(obj: dict[str, Any], line: _Line, rows: list[_Row], carry: _Carry) -> bool:
    """Whether the line repeats one read before: same uuid, session, time and events (see "Repeats"
    in the module docstring). The rows are those of the line itself, before any hook notice."""
    event_id = line[6]
    if event_id is None:
        return False
    # A hash, as `days._Copies` keeps: the texts' hashes are computed once and reused there.
    fingerprint = hash((event_id, obj.get("sessionId"), line[0], *rows))
    if fingerprint in carry.seen:
        return True
    carry.seen.add(fingerprint)
    return False


def _line(obj: dict[str, Any], carry: _Carry) -> _Line:
    # `_optional_str` for every field, inline: this runs for every line.
    get = obj.get
    cwd, branch = get("cwd"), get("gitBranch")
    if not ((cwd is None or isinstance(cwd, str)) and (branch is None or isinstance(branch, str))):
        _check_strings(obj, "cwd", "gitBranch")
    if cwd:
        if cwd != carry.cwd or (branch or None) != carry.git_branch:
            carry.cwd, carry.repo = cwd, repo_name(cwd, None, branch)
        carry.git_branch = branch or None
    # sessionId is checked here: _Sessions reads it leniently.
    session_id, agent_id, event_id, parent_id = (
        get("sessionId"),
        get("agentId"),
        get("uuid"),
        get("parentUuid"),
    )
    if not (
        (session_id is None or isinstance(session_id, str))
        and (agent_id is None or isinstance(agent_id, str))
        and (event_id is None or isinstance(event_id, str))
        and (parent_id is None or isinstance(parent_id, str))
    ):
        _check_strings(obj, "sessionId", "agentId", "uuid", "parentUuid")
    stamp = get("timestamp")
    ts, implausible = carry.clock.read(stamp)
    if implausible:
        carry.refused = stamp
    return (
        ts,
        carry.cwd,
        carry.repo,
        carry.git_branch,
        get("isSidechain") is True,
        agent_id or None,
        event_id,
        parent_id,
    )


def _check_strings(obj: dict[str, Any], *keys: str) -> None:
    for key in keys:
        _optional_str(obj, key)


_NO_LINE: _Line = (None, None, None, None, False, None, None, None)  # a line without events
# What `_read_line` gives a line that repeats one read before (see "Repeats"): no events, and
# `parse` counts it.
_REPEATED: tuple[_Line, list[_Row]] = (_NO_LINE, [])


def _user_fields(obj: dict[str, Any]) -> list[_Row]:
    content = _content(obj)
    meta = _is_meta_line(obj)
    if isinstance(content, str):
        return [_user_text(content, meta)]
    blocks = [_block(block) for block in content]
    results = [kind for _, kind in blocks].count("tool_result")
    # `toolUseResult` describes the line's tool result; only unambiguous with exactly one.
    tool_use_result = obj.get("toolUseResult") if results == 1 else None
    rows = []
    for block, kind in blocks:
        if kind == "tool_result":
            rows.append(_tool_result(block, tool_use_result))
        else:
            rows.append(_user_text(_block_text(block, kind), meta))
    return rows


def _assistant_fields(obj: dict[str, Any]) -> list[_Row]:
    content = _content(obj)
    model = _optional_str(obj["message"], "model")
    model = None if model == _SYNTHETIC_MODEL else model
    text_kind = "error" if obj.get("isApiErrorMessage") is True else "message"
    if isinstance(content, str):
        return [_text_row("assistant", text_kind, content, model)]
    return [_assistant_block(block, text_kind, model) for block in content]


def _assistant_block(block: object, text_kind: str, model: str | None) -> _Row:
    block, kind = _block(block)
    if kind == "text":
        return _text_row("assistant", text_kind, _required(block, "text", str), model)
    if kind == "thinking":
        return _text_row("assistant", "reasoning", _required(block, "thinking", str), model)
    if kind == "redacted_thinking":
        return _text_row("assistant", "reasoning", REDACTED_THINKING, model)
    if kind in ("tool_use", "server_tool_use"):
        tool_input = _optional(block, "input", dict)
        name = _required(block, "name", str)
        call_id = _required(block, "id", str)
        arguments = None if tool_input is None else canonical_json(tool_input)
        return ("assistant", "tool_call", None, model, name, call_id, arguments, None, None, False)
    return _text_row("assistant", text_kind, _placeholder(kind), model)


def _system_fields(obj: dict[str, Any]) -> list[_Row]:
    content = _optional_str(obj, "content")
    subtype = _optional_str(obj, "subtype")
    level = _optional_str(obj, "level")
    is_error = level in _ERROR_LEVELS or (subtype is not None and "error" in subtype)
    text = _ANSI.sub("", content) if content is not None else f"[{subtype or 'system'}]"
    if content is not None and _HOOK_REFUSAL.match(text):  # a hook refused a call: not an error
        return [_notice_row(text, _optional_str(obj, "toolUseID"))]
    return [_text_row("system", "error" if is_error else "meta", text)]


def _summary_fields(obj: dict[str, Any]) -> list[_Row]:
    return [_text_row("system", "meta", _required(obj, "summary", str))]


def _attachment_fields(obj: dict[str, Any]) -> list[_Row]:
    attachment = _required(obj, "attachment", dict)
    kind = _optional_str(attachment, "type") or "attachment"
    prompt = attachment.get("prompt")
    # A prompt typed while the agent was busy reaches it as a queued_command attachment: a string,
    # or content blocks (2.1.x, and whenever it holds a pasted image), one event each as in a user
    # line. It is not the person's when it is a background task's notice, or when it came from
    # something other than a person (`origin.kind`: another agent, a hook, an automatic turn).
    if kind == "queued_command" and isinstance(prompt, str | list):
        origin = attachment.get("origin")
        meta = (
            attachment.get("isMeta") is True
            or attachment.get("commandMode") == "task-notification"
            or (isinstance(origin, dict) and origin.get("kind", "human") != "human")
        )
        if isinstance(prompt, str):
            return [_user_text(prompt, meta)]
        return [_user_text(_block_text(*_block(block)), meta) for block in prompt]
    hook = _hook_notice(attachment, kind)
    if hook is not None:
        call_id = _optional_str(attachment, "toolUseID") or _optional_str(obj, "toolUseID")
        return [_notice_row(hook, call_id)]
    content = attachment.get("content")
    if isinstance(content, list) and all(isinstance(part, str) for part in content):
        content = "\n".join(content)
    text = content if isinstance(content, str) else f"[{kind}]"
    return [_text_row("system", "meta", text)]


# ---------------------------------------------------------------- hook refusals
#
# Claude Code 2.x runs PreToolUse hooks before a call (a `progress` line of data.type
# hook_progress, hookEvent PreToolUse, per hook); a hook that blocks it (exit code 2, or a "deny"
# decision) leaves a `hook_blocking_error` attachment (hookName "PreToolUse:<Tool>", toolUseID,
# blockingError {blockingError: "[<command>]: <stderr>", command}), which the model reads as
# "PreToolUse:<Tool> hook blocking error from command: ...", and the call's tool_result is the
# refusal ("PreToolUse:<Tool> hook error: [<command>]: <stderr>", is_error). Mining tells a guard
# denial from an error by the result's text (`mining.attempts.is_guard_denial`) and by a notice
# event naming the call: the attachment or system line becomes a system meta event whose
# tool_call_id is the refused call's, and a failed result that opens with a PreToolUse hook's
# `[<command>]` (the hook having been seen running for that call) gets such a notice before it.

_HOOK_REFUSAL = re.compile(
    r"(?:<system-reminder>\s*)?PreToolUse(?::\S*)? hook (?:blocking error|error|stopped continuation)"
    r"|Execution stopped by PreToolUse hook",
    re.IGNORECASE,
)
_HOOK_MEMORY = 1024  # calls whose PreToolUse hooks are remembered


def _notice_row(text: str, call_id: str | None) -> _Row:
    return ("system", "meta", text, None, None, call_id, None, None, None, False)


def _hook_notice(attachment: dict[str, Any], kind: str) -> str | None:
    """The text Claude Code shows the model for a hook's blocking attachment, else None."""
    name = attachment.get("hookName")
    name = name if isinstance(name, str) and name else attachment.get("hookEvent")
    if not isinstance(name, str):
        return None
    if kind == "hook_blocking_error":
        blocking = attachment.get("blockingError")
        blocking = blocking if isinstance(blocking, dict) else {}
        command, error = blocking.get("command"), blocking.get("blockingError")
        return f'{name} hook blocking error from command: "{_as_str(command)}": {_as_str(error)}'
    if kind == "hook_stopped_continuation":
        return f"{name} hook stopped continuation: {_as_str(attachment.get('message'))}"
    if kind == "hook_permission_decision" and attachment.get("decision") in ("deny", "block"):
        reason = attachment.get("reason") or attachment.get("message")
        return f"{name} hook blocking error from command: {_as_str(reason)}"
    return None


def _as_str(value: object) -> str:
    return value if isinstance(value, str) else "" if value is None else canonical_json(value)


def _note_pre_tool_hook(obj: dict[str, Any], carry: _Carry) -> None:
    """Remember a PreToolUse hook seen running for a call (a hook_progress line)."""
    data = obj.get("data")
    if (
        not isinstance(data, dict)
        or data.get("type") != "hook_progress"
        or data.get("hookEvent") != "PreToolUse"
    ):
        return
    call_id, command = obj.get("toolUseID"), data.get("command")
    if not isinstance(call_id, str) or not isinstance(command, str):
        return
    name = data.get("hookName")
    hooks = carry.pre_tool_hooks.setdefault(call_id, [])
    hooks.append((name if isinstance(name, str) else "PreToolUse", command))
    if len(carry.pre_tool_hooks) > _HOOK_MEMORY:
        del carry.pre_tool_hooks[next(iter(carry.pre_tool_hooks))]


def _with_hook_notices(rows: list[_Row], carry: _Carry) -> list[_Row]:
    """The rows, with a refusal notice before a failed result whose text is the blocking error of a
    PreToolUse hook seen running for its call (`[<command>]: <stderr>`), when the text does not say
    so itself."""
    out: list[_Row] = []
    for row in rows:
        call_id, text = row[5], row[2]
        hooks = carry.pre_tool_hooks.pop(call_id, None) if row[1] == "tool_result" and call_id else None
        if hooks and row[7] and text:
            opening = text.lstrip().removeprefix("<tool_use_error>").lstrip().removeprefix("Error:").lstrip()
            for name, command in hooks or ():
                if opening.startswith(f"[{command}]") and not _HOOK_REFUSAL.match(opening):
                    out.append(
                        _notice_row(f'{name} hook blocking error from command: "{command}": {text}', call_id)
                    )
                    break
        out.append(row)
    return out


_HANDLERS: dict[str, Callable[[dict[str, Any]], list[_Row]]] = {
    "user": _user_fields,
    "assistant": _assistant_fields,
    "system": _system_fields,
    "summary": _summary_fields,
    "attachment": _attachment_fields,
}


# ---------------------------------------------------------------- blocks


def _user_text(text: str, meta: bool) -> _Row:
    opening = text.lstrip()
    if opening.startswith(INTERRUPTION_PREFIX):
        return _text_row("user", "message", text, interrupted=True)
    if meta or _written_by_cli(opening):
        return _text_row("system", "meta", text)
    return _text_row("user", "message", text)


def _written_by_cli(opening: str) -> bool:
    """Whether a user text (stripped of leading space) is the CLI's, not the person's (see "Whose
    words" in the module docstring)."""
    if opening.startswith(_META_PREFIXES):
        return _PROMPT_COMMAND.match(opening) is None
    if opening.startswith(_IDE_NOTE_OPEN):
        # Only the note: text after it in the same block is what the person typed.
        end = opening.find(_IDE_NOTE_CLOSE)
        return end != -1 and not opening[end + len(_IDE_NOTE_CLOSE) :].strip()
    return False


def _is_meta_line(obj: dict[str, Any]) -> bool:
    return (
        obj.get("isMeta") is True
        or obj.get("isCompactSummary") is True
        or obj.get("isVisibleInTranscriptOnly") is True
    )


def _tool_result(block: dict[str, Any], tool_use_result: object) -> _Row:
    text = _result_text(block.get("content"))
    is_error = block.get("is_error") is True
    error_text = tool_use_result if isinstance(tool_use_result, str) else None
    if error_text is not None and error_text.startswith("Error:"):
        is_error = True
    exit_code = None
    if is_error:
        exit_code = _exit_code(text)
        if exit_code is None and error_text is not None:
            exit_code = _exit_code(error_text.removeprefix("Error:").lstrip())
    interrupted = isinstance(tool_use_result, dict) and tool_use_result.get("interrupted") is True
    call_id = _required(block, "tool_use_id", str)
    return ("tool", "tool_result", text, None, None, call_id, None, is_error, exit_code, interrupted)


def _result_text(content: object) -> str | None:
    if content is None or isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise WrongFieldType("tool_result.content", "a string or an array", content)
    return "\n".join(_block_text(*_block(part)) for part in content)


def _exit_code(text: str | None) -> int | None:
    match = _EXIT_CODE.match(text) if text else None
    return int(match.group(1)) if match else None


def _block_text(block: dict[str, Any], kind: str) -> str:
    """A text block's text; a placeholder for any other block (an image, a document)."""
    return _required(block, "text", str) if kind == "text" else _placeholder(kind)


def _placeholder(block_type: str) -> str:
    return IMAGE_PLACEHOLDER if block_type == "image" else f"[{block_type}]"


# ---------------------------------------------------------------- field access


def _content(obj: dict[str, Any]) -> str | list[Any]:
    message = _required(obj, "message", dict)
    return _required(message, "content", (str, list))


def _block(block: object) -> tuple[dict[str, Any], str]:
    """A content block and its type."""
    if not isinstance(block, dict):
        raise WrongFieldType("content block", "an object", block)
    kind = block.get("type")
    if not isinstance(kind, str):
        raise WrongFieldType("type", "a string", kind)
    return block, kind


def _required(obj: dict[str, Any], key: str, kinds: type | tuple[type, ...]) -> Any:
    value = obj.get(key)
    if not isinstance(value, kinds):
        raise WrongFieldType(key, _names(kinds), value)
    return value


def _optional_str(obj: dict[str, Any], key: str) -> str | None:
    """`_optional(obj, key, str)`, the most common check, made cheap."""
    value = obj.get(key)
    if value is None or isinstance(value, str):
        return value
    raise WrongFieldType(key, "a string or null", value)


def _optional(obj: dict[str, Any], key: str, kinds: type | tuple[type, ...]) -> Any:
    value = obj.get(key)
    if value is not None and not isinstance(value, kinds):
        raise WrongFieldType(key, f"{_names(kinds)} or null", value)
    return value


_TYPE_NAMES: dict[type, str] = {str: "a string", list: "an array", dict: "an object"}


def _names(kinds: type | tuple[type, ...]) -> str:
    return " or ".join(
        _TYPE_NAMES.get(kind, kind.__name__) for kind in (kinds if isinstance(kinds, tuple) else (kinds,))
    )
