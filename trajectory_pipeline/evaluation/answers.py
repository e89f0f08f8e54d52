"""Answers: a model's raw text answer read into tool calls, whatever convention it wrote them in.

The replay eval asks a model for the next tool call and reads its answer here. Where
`render.parse_call_text` reads back exactly what `render.call_text` wrote, `parse_answer` is
lenient, since real models answer in many conventions:

    from trajectory_pipeline.evaluation.answers import parse_answer
    answer = parse_answer('<think>Read it first.</think>\\n<tool_call>\\n'
                          '{"name": "read_file", "arguments": {"file_path": "a.py"}}\\n</tool_call>')
    answer.parsed, answer.calls[0].name, answer.thinking_preamble   # True, 'read_file', True

`parse_answer(text, tools=case_tools)` gives mlx-lm's parsers the offered tools (OpenAI function
specs), which the qwen3_coder parser needs to read a parameter as its schema's type (`20` as an
integer, not the string "20"); without them every qwen3_coder value is a string.

How an answer is read:
1. Thinking is set aside, and so is Llama 3's `<|python_tag|>` (a Llama 3.1 answer may open with
   it before its JSON call): `<think>...</think>`, `<thinking>...</thinking>` and `[THINK]...[/THINK]`
   blocks (an unclosed one runs to the end of the text; a closing tag with no opening tag, as when
   the chat template opened the block in the prompt, makes all before it thinking). Nothing inside
   is searched for calls: a model musing about a call has not made one.
2. The first of these conventions that the rest of the text holds decides how it is read:
   - a start marker: `<tool_call>`, or the `tool_call_start` of one of mlx-lm's tool parsers
     (`mlx_lm.tool_parsers`, listed with pkgutil so new ones are picked up), whichever comes
     first. A `<tool_call>` block runs to `</tool_call>`, the next `<tool_call>` or the end of the
     text (generation hit the token cap) and holds JSON (convention "hermes"), a qwen3_coder
     `<function=...>` call or a glm47 `<arg_key>` call. Other markers go to their module's
     `parse_tool_call` with the text between start and end marker, as mlx-lm's server does; the
     convention is the module's name ("mistral", "kimi_k2", ...).
   - a Python-style list of calls first, `[read_file(file_path="a.py")]` ("pythonic", read by
     mlx-lm's parser);
   - ```json fenced blocks, or ``` blocks holding an object or a list ("fenced_json");
   - JSON objects or lists of objects anywhere, found with `json.JSONDecoder.raw_decode`
     ("bare_json"). Values that do not look like calls are skipped; a broken one that does
     (`{'name': ...`, a trailing comma, a missing brace) ends the search, with its error.
3. A JSON call is `{"name", "arguments"}`, with `parameters`, `args` or `input` accepted for
   `arguments`, inside `{"function": {...}}` or `{"type": "function", "function": {...}}`
   wrappers, `{"tool_calls": [...]}` or a list; `arguments` may be a JSON string (OpenAI). A call
   needs a non-empty string name and arguments that are, or decode to, an object; otherwise it is
   dropped and `error` says why (when no call at all was read). Numbers are kept as written (an
   integer beyond 64 bits too: `schema.canonical_json` writes it).

Flags, for telling a model that answers with a call right away from one that talks first:
- `starts_with_json`: the text, after leading whitespace, starts with `{` or `[` then `{`, bare or
  just after `<tool_call>`, `<|python_tag|>` or a ```json / ``` fence opening (whitespace allowed
  between). Whether
  that JSON is valid is `parsed`'s business. Calls in other formats (qwen3_coder XML,
  `[TOOL_CALLS]`, pythonic) are not JSON: False.
- `thinking_preamble`: a thinking block came before the first call, or any other non-blank text
  did ("Thought: ...", "I'll read the file first."). An answer with no call attempt at all counts
  only its thinking blocks: prose-only answers show up as `parsed` False instead.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache, partial
from typing import Any

from trajectory_pipeline.evaluation.schema import RAW_TEXT_CHARS
from trajectory_pipeline.schema import cap_text

HERMES, FENCED_JSON, BARE_JSON = "hermes", "fenced_json", "bare_json"
NO_CALL = "no tool call found"

_TOOL_CALL, _TOOL_CALL_END = "<tool_call>", "</tool_call>"
_THINK_TAGS = (("<think>", "</think>"), ("<thinking>", "</thinking>"), ("[THINK]", "[/THINK]"))
_THINK_BLOCK = re.compile(
    "|".join(f"{re.escape(a)}.*?(?:{re.escape(b)}|\\Z)" for a, b in _THINK_TAGS), re.DOTALL
)
_THINK_OPEN = re.compile("|".join(re.escape(a) for a, _ in _THINK_TAGS))
_THINK_CLOSE = re.compile("|".join(re.escape(b) for _, b in _THINK_TAGS))
_PYTHON_TAG = "<|python_tag|>"  # Llama 3.1: opens a call; no call convention of its own
_STARTS_WITH_JSON = re.compile(
    r"\s*(?:<tool_call>\s*|<\|python_tag\|>\s*|```(?:json)?\s*)?(?:\{|\[\s*\{)", re.IGNORECASE
)
_PYTHONIC_LIST = re.compile(r"\s*\[\s*[A-Za-z_][\w.]*\(")
_FENCE = re.compile(r"```[ \t]*(\w*)[ \t]*\n?(.*?)(?:```|\Z)", re.DOTALL)
_JSON_START = re.compile(r"\{|\[\s*\{")
# The first key of a call object, to tell a broken call from braces in prose.
_CALL_ATTEMPT = re.compile(r"""[\[{]\s*\{?\s*["']?(?:name|function|type|id|tool_calls)["']?\s*:""")
_ARGUMENT_KEYS = ("arguments", "parameters", "args", "input")
_CALL_KEYS = ("name", "function", "tool_calls")

Parser = Callable[..., Any]
Tools = Sequence[Mapping[str, Any]] | None
Reading = tuple[int | None, list["ParsedCall"], list[str]]  # first attempt's position, calls, errors


@dataclass(frozen=True)
class ParsedCall:
    """One tool call read from an answer."""

    name: str
    arguments: dict[str, Any]  # always an object; a JSON-string `arguments` is decoded
    convention: str  # "hermes", "fenced_json", "bare_json" or an mlx-lm tool parser's module name


@dataclass(frozen=True)
class ParsedAnswer:
    """A model's answer and the calls read from it (see the module doc for the flags)."""

    raw_text: str  # capped to eval_schema.RAW_TEXT_CHARS, head and tail
    starts_with_json: bool
    thinking_preamble: bool
    calls: tuple[ParsedCall, ...]
    error: str | None  # why no call was read; None when calls were

    @property
    def parsed(self) -> bool:
        """At least one call was read."""
        return bool(self.calls)


@cache
def _mlx_parsers() -> dict[str, tuple[str, str, Parser]]:
    """mlx-lm's tool parsers by module name: (start marker, end marker, parse_tool_call). Empty
    when mlx-lm is missing or predates `mlx_lm.tool_parsers`."""
    try:
        package = importlib.import_module("mlx_lm.tool_parsers")
    except ImportError:
        return {}
    parsers: dict[str, tuple[str, str, Parser]] = {}
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        try:
            module = importlib.import_module(f"{package.__name__}.{info.name}")
        except ImportError:
            continue
        start, end = getattr(module, "tool_call_start", None), getattr(module, "tool_call_end", None)
        parse = getattr(module, "parse_tool_call", None)
        if isinstance(start, str) and start and callable(parse):
            parsers[info.name] = (start, end or "", parse)
    return parsers


def _call(value: Any, convention: str) -> ParsedCall:
    """One call object, normalized; a ValueError says why it is not a call."""
    if not isinstance(value, dict):
        raise ValueError(f"expected a call to be a JSON object, got {type(value).__name__}")
    if isinstance(value.get("function"), dict):  # OpenAI's {"type": "function", "function": {...}}
        value = value["function"]
    name = value.get("name")
    if not isinstance(name, str) or not name:
        raise ValueError(f"expected a call's name to be a non-empty string, got {name!r}")
    key = next((key for key in _ARGUMENT_KEYS if key in value), None)
    arguments = {} if key is None else value[key]
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError as err:
            raise ValueError(f"the {key} of {name} are a string that is not JSON: {err}") from err
    if not isinstance(arguments, dict):
        raise ValueError(f"expected the {key} of {name} to be a JSON object, got {type(arguments).__name__}")
    return ParsedCall(name, arguments, convention)


def _calls(value: Any, convention: str) -> list[ParsedCall]:
    """The calls of a JSON value: one call, a list of them, or {"tool_calls": [...]}."""
    if isinstance(value, dict) and isinstance(value.get("tool_calls"), list):
        value = value["tool_calls"]
    items = value if isinstance(value, list) else [value]
    if not items:
        raise ValueError("expected a call, got an empty list")
    return [_call(item, convention) for item in items]


def _looks_like_call(value: Any) -> bool:
    items = value if isinstance(value, list) else [value]
    return bool(items) and all(isinstance(i, dict) and any(k in i for k in _CALL_KEYS) for i in items)


def _with_parser(module: str, segment: str, tools: Tools = None) -> list[ParsedCall]:
    if module not in _mlx_parsers():
        raise ValueError(f"a {module} call needs mlx-lm's tool parsers: pip install -U mlx-lm")
    parse = _mlx_parsers()[module][2]
    try:
        try:
            result = parse(segment.strip(), list(tools) if tools is not None else None)
        except Exception:  # a value its schema's type cannot read ("abc" for an integer): untyped
            if tools is None:
                raise
            result = parse(segment.strip(), None)
    except Exception as err:  # third-party parsers raise many kinds on malformed text
        raise ValueError(f"mlx-lm's {module} parser could not read the call: {err!r}") from err
    return [_call(item, module) for item in (result if isinstance(result, list) else [result])]


def _tool_call_block(body: str, tools: Tools = None) -> list[ParsedCall]:
    text = body.strip()
    if text.startswith("<function="):
        return _with_parser("qwen3_coder", text, tools)
    if "<arg_key>" in text:
        return _with_parser("glm47", text, tools)
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"invalid JSON in <tool_call>: {err}") from err
    return _calls(value, HERMES)


def _fenced_block(body: str) -> list[ParsedCall]:
    try:
        value = json.loads(body)
    except json.JSONDecodeError as err:
        raise ValueError(f"invalid JSON in a ``` block: {err}") from err
    return _calls(value, FENCED_JSON)


def _collect(
    segments: list[str], read: Callable[[str], list[ParsedCall]]
) -> tuple[list[ParsedCall], list[str]]:
    calls: list[ParsedCall] = []
    errors: list[str] = []
    for segment in segments:
        try:
            calls.extend(read(segment))
        except ValueError as err:
            errors.append(str(err))
    return calls, errors


def _segments(text: str, start: str, end: str) -> list[str]:
    """The text after each start marker, up to the end marker, the next start marker or the end."""
    return [chunk.split(end, 1)[0] if end else chunk for chunk in text.split(start)[1:]]


def _bare_json(text: str) -> Reading:
    decoder, resume = json.JSONDecoder(), 0
    position: int | None = None
    calls: list[ParsedCall] = []
    errors: list[str] = []
    for match in _JSON_START.finditer(text):
        if match.start() < resume:  # inside a value already read
            continue
        try:
            value, resume = decoder.raw_decode(text, match.start())
        except json.JSONDecodeError as err:
            if _CALL_ATTEMPT.match(text, match.start()):
                # A broken call: whatever follows lies inside it, so no call is read from there.
                errors.append(f"invalid JSON: {err}")
                position = match.start() if position is None else position
                break
            continue
        if _looks_like_call(value):
            position = match.start() if position is None else position
            try:
                calls.extend(_calls(value, BARE_JSON))
            except ValueError as err:
                errors.append(str(err))
    return position, calls, errors


def _read(text: str, tools: Tools = None) -> Reading:
    """Calls from text with the thinking blanked out, in the first convention it holds."""
    markers = {_TOOL_CALL: ("", _TOOL_CALL_END)}
    for module, (start, end, _) in _mlx_parsers().items():
        markers.setdefault(start, (module, end))
    found = [(text.find(start), -len(start), start) for start in markers if start in text]
    if found:
        position, _, start = min(found)
        module, end = markers[start]
        read = partial(_with_parser, module) if module else _tool_call_block
        return position, *_collect(_segments(text, start, end), partial(read, tools=tools))
    if _PYTHONIC_LIST.match(text):
        position = len(text) - len(text.lstrip())
        return position, *_collect([text], partial(_with_parser, "pythonic", tools=tools))
    fences = [
        m
        for m in _FENCE.finditer(text)
        if m.group(1).lower() == "json" or (not m.group(1) and m.group(2).lstrip().startswith(("{", "[")))
    ]
    if fences:
        return fences[0].start(), *_collect([m.group(2) for m in fences], _fenced_block)
    return _bare_json(text)


def _thinking_spans(text: str) -> list[tuple[int, int]]:
    spans, begin = [], 0
    close = _THINK_CLOSE.search(text)
    if close is not None and _THINK_OPEN.search(text, 0, close.start()) is None:
        spans.append((0, close.end()))  # the template opened the block in the prompt
        begin = close.end()
    spans.extend(match.span() for match in _THINK_BLOCK.finditer(text, begin))
    return spans


def parse_answer(text: str, tools: Tools = None) -> ParsedAnswer:
    """The tool calls in a model's raw answer, and how it was written (see the module doc).

    `tools`: the offered tools, for parsers that read values by their schema (qwen3_coder)."""
    if not isinstance(text, str):
        raise TypeError(f"expected the model's answer as a str, got {type(text).__name__}")
    thinking = _thinking_spans(text)
    visible = text
    for start, end in thinking:  # blanked, not cut, so positions stay those of `text`
        visible = visible[:start] + " " * (end - start) + visible[end:]
    visible = visible.replace(_PYTHON_TAG, " " * len(_PYTHON_TAG))
    position, calls, errors = _read(visible, tools)
    if calls:
        error = None
    elif not text.strip():
        error = "empty answer"
    elif position is None:
        error = f"{NO_CALL} (the answer is all thinking)" if thinking and not visible.strip() else NO_CALL
    else:
        error = errors[0] if errors else NO_CALL
    if position is None:
        preamble = bool(thinking)
    else:
        preamble = any(start < position for start, _ in thinking) or bool(visible[:position].strip())
    raw_text, _ = cap_text(text, RAW_TEXT_CHARS)
    return ParsedAnswer(
        raw_text=raw_text or "",
        starts_with_json=_STARTS_WITH_JSON.match(text) is not None,
        thinking_preamble=preamble,
        calls=tuple(calls),
        error=error,
    )
