"""Rendering: a decision point as one training record in a format mlx-lm reads.

A decision point (see `decisions.py`) is a chat history in a neutral form (system, instruction,
assistant turns with canonical `tool_calls` `{"id", "name", "arguments": {...}}`, tool results
`{"role": "tool", "tool_call_id", "name", "content"}`) plus the target call. This module writes it
as the record `mlx_lm.lora` trains on; every record ends with the target, so `--mask-prompt`
trains exactly on the decision:

    from trajectory_pipeline.dataset.render import RenderConfig, render_row
    record = render_row(decision_points_row, RenderConfig(format="chat", convention="hermes"))
    canonical_json(record)   # one line of train.jsonl

Formats (`RenderConfig.format`):
- `tools` (default): mlx-lm's tools format, `{"messages": [...], "tools": [...]}`, read by
  `ChatDataset`, which passes `tools` to the tokenizer's chat template. Calls are OpenAI
  `tool_calls` (`{"id", "type": "function", "function": {"name", "arguments"}}`) whose
  `arguments` is a JSON string as OpenAI and Mistral write it, or an object for templates that
  expect one (`tool_arguments="object"`, e.g. Qwen2.5's, which would quote a string again).
  Tool results are `{"role": "tool", "tool_call_id", "name", "content"}`; templates that do not
  know `name` ignore it. The target is `{"role": "assistant", "content": "", "tool_calls":
  [call]}` with the id `call_` + 8 hex of sha256 over the call, so equal targets get equal ids.
- `chat`: `{"messages": [...]}` with plain text only, for any chat template. Each call (history
  and target) is written into the assistant text by `call_text` in the configured convention
  (`hermes` `<tool_call>` tags, a fenced JSON block, or bare JSON). Tool results become user
  messages: `<tool_response>\\n...\\n</tool_response>` under hermes (as Qwen's template writes
  them), `Tool result (name):\\n...` otherwise; consecutive user messages (the results of
  parallel calls, an interruption after a result) are joined with a blank line, so roles
  alternate as strict templates (Gemma, Mistral) require. Assistant messages are never joined:
  when the agent made parallel calls, the earlier ones stay an assistant message of their own
  just before the target, so the last message is the target alone.
- `completions`: `{"prompt", "completion"}`: the prompt is a plain transcript of the chat
  rendering (`### System`, `### User`, `### Assistant` sections), the completion is
  `call_text(target)`. mlx-lm wraps the two in a user and an assistant message.
- `trl`: Hugging Face TRL's conversational tool-calling format for `SFTTrainer`: `{"messages",
  "tools"}`, assistant calls as `{"id", "type": "function", "function": {"name", "arguments":
  {...}}}` with the arguments an object (as TRL's dataset-format guide writes them) and no
  `content` beside the calls, results `{"role": "tool", "tool_call_id", "name", "content"}`, and
  `tools` the same JSON-schema specs. mlx-lm reads it too (`ChatDataset`), for templates that take
  an object.

Modes, for small models (each works with every format):
- `target_mode`: `full` (default) trains the whole call; `tool_choice` trains only which tool to
  call: the target's arguments are left out (`{}`), and the offered specs require no argument, so
  the record is a valid call of its own tools. Replay scores such adapters on the tool name.
- `history`: `full` (default) renders the raw history; `state_summary` renders the system prompt
  and one user message with the task and a compact state (files read and edited, the last command
  and its outcome, any guard denial: `state.py`), for small context windows. The target is the
  same.

In `chat` and `completions` the model has no `tools` field to read, so (with `describe_tools`)
the system message lists the offered tools' specs and says how to write a call. By default every
record offers the whole canonical vocabulary plus any other tool the record uses
(`offer_all_tools`): offering only the tools a record uses would tell the model that the
target's tool is among those few.

`prompt_and_target` gives the keys exact dedupe and the leakage check compare: the transcript of
everything before the target (the tools format is read through its hermes chat rendering) and
the canonical JSON of the target call. Equal decisions give equal keys in every format; the
`chat` and `completions` formats of other conventions give other prompt keys, as the model sees
other text. Everything is deterministic: the same input gives byte-identical `canonical_json`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from trajectory_pipeline.config import knob
from trajectory_pipeline.dataset.state import state_summary
from trajectory_pipeline.mining.vocabulary import CANONICAL_TOOLS
from trajectory_pipeline.schema import canonical_json

FORMATS = ("tools", "chat", "completions", "trl")
TARGET_MODES = ("full", "tool_choice")
HISTORIES = ("full", "state_summary")
CONVENTIONS = ("hermes", "fenced_json", "bare_json")
TOOL_ARGUMENTS = ("json_string", "object")
ROLES = ("system", "user", "assistant", "tool")
FLOOR = 2  # system prompt and instruction: never dropped

Message = dict[str, Any]

# What each canonical tool does, and its arguments: required ones (CANONICAL_TOOLS) are strings;
# the optional ones are those the vocabulary maps onto canonical keys.
_DESCRIPTIONS: dict[str, str] = {
    "read_file": "Read a text file.",
    "list_directory": "List the entries of a directory.",
    "glob": "Find files whose paths match a glob pattern.",
    "grep_files": "Search file contents for a regular expression.",
    "edit_file": "Replace old_string with new_string in a file.",
    "write_file": "Write a whole file, creating or replacing it.",
    "apply_patch": "Apply a patch (apply_patch format) to the working tree.",
    "run_shell": "Run a shell command and return its output.",
}
_OPTIONAL: dict[str, dict[str, dict[str, Any]]] = {
    "read_file": {
        "offset": {"type": "integer", "description": "First line to read."},
        "limit": {"type": "integer", "description": "Number of lines to read."},
    },
    "glob": {"path": {"type": "string", "description": "Directory to search from."}},
    "grep_files": {
        "path": {"type": "string", "description": "File or directory to search."},
        "glob": {"type": "string", "description": "Only search files matching this glob."},
    },
    "edit_file": {
        "replace_all": {"type": "boolean", "description": "Replace every occurrence."},
        "edits": {
            "type": "array",
            "description": "Further edits to the same file, applied in order.",
            "items": {"type": "object"},
        },
    },
    "apply_patch": {"workdir": {"type": "string", "description": "Directory to apply the patch in."}},
    "run_shell": {
        "workdir": {"type": "string", "description": "Directory to run the command in."},
        "timeout_ms": {"type": "integer", "description": "Timeout in milliseconds."},
        "description": {"type": "string", "description": "What the command is for."},
    },
}
assert set(_DESCRIPTIONS) == set(CANONICAL_TOOLS) and set(_OPTIONAL) <= set(CANONICAL_TOOLS)

_CALL_SHAPE = '{"name": <tool name>, "arguments": <arguments as a JSON object>}'
_HOW_TO_CALL = {
    "hermes": f"For the next tool call, write a JSON object within <tool_call></tool_call> tags:\n"
    f"<tool_call>\n{_CALL_SHAPE}\n</tool_call>",
    "fenced_json": f"For the next tool call, write a JSON object in a ```json fenced block:\n"
    f"```json\n{_CALL_SHAPE}\n```",
    "bare_json": f"For the next tool call, write only a JSON object:\n{_CALL_SHAPE}",
}


@dataclass(frozen=True)
class RenderConfig:
    """How decision points are written as training records."""

    format: str = knob(
        "tools",
        'Record format: "tools" (mlx-lm tools format), "chat" (calls written into assistant text), '
        '"completions" ({"prompt", "completion"}) or "trl" (Hugging Face TRL SFTTrainer: messages with '
        "tool_calls whose arguments are objects, and a tools column).",
    )
    target_mode: str = knob(
        "full",
        'What the target trains: "full" (the whole call) or "tool_choice" (only which tool to call: the '
        "arguments are left out, and replay scores the adapter on the tool name).",
    )
    history: str = knob(
        "full",
        'What comes before the target: "full" (the raw history) or "state_summary" (the task and a compact '
        "state: files read and edited, the last command and its outcome, any guard denial), for small "
        "context windows.",
    )
    convention: str = knob(
        "hermes",
        'How a call is written into text (chat/completions formats): "hermes" <tool_call> tags, '
        '"fenced_json" (a ```json block) or "bare_json".',
    )
    tool_arguments: str = knob(
        "json_string",
        'tools format: a call\'s `arguments` as a "json_string" (OpenAI, Mistral) or an "object" (Hugging '
        "Face templates that apply tojson themselves, such as Qwen2.5's).",
    )
    offer_all_tools: bool = knob(
        True,
        "Offer the whole canonical vocabulary in every record, plus any other tool it uses; when False, "
        "only the tools the record uses (which hints at the target's tool).",
    )
    describe_tools: bool = knob(
        True,
        "chat/completions formats: append the offered tools' specs and the call convention to the system "
        "message, since these formats carry no `tools` field.",
    )

    def __post_init__(self) -> None:
        if self.format not in FORMATS:
            raise ValueError(f"format must be one of {FORMATS}, got {self.format!r}")
        if self.convention not in CONVENTIONS:
            raise ValueError(f"convention must be one of {CONVENTIONS}, got {self.convention!r}")
        if self.tool_arguments not in TOOL_ARGUMENTS:
            raise ValueError(f"tool_arguments must be one of {TOOL_ARGUMENTS}, got {self.tool_arguments!r}")
        if self.target_mode not in TARGET_MODES:
            raise ValueError(f"target_mode must be one of {TARGET_MODES}, got {self.target_mode!r}")
        if self.history not in HISTORIES:
            raise ValueError(f"history must be one of {HISTORIES}, got {self.history!r}")


# --- tool specs ------------------------------------------------------------------------------


def _spec(name: str) -> dict[str, Any]:
    if name not in CANONICAL_TOOLS:
        parameters: dict[str, Any] = {"type": "object"}
        return {
            "type": "function",
            "function": {
                "name": name,
                "description": f"The agent's own tool {name}.",
                "parameters": parameters,
            },
        }
    required = list(CANONICAL_TOOLS[name])
    properties: dict[str, Any] = {key: {"type": "string"} for key in required}
    properties.update(_OPTIONAL.get(name, {}))
    parameters = {"type": "object", "properties": properties, "required": required}
    return {
        "type": "function",
        "function": {"name": name, "description": _DESCRIPTIONS[name], "parameters": parameters},
    }


def tool_specs(names: Iterable[str]) -> list[dict[str, Any]]:
    """OpenAI-style function specs, sorted by name: precise JSON schemas for the canonical
    vocabulary (required arguments as strings, optional ones typed), `{"type": "object"}` for any
    other tool, whose arguments are the source's own."""
    return [_spec(name) for name in sorted(set(names))]


# --- call text -------------------------------------------------------------------------------


def call_json(name: str, arguments: Mapping[str, Any]) -> str:
    """`{"name": ..., "arguments": {...}}` with keys sorted inside the arguments, as json.dumps
    writes it (the spacing chat templates use)."""
    sorted_arguments = orjson.loads(canonical_json(dict(arguments)))
    return json.dumps({"name": name, "arguments": sorted_arguments}, ensure_ascii=False)


def call_text(name: str, arguments: dict[str, Any], convention: str) -> str:
    """One tool call as text in a convention, e.g. hermes:
    `<tool_call>\\n{"name": "read_file", "arguments": {"file_path": "a.py"}}\\n</tool_call>`."""
    body = call_json(name, arguments)
    if convention == "hermes":
        return f"<tool_call>\n{body}\n</tool_call>"
    if convention == "fenced_json":
        return f"```json\n{body}\n```"
    if convention == "bare_json":
        return body
    raise ValueError(f"convention must be one of {CONVENTIONS}, got {convention!r}")


def parse_call_text(text: str) -> tuple[str, dict[str, Any]]:
    """The name and arguments of one call written by `call_text` in any convention."""
    body = text.strip()
    for head, tail in (("<tool_call>", "</tool_call>"), ("```json", "```")):
        if body.startswith(head) and body.endswith(tail):
            body = body[len(head) : -len(tail)].strip()
            break
    try:
        call = json.loads(body)
    except json.JSONDecodeError as err:
        raise ValueError(f"expected one tool call as call_text writes it, got {text[:200]!r}") from err
    if not isinstance(call, dict) or not isinstance(call.get("name"), str):
        raise ValueError(f"expected a JSON object with a string name, got {text[:200]!r}")
    arguments = call.get("arguments", {})
    if not isinstance(arguments, dict):
        raise ValueError(f"expected the call's arguments to be a JSON object, got {text[:200]!r}")
    return call["name"], arguments


# --- rendering -------------------------------------------------------------------------------


def _check_history(messages: list[Message]) -> None:
    if len(messages) < FLOOR:
        raise ValueError(
            f"a history starts with the system prompt and the instruction, got {len(messages)} messages"
        )
    for index, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") not in ROLES:
            role = message.get("role") if isinstance(message, dict) else type(message).__name__
            raise ValueError(f"message {index} must be a dict with a role in {ROLES}, got {role!r}")


def target_id(name: str, arguments: Mapping[str, Any]) -> str:
    """The target call's id: the same call always gets the same id."""
    return "call_" + hashlib.sha256(call_json(name, arguments).encode()).hexdigest()[:8]


def _used_names(messages: list[Message], target_name: str) -> set[str]:
    names = {target_name}
    for message in messages:
        names.update(call["name"] for call in message.get("tool_calls") or [])
    return names


def _offered(messages: list[Message], target_name: str, config: RenderConfig) -> list[dict[str, Any]]:
    names = _used_names(messages, target_name)
    return tool_specs(names | set(CANONICAL_TOOLS) if config.offer_all_tools else names)


def _choice_spec(spec: dict[str, Any]) -> dict[str, Any]:
    """A tool spec that requires no argument (target_mode tool_choice: the target names the tool only)."""
    function = dict(spec["function"])
    parameters = dict(function.get("parameters") or {"type": "object"})
    if "required" in parameters:
        parameters["required"] = []
    function["parameters"] = parameters
    return {**spec, "function": function}


def _trl_messages(messages: list[Message]) -> list[Message]:
    """The neutral history as TRL's conversational tool-calling messages (see the module doc)."""
    out: list[Message] = []
    for message in messages:
        role = message["role"]
        if role == "assistant" and message.get("tool_calls"):
            calls = [_openai_call(call, "object") for call in message["tool_calls"]]
            text = message.get("content") or ""
            out.append({"role": "assistant", **({"content": text} if text else {}), "tool_calls": calls})
        elif role == "tool":
            result = {"role": "tool", "tool_call_id": message.get("tool_call_id")}
            result |= {"name": message["name"]} if message.get("name") else {}
            out.append({**result, "content": message["content"]})
        else:
            out.append({"role": role, "content": message.get("content") or ""})
    return out


def _openai_call(call: Mapping[str, Any], tool_arguments: str) -> dict[str, Any]:
    arguments = dict(call.get("arguments") or {})
    written: Any = canonical_json(arguments) if tool_arguments == "json_string" else arguments
    return {"id": call["id"], "type": "function", "function": {"name": call["name"], "arguments": written}}


def _tools_messages(messages: list[Message], tool_arguments: str) -> list[Message]:
    out: list[Message] = []
    for message in messages:
        role = message["role"]
        if role == "assistant" and message.get("tool_calls"):
            calls = [_openai_call(call, tool_arguments) for call in message["tool_calls"]]
            out.append({"role": "assistant", "content": message.get("content") or "", "tool_calls": calls})
        elif role == "tool":
            result = {
                "role": "tool",
                "tool_call_id": message.get("tool_call_id"),
                "content": message["content"],
            }
            out.append(result | ({"name": message["name"]} if message.get("name") else {}))
        else:
            out.append({"role": role, "content": message.get("content") or ""})
    return out


def _tool_result_text(name: str | None, content: str, convention: str) -> str:
    if convention == "hermes":
        return f"<tool_response>\n{content}\n</tool_response>"
    return f"Tool result ({name or 'unknown'}):\n{content}"


def _system_text(system: str, specs: list[dict[str, Any]], convention: str) -> str:
    listed = "\n".join(canonical_json(spec) for spec in specs)
    return f"{system}\n\n# Tools\n\n<tools>\n{listed}\n</tools>\n\n{_HOW_TO_CALL[convention]}"


def _chat_messages(
    messages: list[Message], convention: str, specs: list[dict[str, Any]] | None
) -> list[Message]:
    """The neutral history as plain-text chat messages (see the module doc)."""
    out: list[Message] = []
    for index, message in enumerate(messages):
        role, content = message["role"], message.get("content") or ""
        if role == "system" and index == 0 and specs is not None:
            content = _system_text(content, specs, convention)
        elif role == "assistant" and message.get("tool_calls"):
            calls = [
                call_text(c["name"], dict(c.get("arguments") or {}), convention)
                for c in message["tool_calls"]
            ]
            content = "\n\n".join([content, "\n".join(calls)] if content else ["\n".join(calls)])
        elif role == "tool":
            role, content = "user", _tool_result_text(message.get("name"), content, convention)
        if role == "user" and out and out[-1]["role"] == "user":
            out[-1] = {"role": "user", "content": out[-1]["content"] + "\n\n" + content}
        else:
            out.append({"role": role, "content": content})
    return out


def transcript(messages: list[Message]) -> str:
    """Plain-text chat messages as one text: a `### Role` heading before each message's text."""
    return "\n\n".join(f"### {m['role'].capitalize()}\n{m['content']}" for m in messages)


def render(
    messages: list[dict[str, Any]],
    target_name: str,
    target_arguments: dict[str, Any],
    config: RenderConfig = RenderConfig(),
) -> dict[str, Any]:
    """The training record for the history `messages` and the target call (see the module doc)."""
    _check_history(messages)
    specs = _offered(messages, target_name, config)
    if config.history == "state_summary":
        messages = state_summary(messages)
    if config.target_mode == "tool_choice":
        target_arguments = {}
        specs = [_choice_spec(spec) for spec in specs]
    if config.format == "trl":
        call = {
            "id": target_id(target_name, target_arguments),
            "name": target_name,
            "arguments": target_arguments,
        }
        final = {"role": "assistant", "tool_calls": [_openai_call(call, "object")]}
        return {"messages": [*_trl_messages(messages), final], "tools": specs}
    if config.format == "tools":
        target = {
            "id": target_id(target_name, target_arguments),
            "name": target_name,
            "arguments": target_arguments,
        }
        final = {
            "role": "assistant",
            "content": "",
            "tool_calls": [_openai_call(target, config.tool_arguments)],
        }
        return {"messages": [*_tools_messages(messages, config.tool_arguments), final], "tools": specs}
    chat = _chat_messages(messages, config.convention, specs if config.describe_tools else None)
    completion = call_text(target_name, target_arguments, config.convention)
    if config.format == "chat":
        return {"messages": [*chat, {"role": "assistant", "content": completion}]}
    return {"prompt": transcript(chat), "completion": completion}


def _json_column(row: Mapping[str, Any], name: str) -> Any:
    value = row[name]
    return orjson.loads(value) if isinstance(value, str | bytes) else value


def render_row(row: Mapping[str, Any], config: RenderConfig = RenderConfig()) -> dict[str, Any]:
    """The training record of a decision_points row (its `messages`, `target_name` and
    `target_arguments` columns; the JSON ones are parsed)."""
    missing = [name for name in ("messages", "target_name", "target_arguments") if name not in row]
    if missing:
        raise ValueError(f"a decision_points row needs the columns {missing}; got {sorted(row)}")
    messages, arguments = _json_column(row, "messages"), _json_column(row, "target_arguments")
    if not isinstance(messages, list) or not isinstance(arguments, dict):
        raise ValueError(
            "expected messages to be a JSON list and target_arguments a JSON object, got "
            f"{type(messages).__name__} and {type(arguments).__name__}"
        )
    return render(messages, str(row["target_name"]), arguments, config)


# --- keys and lengths ------------------------------------------------------------------------


def _record_format(record: Mapping[str, Any]) -> str:
    if "prompt" in record and "completion" in record:
        return "completions"
    messages = record.get("messages")
    if not isinstance(messages, list) or not messages or messages[-1].get("role") != "assistant":
        raise ValueError(
            "expected a record with prompt and completion, or messages ending with the target "
            f"assistant message; got the keys {sorted(record)}"
        )
    return "tools" if "tools" in record else "chat"


def _openai_to_neutral(message: Message) -> Message:
    calls = []
    for call in message.get("tool_calls") or []:
        arguments = call["function"]["arguments"]
        parsed = orjson.loads(arguments) if isinstance(arguments, str) else arguments
        calls.append({"id": call.get("id"), "name": call["function"]["name"], "arguments": parsed})
    return {**message, "tool_calls": calls} if calls else message


def prompt_and_target(record: dict[str, Any]) -> tuple[str, str]:
    """Canonical strings of everything before the target and of the target call, the keys of exact
    dedupe and of the leakage check: equal decisions give equal keys in every format (a tools
    record is read through its hermes chat rendering)."""
    kind = _record_format(record)
    if kind == "completions":
        name, arguments = parse_call_text(record["completion"])
        return record["prompt"], canonical_json({"name": name, "arguments": arguments})
    *before, last = record["messages"]
    if kind == "chat":
        name, arguments = parse_call_text(last["content"])
        return transcript(before), canonical_json({"name": name, "arguments": arguments})
    calls = _openai_to_neutral(last)["tool_calls"]
    if len(calls) != 1:
        raise ValueError(f"expected the target message to hold one tool call, got {len(calls)}")
    neutral = [_openai_to_neutral(message) for message in before]
    chat = _chat_messages(neutral, "hermes", record["tools"])
    target = canonical_json({"name": calls[0]["name"], "arguments": calls[0]["arguments"]})
    return transcript(chat), target


def chat_of(record: Mapping[str, Any]) -> list[Message]:
    """The conversation mlx-lm's datasets put through the chat template for a record: its messages,
    or a completions record's prompt and completion as a user and an assistant turn."""
    if "prompt" in record and "completion" in record:
        return [
            {"role": "user", "content": record["prompt"]},
            {"role": "assistant", "content": record["completion"]},
        ]
    return list(record["messages"])


def record_length(record: dict[str, Any], tokenizer: Any | None = None) -> int:
    """The record's length as the model sees it.

    Without a tokenizer, in characters: a chat record's message texts, plus for the tools format
    each call's name and arguments JSON and the tools' JSON; a completions record's prompt and
    completion. With one, in tokens, counted as mlx-lm's datasets tokenize the record: the chat
    template over the messages (with `tools`), or over a user prompt and assistant completion.
    """
    kind = _record_format(record)
    if tokenizer is not None:
        tokens = tokenizer.apply_chat_template(
            chat_of(record), tools=record.get("tools"), tokenize=True, return_dict=False
        )
        return len(tokens)
    if kind == "completions":
        return len(record["prompt"]) + len(record["completion"])
    total = sum(len(message.get("content") or "") for message in record["messages"])
    for message in record["messages"]:
        for call in message.get("tool_calls") or []:
            arguments = call["function"]["arguments"]
            text = arguments if isinstance(arguments, str) else canonical_json(arguments)
            total += len(call["function"]["name"]) + len(text)
    return total + (len(canonical_json(record["tools"])) if "tools" in record else 0)


def drop_oldest_turn(messages: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    """The history without its oldest unit after the instruction: an assistant turn together with
    the results of its calls, or a lone message. None when only the system prompt and the
    instruction remain."""
    if len(messages) <= FLOOR:
        return None
    oldest = messages[FLOOR]
    ids = (
        {call.get("id") for call in oldest.get("tool_calls") or []}
        if oldest.get("role") == "assistant"
        else set()
    )
    rest = messages[FLOOR + 1 :]
    kept = [m for m in rest if not (m.get("role") == "tool" and m.get("tool_call_id") in ids)]
    return [*messages[:FLOOR], *kept]
