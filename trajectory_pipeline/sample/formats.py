"""Render a `Scenario` as the lines each tool writes: Claude Code, Codex CLI, own agent, chat JSONL.

Shapes follow the real files in shared/corpus/real (Claude Code v2.x, Codex rollouts of both the
older `shell` and the newer `exec_command` era). `Sink` writes one file: buffered, private (0600),
its mtime set to its last event, and, when asked, with malformed lines spliced in so ingestion has
something to quarantine.

Tool names per format (what parsers map to the canonical vocabulary):
- Claude Code: Read, Grep, Glob, LS, Edit, Write, Bash, Task (sub-agents in their own file).
- Codex: `shell` (`{"command": ["bash", "-lc", ...], "workdir"}`) in older sessions, `exec_command`
  (`{"cmd", "workdir", ...}`, with `write_stdin` polls for long runs) in newer ones; edits are the
  `apply_patch` custom tool in both.
- Own agent: read_file {path}, list_dir {path}, grep {pattern, path}, write_file {path, content},
  bash {command}.
- Chat: read_file {path}, list_directory {path}, search_files {pattern, path},
  edit_file {path, old_text, new_text}, write_file {path, content}, run_command {command}.
"""

from __future__ import annotations

import base64
import functools
import os
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from trajectory_pipeline.sample.content import CLAUDE_REJECTED
from trajectory_pipeline.sample.scenarios import Action, Call, Delegate, Scenario, Turn

Obj = dict[str, Any]

TRUNCATED = "truncated_json"
INVALID_UTF8 = "invalid_utf8"
UNKNOWN_TYPE = "unknown_record_type"
SPOIL_KINDS = (TRUNCATED, INVALID_UTF8, UNKNOWN_TYPE)

_TO_BASE62 = str.maketrans("+/", "Qz")


# --------------------------------------------------------------------------- ids and times


def iso(ms: int) -> str:
    """UTC ISO-8601 with milliseconds and a Z, as every one of these tools writes it."""
    minute, rest = divmod(ms, 60_000)
    secs, milli = divmod(rest, 1000)
    return f"{_minute_prefix(minute)}{secs:02d}.{milli:03d}Z"


@functools.lru_cache(maxsize=4096)
def _minute_prefix(minute: int) -> str:
    t = time.gmtime(minute * 60)
    return f"{t.tm_year:04d}-{t.tm_mon:02d}-{t.tm_mday:02d}T{t.tm_hour:02d}:{t.tm_min:02d}:"


def uuid4(rng: random.Random) -> str:
    h = f"{rng.getrandbits(128):032x}"
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{'89ab'[int(h[16], 16) & 3]}{h[17:20]}-{h[20:32]}"


def uuid7(ms: int, rng: random.Random) -> str:
    """Time-ordered ids, as Codex uses for sessions and turns."""
    h = f"{ms:012x}{rng.getrandbits(80):020x}"
    return f"{h[:8]}-{h[8:12]}-7{h[13:16]}-{'89ab'[int(h[16], 16) & 3]}{h[17:20]}-{h[20:32]}"


def base62(rng: random.Random, k: int) -> str:
    # base64 of random bytes with its two symbols mapped to letters: fast, and only [A-Za-z0-9]
    return base64.b64encode(rng.randbytes(k)).decode()[:k].translate(_TO_BASE62)


def hexstr(rng: random.Random, k: int) -> str:
    return f"{rng.getrandbits(4 * k):0{k}x}"


def blob(rng: random.Random, n_bytes: int, urlsafe: bool = False) -> str:
    raw = rng.randbytes(n_bytes)
    return (base64.urlsafe_b64encode(raw) if urlsafe else base64.b64encode(raw)).decode()


# --------------------------------------------------------------------------- files


def make_private_dirs(root: Path, path: Path) -> None:
    """Create `path` and any missing parents below `root` with mode 0700 (transcripts are private)."""
    missing = []
    current = path
    while current != root and not current.exists():
        missing.append(current)
        current = current.parent
    for directory in reversed(missing):
        directory.mkdir(mode=0o700)
        os.chmod(directory, 0o700)  # mkdir's mode is filtered by the umask


def _private_opener(path: str, flags: int) -> int:
    return os.open(path, flags, 0o600)


class Sink:
    """One output file: JSON lines written through a large buffer, tracking bytes and last event time.

    `spoils` maps a line position to a malformed-line kind; that line is inserted before the real
    line at that position (or at the end, when the file is shorter), so every real line is kept.
    """

    def __init__(
        self, path: Path, spoils: dict[int, str] | None = None, unknown: Callable[[str], Obj] | None = None
    ) -> None:
        self.path = path
        self._handle = open(path, "wb", buffering=1 << 20, opener=_private_opener)  # noqa: SIM115
        os.fchmod(self._handle.fileno(), 0o600)
        self._spoils = dict(spoils or {})
        self._unknown = unknown
        self.lines = 0
        self.bytes = 0
        self.malformed = 0
        self.last_ms = 0
        self._last_line = b""

    def put(self, obj: Obj, ms: int | None = None) -> None:
        data = orjson.dumps(obj) + b"\n"
        if self._spoils and self.lines in self._spoils:
            self._spoil(self._spoils.pop(self.lines), data, iso(ms if ms is not None else self.last_ms))
        self._write(data)
        self._last_line = data
        if ms is not None and ms > self.last_ms:
            self.last_ms = ms

    def _write(self, data: bytes) -> None:
        self._handle.write(data)
        self.lines += 1
        self.bytes += len(data)

    def _spoil(self, kind: str, line: bytes, ts: str) -> None:
        if kind == TRUNCATED:
            cut = len(line) * 3 // 5
            while line[cut - 1] >= 0x80:  # cut between characters, so the line stays valid UTF-8
                cut -= 1
            bad = line[:cut] + b"\n"
        elif kind == INVALID_UTF8:
            # a write that mixed encodings: Latin-1 bytes inside an otherwise normal line
            at = line.find(b'":"') + 3
            bad = line[:at] + "résumé naïve ÿ".encode("latin-1") + line[at:]
        else:
            assert self._unknown is not None, "unknown-type lines need a factory"
            bad = orjson.dumps(self._unknown(ts)) + b"\n"
        self.lines -= 1  # inserted lines don't shift the positions of the planned ones
        self._write(bad)
        self.malformed += 1

    def close(self) -> None:
        for kind in list(self._spoils.values()):
            self._spoil(kind, self._last_line or b'{"x":"y"}\n', iso(self.last_ms))
        self._spoils.clear()
        self._handle.close()
        if self.last_ms:
            ns = self.last_ms * 1_000_000
            os.utime(self.path, ns=(ns, ns))


# --------------------------------------------------------------------------- shared helpers


def _numbered(text: str, start: int = 1, arrow: str = "→") -> str:
    """`cat -n` style, as Claude Code's Read shows files (Codex's `nl -ba` uses a tab)."""
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
    return "".join(f"{n:>6}{arrow}{line}\n" for n, line in enumerate(lines, start))


def _hunk(
    before: str, old: str, new: str, context: int = 2
) -> tuple[int, list[str], list[str], list[str], list[str]]:
    """Where an edit lands: (1-based first old line, context before, old lines, new lines, context after)."""
    if old.endswith("\n") and new.endswith("\n"):  # whole-line edits: the newline is not a line of its own
        old, new = old[:-1], new[:-1]
    lines = before.split("\n")
    at = before.find(old)
    first = before.count("\n", 0, at) if at >= 0 else 0
    old_lines = old.split("\n")
    ctx_before = lines[max(0, first - context) : first]
    after_start = first + len(old_lines)
    return (first + 1, ctx_before, old_lines, new.split("\n"), lines[after_start : after_start + context])


def apply_patch_text(action: Action) -> str:
    """The `*** Begin Patch` text Codex's apply_patch tool takes for an edit or a new file."""
    if action.kind == "write":
        body = "".join(f"+{line}\n" for line in action.new.rstrip("\n").split("\n"))
        return f"*** Begin Patch\n*** Add File: {action.path}\n{body}*** End Patch\n"
    _, ctx_before, old_lines, new_lines, ctx_after = _hunk(action.before, action.old, action.new)
    parts = [f" {line}\n" for line in ctx_before] + [f"-{line}\n" for line in old_lines]
    parts += [f"+{line}\n" for line in new_lines] + [f" {line}\n" for line in ctx_after]
    return f"*** Begin Patch\n*** Update File: {action.path}\n@@\n{''.join(parts)}*** End Patch\n"


def _unified_diff(action: Action) -> str:
    start, ctx_before, old_lines, new_lines, ctx_after = _hunk(action.before, action.old, action.new)
    first = start - len(ctx_before)
    old_n = len(ctx_before) + len(old_lines) + len(ctx_after)
    new_n = len(ctx_before) + len(new_lines) + len(ctx_after)
    body = [f" {x}" for x in ctx_before] + [f"-{x}" for x in old_lines] + [f"+{x}" for x in new_lines]
    body += [f" {x}" for x in ctx_after]
    return f"@@ -{first},{old_n} +{first},{new_n} @@\n" + "\n".join(body) + "\n"


class _Clock:
    """Milliseconds since the epoch, advanced by the scenario's timings."""

    def __init__(self, ms: int) -> None:
        self.ms = ms

    def add(self, seconds: float) -> int:
        self.ms += int(seconds * 1000)
        return self.ms

    def tick(self, ms: int = 1) -> int:
        self.ms += ms
        return self.ms


def _steps_calls(turn: Turn) -> list[Call]:
    """The turn's calls with delegated ones inlined, for formats without sub-agents."""
    calls: list[Call] = []
    for step in turn.steps:
        calls.extend(step.calls if isinstance(step, Delegate) else (step,))
    return calls


# --------------------------------------------------------------------------- Claude Code

CLAUDE_VERSIONS = ("2.0.76", "2.1.38", "2.1.39", "2.1.42", "2.1.50", "2.2.3")
CLAUDE_MODELS = ("claude-opus-4-6", "claude-sonnet-4-5-20250929", "claude-opus-4-6")
CLAUDE_SUBAGENT_MODEL = "claude-haiku-4-5-20251001"
_SLUG_WORDS = (
    "quiet",
    "bright",
    "typed",
    "dazzling",
    "wolf",
    "grove",
    "otter",
    "harbor",
    "lantern",
    "cobalt",
)


def _hook(cwd: str) -> str:
    """The guard hook in the user's ~/.claude: the home is the cwd's first two components."""
    return "/".join(cwd.split("/")[:3]) + "/.claude/hooks/guard.sh"


def claude_project_slug(cwd: str) -> str:
    """Claude Code's project directory name: the cwd with `/` and `.` turned into `-`."""
    return cwd.replace("/", "-").replace(".", "-")


class _ClaudeLog:
    """Writes one Claude Code transcript (main session or sub-agent) with its parentUuid chain."""

    def __init__(
        self,
        sink: Sink,
        rng: random.Random,
        session_id: str,
        cwd: str,
        version: str,
        branch: str,
        model: str,
        agent_id: str | None = None,
    ) -> None:
        self.sink = sink
        self.rng = rng
        self.model = model
        self.cwd = cwd
        self.parent: str | None = None
        self.slug: str | None = None
        self.base: Obj = {
            "isSidechain": agent_id is not None,
            "userType": "external",
            "cwd": cwd,
            "sessionId": session_id,
            "version": version,
            "gitBranch": branch,
        }
        if agent_id is not None:
            self.base["agentId"] = agent_id
        self.tokens = rng.randint(9000, 30000)

    def _envelope(self) -> Obj:
        line: Obj = {"parentUuid": self.parent, **self.base}
        if self.slug is not None:
            line["slug"] = self.slug
        return line

    def user(self, ms: int, content: Any, uid: str | None = None, **extra: Any) -> str:
        uid = uid or uuid4(self.rng)
        line = self._envelope()
        line["type"] = "user"
        line["message"] = {"role": "user", "content": content}
        line["uuid"] = uid
        line["timestamp"] = iso(ms)
        line.update(extra)
        self.sink.put(line, ms)
        self.parent = uid
        return uid

    def new_message(self) -> tuple[str, str, Obj]:
        """A model response: its id, request id and usage, shared by the lines it spans."""
        rng = self.rng
        self.tokens += rng.randint(200, 4000)
        usage = {
            "input_tokens": rng.randint(1, 12),
            "cache_creation_input_tokens": rng.randint(100, 9000),
            "cache_read_input_tokens": self.tokens,
            "cache_creation": {
                "ephemeral_5m_input_tokens": 0,
                "ephemeral_1h_input_tokens": rng.randint(100, 9000),
            },
            "output_tokens": rng.randint(1, 600),
            "service_tier": "standard",
        }
        return "msg_01" + base62(rng, 22), "req_011C" + base62(rng, 18), usage

    def assistant(self, ms: int, message: tuple[str, str, Obj], block: Obj, stop: str | None = None) -> str:
        msg_id, request_id, usage = message
        uid = uuid4(self.rng)
        line = self._envelope()
        line["message"] = {
            "model": self.model,
            "id": msg_id,
            "type": "message",
            "role": "assistant",
            "content": [block],
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": usage,
        }
        line["requestId"] = request_id
        line["type"] = "assistant"
        line["uuid"] = uid
        line["timestamp"] = iso(ms)
        self.sink.put(line, ms)
        self.parent = uid
        return uid

    def tool_result(
        self, ms: int, tool_use_id: str, content: Any, is_error: bool, result: Any, source: str
    ) -> str:
        block = {"tool_use_id": tool_use_id, "type": "tool_result", "content": content, "is_error": is_error}
        return self.user(ms, [block], toolUseResult=result, sourceToolAssistantUUID=source)

    def progress(self, ms: int, event: str, name: str, command: str, tool_use_id: str) -> None:
        line = self._envelope()
        line["type"] = "progress"
        line["data"] = {"type": "hook_progress", "hookEvent": event, "hookName": name, "command": command}
        line["parentToolUseID"] = tool_use_id
        line["toolUseID"] = tool_use_id
        line["timestamp"] = iso(ms)
        line["uuid"] = uuid4(self.rng)
        self.sink.put(line, ms)  # progress lines hang off the chain without extending it

    def system(self, ms: int, subtype: str, **fields: Any) -> None:
        uid = uuid4(self.rng)
        line = self._envelope()
        line["type"] = "system"
        line["subtype"] = subtype
        line.update(fields)
        line["timestamp"] = iso(ms)
        line["uuid"] = uid
        line["isMeta"] = False
        self.sink.put(line, ms)
        self.parent = uid


def _claude_tool(call: Call, cwd: str, rng: random.Random) -> tuple[str, Obj]:
    a = call.action
    path = f"{cwd}/{a.path}" if a.path else cwd
    if a.kind == "read":
        return "Read", {"file_path": path}
    if a.kind == "grep":
        mode = "content" if rng.random() < 0.6 else "files_with_matches"
        args: Obj = {"pattern": a.pattern, "path": path, "output_mode": mode}
        if mode == "content":
            args["-n"] = True
        return "Grep", args
    if a.kind == "glob":
        return "Glob", {"pattern": a.pattern}
    if a.kind == "list":
        return "LS", {"path": path}
    if a.kind == "edit":
        return "Edit", {"file_path": path, "old_string": a.old, "new_string": a.new}
    if a.kind == "write":
        return "Write", {"file_path": path, "content": a.new}
    words = a.command.split()
    description = {
        "test": "Run the test suite",
        "lint": "Run the linter",
        "check": "Type-check and lint",
        "commit": "Commit the change",
    }.get(a.purpose, f"Run {words[0] if words else 'command'}")
    return "Bash", {"command": a.command, "description": description}


def _claude_result(call: Call, args: Obj, cwd: str) -> tuple[Any, bool, Any]:
    """tool_result content, is_error, and the toolUseResult Claude Code stores beside it."""
    a, r = call.action, call.result
    if r.status == "denied_user":
        return CLAUDE_REJECTED, True, "User rejected tool use"
    if r.status == "denied_policy":
        text = f"PreToolUse:Bash hook error: [{_hook(cwd)}]: Blocked: {r.output}"
        return text, True, f"Error: {text}"
    if r.status == "missing":
        return "<tool_use_error>File does not exist.</tool_use_error>", True, "Error: File does not exist."
    if a.kind == "read":
        n = r.output.count("\n") + (0 if r.output.endswith("\n") else 1)
        file = {
            "filePath": args["file_path"],
            "content": r.output,
            "numLines": n,
            "startLine": 1,
            "totalLines": n,
        }
        return _numbered(r.output), False, {"type": "text", "file": file}
    if a.kind == "grep":
        if args["output_mode"] == "content":
            return (
                r.output.rstrip("\n") or "No matches found",
                False,
                {
                    "mode": "content",
                    "numFiles": 0,
                    "filenames": [],
                    "content": r.output.rstrip("\n"),
                    "numLines": r.output.count("\n"),
                },
            )
        names = list(r.names)
        text = f"Found {len(names)} file{'s' if len(names) != 1 else ''}\n" + "\n".join(names)
        return text, False, {"mode": "files_with_matches", "filenames": names, "numFiles": len(names)}
    if a.kind == "glob":
        names = [f"{cwd}/{n}" for n in r.names]
        return (
            "\n".join(names) or "No files found",
            False,
            {"filenames": names, "durationMs": 12 + len(names), "numFiles": len(names), "truncated": False},
        )
    if a.kind == "list":
        tree = f"- {cwd}/{a.path}/\n" + "".join(f"  - {n}\n" for n in r.names)
        return tree, False, tree
    if a.kind == "edit":
        start, ctx_before, old_lines, new_lines, ctx_after = _hunk(a.before, a.old, a.new)
        first = start - len(ctx_before)
        snippet = "\n".join([*ctx_before, *new_lines, *ctx_after])
        lines = [f" {x}" for x in ctx_before] + [f"-{x}" for x in old_lines] + [f"+{x}" for x in new_lines]
        lines += [f" {x}" for x in ctx_after]
        patch = {
            "oldStart": first,
            "oldLines": len(ctx_before) + len(old_lines) + len(ctx_after),
            "newStart": first,
            "newLines": len(ctx_before) + len(new_lines) + len(ctx_after),
            "lines": lines,
        }
        text = (
            f"The file {args['file_path']} has been updated. Here's the result of running `cat -n` on a "
            f"snippet of the edited file:\n" + _numbered(snippet, first).rstrip("\n")
        )
        return (
            text,
            False,
            {
                "filePath": args["file_path"],
                "oldString": a.old,
                "newString": a.new,
                "originalFile": a.before,
                "structuredPatch": [patch],
                "userModified": False,
                "replaceAll": False,
            },
        )
    if a.kind == "write":
        return (
            f"File created successfully at: {args['file_path']}",
            False,
            {
                "type": "create",
                "filePath": args["file_path"],
                "content": a.new,
                "structuredPatch": [],
                "originalFile": None,
            },
        )
    if r.status == "failed":
        text = f"Exit code {r.exit_code}\n{r.output.rstrip()}"
        return text, True, f"Error: {text}"
    out = r.output.rstrip("\n")
    return (
        out,
        False,
        {"stdout": out, "stderr": "", "interrupted": False, "isImage": False, "noOutputExpected": False},
    )


def claude_unknown(session_id: str) -> Callable[[str], Obj]:
    return lambda ts: {
        "type": "telemetry",
        "event": "tengu_session_heartbeat",
        "sessionId": session_id,
        "timestamp": ts,
    }


def _claude_delegate(
    log: _ClaudeLog,
    step: Delegate,
    clock: _Clock,
    rng: random.Random,
    message: tuple[str, str, Obj],
    open_subagent: Callable[[str], Sink],
) -> Sink:
    """A Task call in the main transcript, and the sub-agent's own transcript in its own file."""
    ms = clock.add(step.latency)
    tool_id = "toolu_01" + base62(rng, 22)
    task_input = {"description": step.description, "prompt": step.prompt, "subagent_type": "Explore"}
    source = log.assistant(
        ms, message, {"type": "tool_use", "id": tool_id, "name": "Task", "input": task_input}
    )
    agent_id = "a" + hexstr(rng, 6)
    sub_sink = open_subagent(agent_id)
    base = log.base
    sub = _ClaudeLog(
        sub_sink,
        rng,
        base["sessionId"],
        log.cwd,
        base["version"],
        base["gitBranch"],
        CLAUDE_SUBAGENT_MODEL,
        agent_id,
    )
    sub_clock = _Clock(ms + 120)
    sub.user(sub_clock.ms, step.prompt)
    for call in step.calls:
        _claude_call(sub, call, sub_clock, rng, thinking=False, hooks=False)
    sub.assistant(sub_clock.add(2.0), sub.new_message(), {"type": "text", "text": step.summary}, "end_turn")
    sub_sink.close()

    clock.ms = max(clock.ms + int(step.duration * 1000), sub_clock.ms + 50)
    usage = {
        "input_tokens": 7,
        "cache_creation_input_tokens": rng.randint(5000, 20000),
        "cache_read_input_tokens": rng.randint(10000, 60000),
        "output_tokens": rng.randint(200, 900),
    }
    resume = f"agentId: {agent_id} (for resuming to continue this agent's work if needed)"
    content = [{"type": "text", "text": step.summary}, {"type": "text", "text": resume}]
    result = {
        "status": "completed",
        "prompt": step.prompt,
        "agentId": agent_id,
        "content": [{"type": "text", "text": step.summary}],
        "totalDurationMs": sub_clock.ms - ms,
        "totalTokens": sum(usage.values()),
        "totalToolUseCount": len(step.calls),
        "usage": usage,
    }
    log.tool_result(clock.ms, tool_id, content, False, result, source)
    return sub_sink


def write_claude(
    sink: Sink,
    scenario: Scenario,
    start_ms: int,
    rng: random.Random,
    session_id: str,
    open_subagent: Callable[[str], Sink],
) -> tuple[int, list[Sink]]:
    """Write one Claude Code session; returns the last timestamp and any sub-agent files it wrote."""
    repo = scenario.repo
    version = rng.choice(CLAUDE_VERSIONS)
    model = rng.choice(CLAUDE_MODELS)
    thinking = model.startswith("claude-opus") and rng.random() < 0.7
    hooks = rng.random() < 0.35
    log = _ClaudeLog(sink, rng, session_id, repo.cwd, version, scenario.branch, model)
    slug = "-".join(rng.sample(_SLUG_WORDS, 3))
    clock = _Clock(start_ms)
    subagents: list[Sink] = []
    backups: Obj = {}

    if rng.random() < 0.12:  # a resumed session starts with the titles of the ones it continues
        for _ in range(rng.randint(1, 3)):
            sink.put(
                {
                    "type": "summary",
                    "summary": f"{scenario.task.intent.replace('_', ' ').title()} in {repo.name}",
                    "leafUuid": uuid4(rng),
                }
            )

    for turn in scenario.turns:
        turn_start = clock.add(turn.delay)
        user_uuid = uuid4(rng)
        sink.put(
            {
                "type": "file-history-snapshot",
                "messageId": user_uuid,
                "snapshot": {
                    "messageId": user_uuid,
                    "trackedFileBackups": dict(backups),
                    "timestamp": iso(turn_start),
                },
                "isSnapshotUpdate": False,
            }
        )
        log.user(
            turn_start,
            turn.instruction,
            user_uuid,
            thinkingMetadata={"maxThinkingTokens": 31999},
            todos=[],
            permissionMode=rng.choice(("default", "acceptEdits", "default")),
        )
        first = True
        for step in turn.steps:
            message = log.new_message()
            if isinstance(step, Delegate):
                subagents.append(_claude_delegate(log, step, clock, rng, message, open_subagent))
                continue
            if first and thinking and not step.think:
                clock.add(1.0)
                log.assistant(
                    clock.ms,
                    message,
                    {
                        "type": "thinking",
                        "thinking": f"Let me understand the request and look at {repo.name} first.",
                        "signature": blob(rng, 180),
                    },
                )
            _claude_call(log, step, clock, rng, thinking=thinking, hooks=hooks, message=message)
            first = False
            if log.slug is None:
                log.slug = slug
        if turn.end == "rejected":
            log.user(clock.tick(3), [{"type": "text", "text": "[Request interrupted by user for tool use]"}])
        elif turn.end == "interrupted":
            log.user(
                clock.add(turn.closing_latency), [{"type": "text", "text": "[Request interrupted by user]"}]
            )
        else:
            ms = clock.add(turn.closing_latency)
            log.assistant(ms, log.new_message(), {"type": "text", "text": turn.final}, "end_turn")
            for call in _steps_calls(turn):
                if call.action.kind in ("edit", "write"):
                    version_n = backups.get(call.action.path, {}).get("version", 0) + 1
                    backups[call.action.path] = {
                        "backupFileName": f"{hexstr(rng, 16)}@v{version_n}",
                        "version": version_n,
                        "backupTime": iso(ms),
                    }
            if hooks:
                log.system(
                    clock.tick(40),
                    "stop_hook_summary",
                    hookCount=1,
                    hookInfos=[{"command": _hook(repo.cwd)}],
                    hookErrors=[],
                    preventedContinuation=False,
                    stopReason="",
                    hasOutput=False,
                    level="suggestion",
                    toolUseID=uuid4(rng),
                )
            if not version.startswith("2.0"):  # turn_duration lines arrived in 2.1
                log.system(clock.tick(16), "turn_duration", durationMs=clock.ms - turn_start)
    return clock.ms, subagents


def _claude_call(
    log: _ClaudeLog,
    call: Call,
    clock: _Clock,
    rng: random.Random,
    thinking: bool,
    hooks: bool,
    message: tuple[str, str, Obj] | None = None,
) -> None:
    message = message or log.new_message()
    ms = clock.add(call.latency)
    if call.think and thinking:
        log.assistant(
            ms - 900, message, {"type": "thinking", "thinking": call.think, "signature": blob(rng, 240)}
        )
    if call.say:
        log.assistant(ms - 400, message, {"type": "text", "text": call.say})
    name, args = _claude_tool(call, log.cwd, rng)
    tool_id = "toolu_01" + base62(rng, 22)
    source = log.assistant(
        ms, message, {"type": "tool_use", "id": tool_id, "name": name, "input": args}, "tool_use"
    )
    if hooks and name == "Bash":
        for hook in (f"bash {_hook(log.cwd)}", "${CLAUDE_PLUGIN_ROOT}/scripts/pre-commit-check.sh"):
            log.progress(clock.tick(2), "PreToolUse", "PreToolUse:Bash", hook, tool_id)
    content, is_error, result = _claude_result(call, args, log.cwd)
    log.tool_result(clock.add(call.duration), tool_id, content, is_error, result, source)


# --------------------------------------------------------------------------- Codex

_CODEX_INSTRUCTIONS = (
    "You are Codex, a coding agent based on GPT-5. You and the user share one workspace, and your job is "
    "to collaborate with them until their goal is genuinely handled.\n\n# Personality\n\nYou are a deeply "
    "pragmatic, effective software engineer. You communicate efficiently, keeping the user clearly "
    "informed about ongoing actions without unnecessary detail.\n\n## Editing constraints\n\n"
    "- Default to ASCII when editing or creating files.\n"
    "- Use `apply_patch` for single-file edits; do not use it for generated changes such as lockfiles.\n"
    "- You may be in a dirty git worktree. NEVER revert existing changes you did not make unless "
    "explicitly requested.\n"
    "- Do not amend a commit unless explicitly requested.\n"
    "- **NEVER** use destructive commands like `git reset --hard` or `git checkout --` unless "
    "specifically requested or approved by the user.\n\n"
    "## Validating your work\n\nIf the codebase has tests or the ability to build or run, consider using "
    "them to verify that your work is complete. Start as specific as possible to the code you changed, "
    "then make your way to broader tests as you build confidence.\n\n"
    "## Presenting your work\n\nYour final message should read naturally, like an update from a concise "
    "teammate. Reference files with clickable paths; do not dump large files you have written.\n"
)
_SANDBOX_DENIED = "sandbox denied exec error, exit code: 1, stdout: , stderr: "
_CODEX_PERMISSIONS = (
    "<permissions instructions>\nFilesystem sandboxing defines which files can be read or written. "
    "`sandbox_mode` is `workspace-write`: The sandbox permits reading files, and editing files in `cwd` and "
    "`writable_roots`. Editing files in other directories requires approval. Network access is restricted.\n"
    "Approval policy is currently on-request.\n</permissions instructions>"
)
_TURN_ABORTED = (
    "<turn_aborted>\nThe user interrupted the previous turn on purpose. Any running unified exec processes "
    "may still be running in the background. If any tools/commands were aborted, they may have partially "
    "executed.\n</turn_aborted>"
)
_SANDBOX = {
    "type": "workspace-write",
    "network_access": False,
    "exclude_tmpdir_env_var": False,
    "exclude_slash_tmp": False,
}


def codex_rollout_name(start_ms: int, session_id: str) -> tuple[str, str]:
    """(YYYY/MM/DD, rollout-...jsonl) for a session; this corpus's user works in UTC."""
    t = time.gmtime(start_ms // 1000)
    day = f"{t.tm_year:04d}/{t.tm_mon:02d}/{t.tm_mday:02d}"
    stamp = f"{t.tm_year:04d}-{t.tm_mon:02d}-{t.tm_mday:02d}T{t.tm_hour:02d}-{t.tm_min:02d}-{t.tm_sec:02d}"
    return day, f"rollout-{stamp}-{session_id}.jsonl"


def _codex_command(call: Call, rng: random.Random) -> tuple[str, list[Obj]]:
    """The shell command Codex runs for a neutral action, and exec_command_end's parsed_cmd."""
    a = call.action
    if a.kind == "read":
        command = rng.choice(
            (f"sed -n '1,200p' {a.path}", f"cat {a.path}", f"nl -ba {a.path} | sed -n '1,160p'")
        )
        return command, [{"type": "read", "cmd": command, "name": a.path.rsplit("/", 1)[-1], "path": a.path}]
    if a.kind == "grep":
        command = f'rg -n "{a.pattern}" {a.path or "."}'
        return command, [{"type": "search", "cmd": command, "query": a.pattern, "path": a.path or None}]
    if a.kind == "glob":
        command = f"rg --files -g '{a.pattern}'"
        return command, [{"type": "list_files", "cmd": command, "path": None}]
    if a.kind == "list":
        command = f"ls -la {a.path}"
        return command, [{"type": "list_files", "cmd": command, "path": a.path}]
    return a.command, [{"type": "unknown", "cmd": a.command}]


def _codex_output(call: Call, command: str) -> tuple[str, int]:
    a, r = call.action, call.result
    if r.status == "missing":
        tool = command.split()[0]
        if tool == "sed":
            return f"sed: can't read {a.path}: No such file or directory\n", 2
        return f"{tool}: {a.path}: No such file or directory\n", 1
    if a.kind == "read" and command.startswith("nl -ba"):
        return _numbered(r.output, arrow="\t"), 0
    if a.kind == "grep":
        return r.output, 0 if r.output else 1
    if a.kind in ("glob", "list"):
        return "\n".join(r.names) + "\n", 0
    return r.output, r.exit_code or 0


class _CodexLog:
    def __init__(self, sink: Sink, rng: random.Random, cwd: str, model: str, exec_era: bool) -> None:
        self.sink = sink
        self.rng = rng
        self.cwd = cwd
        self.model = model
        self.exec_era = exec_era
        self.turn_id = ""
        self.total = {
            "input_tokens": 0,
            "cached_input_tokens": 0,
            "output_tokens": 0,
            "reasoning_output_tokens": 0,
            "total_tokens": 0,
        }

    def put(self, ms: int, kind: str, payload: Obj) -> None:
        self.sink.put({"timestamp": iso(ms), "type": kind, "payload": payload}, ms)

    def tokens(self, ms: int) -> None:
        rng = self.rng
        last = {
            "input_tokens": rng.randint(6000, 40000),
            "cached_input_tokens": 0,
            "output_tokens": rng.randint(20, 900),
            "reasoning_output_tokens": rng.choice((0, 0, 64, 128, 256)),
        }
        last["cached_input_tokens"] = last["input_tokens"] - rng.randint(100, 2000)
        last["total_tokens"] = last["input_tokens"] + last["output_tokens"]
        for key, value in last.items():
            self.total[key] += value
        info = {
            "total_token_usage": dict(self.total),
            "last_token_usage": last,
            "model_context_window": 258400,
        }
        self.put(ms, "event_msg", {"type": "token_count", "info": info, "rate_limits": None})

    def turn_context(self, ms: int, day: str) -> None:
        if self.exec_era:
            payload = {
                "turn_id": self.turn_id,
                "cwd": self.cwd,
                "current_date": day,
                "timezone": "UTC",
                "approval_policy": "on-request",
                "sandbox_policy": _SANDBOX,
                "model": self.model,
                "personality": "pragmatic",
                "effort": "medium",
                "summary": "none",
                "truncation_policy": {"mode": "tokens", "limit": 10000},
            }
        else:
            payload = {
                "cwd": self.cwd,
                "approval_policy": "never",
                "sandbox_policy": _SANDBOX,
                "model": self.model,
                "summary": "auto",
            }
        self.put(ms, "turn_context", payload)

    def message(self, ms: int, role: str, text: str, phase: str | None = None) -> None:
        kind = "input_text" if role != "assistant" else "output_text"
        payload: Obj = {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}
        if phase is not None and self.exec_era:
            payload["phase"] = phase
        self.put(ms, "response_item", payload)

    def reasoning(self, ms: int, summary: str) -> None:
        items = [{"type": "summary_text", "text": summary}] if summary else []
        if summary:
            self.put(ms - 1, "event_msg", {"type": "agent_reasoning", "text": summary})
        self.put(
            ms,
            "response_item",
            {
                "type": "reasoning",
                "summary": items,
                "content": None,
                "encrypted_content": "gAAAAAB" + blob(self.rng, 330, urlsafe=True),
            },
        )


def codex_unknown(ts: str) -> Obj:
    return {"timestamp": ts, "type": "telemetry_flush", "payload": {"events": 3, "ok": True}}


def write_codex(sink: Sink, scenario: Scenario, start_ms: int, rng: random.Random, session_id: str) -> int:
    """Write one Codex rollout; newer sessions use exec_command, older ones the `shell` tool."""
    repo = scenario.repo
    exec_era = rng.random() < 0.6
    model = rng.choice(("gpt-5.5", "gpt-5.3-codex")) if exec_era else "gpt-5.1-codex"
    log = _CodexLog(sink, rng, repo.cwd, model, exec_era)
    clock = _Clock(start_ms)
    git = {"commit_hash": hexstr(rng, 40), "branch": scenario.branch, "repository_url": repo.remote}
    meta: Obj = {"id": session_id, "timestamp": iso(start_ms), "cwd": repo.cwd}
    if exec_era:
        meta |= {
            "originator": "codex_cli_rs",
            "cli_version": rng.choice(("0.125.0", "0.128.1")),
            "source": "cli",
            "model_provider": "openai",
            "base_instructions": {"text": _CODEX_INSTRUCTIONS},
            "git": git,
        }
    else:
        meta |= {
            "originator": "codex_exec",
            "cli_version": "0.77.0",
            "instructions": _CODEX_INSTRUCTIONS,
            "source": "exec",
            "model_provider": "openai",
            "git": git,
        }
    log.put(clock.add(rng.uniform(0.05, 1.5)), "session_meta", meta)
    day = iso(start_ms)[:10]
    agents_md = (
        f"# AGENTS.md instructions for {repo.cwd}\n\n<INSTRUCTIONS>\n- Run `{repo.test_command}` before "
        f"you finish.\n- Keep changes small; match the surrounding style.\n</INSTRUCTIONS>"
    )
    env = (
        f"<environment_context>\n  <cwd>{repo.cwd}</cwd>\n  <approval_policy>on-request</approval_policy>\n"
        "  <sandbox_mode>workspace-write</sandbox_mode>\n  <network_access>restricted</network_access>\n"
        "  <shell>bash</shell>\n</environment_context>"
    )
    aborted = False
    for n, turn in enumerate(scenario.turns):
        ms = clock.add(turn.delay)
        log.turn_id = uuid7(ms, rng)
        if exec_era:
            log.put(
                ms,
                "event_msg",
                {
                    "type": "task_started",
                    "turn_id": log.turn_id,
                    "started_at": ms // 1000,
                    "model_context_window": 258400,
                    "collaboration_mode_kind": "default",
                },
            )
        if n == 0:
            if exec_era:
                log.message(ms, "developer", _CODEX_PERMISSIONS)
            log.message(ms, "user", agents_md)
            log.message(ms, "user", env)
        if exec_era:
            log.turn_context(clock.tick(), day)
        if aborted and exec_era:
            log.message(clock.tick(), "user", _TURN_ABORTED)
        log.message(clock.tick(), "user", turn.instruction)
        user_event: Obj = {"type": "user_message", "message": turn.instruction, "images": []}
        if exec_era:
            user_event |= {"local_images": [], "text_elements": []}
        log.put(clock.tick(), "event_msg", user_event)
        if not exec_era:
            log.turn_context(clock.tick(), day)
        for call in _steps_calls(turn):
            _codex_call(log, call, clock, rng)
        aborted = turn.end == "interrupted"
        if aborted:
            log.put(
                clock.add(turn.closing_latency),
                "event_msg",
                {"type": "turn_aborted", "turn_id": log.turn_id, "reason": "interrupted"},
            )
            continue
        ms = clock.add(turn.closing_latency)
        log.put(ms, "event_msg", {"type": "agent_message", "message": turn.final, "phase": "final_answer"})
        log.message(clock.tick(), "assistant", turn.final, "final_answer")
        log.tokens(clock.tick(15))
        if exec_era:
            log.put(
                clock.tick(30),
                "event_msg",
                {"type": "task_complete", "turn_id": log.turn_id, "last_agent_message": turn.final},
            )
    return clock.ms


def _codex_call(log: _CodexLog, call: Call, clock: _Clock, rng: random.Random) -> None:
    ms = clock.add(call.latency)
    if call.think or rng.random() < 0.5:
        log.reasoning(ms - 700, call.think)
    if call.say:
        if log.exec_era:
            log.put(
                ms - 300, "event_msg", {"type": "agent_message", "message": call.say, "phase": "commentary"}
            )
        log.message(ms - 290, "assistant", call.say, "commentary")
    call_id = "call_" + base62(rng, 24)
    if call.action.kind in ("edit", "write"):
        _codex_patch(log, call, clock, ms, call_id)
    else:
        _codex_exec(log, call, clock, rng, ms, call_id)


def _codex_patch(log: _CodexLog, call: Call, clock: _Clock, ms: int, call_id: str) -> None:
    a = call.action
    patch = apply_patch_text(a)
    log.put(
        ms,
        "response_item",
        {
            "type": "custom_tool_call",
            "status": "completed",
            "call_id": call_id,
            "name": "apply_patch",
            "input": patch,
        },
    )
    log.tokens(clock.tick(20))
    done = clock.add(call.duration)
    stdout = f"Success. Updated the following files:\n{'M' if a.kind == 'edit' else 'A'} {a.path}\n"
    if log.exec_era:
        change = {
            "type": "update" if a.kind == "edit" else "add",
            "unified_diff": _unified_diff(a) if a.kind == "edit" else a.new,
            "move_path": None,
        }
        end: Obj = {
            "type": "patch_apply_end",
            "call_id": call_id,
            "turn_id": log.turn_id,
            "stdout": stdout,
            "stderr": "",
        }
        end |= {"success": True, "changes": {f"{log.cwd}/{a.path}": change}, "status": "completed"}
        log.put(done, "event_msg", end)
    output = orjson.dumps({"output": stdout, "metadata": {"exit_code": 0, "duration_seconds": call.duration}})
    log.put(
        clock.tick(60),
        "response_item",
        {"type": "custom_tool_call_output", "call_id": call_id, "output": output.decode()},
    )


def _codex_exec(log: _CodexLog, call: Call, clock: _Clock, rng: random.Random, ms: int, call_id: str) -> None:
    r = call.result
    command, parsed = _codex_command(call, rng)
    if log.exec_era:
        name = "exec_command"
        args = {"cmd": command, "workdir": log.cwd, "yield_time_ms": 10000, "max_output_tokens": 12000}
    else:
        name, args = "shell", {"command": ["bash", "-lc", command], "workdir": log.cwd}
    arguments = orjson.dumps(args).decode()
    log.put(
        ms,
        "response_item",
        {"type": "function_call", "name": name, "arguments": arguments, "call_id": call_id},
    )
    log.tokens(clock.tick(25))
    done = clock.add(call.duration)

    if r.status in ("denied_user", "denied_policy"):
        if r.status == "denied_user":
            text, code = "exec command rejected by user", -1
        else:
            text, code = (
                f"failed in sandbox LinuxSeccomp with execution error: {_SANDBOX_DENIED}{r.output}",
                1,
            )
        log.put(done, "response_item", {"type": "function_call_output", "call_id": call_id, "output": text})
        if log.exec_era:
            _exec_end(log, done + 5, call_id, command, parsed, text, code, call.duration)
        return

    output, code = _codex_output(call, command)
    if not log.exec_era:
        metadata = {"exit_code": code, "duration_seconds": round(call.duration, 1)}
        payload = orjson.dumps({"output": output, "metadata": metadata}).decode()
        log.put(
            done, "response_item", {"type": "function_call_output", "call_id": call_id, "output": payload}
        )
        log.turn_context(clock.tick(4), iso(done)[:10])
        return

    result_id = call_id
    if call.duration > 10.0 and rng.random() < 0.7:
        # long runs answer with a session id first; the result comes back to a write_stdin poll
        process = rng.randint(20000, 99999)
        early = ms + 10_050
        running = (
            f"Chunk ID: {hexstr(rng, 6)}\nWall time: 10.0021 seconds\n"
            f"Process running with session ID {process}\nOriginal token count: 0\nOutput:\n"
        )
        log.put(
            early, "response_item", {"type": "function_call_output", "call_id": call_id, "output": running}
        )
        call_id = "call_" + base62(rng, 24)
        poll = {"session_id": process, "chars": "", "yield_time_ms": 30000, "max_output_tokens": 12000}
        log.put(
            early + 1500,
            "response_item",
            {
                "type": "function_call",
                "name": "write_stdin",
                "arguments": orjson.dumps(poll).decode(),
                "call_id": call_id,
            },
        )
        log.tokens(early + 1530)
        clock.ms = done = max(clock.ms, early + 1600)
    text = (
        f"Chunk ID: {hexstr(rng, 6)}\nWall time: {call.duration:.4f} seconds\n"
        f"Process exited with code {code}\nOriginal token count: {len(output) // 4}\nOutput:\n{output}"
    )
    log.put(done, "response_item", {"type": "function_call_output", "call_id": call_id, "output": text})
    _exec_end(log, done + 4, result_id, command, parsed, output, code, call.duration)
    clock.ms = max(clock.ms, done + 4)


def _exec_end(
    log: _CodexLog,
    ms: int,
    call_id: str,
    command: str,
    parsed: list[Obj],
    output: str,
    code: int,
    seconds: float,
) -> None:
    """The event Codex writes when a command ends; -1 marks one the user declined."""
    secs = int(seconds)
    status = "declined" if code == -1 else "completed" if code == 0 else "failed"
    event: Obj = {
        "type": "exec_command_end",
        "call_id": call_id,
        "process_id": str(log.rng.randint(20000, 99999)),
    }
    event |= {
        "turn_id": log.turn_id,
        "command": ["/bin/bash", "-lc", command],
        "cwd": log.cwd,
        "parsed_cmd": parsed,
    }
    event |= {"source": "unified_exec_startup", "stdout": "", "stderr": "", "aggregated_output": output}
    event |= {"exit_code": code, "duration": {"secs": secs, "nanos": int((seconds - secs) * 1e9)}}
    event |= {"formatted_output": "", "status": status}
    log.put(ms, "event_msg", event)


# --------------------------------------------------------------------------- own agent

_OWN_DECISIONS = {
    "start": (
        "reproduce the failure before reading code",
        "read the module named in the request first",
        "search for the symbol, then read the file that defines it",
    ),
    "failed": ("the change is incomplete; fix the reported error and rerun", "rerun only the failing test"),
    "denied": ("blocked command: take a safer route that still answers the request",),
}


def _own_tool(call: Call) -> tuple[str, Obj, Any]:
    a, r = call.action, call.result
    if r.status == "missing":
        return "read_file", {"path": a.path}, f"ERROR: no such file: {a.path}"
    if a.kind == "read":
        return "read_file", {"path": a.path}, r.output
    if a.kind == "list":
        return "list_dir", {"path": a.path}, list(r.names)
    if a.kind == "glob":
        return (
            "bash",
            {"command": f"find . -path './{a.pattern}'"},
            {"exit_code": 0, "output": "".join(f"./{n}\n" for n in r.names)},
        )
    if a.kind == "grep":
        return "grep", {"pattern": a.pattern, "path": a.path or "."}, r.output or "(no matches)"
    if a.kind in ("edit", "write"):
        content = a.before.replace(a.old, a.new, 1) if a.kind == "edit" else a.new
        return (
            "write_file",
            {"path": a.path, "content": content},
            f"wrote {len(content.encode())} bytes to {a.path}",
        )
    if r.status in ("denied_user", "denied_policy"):
        return "bash", {"command": a.command}, f"DENIED: {r.output}"
    return "bash", {"command": a.command}, {"exit_code": r.exit_code or 0, "output": r.output}


def own_agent_unknown(ts: str) -> Obj:
    return {"type": "heartbeat", "uptime_s": 86400, "timestamp": ts}


def write_own_agent(
    sink: Sink, scenario: Scenario, start_ms: int, rng: random.Random, role: str, confidence: bool
) -> int:
    """Append one session to the day's own-agent log; returns its last timestamp."""
    clock = _Clock(start_ms)

    def say(ms: int, text: str, level: float) -> None:
        line: Obj = {"type": "message", "role": role, "content": text, "timestamp": iso(ms)}
        if confidence:
            line["confidence"] = round(min(0.99, max(0.05, rng.gauss(level, 0.08))), 2)
        sink.put(line, ms)

    def note(ms: int, kind: str, text: str) -> None:
        sink.put({"type": kind, kind: text, "timestamp": iso(ms)}, ms)

    base = {"success": 0.82, "inspect": 0.75, "failure": 0.45}[scenario.outcome]
    for n, turn in enumerate(scenario.turns):
        ms = clock.add(turn.delay)
        sink.put({"type": "message", "role": "user", "content": turn.instruction, "timestamp": iso(ms)}, ms)
        if n == 0:
            note(clock.add(rng.uniform(0.5, 2.0)), "decision", rng.choice(_OWN_DECISIONS["start"]))
        for call in _steps_calls(turn):
            ms = clock.add(call.latency)
            if call.say:
                say(ms - 200, call.say, base)
            tool, args, result = _own_tool(call)
            sink.put(
                {"type": "tool_call", "tool": tool, "args": args, "result": result, "timestamp": iso(ms)}, ms
            )
            done = clock.add(call.duration)
            status = call.result.status
            if status == "missing":
                note(done + 2, "error", f"read_file failed: FileNotFoundError: {call.action.path}")
            elif status in ("denied_user", "denied_policy"):
                note(done + 2, "error", f"guard refused bash: {call.result.output}")
                note(done + 5, "decision", rng.choice(_OWN_DECISIONS["denied"]))
            elif status == "failed" and call.action.purpose in ("test", "check"):
                note(done + 5, "decision", rng.choice(_OWN_DECISIONS["failed"]))
        if turn.end == "interrupted":
            note(clock.add(turn.closing_latency), "error", "interrupted by user (KeyboardInterrupt)")
        else:
            say(clock.add(turn.closing_latency), turn.final, base if turn.end == "done" else 0.35)
    return clock.ms


# --------------------------------------------------------------------------- chat JSONL


def _fn(name: str, description: str, props: dict[str, str], required: tuple[str, ...]) -> Obj:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": {k: {"type": "string", "description": v} for k, v in props.items()},
                "required": list(required),
            },
        },
    }


CHAT_TOOLS: list[Obj] = [
    _fn(
        "read_file",
        "Read a text file from the workspace.",
        {"path": "Path relative to the repo root."},
        ("path",),
    ),
    _fn(
        "list_directory",
        "List the entries of a directory.",
        {"path": "Directory relative to the repo root."},
        ("path",),
    ),
    _fn(
        "search_files",
        "Search file contents for a literal pattern.",
        {"pattern": "Text to look for.", "path": "Directory to search."},
        ("pattern",),
    ),
    _fn(
        "edit_file",
        "Replace one exact occurrence of old_text with new_text.",
        {"path": "File to edit.", "old_text": "Exact text to replace.", "new_text": "Replacement text."},
        ("path", "old_text", "new_text"),
    ),
    _fn(
        "write_file",
        "Create or overwrite a file.",
        {"path": "File to write.", "content": "Full content."},
        ("path", "content"),
    ),
    _fn(
        "run_command",
        "Run a shell command in the repository root.",
        {"command": "The command line."},
        ("command",),
    ),
]


def _chat_tool(call: Call) -> tuple[str, Obj, str]:
    a, r = call.action, call.result
    if r.status == "missing":
        return "read_file", {"path": a.path}, f"Error: file not found: {a.path}"
    if a.kind == "read":
        return "read_file", {"path": a.path}, r.output
    if a.kind == "list":
        return "list_directory", {"path": a.path}, "\n".join(r.names)
    if a.kind == "glob":
        return "run_command", {"command": f"git ls-files '{a.pattern}'"}, "\n".join(r.names)
    if a.kind == "grep":
        return "search_files", {"pattern": a.pattern, "path": a.path or "."}, r.output or "No matches."
    if a.kind == "edit":
        return "edit_file", {"path": a.path, "old_text": a.old, "new_text": a.new}, f"Edited {a.path}."
    if a.kind == "write":
        return "write_file", {"path": a.path, "content": a.new}, f"Wrote {a.path}."
    if r.status == "denied_user":
        return "run_command", {"command": a.command}, "Error: the user declined to run this command."
    if r.status == "denied_policy":
        return "run_command", {"command": a.command}, f"Error: blocked by policy: {r.output}"
    if r.status == "failed":
        return "run_command", {"command": a.command}, f"Exit code {r.exit_code}\n{r.output}"
    return "run_command", {"command": a.command}, r.output


def chat_unknown(ts: str) -> Obj:
    return {"id": "fb_" + ts[:10].replace("-", ""), "timestamp": ts, "event": "rating", "score": 1}


def write_chat(sink: Sink, scenario: Scenario, start_ms: int, rng: random.Random) -> None:
    """Append one session as a single chat record (OpenAI-style messages plus the tool specs)."""
    repo = scenario.repo
    messages: list[Obj] = [
        {
            "role": "system",
            "content": (
                f"You are a coding assistant working in {repo.cwd} ({repo.language}). Use the tools to "
                f"inspect and change files. Run `{repo.test_command}` before you finish."
            ),
        }
    ]
    for turn in scenario.turns:
        messages.append({"role": "user", "content": turn.instruction})
        calls = _steps_calls(turn)
        i = 0
        while i < len(calls):
            # consecutive successful reads are often requested together, as parallel tool calls
            group = [calls[i]]
            while (
                i + len(group) < len(calls)
                and calls[i].action.kind == "read"
                and calls[i + len(group)].action.kind == "read"
                and rng.random() < 0.5
            ):
                group.append(calls[i + len(group)])
            tool_calls, results = [], []
            for call in group:
                name, args, output = _chat_tool(call)
                call_id = "call_" + base62(rng, 24)
                tool_calls.append(
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": name, "arguments": orjson.dumps(args).decode()},
                    }
                )
                results.append({"role": "tool", "tool_call_id": call_id, "content": output})
            messages.append({"role": "assistant", "content": group[0].say or None, "tool_calls": tool_calls})
            messages.extend(results)
            i += len(group)
        if turn.end != "interrupted":
            messages.append({"role": "assistant", "content": turn.final})
    record = {
        "id": "chat_" + hexstr(rng, 24),
        "timestamp": iso(start_ms),
        "messages": messages,
        "tools": CHAT_TOOLS,
    }
    sink.put(record, start_ms)
