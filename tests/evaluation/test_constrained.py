"""Constrained decoding: on the tiny model with random weights every answer is exactly one call of
an offered tool with its required arguments, while free decoding gives garbage; the mask is right
at hand-checked points; the token budget closes a call in time; free decoding is mlx-lm's own; and
each convention's grammar accepts a right call and rejects wrong ones."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any

import mlx.core as mx
import numpy as np
import pytest
from mlx_lm.generate import stream_generate

from tests.evaluation.test_replay import _rows
from trajectory_pipeline.dataset.render import tool_specs
from trajectory_pipeline.evaluation.answers import parse_answer
from trajectory_pipeline.evaluation.constrained import (
    CONVENTIONS,
    HERMES,
    LLAMA3_JSON,
    MISTRAL,
    QWEN3_CODER,
    _masked,
    allowed_rows,
    call_grammar,
    declared_only,
    detect_convention,
    grammar_accepts,
    tool_call_processor,
)
from trajectory_pipeline.evaluation.replay import (
    EvalCase,
    ReplayConfig,
    generate_answers,
    loaded_model,
    prompt_tokens,
    select_cases,
)
from trajectory_pipeline.sample.tiny_model import CHAT_TEMPLATE

TOOLS = tool_specs(["read_file", "run_shell", "edit_file", "mcp_lookup"])
PARAMETERS = {t["function"]["name"]: t["function"]["parameters"] for t in TOOLS}


@pytest.fixture(scope="module")
def loaded(tiny_model: Path) -> Any:
    with loaded_model(tiny_model) as pair:
        yield pair


def _cases() -> list[EvalCase]:
    return select_cases(_rows(), ReplayConfig(holdout_cases=9, seen_exact_cases=12, seen_variant_cases=0))


def _type_ok(value: Any, spec: dict[str, Any]) -> bool:
    kinds = {"string": str, "integer": int, "boolean": bool, "array": list, "object": dict}
    kind = kinds.get(spec.get("type", ""))
    return kind is None or (isinstance(value, kind) and not (kind is int and isinstance(value, bool)))


def _valid_call(text: str, tools: list[dict[str, Any]]) -> bool:
    """One call of an offered tool, its required arguments present, the typed ones of their type."""
    calls = parse_answer(text).calls
    if len(calls) != 1:
        return False
    offered = {t["function"]["name"]: t["function"].get("parameters") or {} for t in tools}
    if calls[0].name not in offered:
        return False
    schema, arguments = offered[calls[0].name], calls[0].arguments
    properties = schema.get("properties", {})
    return set(schema.get("required", [])) <= set(arguments) and all(
        _type_ok(value, properties[key]) for key, value in arguments.items() if key in properties
    )


def test_constrained_answers_are_valid_calls_where_free_ones_are_garbage(
    loaded: Any, record_property: Any
) -> None:
    model, tokenizer = loaded
    cases = _cases()
    prompts = [prompt_tokens(tokenizer, case) for case in cases]
    tools = [case.tools for case in cases]
    assert all(tools) and len(cases) == 21
    config = ReplayConfig(max_tokens=64)
    results = {}
    for decoding in ("free", "constrained"):
        started = time.perf_counter()
        answers, timing = generate_answers(
            model, tokenizer, prompts, dataclasses.replace(config, decoding=decoding), tools=tools
        )
        results[decoding] = (answers, timing, time.perf_counter() - started)
    free, constrained = results["free"][0], results["constrained"][0]
    assert all(_valid_call(a.text, t) for a, t in zip(constrained, tools, strict=True))  # type: ignore[arg-type]
    assert all(a.generated_tokens <= config.max_tokens for a in constrained)
    assert not any(parse_answer(a.text).parsed for a in free), [a.text[:40] for a in free]
    # The costs, recorded for the report (bench/bench_constrained.py measures them properly).
    for decoding, (answers, timing, seconds) in results.items():
        record_property(f"{decoding}_ms_per_answer", round(seconds / len(answers) * 1e3, 1))
        record_property(f"{decoding}_tokens", timing.generated_tokens)
    extra = results["constrained"][1].extra
    record_property("grammar_ms_per_answer", round(extra["constraint_seconds"] / len(constrained) * 1e3, 2))
    record_property("closed_by_budget", extra["closed_by_budget"])


def test_budget_closes_calls_that_would_run_past_max_tokens(loaded: Any) -> None:
    model, tokenizer = loaded
    case = _cases()[0]
    prompt = prompt_tokens(tokenizer, case)
    texts = {}
    for max_tokens in (40, 64, 160):
        processor = tool_call_processor(tokenizer, case.tools, max_tokens=max_tokens)
        # Driven by hand, so the processor's counters can be read.
        steps = stream_generate(
            model, tokenizer, prompt, max_tokens=max_tokens, logits_processors=[processor]
        )
        tokens = [r.token for r in steps]
        text = tokenizer.decode([t for t in tokens if t not in tokenizer.eos_token_ids])
        assert _valid_call(text, case.tools or []), (max_tokens, text)
        assert len(tokens) <= max_tokens and processor.done
        assert processor.forced > 0  # random weights never close a string by themselves
        texts[max_tokens] = text
    # A bigger budget lets the model write more before the plan takes over.
    assert len(texts[40]) < len(texts[64]) < len(texts[160])


def _allowed(processor: Any, prompt: list[int], written: list[int], width: int) -> set[int]:
    """The tokens the processor allows after `written` (fed one token per call, as mlx-lm does)."""
    logits = mx.zeros((1, width))
    out = processor(mx.array(prompt), logits)
    for count in range(1, len(written) + 1):
        out = processor(mx.array(prompt + written[:count]), logits)
    return {int(i) for i in np.flatnonzero(np.isfinite(np.array(out[0])))}


def test_the_mask_at_hand_checked_points(loaded: Any) -> None:
    _, tokenizer = loaded
    width = len(tokenizer._tokenizer)
    prompt = tokenizer.encode("<|im_start|>assistant\n", add_special_tokens=False)
    encode = lambda text: tokenizer.encode(text, add_special_tokens=False)  # noqa: E731
    open_tag, eos = encode("<tool_call>"), tokenizer.eos_token_id

    def allowed(written: str) -> set[int]:
        return _allowed(tool_call_processor(tokenizer, TOOLS), prompt, encode(written), width)

    # The answer opens with the <tool_call> token, nothing else (not even its spelling in bytes).
    assert len(open_tag) == 1 and allowed("") == set(open_tag)
    # A tool name: the first token of each offered name may start it, nothing else.
    head = '<tool_call>\n{"name": "'
    starts = allowed(head)
    assert {encode(name)[0] for name in ("read", "run", "edit", "mcp")} <= starts
    assert encode("write")[0] not in starts and encode('"')[0] not in starts and eos not in starts
    # read_file's arguments cannot close before its required file_path.
    arguments = head + 'read_file", "arguments": {'
    after_brace = allowed(arguments)
    assert encode('"')[0] in after_brace and encode("}")[0] not in after_brace
    # Inside a string, a control character is out; the closing quote is in.
    in_string = allowed(arguments + '"file_path":"src/a')
    assert encode('"')[0] in in_string and encode("\n")[0] not in in_string
    # limit is an integer: a digit may follow, a quote may not.
    number = allowed(arguments + '"file_path":"a.py","limit":')
    assert encode("7")[0] in number and encode('"')[0] not in number
    # The whole call written: only the end of the turn.
    assert allowed(arguments + '"file_path":"a.py"}}\n</tool_call>') == {eos}


def test_free_decoding_is_mlx_lm_generate(loaded: Any) -> None:
    import mlx_lm

    model, tokenizer = loaded
    cases = _cases()[:4]
    prompts = [prompt_tokens(tokenizer, case) for case in cases]
    config = ReplayConfig(max_tokens=24, decoding="free", strategy="one_at_a_time")
    answers, timing = generate_answers(model, tokenizer, prompts, config, tools=[c.tools for c in cases])
    assert [a.text for a in answers] == [mlx_lm.generate(model, tokenizer, p, max_tokens=24) for p in prompts]
    assert "constraint_seconds" not in timing.extra


def test_a_prompt_without_tools_allows_any_name(loaded: Any) -> None:
    model, tokenizer = loaded
    prompt = prompt_tokens(tokenizer, _cases()[0])
    answers, _ = generate_answers(model, tokenizer, [prompt], ReplayConfig(max_tokens=48), tools=[None])
    assert len(parse_answer(answers[0].text).calls) == 1
    assert grammar_accepts(
        tokenizer, None, '<tool_call>\n{"name": "anything", "arguments": {"x": [1]}}\n</tool_call>'
    )
    assert not grammar_accepts(tokenizer, None, '<tool_call>\n{"name": "", "arguments": {}}\n</tool_call>')


READ = ("read_file", {"file_path": "src/a.py", "limit": 20})
# Per convention: a right call of READ, then wrong ones (unknown tool, required argument missing,
# an argument of the wrong type, two calls, text around the call).
CALL_TEXTS: dict[str, tuple[str, list[str]]] = {
    HERMES: (
        '<tool_call>\n{"name": "read_file", "arguments": {"file_path": "src/a.py", "limit": 20}}\n'
        "</tool_call>",
        [
            '<tool_call>\n{"name": "delete_file", "arguments": {"file_path": "a"}}\n</tool_call>',
            '<tool_call>\n{"name": "read_file", "arguments": {"limit": 20}}\n</tool_call>',
            '<tool_call>\n{"name": "read_file", "arguments": {"file_path": 3}}\n</tool_call>',
            '<tool_call>\n{"name": "read_file", "arguments": {"file_path": "a"}}\n</tool_call>\n<tool_call>',
            'Let me read it.\n<tool_call>\n{"name": "read_file", "arguments": {"file_path": "a"}}\n'
            "</tool_call>",
        ],
    ),
    LLAMA3_JSON: (
        '{"name": "read_file", "parameters": {"file_path":"src/a.py","limit":20}}',
        [
            '{"name": "read_file", "arguments": {"file_path": "src/a.py"}}',
            '{"name": "read_file", "parameters": {"limit": 20}}',
            '{"name": "read_file", "parameters": {"file_path": "a", "limit": "20"}}',
            '{"name": "delete_file", "parameters": {"file_path": "a"}}',
        ],
    ),
    MISTRAL: (
        '[TOOL_CALLS][{"name": "read_file", "arguments": {"file_path": "src/a.py", "limit": 20}}]',
        [
            '[TOOL_CALLS]{"name": "read_file", "arguments": {"file_path": "src/a.py"}}',
            '[TOOL_CALLS][{"name": "read_file", "arguments": {}}]',
            '[TOOL_CALLS][{"name": "grep", "arguments": {"file_path": "a"}}]',
        ],
    ),
    QWEN3_CODER: (
        "<tool_call>\n<function=read_file>\n<parameter=file_path>\nsrc/a.py\n</parameter>\n"
        "<parameter=limit>\n20\n</parameter>\n</function>\n</tool_call>",
        [
            "<tool_call>\n<function=read_file>\n<parameter=limit>\n20\n</parameter>\n</function>\n</tool_call>",
            "<tool_call>\n<function=read_file>\n<parameter=file_path>\na\n</parameter>\n"
            "<parameter=limit>\ntwenty\n</parameter>\n</function>\n</tool_call>",
            "<tool_call>\n<function=cat>\n<parameter=file_path>\na\n</parameter>\n</function>\n</tool_call>",
        ],
    ),
}


@pytest.mark.parametrize("convention", sorted(CONVENTIONS))
def test_each_convention_accepts_a_right_call_and_rejects_wrong_ones(loaded: Any, convention: str) -> None:
    _, tokenizer = loaded
    right, wrong = CALL_TEXTS[convention]
    assert grammar_accepts(tokenizer, TOOLS, right, convention)
    for text in wrong:
        assert not grammar_accepts(tokenizer, TOOLS, text, convention), text
    # The call the grammar allows is the one the answer parser reads back.
    (call,) = parse_answer(right).calls
    if convention != QWEN3_CODER:  # mlx-lm's qwen3_coder parser reads values as strings without the tools
        assert (call.name, call.arguments) == READ
    else:
        assert call.name == READ[0] and call.arguments["file_path"] == "src/a.py"
    assert "%json" in call_grammar(TOOLS, convention) or convention == QWEN3_CODER


def test_schema_details_required_extra_properties_and_nested_values(loaded: Any) -> None:
    _, tokenizer = loaded
    strict = [
        {
            "type": "function",
            "function": {
                "name": "search",
                "parameters": {
                    "type": "object",
                    "properties": {
                        "query": {"type": "string"},
                        "filters": {"type": "array", "items": {"type": "object", "required": ["k"]}},
                    },
                    "required": ["query"],
                    "additionalProperties": False,
                },
            },
        }
    ]

    def call(arguments: str) -> str:
        return f'<tool_call>\n{{"name": "search", "arguments": {arguments}}}\n</tool_call>'

    assert grammar_accepts(tokenizer, strict, call('{"filters": [{"k": 1}], "query": "x"}'), HERMES)
    assert not grammar_accepts(tokenizer, strict, call('{"query": "x", "extra": 1}'), HERMES)
    assert not grammar_accepts(tokenizer, strict, call('{"filters": [{"j": 1}], "query": "x"}'), HERMES)
    # Unsaid additionalProperties allows other keys, after the named ones (name order).
    assert grammar_accepts(tokenizer, TOOLS, call('{"query": 1}').replace("search", "mcp_lookup"), HERMES)
    assert grammar_accepts(
        tokenizer, TOOLS, call('{"file_path":"a","other":true}').replace("search", "read_file"), HERMES
    )


def test_the_convention_comes_from_the_chat_template() -> None:
    assert detect_convention(CHAT_TEMPLATE) == HERMES
    assert detect_convention("{{ '<tool_call>\\n<function=' + name }}") == QWEN3_CODER
    assert detect_convention("{{ '[TOOL_CALLS]' + calls | tojson }}") == MISTRAL
    llama = '{"name": function name, "parameters": dictionary of argument name and its value}'
    assert detect_convention(llama + "<|eot_id|>") == LLAMA3_JSON
    with pytest.raises(ValueError, match="name one of"):
        detect_convention("{{ messages }}")
    with pytest.raises(ValueError, match="name one of"):
        detect_convention(None)


def test_processors_are_per_answer_and_cheap_to_make(loaded: Any) -> None:
    _, tokenizer = loaded
    width = len(tokenizer._tokenizer)
    prompt = tokenizer.encode("<|im_start|>assistant\n", add_special_tokens=False)
    first = tool_call_processor(tokenizer, TOOLS)
    started = time.perf_counter()
    second = tool_call_processor(tokenizer, TOOLS)  # the grammar is compiled already
    assert time.perf_counter() - started < 0.5
    written = tokenizer.encode('<tool_call>\n{"name": "run_shell"', add_special_tokens=False)
    _allowed(first, prompt, written, width)
    # The second processor does not share the first one's state; reset() starts over.
    assert _allowed(second, prompt, [], width) == set(
        tokenizer.encode("<tool_call>", add_special_tokens=False)
    )
    first.reset()
    assert _allowed(first, prompt, [], width) == _allowed(
        tool_call_processor(tokenizer, TOOLS), prompt, [], width
    )
    with pytest.raises(ValueError, match="convention must be one of"):
        tool_call_processor(tokenizer, TOOLS, "xml")


def test_grammar_text_names_every_offered_tool() -> None:
    grammar = call_grammar(TOOLS, HERMES)
    for name in PARAMETERS:
        assert f'\\"name\\": \\"{name}\\"' in grammar
    with pytest.raises(ValueError, match="non-empty string name"):
        call_grammar([{"function": {"parameters": {}}}], HERMES)


def test_a_schema_that_does_not_compile_costs_only_its_own_tool(loaded: Any) -> None:
    _, tokenizer = loaded
    broken = {"type": "function", "function": {"name": "odd", "parameters": {"$ref": "#/$defs/missing"}}}
    with pytest.warns(UserWarning, match=r"\['odd'\] do not compile"):
        assert grammar_accepts(
            tokenizer, [*TOOLS, broken], '<tool_call>\n{"name": "odd", "arguments": {"x": 1}}\n</tool_call>'
        )
    # The other tools keep their schemas: read_file still needs its file_path.
    text = '<tool_call>\n{"name": "read_file", "arguments": {"limit": 1}}\n</tool_call>'
    assert not grammar_accepts(tokenizer, [*TOOLS, broken], text)


def test_declared_only_keeps_answers_to_the_declared_arguments(loaded: Any) -> None:
    _, tokenizer = loaded

    def read(arguments: str) -> str:
        return f'<tool_call>\n{{"name": "read_file", "arguments": {arguments}}}\n</tool_call>'

    closed = declared_only(TOOLS)
    assert grammar_accepts(tokenizer, closed, read('{"file_path":"a","limit":3}'), HERMES)
    assert not grammar_accepts(tokenizer, closed, read('{"file_path":"a","other":true}'), HERMES)
    assert grammar_accepts(tokenizer, TOOLS, read('{"file_path":"a","other":true}'), HERMES)
    # a schema that speaks of other properties keeps its word; one without properties stays open
    loose = [
        {"name": "x", "parameters": {"type": "object", "properties": {"a": {}}, "additionalProperties": True}}
    ]
    assert declared_only(loose) == loose
    assert declared_only([{"name": "y"}]) == [{"name": "y"}] and declared_only(None) is None


def test_allowed_rows_unpack_each_row_as_the_processor_masks_it() -> None:
    """The batch's masks in one array: each row as `__call__` would mask its logits alone."""
    bitmasks = np.zeros((3, 2), dtype=np.int32)
    bitmasks[0, 0] = 0b1010  # tokens 1 and 3
    bitmasks[1, 1] = np.int32(-(2**31))  # token 63, the sign bit of its word
    rows = allowed_rows(bitmasks, 70, eos=[2])  # wider than the bitmask: the model's padding
    assert [np.flatnonzero(row).tolist() for row in rows] == [[1, 3], [63], [2]]  # none: the end
    assert allowed_rows(bitmasks, 40, eos=[2]).shape == (3, 40)
    logits = mx.zeros((1, 70))
    for row, bitmask in zip(rows, bitmasks, strict=True):
        masked = np.array(_masked(logits, bitmask, [2]))[0]
        assert (np.isfinite(masked) == row).all()
