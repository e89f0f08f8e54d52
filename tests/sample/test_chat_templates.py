"""The tiny model's chat-template families: each renders our `tools` records (arguments as a JSON
string or an object, tool results, parallel calls) in its family's turns and call convention, with
the generation prompt an exact token prefix of the training text (what mlx-lm's mask_prompt
relies on), its markers single tokens and its end-of-turn token the model's eos; the convention
is read back from the template, and qwen3_coder's template reads JSON-string arguments exactly."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.sample.test_tiny_model import HISTORY, TARGET, _write_jsonl
from trajectory_pipeline.dataset.render import RenderConfig, render
from trajectory_pipeline.evaluation.constrained import CONVENTIONS, detect_convention
from trajectory_pipeline.sample.chat_templates import (
    CHAT_TEMPLATE,
    FAMILIES,
    HERMES,
    LLAMA3_JSON,
    MISTRAL,
    QWEN3_CODER,
)
from trajectory_pipeline.sample.tiny_model import (
    TinyModelSpec,
    add_arguments,
    build_tiny_model,
    corpus_texts,
    run,
    tokenizer_config,
)

SMALL = TinyModelSpec(layers=1, hidden_size=32, heads=2, kv_heads=1, intermediate_size=64, vocab_size=512)
# A call's opening as each family writes it at the start of the answer.
OPENS = {
    HERMES: '<tool_call>\n{"name": "',
    QWEN3_CODER: "<tool_call>\n<function=",
    LLAMA3_JSON: '{"name": "',
    MISTRAL: '[TOOL_CALLS][{"name": "',
}
PARALLEL: list[dict[str, Any]] = [
    {"role": "user", "content": "Look around first."},
    {
        "role": "assistant",
        "content": "Reading both.",
        "tool_calls": [
            {"id": "c1", "name": "read_file", "arguments": {"file_path": "a.py", "limit": 20}},
            {
                "id": "c2",
                "name": "mcp_lookup",
                "arguments": {"query": 'say "hi"\n', "deep": {"k": [1, True]}},
            },
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "name": "read_file", "content": "x = 1\n"},
    {"role": "tool", "tool_call_id": "c2", "name": "mcp_lookup", "content": "ünïcode 😀"},
]


def _records() -> list[dict[str, Any]]:
    """Records of every shape: system or not, results, parallel calls, both argument forms."""
    records = []
    for tool_arguments in ("json_string", "object"):
        config = RenderConfig(tool_arguments=tool_arguments)
        records += [
            render(HISTORY, *TARGET, config),
            render(HISTORY[:2], "run_shell", {"command": "pytest -q", "timeout_ms": 9000}, config),
            render(
                PARALLEL, "edit_file", {"file_path": "a.py", "old_string": "1", "new_string": "2"}, config
            ),
        ]
    return records


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _write_jsonl(tmp_path_factory.mktemp("data") / "train.jsonl", _records() * 2)


@pytest.fixture(scope="module", params=sorted(FAMILIES))
def family_model(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, corpus: Path
) -> Any:
    family = request.param
    out = tmp_path_factory.mktemp(family) / "tiny"
    return family, build_tiny_model(out, corpus_texts([corpus], family), SMALL, family=family)


def _answer(tokenizer: Any, record: dict[str, Any]) -> str:
    """The training text after the generation prompt, up to the end-of-turn token."""
    full = tokenizer.apply_chat_template(record["messages"], tools=record["tools"], tokenize=False)
    prompt = tokenizer.apply_chat_template(
        record["messages"][:-1], tools=record["tools"], add_generation_prompt=True, tokenize=False
    )
    assert full.startswith(prompt)
    return str(full[len(prompt) :].split(tokenizer.eos_token)[0])


def test_the_prompt_is_a_token_prefix_of_the_training_text(family_model: Any) -> None:
    from mlx_lm import load
    from mlx_lm.tuner.datasets import ChatDataset

    family, model = family_model
    tokenizer: Any = load(str(model))[1]
    for record in _records():
        tokens, offset = ChatDataset([record], tokenizer, mask_prompt=True).process(record)
        prompt = tokenizer.apply_chat_template(
            record["messages"][:-1], tools=record["tools"], add_generation_prompt=True
        )
        assert 0 < offset < len(tokens) and tokens[:offset] == prompt
        answer = tokens[offset:]
        assert tokenizer.decode(answer).startswith(
            OPENS[family] + record["messages"][-1]["tool_calls"][0]["function"]["name"]
        )
        # The answer ends with the end-of-turn token, where generation stops (a newline may follow).
        end = answer.index(tokenizer.eos_token_id)
        assert not tokenizer.decode(answer[end + 1 :]).strip()
        assert tokenizer.decode(tokens) == tokenizer.apply_chat_template(
            record["messages"], tools=record["tools"], tokenize=False
        )


def test_markers_are_single_tokens_and_the_end_of_turn_is_eos(family_model: Any) -> None:
    from mlx_lm import load

    family, model = family_model
    chat = FAMILIES[family]
    tokenizer: Any = load(str(model))[1]
    config = json.loads((model / "config.json").read_text())
    eos = tokenizer.convert_tokens_to_ids(chat.eos)
    assert config["eos_token_id"] == eos and set(tokenizer.eos_token_ids) == {eos}
    assert tokenizer.eos_token == chat.eos and tokenizer.bos_token == chat.bos
    for token in chat.added_tokens:
        assert tokenizer.encode(token, add_special_tokens=False) == [tokenizer.convert_tokens_to_ids(token)]
    assert json.loads((model / "tokenizer_config.json").read_text())["chat_template"] == chat.chat_template


def test_the_convention_is_read_from_each_template(family_model: Any) -> None:
    family, _ = family_model
    assert family in CONVENTIONS
    assert detect_convention(FAMILIES[family].chat_template) == family
    assert detect_convention(tokenizer_config(SMALL, family)["chat_template"]) == family


@pytest.mark.parametrize("tool_arguments", ["json_string", "object"])
def test_each_family_writes_its_own_turns(family_model: Any, tool_arguments: str) -> None:
    from transformers import AutoTokenizer

    family, model = family_model
    tokenizer: Any = AutoTokenizer.from_pretrained(model)
    record = render(PARALLEL, "read_file", {"file_path": "b.py"}, RenderConfig(tool_arguments=tool_arguments))
    text = tokenizer.apply_chat_template(record["messages"], tools=record["tools"], tokenize=False)
    assert re.search(r"read_file\(file_path, (limit|offset), (limit|offset)\)", text)  # one-line signatures
    answer = _answer(tokenizer, record)
    expected = {
        HERMES: ('<tool_call>\n{"name": "read_file", "arguments": {"file_path"', "<tool_response>\nx = 1\n"),
        QWEN3_CODER: (
            "<tool_call>\n<function=read_file>\n<parameter=file_path>\nb.py\n",
            "<tool_response>\nx = 1\n",
        ),
        LLAMA3_JSON: (
            '{"name": "read_file", "parameters": {"file_path"',
            "<|start_header_id|>ipython<|end_header_id|>\n\nx = 1\n<|eot_id|>",
        ),
        MISTRAL: (
            '[TOOL_CALLS][{"name": "read_file", "arguments": {"file_path"',
            "[TOOL_RESULTS]x = 1\n[/TOOL_RESULTS]",
        ),
    }[family]
    assert answer.startswith(expected[0]) and expected[1] in text
    if family == MISTRAL:  # both parallel calls in one list, the turn closed by </s>
        assert (
            '[TOOL_CALLS][{"name": "read_file", "arguments": {' in text and '}, {"name": "mcp_lookup"' in text
        )
    if family == LLAMA3_JSON:  # Llama 3.1 keeps only the calls of a turn that makes some
        assert "Reading both." not in text
    else:
        assert "Reading both." in text


def _xml_parameters(text: str) -> dict[str, str]:
    return dict(re.findall(r"<parameter=(.*?)>\n(.*?)\n</parameter>\n", text, re.DOTALL))


HARD_ARGUMENTS = {
    "command": 'echo "a\\b" \t/ done\n',
    "path": "ünï/😀\u2028",
    "limit": 20,
    "ratio": -1.5e3,
    "flag": True,
    "nothing": None,
    "edits": [{"old_string": "}", "new_string": '["x", {"y": "\\"]'}],
    "empty": {},
}


@pytest.mark.parametrize(
    "written",
    [
        pytest.param(json.dumps(HARD_ARGUMENTS, ensure_ascii=False, separators=(",", ":")), id="compact"),
        pytest.param(json.dumps(HARD_ARGUMENTS), id="ascii-escapes-and-spaces"),
        pytest.param(json.dumps(HARD_ARGUMENTS, indent=2), id="indented"),
        pytest.param(HARD_ARGUMENTS, id="object"),
    ],
)
def test_qwen3_coder_writes_json_string_arguments_as_parameters(tmp_path: Path, written: Any) -> None:
    from transformers import AutoTokenizer

    model = build_tiny_model(tmp_path / "tiny", ["x = 1"], SMALL, family=QWEN3_CODER)
    tokenizer: Any = AutoTokenizer.from_pretrained(model)
    call = {"id": "c", "type": "function", "function": {"name": "run", "arguments": written}}
    messages = [{"role": "user", "content": "go"}, {"role": "assistant", "content": "", "tool_calls": [call]}]
    text = tokenizer.apply_chat_template(messages, tokenize=False)
    body = text.split("<function=run>\n", 1)[1].split("</function>", 1)[0]
    parameters = _xml_parameters(body)
    # Members in name order, strings decoded and written raw, other values as their JSON.
    assert list(parameters) == sorted(HARD_ARGUMENTS) or not isinstance(written, dict)
    assert set(parameters) == set(HARD_ARGUMENTS)
    for key, value in HARD_ARGUMENTS.items():
        assert (parameters[key] if isinstance(value, str) else json.loads(parameters[key])) == value, key


def test_the_default_family_is_the_hermes_template() -> None:
    assert tokenizer_config(SMALL)["chat_template"] == CHAT_TEMPLATE == FAMILIES[HERMES].chat_template
    assert tokenizer_config(SMALL)["eos_token"] == "<|im_end|>"


def test_bad_families_and_small_vocabularies_say_what_was_expected(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"family must be one of \['hermes', 'llama3_json', 'mistral'"):
        build_tiny_model(tmp_path / "x", ["x = 1"], SMALL, family="gemma")
    with pytest.raises(ValueError, match="vocab_size must be at least 268 for the mistral family"):
        build_tiny_model(tmp_path / "x", ["x = 1"], TinyModelSpec(vocab_size=263), family=MISTRAL)


def test_cli_builds_a_family(tmp_path: Path, corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(
        ["--out", str(tmp_path / "cli"), "--data", str(corpus), "--family", "llama3_json"]
    )
    assert run(args) == 0
    config = json.loads((tmp_path / "cli" / "tokenizer_config.json").read_text())
    assert config["eos_token"] == "<|eot_id|>" and "chat template: llama3_json" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        parser.parse_args(["--out", "x", "--data", "y", "--family", "gemma"])
