"""SWE-agent trajectory files (`<run>/<instance>.traj`, or `<run>/<instance>/<instance>.traj`).

One JSON object per file: `history` (the conversation sent to the model),
`trajectory` (one step per action, with its observation), `info` (exit status,
submission, costs) and, in SWE-agent 1.x, `replay_config` (the run's config).

`history` is read when present, since it is the conversation itself; `trajectory`
is the fallback. Two action formats are handled:
- function calling: assistant messages with OpenAI `tool_calls`, answered by
  `role: tool` messages naming them in `tool_call_ids`;
- text actions (SWE-agent 0.x): the command is the assistant's `action` string and
  the next user message is its observation. It becomes a `bash` call (the commands
  run in SWE-agent's shell) linked to that observation by a generated id.

`repo` is the short repository name, as every source gives it (`schema.repo_name`):
the name part of a SWE-bench instance id (`pydicom` for `pydicom__pydicom-1458`), else
of the run's configured GitHub URL.

The format has no timestamps: `ts` is None and the session starts at the file's
modification time. The session id is the instance id plus a short hash of the run
folder, because every run of a benchmark reuses the same instance ids.

    from trajectory_pipeline.ingest.parsers import swe_agent
    events = list(swe_agent.parse(Path("pydicom__pydicom-1458.traj")))
"""

from __future__ import annotations

import codecs
import hashlib
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from trajectory_pipeline.ingest.parsers.common import (
    MAX_FILE_BYTES,
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
GLOBS: tuple[str, ...] = ("**/*.traj",)
TITLE = "SWE-agent"
DEFAULT_ROOT = ""  # off unless configured: no standard folder
HOLDS = "trajectories (*.traj)"
VOCABULARY = "swe_agent"  # its table in mining/vocabulary.py
PATH_DATED = False  # whether file paths carry the session's date


_TOP_KEYS = frozenset({"environment", "trajectory", "history", "info", "replay_config"})
_FIRST_KEY = re.compile(rb'\A\s*\{\s*"([A-Za-z_]+)"\s*:')
_CONVERSATION = re.compile(rb'"(?:history|trajectory)"\s*:\s*\[')
_STEP_KEYS = re.compile(rb'"(?:agent|action|observation)"\s*:')
# SWE-bench instance ids: <owner>__<repo>-<issue number>
_INSTANCE = re.compile(r"^[\w.-]+?__(?P<name>[\w.-]+)-\d+$")


def sniff(path: Path, head: bytes) -> bool:
    """A JSON object whose first key is a trajectory key, holding `history` or `trajectory` steps."""
    head = head.removeprefix(codecs.BOM_UTF8)
    first = _FIRST_KEY.match(head)
    return (
        first is not None
        and first.group(1).decode() in _TOP_KEYS
        and _CONVERSATION.search(head) is not None
        and _STEP_KEYS.search(head) is not None
    )


def earliest_start(path: Path) -> int | None:
    """The file's modification time: the session start, as the format records no time."""
    return file_mtime_us(path)


def parse(path: Path, max_line_bytes: int = MAX_LINE_BYTES) -> Iterator[Event | BadLine]:
    """Events of the one run in the file; the file is capped by MAX_FILE_BYTES, not lines."""
    doc = load_json_document(path, SOURCE, MAX_FILE_BYTES)
    if isinstance(doc, BadLine):
        yield doc
        return
    config = _replay_config(doc.get("replay_config"))
    instance = _instance_id(path, config)
    session_id = f"{instance}@{_run_hash(path)}"
    common = {
        "source": SOURCE,
        "session_id": session_id,
        "session_start": file_mtime_us(path),
        "source_path": str(path),
        "repo": _repo(instance, config),
    }
    yield from stamp_events(_records(path, doc, session_id, _model(config)), common)


def _records(
    path: Path, doc: dict[str, Any], session_id: str, model: str | None
) -> Iterator[Fields | BadLine]:
    history, steps = doc.get("history"), doc.get("trajectory")
    if isinstance(history, list) and history:
        conversation = _Conversation(path, session_id, model)
        yield from conversation.fields(history)
        records = len(history)
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
    pending_action: str | None = None
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

    def _message(self, message: dict[str, Any], line_no: int) -> Iterator[Fields]:
        role, text = message["role"], content_text(message.get("content"))
        base: Fields = {"line_no": line_no, "ts": None}
        if role == "assistant":
            yield from self._assistant(message, base)
        elif role == "tool" or (role == "user" and self._awaiting_observation()):
            yield from self._observation(message, base, text)
        elif text:
            yield {**base, "role": role, "kind": "message", "text": text}

    def _assistant(self, message: dict[str, Any], base: Fields) -> Iterator[Fields]:
        base = {**base, "role": "assistant", "model": self.model}
        thought = message.get("thought")
        text = (
            thought if isinstance(thought, str) and thought.strip() else content_text(message.get("content"))
        )
        if text:
            yield {**base, "kind": "message", "text": text}
        self.pending, self.pending_action = {}, None
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
            self.tool_names[self.pending_action] = "bash"
            yield {
                **base,
                "kind": "tool_call",
                "tool_name": "bash",
                "tool_call_id": self.pending_action,
                "tool_input": canonical_json({"command": action.strip()}),
            }

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
            answered, self.pending_action = self.pending_action, None
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


def _why_unusable(message: Any) -> str | None:
    """The quarantine reason for a history message that cannot be loaded whole, else None."""
    if not isinstance(message, dict) or not isinstance(message.get("role"), str):
        return WRONG_FIELD_TYPE
    if message["role"] not in ("system", "user", "assistant", "tool"):
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
    return instance if isinstance(instance, str) and instance else path.stem


def _run_hash(path: Path) -> str:
    """A short hash of the run folder: `<run>/<id>.traj` (0.x) or `<run>/<id>/<id>.traj` (1.x)."""
    run = path.parent.parent if path.parent.name == path.stem else path.parent
    return hashlib.sha256(f"{run.name}/{path.name}".encode()).hexdigest()[:8]


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
