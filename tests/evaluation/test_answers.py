"""The replay eval scores whatever `parse_answer` reads from a model's raw text, so a call it misses
is scored as a wrong answer and a call it invents as a right one. These tables hold answers as real
models write them, one table per convention (hermes tags, fenced and bare JSON, the formats of
mlx-lm's own tool parsers), plus broken answers with the error they must give, the two flags the
report groups answers by, and the rule that text inside a thinking block is never read as a call."""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any

import pytest

from trajectory_pipeline.dataset.render import CONVENTIONS, call_text
from trajectory_pipeline.evaluation.answers import NO_CALL, ParsedAnswer, _mlx_parsers, parse_answer
from trajectory_pipeline.evaluation.schema import RAW_TEXT_CHARS

READ = ("read_file", {"file_path": "a.py"})
TEST = ("run_shell", {"command": "pytest -q"})
READ_JSON = '{"name": "read_file", "arguments": {"file_path": "a.py"}}'
TEST_JSON = '{"name": "run_shell", "arguments": {"command": "pytest -q"}}'


def calls_of(answer: ParsedAnswer) -> list[tuple[str, dict[str, Any]]]:
    return [(call.name, call.arguments) for call in answer.calls]


def conventions_of(answer: ParsedAnswer) -> set[str]:
    return {call.convention for call in answer.calls}


def check(text: str, expected: list[tuple[str, dict[str, Any]]], convention: str) -> None:
    answer = parse_answer(text)
    assert answer.error is None, answer.error
    assert answer.parsed
    assert calls_of(answer) == expected
    assert conventions_of(answer) == {convention}


HERMES_CASES = [
    pytest.param(f"<tool_call>\n{READ_JSON}\n</tool_call>", [READ], id="one-call"),
    pytest.param(
        f"<tool_call>\n{READ_JSON}\n</tool_call>\n<tool_call>\n{TEST_JSON}\n</tool_call>",
        [READ, TEST],
        id="two-calls",
    ),
    pytest.param(f"<tool_call>\n{READ_JSON}\n", [READ], id="token-cap-no-closing-tag"),
    pytest.param(
        f"<tool_call>\n{READ_JSON}\n<tool_call>\n{TEST_JSON}", [READ, TEST], id="no-closing-tags-at-all"
    ),
    pytest.param(
        '<tool_call>\n{"name": "read_file", "arguments": "{\\"file_path\\": \\"a.py\\"}"}\n</tool_call>',
        [READ],
        id="arguments-as-json-string",
    ),
    pytest.param(
        '<tool_call>{"name": "read_file", "parameters": {"file_path": "a.py"}}</tool_call>',
        [READ],
        id="parameters-key",
    ),
    pytest.param(
        '<tool_call>\n{"function": {"name": "read_file", "arguments": {"file_path": "a.py"}}}\n</tool_call>',
        [READ],
        id="function-wrapper",
    ),
    pytest.param(
        '<tool_call>{"id": "call_1", "type": "function", "function": {"name": "read_file", '
        '"arguments": "{\\"file_path\\": \\"a.py\\"}"}}</tool_call>',
        [READ],
        id="openai-type-function",
    ),
    pytest.param(f"<tool_call>\n[{READ_JSON}, {TEST_JSON}]\n</tool_call>", [READ, TEST], id="list-of-calls"),
    pytest.param(
        '<tool_call>{"name": "read_file", "arguments": {"file_path": "a.py", "offset": 10, "limit": 5}}'
        "</tool_call>",
        [("read_file", {"file_path": "a.py", "offset": 10, "limit": 5})],
        id="typed-arguments-kept",
    ),
    pytest.param('<tool_call>{"name": "git_status"}</tool_call>', [("git_status", {})], id="no-arguments"),
    pytest.param(
        '<tool_call>{"name": "git_status", "arguments": ""}</tool_call>',
        [("git_status", {})],
        id="empty-arguments-string",
    ),
    pytest.param(
        f"I'll start by reading the file.\n\n<tool_call>\n{READ_JSON}\n</tool_call>", [READ], id="prose-first"
    ),
]


@pytest.mark.parametrize(("text", "expected"), HERMES_CASES)
def test_hermes_tool_call_tags(text: str, expected: list[tuple[str, dict[str, Any]]]) -> None:
    check(text, expected, "hermes")


FENCED_CASES = [
    pytest.param(f"```json\n{READ_JSON}\n```", [READ], id="json-fence"),
    pytest.param(f"```\n{READ_JSON}\n```", [READ], id="fence-without-language"),
    pytest.param(f"```json\n[{READ_JSON},\n {TEST_JSON}]\n```", [READ, TEST], id="list-in-fence"),
    pytest.param(f"Let me look at the module.\n\n```json\n{READ_JSON}\n```\n", [READ], id="prose-first"),
    pytest.param(f"```json\n{READ_JSON}\n", [READ], id="token-cap-unclosed-fence"),
    pytest.param(
        f"The failing line is:\n```python\nx = {{'a': 1}}\n```\nSo:\n```json\n{TEST_JSON}\n```",
        [TEST],
        id="code-fence-ignored",
    ),
    pytest.param(
        f"```json\n{READ_JSON}\n```\nthen\n```json\n{TEST_JSON}\n```", [READ, TEST], id="two-fences"
    ),
]


@pytest.mark.parametrize(("text", "expected"), FENCED_CASES)
def test_fenced_json(text: str, expected: list[tuple[str, dict[str, Any]]]) -> None:
    check(text, expected, "fenced_json")


BARE_CASES = [
    pytest.param(READ_JSON, [READ], id="object"),
    pytest.param(f"  \n{READ_JSON}\n", [READ], id="object-with-whitespace"),
    pytest.param(f"[{READ_JSON}, {TEST_JSON}]", [READ, TEST], id="list"),
    pytest.param(f"I'll read the file first. {READ_JSON}", [READ], id="after-prose"),
    pytest.param(f"{READ_JSON}\n\nThis shows the module before editing it.", [READ], id="prose-after"),
    pytest.param(f"{READ_JSON}\n{TEST_JSON}", [READ, TEST], id="json-lines"),
    pytest.param('{"name": "read_file", "parameters": {"file_path": "a.py"}}', [READ], id="llama-parameters"),
    pytest.param(
        '{"type": "tool_use", "id": "toolu_01", "name": "read_file", "input": {"file_path": "a.py"}}',
        [READ],
        id="anthropic-tool-use",
    ),
    pytest.param(
        '{"role": "assistant", "tool_calls": [{"id": "call_1", "type": "function", "function": '
        '{"name": "read_file", "arguments": "{\\"file_path\\": \\"a.py\\"}"}}]}',
        [READ],
        id="openai-message",
    ),
    pytest.param(f'Plan: {{"steps": 2}}. First: {READ_JSON}', [READ], id="non-call-json-skipped"),
    pytest.param("Use a dict like {x: 1}. " + READ_JSON, [READ], id="braces-in-prose-skipped"),
]


@pytest.mark.parametrize(("text", "expected"), BARE_CASES)
def test_bare_json(text: str, expected: list[tuple[str, dict[str, Any]]]) -> None:
    check(text, expected, "bare_json")


MLX_CASES = [
    pytest.param(
        "<tool_call>\n<function=read_file>\n<parameter=file_path>\na.py\n</parameter>\n</function>\n</tool_call>",
        [READ],
        "qwen3_coder",
        id="qwen3_coder",
    ),
    pytest.param(
        "<tool_call>\n<function=read_file>\n<parameter=file_path>\na.py\n</parameter>\n</function>\n"
        "</tool_call>\n<tool_call>\n<function=run_shell>\n<parameter=command>\npytest -q\n</parameter>\n"
        "</function>\n</tool_call>",
        [READ, TEST],
        "qwen3_coder",
        id="qwen3_coder-two-calls",
    ),
    pytest.param(
        "I'll check the file.\n<tool_call>\n<function=edit_file>\n<parameter=file_path>\na.py\n"
        "</parameter>\n<parameter=old_string>\nx = 1\n</parameter>\n<parameter=new_string>\nx = 2\n"
        "</parameter>\n</function>\n</tool_call>",
        [("edit_file", {"file_path": "a.py", "old_string": "x = 1", "new_string": "x = 2"})],
        "qwen3_coder",
        id="qwen3_coder-multiline-edit",
    ),
    pytest.param(
        '[TOOL_CALLS]read_file[ARGS]{"file_path": "a.py"}', [READ], "mistral", id="mistral-args-header"
    ),
    pytest.param(
        '[TOOL_CALLS]read_file[ARGS]{"file_path": "a.py"}run_shell[ARGS]{"command": "pytest -q"}',
        [READ, TEST],
        "mistral",
        id="mistral-two-calls",
    ),
    pytest.param(
        f"[TOOL_CALLS][{READ_JSON}, "
        '{"name": "run_shell", "arguments": "{\\"command\\": \\"pytest -q\\"}"}]',
        [READ, TEST],
        "mistral",
        id="mistral-json-list",
    ),
    pytest.param(
        '<|tool_call_start|>[read_file(file_path="a.py")]<|tool_call_end|>', [READ], "pythonic", id="pythonic"
    ),
    pytest.param(
        '[read_file(file_path="a.py"), run_shell(command="pytest -q")]',
        [READ, TEST],
        "pythonic",
        id="pythonic-bare-list",
    ),
    pytest.param(
        "<tool_call>read_file<arg_key>file_path</arg_key><arg_value>a.py</arg_value></tool_call>",
        [READ],
        "glm47",
        id="glm47",
    ),
    pytest.param(
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.read_file:0<|tool_call_argument_begin|>"
        '{"file_path": "a.py"}<|tool_call_end|><|tool_calls_section_end|>',
        [READ],
        "kimi_k2",
        id="kimi_k2",
    ),
    pytest.param(
        '<minimax:tool_call>\n<invoke name="read_file">\n<parameter name="file_path">a.py</parameter>\n'
        "</invoke>\n</minimax:tool_call>",
        [READ],
        "minimax_m2",
        id="minimax_m2",
    ),
    pytest.param(
        "<start_function_call>call:read_file{file_path:<escape>a.py<escape>}<end_function_call>",
        [READ],
        "function_gemma",
        id="function_gemma",
    ),
    pytest.param(
        '<|tool_call>call:read_file{file_path:<|"|>a.py<|"|>}<tool_call|>', [READ], "gemma4", id="gemma4"
    ),
]


@pytest.mark.parametrize(("text", "expected", "convention"), MLX_CASES)
def test_mlx_lm_tool_parser_formats(
    text: str, expected: list[tuple[str, dict[str, Any]]], convention: str
) -> None:
    check(text, expected, convention)


def test_every_mlx_lm_tool_parser_is_picked_up() -> None:
    package = importlib.import_module("mlx_lm.tool_parsers")
    names = {info.name for info in pkgutil.iter_modules(package.__path__)}
    with_markers = {
        name
        for name in names
        if getattr(importlib.import_module(f"mlx_lm.tool_parsers.{name}"), "tool_call_start", None)
    }
    assert {"qwen3_coder", "mistral", "pythonic"} <= with_markers
    assert set(_mlx_parsers()) == with_markers


ERROR_CASES = [
    pytest.param("", "empty answer", id="empty"),
    pytest.param(" \n\t", "empty answer", id="whitespace"),
    pytest.param("I would read a.py and then run the tests.", NO_CALL, id="prose-only"),
    pytest.param("The config is {a: 1}; nothing to call.", NO_CALL, id="braces-in-prose"),
    pytest.param('{"plan": ["read", "edit"]}', NO_CALL, id="json-that-is-no-call"),
    pytest.param(
        "{'name': 'read_file', 'arguments': {'file_path': 'a.py'}}",
        "invalid JSON: Expecting property name enclosed in double quotes",
        id="single-quotes",
    ),
    pytest.param(
        '{"name": "read_file", "arguments": {"file_path": "a.py",}}',
        "invalid JSON: Expecting property name enclosed in double quotes",
        id="trailing-comma",
    ),
    pytest.param(
        'Reading it: {"name": "read_file", "arguments": {"file_path": "a.py"}',
        "invalid JSON: Expecting ',' delimiter",
        id="unbalanced-braces",
    ),
    pytest.param(
        '{"type": "function", "function": {"name": "read_file", "arguments": {"file_path": "a.py"}}, "id": }',
        "invalid JSON: Expecting value",
        id="no-call-read-from-inside-a-broken-one",
    ),
    pytest.param(
        '<tool_call>\n{"name": "read_file", "arguments": {"file_path": "a.py"}\n</tool_call>',
        "invalid JSON in <tool_call>: Expecting ',' delimiter",
        id="tool-call-missing-brace",
    ),
    pytest.param(
        '<tool_call>\n{"name": "read_file", "arguments": {"file_path": "a.py"}}}\n</tool_call>',
        "invalid JSON in <tool_call>: Extra data",
        id="tool-call-extra-brace",
    ),
    pytest.param(
        '<tool_call>\n{"name": "read_file", "arguments": {"file_pa',
        "invalid JSON in <tool_call>",
        id="cut-off",
    ),
    pytest.param("<tool_call>\n</tool_call>", "invalid JSON in <tool_call>: Expecting value", id="empty-tag"),
    pytest.param(
        '```json\n{"name": "read_file", "arguments": {"file_path": "a.py",}}\n```',
        "invalid JSON in a ``` block",
        id="fence-trailing-comma",
    ),
    pytest.param(
        '{"name": "run_shell", "arguments": ["pytest", "-q"]}',
        "expected the arguments of run_shell to be a JSON object, got list",
        id="arguments-a-list",
    ),
    pytest.param(
        '<tool_call>{"name": "run_shell", "arguments": "pytest -q"}</tool_call>',
        "the arguments of run_shell are a string that is not JSON",
        id="arguments-a-plain-string",
    ),
    pytest.param(
        '<tool_call>{"name": "run_shell", "arguments": "[1, 2]"}</tool_call>',
        "expected the arguments of run_shell to be a JSON object, got list",
        id="arguments-string-decodes-to-list",
    ),
    pytest.param(
        '{"name": 42, "arguments": {}}',
        "expected a call's name to be a non-empty string, got 42",
        id="name-not-a-string",
    ),
    pytest.param(
        '<tool_call>{"arguments": {"file_path": "a.py"}}</tool_call>',
        "expected a call's name to be a non-empty string, got None",
        id="name-missing",
    ),
    pytest.param(
        '<tool_call>"read_file"</tool_call>',
        "expected a call to be a JSON object, got str",
        id="not-an-object",
    ),
    pytest.param(
        '[TOOL_CALLS]read_file[ARGS]{"file_path": "a.',
        "mlx-lm's mistral parser could not read the call",
        id="mistral-cut-off",
    ),
    pytest.param(
        "<tool_call>\n<function=read_file>\n<parameter=file_path>\na.py\n",
        "mlx-lm's qwen3_coder parser could not read the call",
        id="qwen3_coder-cut-off",
    ),
    pytest.param(
        f"<think>I could answer {READ_JSON} but should look first.</think>\nI need more context.",
        NO_CALL,
        id="call-only-in-thinking",
    ),
    pytest.param(
        "<think>The user wants the tests run. Let me think about which",
        f"{NO_CALL} (the answer is all thinking)",
        id="token-cap-while-thinking",
    ),
]


@pytest.mark.parametrize(("text", "error"), ERROR_CASES)
def test_answers_without_a_call_say_why(text: str, error: str) -> None:
    answer = parse_answer(text)
    assert not answer.parsed
    assert answer.calls == ()
    assert answer.error is not None and answer.error.startswith(error), answer.error


def test_a_broken_call_beside_good_ones_is_dropped() -> None:
    text = f'<tool_call>\n{READ_JSON}\n</tool_call>\n<tool_call>\n{{"name": "run_shell", "arg'
    answer = parse_answer(text)
    assert calls_of(answer) == [READ]
    assert answer.error is None


FLAG_CASES = [
    pytest.param(READ_JSON, True, False, id="bare-object"),
    pytest.param(f"\n  [{READ_JSON}]", True, False, id="bare-list"),
    pytest.param(f"```json\n{READ_JSON}\n```", True, False, id="json-fence"),
    pytest.param(f"```\n{READ_JSON}\n```", True, False, id="plain-fence"),
    pytest.param(f"<tool_call>\n{READ_JSON}\n</tool_call>", True, False, id="hermes"),
    pytest.param(f"{READ_JSON}\nThat shows the module.", True, False, id="prose-after-counts-not"),
    pytest.param("{'name': 'read_file'}", True, False, id="broken-json-still-started-with-json"),
    pytest.param(
        "<tool_call>\n<function=read_file>\n<parameter=file_path>\na.py\n</parameter>\n</function>\n"
        "</tool_call>",
        False,
        False,
        id="qwen3_coder-is-not-json",
    ),
    pytest.param('[TOOL_CALLS]read_file[ARGS]{"file_path": "a.py"}', False, False, id="mistral-is-not-json"),
    pytest.param('[read_file(file_path="a.py")]', False, False, id="pythonic-is-not-json"),
    pytest.param(
        f"<think>I should read the file</think>\n<tool_call>\n{READ_JSON}\n</tool_call>",
        False,
        True,
        id="think-block",
    ),
    pytest.param(
        f"<thinking>\nFirst the file.\n</thinking>\n\n{READ_JSON}", False, True, id="thinking-block"
    ),
    pytest.param(
        f"The test fails in a.py, so I read it.\n</think>\n\n<tool_call>\n{READ_JSON}\n</tool_call>",
        False,
        True,
        id="think-opened-by-template",
    ),
    pytest.param(
        '[THINK]Read it first.[/THINK][TOOL_CALLS]read_file[ARGS]{"file_path": "a.py"}',
        False,
        True,
        id="mistral-think",
    ),
    pytest.param(f"Thought: I need to see the file.\n{READ_JSON}", False, True, id="thought-prose"),
    pytest.param(
        f"Reasoning: the tests come first.\n<tool_call>\n{TEST_JSON}\n</tool_call>",
        False,
        True,
        id="reasoning-prose",
    ),
    pytest.param(f"I'll read the file first. {READ_JSON}", False, True, id="prose-before-bare-json"),
    pytest.param("I would read a.py first.", False, False, id="prose-only"),
    pytest.param("<think>Which file holds the bug?", False, True, id="thinking-only"),
    pytest.param("", False, False, id="empty"),
]


@pytest.mark.parametrize(("text", "starts_with_json", "thinking_preamble"), FLAG_CASES)
def test_flags(text: str, starts_with_json: bool, thinking_preamble: bool) -> None:
    answer = parse_answer(text)
    assert (answer.starts_with_json, answer.thinking_preamble) == (starts_with_json, thinking_preamble)


@pytest.mark.parametrize(
    "text",
    [
        f'<think>Maybe {{"name": "write_file", "arguments": {{"file_path": "a.py", "content": ""}}}}? '
        f"No, read first.</think>\n<tool_call>\n{READ_JSON}\n</tool_call>",
        "<think>I could write <tool_call>\n"
        '{"name": "write_file", "arguments": {"file_path": "a.py", "content": ""}}\n</tool_call> '
        f"but not yet.</think>\n\n{READ_JSON}",
        '<thinking>```json\n{"name": "write_file", "arguments": {}}\n```</thinking>\n'
        f"```json\n{READ_JSON}\n```",
    ],
    ids=["bare-json-in-think", "tool-call-in-think", "fence-in-thinking"],
)
def test_calls_inside_thinking_are_not_calls(text: str) -> None:
    answer = parse_answer(text)
    assert calls_of(answer) == [READ]
    assert answer.thinking_preamble and not answer.starts_with_json


@pytest.mark.parametrize("convention", CONVENTIONS)
def test_reads_what_render_writes(convention: str) -> None:
    arguments = {"file_path": "src/a.py", "old_string": 'x = "1"', "new_string": "x = 2\n"}
    answer = parse_answer(call_text("edit_file", arguments, convention))
    assert calls_of(answer) == [("edit_file", arguments)]
    assert conventions_of(answer) == {convention}
    assert answer.starts_with_json and not answer.thinking_preamble


def test_raw_text_is_capped_head_and_tail() -> None:
    text = "Let me think. " + "x" * 10_000 + f"\n<tool_call>\n{READ_JSON}\n</tool_call>"
    answer = parse_answer(text)
    assert len(answer.raw_text) == RAW_TEXT_CHARS
    assert answer.raw_text.startswith("Let me think. ")
    assert answer.raw_text.endswith("</tool_call>")
    assert "characters omitted" in answer.raw_text
    assert calls_of(answer) == [READ]  # read from the whole text, not the capped one
    assert parse_answer(READ_JSON).raw_text == READ_JSON


def test_is_deterministic_and_rejects_non_text() -> None:
    text = f"Reading.\n<tool_call>\n{READ_JSON}\n</tool_call>"
    assert parse_answer(text) == parse_answer(text)
    with pytest.raises(TypeError, match="expected the model's answer as a str, got NoneType"):
        parse_answer(None)  # type: ignore[arg-type]
