"""Grammar-constrained decoding: the answer is exactly one call of an offered tool, in the model's own
tool-call convention, with arguments that match that tool's JSON schema.

`tool_call_processor` gives an mlx-lm logits processor, a callable `(tokens, logits) -> logits` that
masks every token the grammar does not allow at this point of the answer. Anyone running the
adapter uses it like this:

    import mlx_lm
    from trajectory_pipeline.evaluation.constrained import tool_call_processor

    model, tokenizer = mlx_lm.load("data/tiny-model", adapter_path="data/artifacts/adapters/<id>/adapter")
    prompt = tokenizer.apply_chat_template(messages, tools=tools, add_generation_prompt=True)
    processor = tool_call_processor(tokenizer, tools, max_tokens=192)   # a fresh one per answer
    text = mlx_lm.generate(model, tokenizer, prompt, max_tokens=192, logits_processors=[processor])
    # '<tool_call>\\n{"name": "read_file", "arguments": {"file_path":"src/app.py"}}\\n</tool_call>'

The grammar (`call_grammar`, a Lark grammar for llguidance) is one call of one of `tools` (OpenAI
function specs, `{"type": "function", "function": {"name", "parameters"}}`, or the bare function)
written in a convention of `CONVENTIONS`; arguments follow the tool's `parameters` schema: its
`required` properties present, `additionalProperties` as the schema says (allowed when unsaid, as
JSON Schema has it), properties in name order (the order canonical JSON gives the training data;
llguidance writes properties in one fixed order), at most one space around separators. A tool
without `parameters` takes any object; `tools=None` (a record that lists no tools) allows a call
of any name. Once the call is complete, only an end-of-sequence token (`tokenizer.eos_token_ids`,
e.g. `<|im_end|>`) is allowed, so generation stops there instead of running to `max_tokens`.

- `hermes` (Qwen2.5, Hermes, the tiny model's default), chosen by `<tool_call>` in the template:
  `<tool_call>\\n{"name": "f", "arguments": {...}}\\n</tool_call>`
- `qwen3_coder`, chosen by `<tool_call>` then `<function=` on the next line:
  `<tool_call>\\n<function=f>\\n<parameter=k>\\nv\\n</parameter>\\n</function>\\n</tool_call>`
- `mistral`, chosen by `[TOOL_CALLS]`: `[TOOL_CALLS][{"name": "f", "arguments": {...}}]`
- `llama3_json` (Llama 3.1 / 3.2 JSON tool calling), chosen by `<|python_tag|>` or
  `"parameters": dictionary`: `{"name": "f", "parameters": {...}}`

The tiny model can be built in each (`build_tiny_model(..., family=...)`, templates in
`sample/chat_templates.py`); tests/evaluation/test_families.py replays every one of them under
this grammar.

The convention is read from `tokenizer.chat_template` (first match in CONVENTIONS' order,
`detect_convention`) unless one is given. Markers such as `<tool_call>` that the tokenizer has as
one added token are required as that token, as the chat template writes them (where llguidance
takes it as one: a special token, or an ordinary added token shaped `<...>`; other ordinary added
tokens, an ordinary `[TOOL_CALLS]` say, count as their text, which the token also spells). In `qwen3_coder`,
string parameters are raw text up to `\\n</parameter>` and other types are JSON.

Token budget. With `max_tokens` (the generation's cap), the processor makes sure the call is
complete within it: while generating, it keeps a closing plan, the tokens that finish the call
from the current point by the shortest route it knows (close the open string, `}` and `]`, add
the required properties still missing with small values the schema allows: `""`, `0`, `[]`,
`{}`, a boolean), and once the plan no longer fits in the tokens left (less a margin of
`BUDGET_MARGIN` for the next token) it writes the plan instead of the model's choice. A cap
below the shortest call (about 25 tokens in Hermes) cannot be met: the model then writes as far
as the cap lets it, within the grammar.
`ToolCallProcessor.forced` tells how many tokens were written so. A weak model that repeats
itself inside a string thus ends with a valid but truncated value rather than no call at all.
Without `max_tokens` there is no closing: a model that never ends a string runs to the cap.

The processor holds the answer's parse state: use a fresh one per answer (or call `reset()`). It
counts the answer from its first call: the tokens it is given then are the prompt (or the part
of it mlx-lm fed), every later call brings one more generated token, as in `generate_step` and
`BatchGenerator`. A caller decoding many answers at once can instead hand each processor its new
tokens (`next_bitmask`) and mask the whole batch's logits in one operation (`allowed_rows`), as
the replay's `batched` strategy does; `closing` gives the tokens the budget's closing plan has
still to write, the rest of the answer whatever the model would choose.

Library: llguidance. Compared on the tiny model (byte-level BPE, 2,048 tokens) with the 8
canonical tools plus one free-form tool in the Hermes convention, Linux x86-64, one CPU core
(`pip install xgrammar outlines-core; python bench/bench_constrained.py --survey`):

| library | compile per tool set | new matcher | mask per token | answer, no model | installs |
| --- | --- | --- | --- | --- | --- |
| llguidance 1.9.1 | 2.3 ms | 1 µs | 8 µs | 1.1 ms | 8 MB |
| xgrammar 0.2.9 | 5.4 ms | 3 µs | 3 µs | 0.9 ms | 4,688 MB |
| outlines-core 0.2.14 | 101 ms | 0 µs | 1 µs | 1.0 ms | 5 MB |

("answer, no model": a fresh matcher, then per token of a 29-token reference call: the mask, the
mask applied to mlx logits, about 30 µs for all three, and the token consumed.) All three work
on Linux's CPU mlx through numpy bitmasks (`llguidance.mlx` and outlines-core's mlx kernel are
Metal-only, xgrammar fills torch tensors) and all cost far less than a decoding step, so speed
does not decide. Fit does:
- llguidance takes a context-free grammar with JSON schemas inline (`%json {...}`) and special
  tokens (`<[id]>`), so "one of these calls, each with its own schema, between these markers"
  is one short grammar; it follows JSON Schema closely (nesting, `required`,
  `additionalProperties`, types, enums); its matcher gives forced tokens and copies in a
  microsecond, which the token budget's closing plan is built on; and it has no dependencies.
- xgrammar is as capable (EBNF, JSON schema, structural tags) but needs torch: on Linux its
  wheels bring torch, triton and CUDA libraries, 4.7 GB and 1.4 s of import, for a project that
  runs on two CPU cores.
- outlines-core compiles regular expressions: JSON schemas become regexes of bounded nesting
  that forbid properties the schema does not name (`additionalProperties` is not followed), and
  indexing a regex over the vocabulary took 101 ms here for a 2,048-token vocabulary, work that
  grows with the vocabulary and is redone for every new tool set.
"""

from __future__ import annotations

import json
import re
import threading
import time
import warnings
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

HERMES, QWEN3_CODER, MISTRAL, LLAMA3_JSON = "hermes", "qwen3_coder", "mistral", "llama3_json"
# Tokens the closing plan may take for the next token beyond its own (a new key, a nested value).
BUDGET_MARGIN = 8
_PLAN_LIMIT = 96  # longest closing plan tried; a call that needs more is left to the model
_CACHE_SIZE = 64  # compiled grammars kept (one per tokenizer, convention and tool set)
_JSON_OPTIONS = {"whitespace_flexible": True, "whitespace_pattern": " ?", "lenient": True}
# Closing candidates outside a JSON string, in order: end containers, then separators, then values.
_JSON_CLOSERS = ("}", "]", ",", "0", '"', ":")
_ANY_NAME = r"/[A-Za-z0-9_.:\-]+/"


@dataclass(frozen=True)
class Convention:
    """How a model writes one tool call: the grammar of a call, how to detect it, how to close it."""

    name: str
    markers: tuple[str, ...]  # any of these in the chat template selects it (see CONVENTIONS' order)
    build: Callable[[list[tuple[str, dict[str, Any] | None]], Callable[[str], str]], str]
    # Texts that end an open part of the call (tried before the JSON closers).
    closers: tuple[str, ...] = ()
    # Where a JSON value starts afresh (a string state ends there), for conventions mixing text and JSON.
    value_start: re.Pattern[bytes] | None = None


def _lit(text: str) -> str:
    """A Lark string literal."""
    return json.dumps(text, ensure_ascii=False)


def _json_rule(schema: dict[str, Any] | None) -> str:
    """An inline llguidance JSON schema: the arguments object."""
    body = dict(schema) if isinstance(schema, Mapping) else {}
    if not body.get("type") and not any(k in body for k in ("anyOf", "oneOf", "allOf", "$ref", "enum")):
        body["type"] = "object"
    properties = body.get("properties")
    if isinstance(properties, Mapping):
        body["properties"] = {key: properties[key] for key in sorted(properties)}
    body["x-guidance"] = {**_JSON_OPTIONS, **(body.get("x-guidance") or {})}
    return "%json " + json.dumps(body, ensure_ascii=False, sort_keys=False)


def _json_calls(calls: list[tuple[str, dict[str, Any] | None]], arguments_key: str) -> tuple[str, list[str]]:
    """`call` as the alternatives `{"name": "f", "<arguments_key>": {...}}`, and their rules."""
    if not calls:  # no tool list: any name, any object
        head = _lit('{"name": "') + " " + _ANY_NAME + " " + _lit(f'", "{arguments_key}": ')
        return "call", [f"call: {head} args_any " + _lit("}"), f"args_any: {_json_rule(None)}"]
    rules, names = [], []
    for index, (name, schema) in enumerate(calls):
        head = _lit(f'{{"name": {json.dumps(name, ensure_ascii=False)}, "{arguments_key}": ')
        rules.append(f"call_{index}: {head} args_{index} " + _lit("}"))
        rules.append(f"args_{index}: {_json_rule(schema)}")
        names.append(f"call_{index}")
    return "call", [f"call: {' | '.join(names)}", *rules]


def _hermes(calls: list[tuple[str, dict[str, Any] | None]], tag: Callable[[str], str]) -> str:
    call, rules = _json_calls(calls, "arguments")
    start = f"start: {tag('<tool_call>')} {_lit(chr(10))} {call} {_lit(chr(10))} {tag('</tool_call>')}"
    return "\n".join([start, *rules])


def _mistral(calls: list[tuple[str, dict[str, Any] | None]], tag: Callable[[str], str]) -> str:
    call, rules = _json_calls(calls, "arguments")
    return "\n".join([f"start: {tag('[TOOL_CALLS]')} {_lit('[')} {call} {_lit(']')}", *rules])


def _llama3_json(calls: list[tuple[str, dict[str, Any] | None]], tag: Callable[[str], str]) -> str:
    call, rules = _json_calls(calls, "parameters")
    return "\n".join([f"start: {call}", *rules])


_RAW_VALUE = r"/(.|\n)*\n<\/parameter>\n/"  # lazy: up to the first "\n</parameter>\n"
_STRING_TYPES = {"string"}


def _qwen3_parameters(index: int, schema: dict[str, Any] | None) -> tuple[str, list[str]]:
    """The `<parameter=k>` blocks of one tool (an expression, empty when it takes none, and its
    rules), in name order, required ones mandatory; strings as raw text, other types as JSON."""
    schema = schema if isinstance(schema, Mapping) else {}
    found = schema.get("properties")
    properties: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    required = set(schema.get("required") or [])
    rules, parts = [f"raw_{index}[lazy]: {_RAW_VALUE}"], []
    for number, key in enumerate(sorted(properties)):
        spec = properties[key] if isinstance(properties[key], Mapping) else {}
        head = _lit(f"<parameter={key}>\n")
        if spec.get("type") in _STRING_TYPES or spec.get("type") is None:
            value = f"raw_{index}"
        else:
            rules.append(f"json_{index}_{number}: %json {json.dumps({**spec, 'x-guidance': _JSON_OPTIONS})}")
            value = f"json_{index}_{number} " + _lit("\n</parameter>\n")
        rules.append(f"p_{index}_{number}: {head} {value}")
        parts.append(f"p_{index}_{number}" if key in required else f"p_{index}_{number}?")
    if not properties and schema.get("additionalProperties", True) is not False:
        name = f"{_lit('<parameter=')} /[A-Za-z0-9_.\\-]+/ {_lit('>' + chr(10))}"
        rules.append(f"p_{index}_any: {name} raw_{index}")
        parts.append(f"p_{index}_any*")
    return " ".join(parts), rules


def _qwen3_coder(calls: list[tuple[str, dict[str, Any] | None]], tag: Callable[[str], str]) -> str:
    open_, close = tag("<tool_call>"), tag("</tool_call>")
    rules, names = [], []
    for index, (name, schema) in enumerate(calls or [("", None)]):
        any_name = f"{_lit(chr(10) + '<function=')} {_ANY_NAME} {_lit('>' + chr(10))}"
        head = _lit(f"\n<function={name}>\n") if name else any_name
        params, params_rules = _qwen3_parameters(index, schema)
        rules.append(f"call_{index}: {head} {params} {_lit('</function>' + chr(10))}")
        rules.extend(params_rules)
        names.append(f"call_{index}")
    return "\n".join([f"start: {open_} ({' | '.join(names)}) {close}", *rules])


# In detection order: the first convention with a marker in the chat template is taken.
CONVENTIONS: dict[str, Convention] = {
    QWEN3_CODER: Convention(
        QWEN3_CODER,
        ("<tool_call>\n<function=", "<tool_call>\\n<function="),  # as written, or escaped in a string
        _qwen3_coder,
        closers=("\n</parameter>\n", "</function>\n"),
        value_start=re.compile(rb"<parameter=[^>\n]*>\n$"),
    ),
    MISTRAL: Convention(MISTRAL, ("[TOOL_CALLS]",), _mistral),
    HERMES: Convention(HERMES, ("<tool_call>",), _hermes),
    LLAMA3_JSON: Convention(LLAMA3_JSON, ("<|python_tag|>", '"parameters": dictionary'), _llama3_json),
}


def detect_convention(chat_template: str | None) -> str:
    """The convention whose marker the chat template holds (CONVENTIONS' order); ValueError if none."""
    if isinstance(chat_template, str):
        for convention in CONVENTIONS.values():
            if any(marker in chat_template for marker in convention.markers):
                return convention.name
    raise ValueError(
        "cannot tell the model's tool-call convention from its chat template (none of the markers "
        f"{ {c.name: list(c.markers) for c in CONVENTIONS.values()}!r}); name one of {sorted(CONVENTIONS)}"
    )


def _function(tool: Mapping[str, Any]) -> Mapping[str, Any]:
    inner = tool.get("function")
    return inner if isinstance(inner, Mapping) else tool


def offered_calls(tools: Sequence[Mapping[str, Any]] | None) -> list[tuple[str, dict[str, Any] | None]]:
    """(name, parameters schema) of each offered tool, in name order, once each."""
    calls: dict[str, dict[str, Any] | None] = {}
    for tool in tools or []:
        function = _function(tool)
        name = function.get("name")
        if not isinstance(name, str) or not name:
            raise ValueError(f"a tool spec needs a non-empty string name, got {dict(tool)!r}")
        parameters = function.get("parameters")
        calls.setdefault(name, dict(parameters) if isinstance(parameters, Mapping) else None)
    return sorted(calls.items())


def declared_only(tools: Sequence[Mapping[str, Any]] | None) -> list[dict[str, Any]] | None:
    """`tools` with every schema that names its properties and says nothing of others closed to
    them (`additionalProperties: false`): a constrained answer then holds only the arguments a tool
    declares, as strict function calling has it, instead of whatever keys a small model drifts into.
    Schemas that allow or forbid extra properties explicitly keep their word."""
    if tools is None:
        return None
    closed = []
    for tool in tools:
        function = dict(_function(tool))
        parameters = function.get("parameters")
        if (
            isinstance(parameters, Mapping)
            and parameters.get("properties")
            and ("additionalProperties" not in parameters)
        ):
            function["parameters"] = {**parameters, "additionalProperties": False}
        closed.append({**tool, "function": function} if "function" in tool else function)
    return closed


def call_grammar(
    tools: Sequence[Mapping[str, Any]] | None, convention: str, tag: Callable[[str], str] = _lit
) -> str:
    """The Lark grammar (llguidance's dialect) of exactly one call of one of `tools`.

    `tag` writes a convention's marker (`<tool_call>`): the default writes it as text; the
    processor writes it as the tokenizer's one token where the tokenizer has one."""
    if convention not in CONVENTIONS:
        raise ValueError(f"convention must be one of {sorted(CONVENTIONS)}, got {convention!r}")
    return "%llguidance {}\n" + CONVENTIONS[convention].build(offered_calls(tools), tag)


# --- tokenizers and compiled grammars ----------------------------------------------------------


def _hf_tokenizer(tokenizer: Any) -> Any:
    """The Hugging Face fast tokenizer inside mlx-lm's TokenizerWrapper (or the tokenizer itself)."""
    return getattr(tokenizer, "_tokenizer", tokenizer)


def _eos_ids(tokenizer: Any) -> list[int]:
    ids = getattr(tokenizer, "eos_token_ids", None)
    if ids:
        return sorted(int(i) for i in ids)
    eos = getattr(tokenizer, "eos_token_id", None)
    if eos is None:
        raise ValueError("the tokenizer has no end-of-sequence token: constrained answers could not stop")
    return [int(eos)]


class _Compiled:
    """One tokenizer's llguidance tokenizer and its compiled grammars (an LRU of matchers to copy)."""

    def __init__(self, tokenizer: Any) -> None:
        import llguidance
        import llguidance.hf

        hf = _hf_tokenizer(tokenizer)
        self.vocab_size = len(hf)
        self.eos = _eos_ids(tokenizer)
        self.lltokenizer = llguidance.hf.from_tokenizer(hf, n_vocab=self.vocab_size, eos_token=self.eos)
        self.chat_template = getattr(tokenizer, "chat_template", None)
        self._grammars: OrderedDict[tuple[str, str], Any] = OrderedDict()
        self._lock = threading.Lock()
        self._closers: dict[str, list[int]] = {}

    def tag(self, text: str) -> str:
        """A marker as its single special token where the tokenizer has one (`<[id]>`), else text."""
        ids = self.lltokenizer.tokenize_str(text, parse_special=True)
        if len(ids) == 1 and self.lltokenizer.is_special_token(ids[0]):
            return f"<[{ids[0]}]>"
        return _lit(text)

    def tokens(self, text: str) -> list[int]:
        """`text` as tokens (cached): the closing plan's candidates."""
        if text not in self._closers:
            self._closers[text] = list(self.lltokenizer.tokenize_str(text))
        return self._closers[text]

    def _compile(self, tools: Sequence[Mapping[str, Any]] | None, convention: str) -> Any:
        import llguidance

        grammar = llguidance.LLMatcher.grammar_from_lark(call_grammar(tools, convention, self.tag))
        return llguidance.LLMatcher(self.lltokenizer, grammar, log_level=0)

    def matcher(self, tools: Sequence[Mapping[str, Any]] | None, convention: str) -> Any:
        """A fresh matcher at the start of the call grammar (compiled once per tool set)."""
        key = (convention, json.dumps(offered_calls(tools), sort_keys=True, ensure_ascii=False))
        with self._lock:
            template = self._grammars.get(key)
            if template is not None:
                self._grammars.move_to_end(key)
                return template.deep_copy()
        template = self._compile(tools, convention)
        if template.is_error():
            # One tool's schema llguidance cannot read (an unresolvable $ref, say) should not cost
            # the others theirs: those tools take any object, with a warning naming them.
            broken = [t for t in tools or [] if self._compile([t], convention).is_error()]
            if broken and len(broken) < len(tools or []):
                names = sorted(str(_function(t).get("name")) for t in broken)
                warnings.warn(
                    f"tool-call grammar: the parameters of {names} do not compile "
                    f"({template.get_error()[:300]}); those tools take any object as arguments",
                    stacklevel=3,
                )
                loose = [{"name": _function(t).get("name")} if t in broken else t for t in tools or []]
                template = self._compile(loose, convention)
            if template.is_error():
                raise ValueError(
                    f"the {convention} tool-call grammar does not compile: {template.get_error()}"
                )
        with self._lock:
            self._grammars[key] = template
            while len(self._grammars) > _CACHE_SIZE:
                self._grammars.popitem(last=False)
        return template.deep_copy()


_COMPILED: OrderedDict[int, tuple[Any, _Compiled]] = OrderedDict()
_COMPILED_LOCK = threading.Lock()


def _compiled(tokenizer: Any) -> _Compiled:
    """The tokenizer's _Compiled, kept for the last few tokenizers (keyed by identity)."""
    with _COMPILED_LOCK:
        held = _COMPILED.get(id(tokenizer))
        if held is not None and held[0] is tokenizer:
            _COMPILED.move_to_end(id(tokenizer))
            return held[1]
    compiled = _Compiled(tokenizer)
    with _COMPILED_LOCK:
        _COMPILED[id(tokenizer)] = (tokenizer, compiled)
        while len(_COMPILED) > 4:
            _COMPILED.popitem(last=False)
    return compiled


# --- the processor -----------------------------------------------------------------------------


class _StringState:
    """Whether the text so far ends inside a JSON string (for the closing plan), fed byte by byte."""

    __slots__ = ("escaped", "inside", "tail", "value_start")

    def __init__(self, value_start: re.Pattern[bytes] | None) -> None:
        self.inside = False
        self.escaped = False
        self.tail = b""
        self.value_start = value_start

    def copy(self) -> _StringState:
        other = _StringState(self.value_start)
        other.inside, other.escaped, other.tail = self.inside, self.escaped, self.tail
        return other

    def feed(self, data: bytes) -> None:
        for byte in data:
            if self.escaped:
                self.escaped = False
            elif self.inside and byte == 0x5C:  # backslash
                self.escaped = True
            elif byte == 0x22:  # quote
                self.inside = not self.inside
        if self.value_start is not None:
            self.tail = (self.tail + data)[-64:]
            if self.value_start.search(self.tail):
                self.inside = self.escaped = False


class ToolCallProcessor:
    """An mlx-lm logits processor that allows only one valid tool call (see the module doc).

    Stateful: one per answer; `reset()` starts over. `forced` counts the tokens the token budget
    wrote (0 when the model finished the call by itself); `seconds` is the time spent in it."""

    def __init__(self, compiled: _Compiled, matcher: Any, convention: str, max_tokens: int | None) -> None:
        if max_tokens is not None and (isinstance(max_tokens, bool) or max_tokens < 1):
            raise ValueError(f"max_tokens must be a positive integer or None, got {max_tokens!r}")
        self._compiled = compiled
        self._initial = matcher
        self.convention = convention
        self.max_tokens = max_tokens
        self._bitmask: Any = None
        self.reset()

    def reset(self) -> None:
        """Forget the answer so far: the next call starts a new one."""
        import numpy as np

        self._matcher = self._initial.deep_copy()
        self._start: int | None = None
        self._consumed = 0
        self._strings = _StringState(CONVENTIONS[self.convention].value_start)
        self._plan: list[int] | None = None  # the closing plan, once it is being written
        self._plan_length = 0  # the last plan's length, and when it was made
        self._planned_at = -1
        self.forced = 0
        self.seconds = 0.0
        if self._bitmask is None:
            self._bitmask = np.zeros((self._compiled.vocab_size + 31) // 32, dtype=np.int32)

    @property
    def eos(self) -> list[int]:
        """The end-of-sequence tokens: the only ones allowed once the call is complete."""
        return self._compiled.eos

    @property
    def closing(self) -> list[int]:
        """The tokens the closing plan has still to write, the next one first (empty when it is not
        being written): they are the rest of the answer whatever the model would choose, each the
        only token its mask allows, then only the end of the turn."""
        return list(self._plan or [])

    @property
    def done(self) -> bool:
        """The call is complete (only an end-of-sequence token may follow)."""
        return bool(self._matcher.is_accepting())

    def __call__(self, tokens: Any, logits: Any) -> Any:
        new = self._new_tokens(tokens)  # waits for mlx to compute the last token: not counted
        started = time.perf_counter()
        try:
            self._advance(new)
            allowed = self._allowed()
            return _masked(logits, allowed, self._compiled.eos)
        finally:
            self.seconds += time.perf_counter() - started

    def next_bitmask(self, new: Sequence[int]) -> Any:
        """Consume `new`, the tokens generated since the last call (none at the first), and give the
        bitmask of the next token (bit t of word t // 32 set: token t allowed), the one `__call__`
        masks the logits with. For a caller that masks a whole batch's logits in one operation
        (`allowed_rows`) instead of calling each sequence's processor on its own row; it holds the
        processor's buffer, which the next call overwrites. Use this or `__call__` for an answer,
        not both."""
        started = time.perf_counter()
        try:
            self._advance(list(new))
            return self._allowed()
        finally:
            self.seconds += time.perf_counter() - started

    def _new_tokens(self, tokens: Any) -> list[int]:
        """The tokens generated since the last call (none at the first: `tokens` is the prompt)."""
        if self._start is None:
            self._start = len(tokens)
            return []
        new = tokens[self._start + self._consumed :]
        return [int(t) for t in (new.tolist() if hasattr(new, "tolist") else new)]

    def _advance(self, new: list[int]) -> None:
        """Consume the tokens generated since the last call."""
        for token in new:
            self._consumed += 1
            if self._plan:
                self._plan.pop(0)
            if self._matcher.is_stopped():
                continue  # the end-of-sequence token, or what follows it when nothing stopped generation
            if not self._matcher.consume_token(token):
                raise RuntimeError(
                    f"token {token} broke the tool-call grammar ({self._matcher.get_error()}); "
                    "use one ToolCallProcessor per answer and put it last among the logits processors"
                )
            self._strings.feed(self._compiled.lltokenizer.decode_bytes([token]))

    def _allowed(self) -> Any:
        """The bitmask of the next token: the grammar's, or the closing plan's next token."""
        import numpy as np

        if self.max_tokens is not None and not self._matcher.is_stopped():
            left = self.max_tokens - self._consumed  # this token included
            if self._plan is None and left > 0:
                # Plan again only when the last plan, grown by the most a token could add since, may not fit.
                since = self._consumed - self._planned_at
                if self._planned_at < 0 or self._plan_length + (since + 1) * BUDGET_MARGIN >= left:
                    plan = self._closing_plan()
                    self._plan_length = len(plan) if plan is not None else 0
                    self._planned_at = self._consumed
                    # Write the plan when the next free token could leave too little room, as long
                    # as it fits: when even the plan cannot fit, the model keeps its choices.
                    if plan and len(plan) + BUDGET_MARGIN >= left and len(plan) <= left:
                        self._plan = plan
            if self._plan:
                self._bitmask.fill(0)
                token = self._plan[0]
                self._bitmask.view(np.uint32)[token // 32] = np.uint32(1 << (token % 32))
                self.forced += 1
                return self._bitmask
        self._matcher.unsafe_compute_mask_ptr(self._bitmask.ctypes.data, self._bitmask.nbytes)
        return self._bitmask

    def _closing_plan(self) -> list[int] | None:
        """The tokens that complete the call from here by the closers (module doc); None if it
        takes more than _PLAN_LIMIT tokens."""
        import numpy as np

        matcher, strings = self._matcher.deep_copy(), self._strings.copy()
        plan: list[int] = []
        compiled, closers = self._compiled, CONVENTIONS[self.convention].closers
        decode = compiled.lltokenizer.decode_bytes
        while not matcher.is_accepting():
            if len(plan) >= _PLAN_LIMIT or matcher.is_stopped():
                return None
            step: list[int] = list(matcher.compute_ff_tokens())
            if not step:
                candidates = (*closers, *(('"',) if strings.inside else _JSON_CLOSERS))
                for text in candidates:
                    ids = compiled.tokens(text)
                    if ids and matcher.validate_tokens(ids) == len(ids):
                        step = ids
                        break
            if not step:  # the first token the grammar allows (a key's first letter, `t` of true)
                mask = np.zeros_like(self._bitmask)
                matcher.unsafe_compute_mask_ptr(mask.ctypes.data, mask.nbytes)
                bits = np.unpackbits(mask.view(np.uint8), bitorder="little")
                allowed = [int(t) for t in np.flatnonzero(bits) if int(t) not in compiled.eos]
                if not allowed:
                    return None
                step = allowed[:1]
            if not matcher.consume_tokens(step):
                return None
            plan.extend(step)
            strings.feed(decode(step))
        return plan


def allowed_rows(bitmasks: Any, width: int, eos: Sequence[int]) -> Any:
    """Boolean rows of `width` tokens (the model's logits' width), one per row of `bitmasks`
    (int32 words, as `ToolCallProcessor.next_bitmask` gives them): True where the bitmask allows
    the token, the end-of-sequence tokens where it allows none, False beyond the tokenizer's
    vocabulary (a model's padded rows)."""
    import numpy as np

    words = np.ascontiguousarray(bitmasks, dtype=np.int32).reshape(-1, np.shape(bitmasks)[-1])
    allowed = np.unpackbits(words.view(np.uint8), axis=1, bitorder="little").astype(bool)
    if allowed.shape[1] >= width:
        allowed = allowed[:, :width]
    else:  # the model's padded vocabulary beyond the tokenizer's
        allowed = np.pad(allowed, ((0, 0), (0, width - allowed.shape[1])))
    none = ~allowed.any(axis=1)
    if none.any():
        ends = np.array([t for t in eos if t < width], dtype=np.intp)
        allowed[np.ix_(np.flatnonzero(none), ends)] = True
    return allowed


def _masked(logits: Any, bitmask: Any, eos: Sequence[int]) -> Any:
    """`logits` with every token the bitmask leaves out at -inf (an end-of-sequence token if none is left)."""
    import mlx.core as mx

    allowed = allowed_rows(bitmask, logits.shape[-1], eos)[0]
    return mx.where(mx.array(allowed), logits, mx.array(-float("inf"), dtype=logits.dtype))


def tool_call_processor(
    tokenizer: Any,
    tools: Sequence[Mapping[str, Any]] | None,
    convention: str | None = None,
    *,
    max_tokens: int | None = None,
) -> ToolCallProcessor:
    """A logits processor for `mlx_lm.generate(..., logits_processors=[...])` that allows exactly
    one call of one of `tools` in the model's convention, then the end of the turn.

    tokenizer: mlx-lm's tokenizer (from `mlx_lm.load`) or a Hugging Face fast tokenizer.
    tools: the offered tools as the chat template got them (OpenAI function specs); None allows
        a call of any name with any object as arguments.
    convention: one of CONVENTIONS; None reads it from the tokenizer's chat template.
    max_tokens: the generation's token cap; the call is then closed in time (module doc).

    The grammar is compiled once per tokenizer and tool set; a processor costs a matcher copy."""
    compiled = _compiled(tokenizer)
    name = convention if convention is not None else detect_convention(compiled.chat_template)
    if name not in CONVENTIONS:
        raise ValueError(f"convention must be one of {sorted(CONVENTIONS)}, got {name!r}")
    return ToolCallProcessor(compiled, compiled.matcher(tools, name), name, max_tokens)


def grammar_accepts(
    tokenizer: Any, tools: Sequence[Mapping[str, Any]] | None, text: str, convention: str | None = None
) -> bool:
    """Whether `text`, tokenized as the model would write it, is exactly one call the processor
    of `tool_call_processor(tokenizer, tools, convention)` allows (the grammar at string level)."""
    compiled = _compiled(tokenizer)
    name = convention if convention is not None else detect_convention(compiled.chat_template)
    matcher = compiled.matcher(tools, name)
    tokens = compiled.lltokenizer.tokenize_str(text, parse_special=True)
    return matcher.try_consume_tokens(tokens) == len(tokens) and bool(matcher.is_accepting())
