"""SWE-agent and mini-swe-agent trajectory files, one JSON object each.

Layouts: `<run>/<instance>.traj` (SWE-agent 0.x), `<run>/<instance>/<instance>.traj` (1.x),
`<run>/<instance>/attempt_<n>/<instance>.traj` (an attempt of 1.x's RetryAgent) and
`<run>/<instance>/<instance>.traj.json` (mini-swe-agent).

Variants read:
- SWE-agent 0.x and 1.x: `history` (the conversation sent to the model), `trajectory` (one step
  per action, with its observation), `info` (exit status, submission, costs) and, in 1.x,
  `replay_config` (the run's config). `history` is read when present, since it is the
  conversation itself; `trajectory` is the fallback.
- RetryAgent (1.x, `agent.type: retry`): the instance's top-level file is
  `{"attempts": [...]}`, merged with a copy of the best attempt once the run ends. Every attempt
  is also written to its own `attempt_<n>/` file (live, while it runs), so each attempt is one
  session, read once: from its own file when that is on disk, else from the top-level file
  (published copies often keep only that); the copy of the best attempt is never read, as it
  repeats one of them. An attempt's session id is the same whichever file gives it.
- mini-swe-agent (`trajectory_format: mini-swe-agent-1*`): `info` (exit status, submission,
  config) and `messages`, read as a `history` (see `_mini_history`).

Two action formats are handled:
- function calling: assistant messages with OpenAI `tool_calls`, answered by
  `role: tool` messages naming them in `tool_call_ids` (mini: `tool_call_id`);
- text actions (SWE-agent 0.x, mini-swe-agent): the command is the assistant's `action` string
  and the next user message is its observation. It becomes a `bash` call (the commands run in
  the agent's shell) linked to that observation by a generated id. 0.x never adds the last
  observation (of `submit`: the run's patch) to `history`; it is taken from the last
  `trajectory` step, which ran the same command.

A user message that answers an action step which ran nothing (1.x's `Exited (autosubmitted)`
after an error exit, mini's format errors) is the harness speaking, not a new instruction: it
becomes a system `meta` event. Extended thinking (`thinking_blocks` of assistant messages,
`reasoning_content` of steps and of mini's messages) becomes `reasoning` events.

`repo` is the short repository name, as every source gives it (`schema.repo_name`):
the name part of a SWE-bench instance id (`pydicom` for `pydicom__pydicom-1458`), else
of the run's configured GitHub URL.

The format has no timestamps: `ts` is None and the session starts at the file's
modification time. The session id is the instance id plus a short hash of the run
folder (and attempt), because every run of a benchmark reuses the same instance ids.

    from trajectory_pipeline.ingest.parsers import swe_agent
    events = list(swe_agent.parse(Path("pydicom__pydicom-1458.traj")))
"""

from __future__ import annotations

import codecs
import hashlib
import os
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from trajectory_pipeline.ingest.parsers.common import (
    MAX_FILE_BYTES,
    REDACTED_THINKING,
    Fields,
    bad_record,
    failure,
    load_json_document,
    stamp_events,
)
from trajectory_pipeline.ingest.parsers.lines import MAX_LINE_BYTES, file_mtime_us
from trajectory_pipeline.schema import (
    UNKNOWN_RECORD_TYPE,
    WRONG_FIELD_TYPE,
    BadLine,
    Event,
    canonical_json,
    repo_name,
)

SOURCE = "swe_agent"
GLOBS: tuple[str, ...] = ("**/*.traj", "**/*.traj.json")  # .traj.json: mini-swe-agent
TITLE = "SWE-agent"
DEFAULT_ROOT = ""  # off unless configured: no standard folder
HOLDS = "trajectories (*.traj; mini-swe-agent's *.traj.json)"
VOCABULARY = "swe_agent"  # its table in mining/vocabulary.py
PATH_DATED = False  # whether file paths carry the session's date


_TOP_KEYS = frozenset({"environment", "trajectory", "history", "info", "replay_config", "attempts"})
_FIRST_KEY = re.compile(rb'\A\s*\{\s*"([A-Za-z_]+)"\s*:')
_CONVERSATION = re.compile(rb'"(?:history|trajectory)"\s*:\s*\[')
_STEP_KEYS = re.compile(rb'"(?:agent|action|observation)"\s*:')
# RetryAgent's top-level file before its first attempt ends
_NO_ATTEMPTS = re.compile(rb'\A\s*\{\s*"attempts"\s*:\s*\[\s*\]')
# mini-swe-agent's keys, as keys (a quoted key inside a JSON string is escaped, so never matches):
# v1 writes `mini_version` after `submission` (a patch), v2 after the run's config; the format
# tag comes last. A patch can push all of them past the head: then its `.traj.json` name, and
# `info` first, tell it.
_MINI_KEYS = frozenset({"info", "messages", "trajectory_format"})
_MINI = re.compile(rb'"mini_version"\s*:|"trajectory_format"\s*:\s*"mini-swe-agent')
# mini-swe-agent 1.x's action: exactly one such block, else it runs nothing (a format error).
# `DefaultAgent.parse_action` (and later `AgentConfig.action_regex`, saved in the file's config).
_MINI_ACTION = re.compile(r"```bash\s*\n(.*?)\n```", re.DOTALL)
# RetryAgent (1.x) writes each attempt to <run>/<id>/attempt_<n>/<id>.traj
_ATTEMPT = re.compile(r"attempt_\d+")
# SWE-bench instance ids: <owner>__<repo>-<issue number>
_INSTANCE = re.compile(r"^[\w.-]+?__(?P<name>[\w.-]+)-\d+$")


def sniff(path: Path, head: bytes) -> bool:
    """A JSON object whose first key is a trajectory key, holding `history` or `trajectory` steps
    (or RetryAgent's `attempts`, still none); or mini-swe-agent's `info` and `messages`."""
    head = head.removeprefix(codecs.BOM_UTF8)
    first = _FIRST_KEY.match(head)
    if first is None:
        return False
    key = first.group(1).decode()
    if key in _TOP_KEYS and _CONVERSATION.search(head) is not None and _STEP_KEYS.search(head) is not None:
        return True
    if _NO_ATTEMPTS.match(head) is not None:
        return True
    return key in _MINI_KEYS and (
        _MINI.search(head) is not None or (key == "info" and path.name.endswith(".traj.json"))
    )


def earliest_start(path: Path) -> int | None:
    """The file's modification time: the session start, as the format records no time."""
    return file_mtime_us(path)


def parse(path: Path, max_line_bytes: int = MAX_LINE_BYTES) -> Iterator[Event | BadLine]:
    """Events of the run in the file (of each attempt not read from its own file, for RetryAgent's
    top-level file); the file is capped by MAX_FILE_BYTES, not lines."""
    doc = load_json_document(path, SOURCE, MAX_FILE_BYTES)
    if isinstance(doc, BadLine):
        yield doc
        return
    attempts = doc.get("attempts")
    if not isinstance(attempts, list):
        yield from _session(path, path, doc)
        return
    # where RetryAgent writes the attempts: beside this file, in its instance folder (put back for
    # a flat copy, `<run>/<id>.traj`, so that an attempt's id is the same from either file)
    folder = path.parent if path.parent.name == _stem(path) else path.parent / _stem(path)
    seq = 0  # `seq` counts the events of the file, across its sessions
    for index, attempt in enumerate(attempts):
        own_file = folder / f"attempt_{index}" / path.name
        if os.path.exists(own_file):
            continue  # read there, up to date, as its own session
        if not isinstance(attempt, dict):
            yield bad_record(SOURCE, str(path), index + 1, WRONG_FIELD_TYPE, attempt)
            continue
        for item in _session(path, own_file, attempt):
            if isinstance(item, Event):
                item = item._replace(seq=seq)
                seq += 1
            yield item


def _session(path: Path, named_as: Path, doc: dict[str, Any]) -> Iterator[Event | BadLine]:
    """The events of one run, `doc`, read from `path`; `named_as` is the file its id is made from."""
    config = _replay_config(doc.get("replay_config"))
    instance = _instance_id(named_as, config)
    session_id = f"{instance}@{_run_hash(named_as)}"
    common = {
        "source": SOURCE,
        "session_id": session_id,
        "session_start": file_mtime_us(path),
        "source_path": str(path),
        "repo": _repo(instance, config),
    }
    model = _model(config) or _mini_model(doc.get("info"))
    yield from stamp_events(_records(path, doc, session_id, model), common)


def _records(
    path: Path, doc: dict[str, Any], session_id: str, model: str | None
) -> Iterator[Fields | BadLine]:
    history, steps = doc.get("history"), doc.get("trajectory")
    if history is None and steps is None and isinstance(doc.get("messages"), list):
        history = _mini_history(doc["messages"], _mini_action(doc.get("info")))
    if isinstance(history, list) and history:
        conversation = _Conversation(path, session_id, model)
        yield from conversation.fields(history)
        records = len(history)
        final = conversation.final_observation(steps, records + 1)
        if final is not None:
            yield final
            records += 1
    else:
        if history is not None and not isinstance(history, list):
            yield bad_record(SOURCE, str(path), 0, WRONG_FIELD_TYPE, {"history": history})
        steps = steps if isinstance(steps, list) else []
        yield from _step_fields(path, steps, session_id, model)
        records = len(steps)
    info = doc.get("info")
    if isinstance(info, dict) and isinstance(info.get("exit_status"), str):
        yield {
            "line_no": records + 1,
            "ts": None,
            "role": "system",
            "kind": "meta",
            "text": info["exit_status"],
        }


@dataclass
class _Conversation:
    """Walks `history`, pairing each tool call with the observation that answers it."""

    path: Path
    session_id: str
    model: str | None
    # calls of the last assistant message not yet answered: source id -> emitted id
    pending: dict[str, str] = field(default_factory=dict)
    pending_action: str | None = None  # the emitted id of a text action not yet answered
    pending_command: str | None = None  # and its command
    # the last assistant message was an action step that ran nothing: its reply is the harness's
    idle_step: bool = False
    seen_ids: Counter[str] = field(default_factory=Counter)
    tool_names: dict[str, str] = field(default_factory=dict)

    def fields(self, history: list[Any]) -> Iterator[Fields | BadLine]:
        for line_no, message in enumerate(history, start=1):
            problem = _why_unusable(message)
            if problem is not None:
                yield bad_record(SOURCE, str(self.path), line_no, problem, message)
            elif message.get("is_demo") or message.get("message_type") == "demonstration":
                # A worked example from the prompt config, not part of this run's work.
                continue
            else:
                try:  # whole, before any is given: whatever one message does, it costs it alone
                    fields = list(self._message(message, line_no))
                except Exception as err:
                    reason, note = failure(err)
                    yield bad_record(SOURCE, str(self.path), line_no, reason, message, note)
                    continue
                yield from fields

    def final_observation(self, steps: Any, line_no: int) -> Fields | None:
        """SWE-agent 0.x adds an observation to `history` only when it next queries the model, so
        the run's last action (`submit`: its observation is the patch) is unanswered there; the
        last `trajectory` step holds it. Given when that step ran the waiting command."""
        last = steps[-1] if isinstance(steps, list) and steps else None
        if (
            self.pending_action is None
            or not isinstance(last, dict)
            or not isinstance(last.get("observation"), str)
            or not isinstance(last.get("action"), str)
            or last["action"].strip() != self.pending_command
        ):
            return None
        return next(self._observation({}, {"line_no": line_no, "ts": None}, last["observation"]))

    def _message(self, message: dict[str, Any], line_no: int) -> Iterator[Fields]:
        role, text = message["role"], content_text(message.get("content"))
        base: Fields = {"line_no": line_no, "ts": None}
        idle_step, self.idle_step = self.idle_step, False
        if role == "assistant":
            yield from self._assistant(message, base)
        elif role == "exit":
            # mini-swe-agent 2's closing message. Raised while a command ran (its `Submitted`:
            # the content is the submission), it is that command's result; else it only repeats
            # `info.exit_status`, given as the meta event.
            if self.pending_action is not None or len(self.pending) == 1:
                yield from self._observation(message, base, text)
        elif role == "tool" or (role == "user" and self._awaiting_observation()):
            yield from self._observation(message, base, text)
        elif role == "user" and (idle_step or _dig(message, "extra", "interrupt_type") == "FormatError"):
            # The harness's reply to a step that ran nothing (mini 2 marks its format errors and
            # leaves the unusable response out): not an instruction.
            if text:
                yield {**base, "role": "system", "kind": "meta", "text": text}
        elif text:
            yield {**base, "role": role, "kind": "message", "text": text}

    def _assistant(self, message: dict[str, Any], base: Fields) -> Iterator[Fields]:
        base = {**base, "role": "assistant", "model": self.model}
        for thinking in _reasoning(message):
            yield {**base, "kind": "reasoning", "text": thinking}
        thought = message.get("thought")
        text = (
            thought if isinstance(thought, str) and thought.strip() else content_text(message.get("content"))
        )
        if text:
            yield {**base, "kind": "message", "text": text}
        self.pending, self.pending_action, self.pending_command = {}, None, None
        calls = message.get("tool_calls") or []
        for index, call in enumerate(calls):
            source_id = call.get("id") or f"{self.session_id}:{base['line_no']}:{index}"
            call_id = self.pending[source_id] = self._unique(source_id)
            self.tool_names[call_id] = call["function"]["name"]
            yield {
                **base,
                "kind": "tool_call",
                "tool_name": call["function"]["name"],
                "tool_call_id": call_id,
                "tool_input": arguments_json(call["function"].get("arguments")),
            }
        action = message.get("action")
        if not calls and isinstance(action, str) and action.strip():
            self.pending_action = f"{self.session_id}:{base['line_no']}"
            self.pending_command = action.strip()
            self.tool_names[self.pending_action] = "bash"
            yield {
                **base,
                "kind": "tool_call",
                "tool_name": "bash",
                "tool_call_id": self.pending_action,
                "tool_input": canonical_json({"command": self.pending_command}),
            }
        # SWE-agent 1.x marks the agent's steps; one with no action is written by the agent itself
        # when it exits on an error (its reply: `Exited (autosubmitted)`), as is mini's reply
        # to a response holding no single command (a format error).
        self.idle_step = message.get("message_type") == "action" and not self._awaiting_observation()

    def _awaiting_observation(self) -> bool:
        return bool(self.pending) or self.pending_action is not None

    def _observation(self, message: dict[str, Any], base: Fields, text: str | None) -> Iterator[Fields]:
        for call_id in self._answered(message.get("tool_call_ids") or []):
            yield {
                **base,
                "role": "tool",
                "kind": "tool_result",
                "text": text,
                "tool_call_id": call_id,
                "tool_name": self.tool_names.get(call_id) if call_id is not None else None,
            }

    def _answered(self, source_ids: list[str]) -> list[str | None]:
        """Emitted ids of the calls an observation answers: by id, else the one call waiting."""
        if self.pending_action is not None:
            answered, self.pending_action, self.pending_command = self.pending_action, None, None
            return [answered]
        linked: list[str | None] = [
            self.pending.pop(source_id) for source_id in source_ids if source_id in self.pending
        ]
        if not linked and len(self.pending) == 1:
            linked = [self.pending.popitem()[1]]
        if linked:
            return linked
        return list(source_ids) or [None]

    def _unique(self, raw: str) -> str:
        """Replayed demonstrations reuse call ids; later uses get a suffix so each call links once."""
        self.seen_ids[raw] += 1
        count = self.seen_ids[raw]
        return raw if count == 1 else f"{raw}#{count}"


def _reasoning(message: dict[str, Any]) -> list[str]:
    """The extended thinking of an assistant message or step. SWE-agent 1.x keeps litellm's
    `thinking_blocks` in `history` and its `reasoning_content` in `trajectory` steps; mini 2's
    messages (litellm's, whole) hold both, the same thinking twice: the blocks win."""
    blocks = message.get("thinking_blocks")
    texts = []
    for block in blocks if isinstance(blocks, list) else ():
        if not isinstance(block, dict):
            continue
        if block.get("type") == "redacted_thinking":
            texts.append(REDACTED_THINKING)
        elif isinstance(block.get("thinking"), str) and block["thinking"].strip():
            texts.append(block["thinking"])
    reasoning = message.get("reasoning_content")
    if not texts and isinstance(reasoning, str) and reasoning.strip():
        texts.append(reasoning)
    return texts


def _step_fields(
    path: Path, steps: list[Any], session_id: str, model: str | None
) -> Iterator[Fields | BadLine]:
    """The `trajectory` steps, for files without `history`: thought, action as `bash`, observation."""
    for line_no, step in enumerate(steps, start=1):
        if not isinstance(step, dict) or not all(
            isinstance(step.get(key), str | None) for key in ("thought", "response", "action", "observation")
        ):
            yield bad_record(SOURCE, str(path), line_no, WRONG_FIELD_TYPE, step)
            continue
        try:  # whole, before any is given: whatever one step does, it costs that step alone
            fields = list(_one_step(step, line_no, session_id, model))
        except Exception as err:
            reason, note = failure(err)
            yield bad_record(SOURCE, str(path), line_no, reason, step, note)
            continue
        yield from fields


def _one_step(step: dict[str, Any], line_no: int, session_id: str, model: str | None) -> Iterator[Fields]:
    """The events of one `trajectory` step."""
    base: Fields = {"line_no": line_no, "ts": None}
    for thinking in _reasoning(step):
        yield {**base, "role": "assistant", "kind": "reasoning", "text": thinking, "model": model}
    text = step.get("thought") or step.get("response")
    if text:
        yield {**base, "role": "assistant", "kind": "message", "text": text, "model": model}
    action = (step.get("action") or "").strip()
    if not action:
        return
    call_id = f"{session_id}:step{line_no}"
    yield {
        **base,
        "role": "assistant",
        "kind": "tool_call",
        "tool_name": "bash",
        "tool_call_id": call_id,
        "tool_input": canonical_json({"command": action}),
        "model": model,
    }
    if step.get("observation") is not None:
        yield {
            **base,
            "role": "tool",
            "kind": "tool_result",
            "text": step["observation"],
            "tool_name": "bash",
            "tool_call_id": call_id,
        }


def _mini_history(messages: list[Any], action: re.Pattern[str]) -> list[Any]:
    """mini-swe-agent's `messages` in the shape of SWE-agent's `history`.

    Every assistant message is an action step (`message_type: action`). Its command is the one
    mini ran: in v2 the one it parsed into `extra.actions` (function calling: the `tool_calls`,
    read as such); in v1 the single block its action regex finds (none, or several, and mini runs
    nothing but answers with a format error). v2's tool results name their call in
    `tool_call_id`; its closing `role: exit` message is kept for `_Conversation`."""
    out: list[Any] = []
    for message in messages:
        if isinstance(message, dict) and message.get("role") == "assistant":
            message = {**message, "message_type": "action", "action": _mini_command(message, action)}
        elif isinstance(message, dict) and message.get("role") == "tool" and "tool_call_ids" not in message:
            call_id = message.get("tool_call_id")
            message = {**message, "tool_call_ids": [call_id] if isinstance(call_id, str) else None}
        out.append(message)
    return out


def _mini_command(message: dict[str, Any], action: re.Pattern[str]) -> str | None:
    parsed = _dig(message, "extra", "actions")
    if isinstance(parsed, list):
        commands = [_dig(item, "command") for item in parsed]
        return commands[0] if len(commands) == 1 and isinstance(commands[0], str) else None
    text = content_text(message.get("content")) or ""
    if action is _MINI_ACTION:
        # An opening fence after the last closing one cannot match, and each would scan to the end
        # of the text again: odd output with thousands of them took a minute.
        text = text[: text.rfind("\n```") + 4]
    found = action.findall(text)
    return found[0] if len(found) == 1 and isinstance(found[0], str) else None


def _mini_action(info: Any) -> re.Pattern[str]:
    """mini-swe-agent 1.x's action regex: the run's own, when its config names one."""
    configured = _dig(info, "config", "agent", "action_regex")
    if isinstance(configured, str):
        try:
            return re.compile(configured, re.DOTALL)
        except re.error:
            pass
    return _MINI_ACTION


def _mini_model(info: Any) -> str | None:
    name = _dig(info, "config", "model", "model_name")
    return name if isinstance(name, str) and name else None


def _why_unusable(message: Any) -> str | None:
    """The quarantine reason for a history message that cannot be loaded whole, else None."""
    if not isinstance(message, dict) or not isinstance(message.get("role"), str):
        return WRONG_FIELD_TYPE
    if message["role"] not in ("system", "user", "assistant", "tool", "exit"):  # exit: mini 2's last
        return UNKNOWN_RECORD_TYPE
    if not isinstance(message.get("content"), str | list | None):
        return WRONG_FIELD_TYPE
    calls, answered = message.get("tool_calls"), message.get("tool_call_ids")
    if not isinstance(calls, list | None) or not isinstance(answered, list | None):
        return WRONG_FIELD_TYPE
    if any(not isinstance(call_id, str) for call_id in answered or ()):
        return WRONG_FIELD_TYPE
    if any(not _is_call(call) for call in calls or ()):
        return WRONG_FIELD_TYPE
    return None


def _is_call(call: Any) -> bool:
    return (
        isinstance(call, dict)
        and isinstance(call.get("id"), str | None)
        and isinstance(call.get("function"), dict)
        and isinstance(call["function"].get("name"), str)
    )


def content_text(content: Any) -> str | None:
    """Text of an OpenAI-style content value: a string or a list of parts."""
    if isinstance(content, str):
        return content or None
    if not isinstance(content, list):
        return None
    texts = [part if isinstance(part, str) else _part_text(part) for part in content]
    return "\n".join(text for text in texts if text) or None


def _part_text(part: Any) -> str:
    if isinstance(part, dict) and isinstance(part.get("text"), str):
        return part["text"]
    if isinstance(part, dict) and part.get("type") == "image_url":
        return "[image]"
    return canonical_json(part)


def arguments_json(arguments: Any) -> str:
    """Canonical JSON of a call's arguments, which OpenAI-style messages hold as a JSON string."""
    if arguments is None:
        return canonical_json({})
    if isinstance(arguments, str):
        try:
            arguments = orjson.loads(arguments)
        except orjson.JSONDecodeError:
            return canonical_json(arguments)
    return canonical_json(arguments)


def _replay_config(value: Any) -> dict[str, Any]:
    """SWE-agent 1.x stores the run config as a JSON string, some versions as an object."""
    if isinstance(value, str):
        try:
            value = orjson.loads(value)
        except orjson.JSONDecodeError:
            return {}
    return value if isinstance(value, dict) else {}


def _dig(value: Any, *keys: str) -> Any:
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def _instance_id(path: Path, config: dict[str, Any]) -> str:
    instance = _dig(config, "problem_statement", "id")
    return instance if isinstance(instance, str) and instance else _stem(path)


def _stem(path: Path) -> str:
    """The instance id a file is named by: `<id>.traj`, or mini-swe-agent's `<id>.traj.json`."""
    return path.name.removesuffix(".traj.json") if path.name.endswith(".traj.json") else path.stem


def _run_hash(path: Path) -> str:
    """A short hash of the run folder: `<run>/<id>.traj` (0.x), `<run>/<id>/<id>.traj` (1.x, and
    mini's `<id>.traj.json`), and of the attempt in `<run>/<id>/attempt_<n>/<id>.traj`
    (RetryAgent: each attempt is a session of its own, in every run)."""
    folder, attempt = path.parent, ""
    if _ATTEMPT.fullmatch(folder.name) and folder.parent.name == _stem(path):
        folder, attempt = folder.parent, f"{folder.name}/"
    run = folder.parent if folder.name == _stem(path) else folder
    return hashlib.sha256(f"{run.name}/{attempt}{path.name}".encode()).hexdigest()[:8]


def _repo(instance: str, config: dict[str, Any]) -> str | None:
    """The short repository name (see schema.repo_name), so a repo is named alike from every
    source: from a SWE-bench instance id (`pydicom__pydicom-1458` -> `pydicom`), else from the
    configured GitHub URL."""
    match = _INSTANCE.match(instance)
    if match:
        return match["name"]
    url = _dig(config, "env", "repo", "github_url")
    return repo_name(None, url) if isinstance(url, str) else None


def _model(config: dict[str, Any]) -> str | None:
    name = _dig(config, "agent", "model", "name")
    return name if isinstance(name, str) else None
