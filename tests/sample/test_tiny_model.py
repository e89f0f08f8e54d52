"""The bundled tiny model is what every MLX test and the demo train on: it must load with mlx-lm,
render our `tools` records through its chat template, generate, and rebuild byte for byte."""

from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from trajectory_pipeline.dataset.render import RenderConfig, render
from trajectory_pipeline.sample.tiny_model import (
    FILES,
    TinyModelSpec,
    add_arguments,
    build_tiny_model,
    built_from,
    corpus_texts,
    run,
)

SMALL = TinyModelSpec(layers=1, hidden_size=32, heads=2, kv_heads=1, intermediate_size=64, vocab_size=512)

HISTORY: list[dict[str, Any]] = [
    {"role": "system", "content": "You are a coding agent."},
    {"role": "user", "content": "Fix the failing test in utils.py"},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": "c1", "name": "read_file", "arguments": {"file_path": "utils.py"}}],
    },
    {
        "role": "tool",
        "tool_call_id": "c1",
        "name": "read_file",
        "content": "def add(a, b):\n    return a - b\n",
    },
]
TARGET = ("edit_file", {"file_path": "utils.py", "old_string": "a - b", "new_string": "a + b"})


def _records(tool_arguments: str = "json_string") -> list[dict[str, Any]]:
    config = RenderConfig(tool_arguments=tool_arguments)
    first = render(HISTORY, *TARGET, config)
    second = render(HISTORY[:2], "grep_files", {"pattern": "def add"}, config)
    third = render(HISTORY[:2], "run_shell", {"command": "pytest -q tests/test_utils.py"}, config)
    return [first, second, third]


def _write_jsonl(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    return path


def _digests(folder: Path) -> dict[str, str]:
    return {name: hashlib.sha256((folder / name).read_bytes()).hexdigest() for name in FILES}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("data")
    _write_jsonl(folder / "train.jsonl", _records() * 3 + _records("object"))
    return folder


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory, corpus: Path) -> Path:
    out = tmp_path_factory.mktemp("model") / "tiny"
    return build_tiny_model(out, corpus_texts([corpus / "train.jsonl"]), SMALL)


def test_writes_the_files_privately_with_a_qwen2_config(tiny: Path) -> None:
    assert sorted(p.name for p in tiny.iterdir()) == sorted(FILES)
    assert tiny.stat().st_mode & 0o777 == 0o700
    assert all((tiny / name).stat().st_mode & 0o777 == 0o600 for name in FILES)
    config = json.loads((tiny / "config.json").read_text())
    assert config["model_type"] == "qwen2"
    assert (config["num_hidden_layers"], config["hidden_size"], config["num_key_value_heads"]) == (1, 32, 1)
    assert 263 <= config["vocab_size"] <= SMALL.vocab_size


def test_mlx_lm_loads_it_and_generates(tiny: Path) -> None:
    import mlx_lm

    model, tokenizer = mlx_lm.load(str(tiny))[:2]
    assert tokenizer.eos_token == "<|im_end|>"
    assert tokenizer.has_tool_calling  # mlx-lm infers its json_tools parser from the template
    assert len(model.layers) == 1
    record = _records()[0]
    prompt = tokenizer.apply_chat_template(
        record["messages"][:-1], tools=record["tools"], add_generation_prompt=True
    )
    text = mlx_lm.generate(model, tokenizer, prompt, max_tokens=5)
    assert isinstance(text, str)


@pytest.mark.parametrize("tool_arguments", ["json_string", "object"])
def test_chat_template_renders_tools_calls_and_results(tiny: Path, tool_arguments: str) -> None:
    from transformers import AutoTokenizer

    tokenizer: Any = AutoTokenizer.from_pretrained(tiny)
    record = _records(tool_arguments)[0]
    text = tokenizer.apply_chat_template(record["messages"], tools=record["tools"], tokenize=False)
    assert text.startswith("<|im_start|>system\nYou are a coding agent.\n\n# Tools\n")
    function = record["tools"][0]["function"]
    signature = f"{function['name']}({', '.join(function['parameters']['properties'])})"
    assert f"<tools>\n{signature}\n" in text  # one line per tool, not its JSON schema
    assert (
        "<|im_start|>user\n<tool_response>\ndef add(a, b):\n    return a - b\n\n</tool_response><|im_end|>\n"
        in text
    )
    target = text.rsplit("<|im_start|>assistant\n", 1)[1]
    assert target.startswith("<tool_call>\n") and target.endswith("\n</tool_call><|im_end|>\n")
    call = json.loads(target.removeprefix("<tool_call>\n").removesuffix("\n</tool_call><|im_end|>\n"))
    assert call == {"name": TARGET[0], "arguments": TARGET[1]}
    # Tokens round-trip, the tags included (they are added tokens, not special ones).
    ids = tokenizer.apply_chat_template(record["messages"], tools=record["tools"], return_dict=False)
    assert tokenizer.decode(ids) == text
    assert tokenizer.convert_tokens_to_ids("<tool_call>") in ids
    prompt = tokenizer.apply_chat_template(
        record["messages"][:-1], tools=record["tools"], add_generation_prompt=True, tokenize=False
    )
    assert isinstance(prompt, str)
    assert text.startswith(prompt) and prompt.endswith("<|im_start|>assistant\n")


def test_mlx_lm_chat_dataset_masks_the_prompt_of_a_tools_record(tiny: Path) -> None:
    from mlx_lm import load
    from mlx_lm.tuner.datasets import ChatDataset

    tokenizer: Any = load(str(tiny))[1]
    record = _records()[0]
    tokens, offset = ChatDataset([record], tokenizer, mask_prompt=True).process(record)
    prompt = tokenizer.apply_chat_template(
        record["messages"][:-1], tools=record["tools"], add_generation_prompt=True
    )
    assert 0 < offset < len(tokens) and tokens[:offset] == prompt
    assert tokenizer.decode(tokens[offset:]).startswith("<tool_call>\n")


def test_rebuilds_byte_for_byte_whatever_the_text_order(tmp_path: Path, corpus: Path, tiny: Path) -> None:
    texts = list(corpus_texts([corpus / "train.jsonl"]))
    again = build_tiny_model(tmp_path / "again", reversed(texts), SMALL)
    assert _digests(again) == _digests(tiny)
    reseeded = build_tiny_model(tmp_path / "reseeded", texts, TinyModelSpec(**{**SMALL.__dict__, "seed": 1}))
    digests = _digests(reseeded)
    assert digests["model.safetensors"] != _digests(tiny)["model.safetensors"]
    assert digests["tokenizer.json"] == _digests(tiny)["tokenizer.json"]


def test_built_from_tells_a_model_kept_from_another_build(tmp_path: Path, corpus: Path, tiny: Path) -> None:
    """The demo keeps its learned base only while the builder would write the same tokenizer and
    config: a base from before the spec or the tokenizer's training changed is built again."""
    texts = list(corpus_texts([corpus / "train.jsonl"]))
    assert built_from(tiny, texts, SMALL)
    assert not built_from(tiny, texts, TinyModelSpec(**{**SMALL.__dict__, "layers": 2}))
    assert not built_from(tiny, [*texts, "another corpus's text, another corpus's text"], SMALL)
    assert not built_from(tmp_path / "missing", texts, SMALL)


def test_corpus_texts_are_the_records_as_the_model_reads_them(corpus: Path, tiny: Path) -> None:
    from mlx_lm import load

    tokenizer: Any = load(str(tiny))[1]
    texts = list(corpus_texts([corpus / "train.jsonl"]))
    records = _records() * 3 + _records("object")
    assert texts == [
        tokenizer.apply_chat_template(record["messages"], tools=record["tools"], tokenize=False)
        for record in records
    ]
    assert '{"name": "grep_files", "arguments": {"pattern":"def add"}}' in texts[1]
    assert '{"name": "grep_files", "arguments": {"pattern": "def add"}}' in texts[-2]  # object arguments


def test_corpus_texts_read_completions_and_text_records_as_mlx_lm_does(tmp_path: Path, tiny: Path) -> None:
    from mlx_lm import load
    from mlx_lm.tuner.datasets import CompletionsDataset

    tokenizer: Any = load(str(tiny))[1]
    completion = {
        "prompt": "Fix utils.py",
        "completion": '{"name": "read_file"}',
        "tools": _records()[0]["tools"],
    }
    data = _write_jsonl(tmp_path / "mixed.jsonl", [completion, {"text": "plain text"}])
    rendered, text = corpus_texts([data])
    dataset = CompletionsDataset([completion], tokenizer, "prompt", "completion", mask_prompt=False)
    tokens, _ = dataset.process(completion)
    assert tokenizer.encode(rendered, add_special_tokens=False) == tokens and text == "plain text"


def test_the_tokenizer_mlx_lm_loads_splits_text_as_it_was_trained(tmp_path: Path, corpus: Path) -> None:
    """transformers loads a qwen2 model's tokenizer as Qwen2Tokenizer, with its own split (a digit a
    piece, punctuation joined to the word after it): the merges must have been learned on the same
    pieces, or they apply to other text than they were learned on."""
    from mlx_lm import load
    from tokenizers import Tokenizer

    log = "exit 1 after 2024 tests in 12.5s: /home/user/src/app.py"
    model = build_tiny_model(tmp_path / "tiny", [*corpus_texts([corpus / "train.jsonl"]), *[log] * 20], SMALL)
    loaded: Any = load(str(model))[1]
    trained = Tokenizer.from_file(str(model / "tokenizer.json"))
    record = _records()[0]
    text = loaded.apply_chat_template(record["messages"], tools=record["tools"], tokenize=False)
    for sample in (text, log, "café\n\n  x"):
        assert loaded.encode(sample, add_special_tokens=False) == trained.encode(sample).ids
    assert len(trained.encode(log).ids) < len(log) // 2  # merges learned, not bytes


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"layers": 0}, "layers must be a positive integer, got 0"),
        ({"hidden_size": 30, "heads": 4}, "multiple of heads with an even head size"),
        ({"heads": 4, "kv_heads": 3}, "kv_heads must divide heads, got kv_heads=3, heads=4"),
        ({"vocab_size": 100}, "vocab_size must be at least 263"),
        ({"seed": -1}, "seed must be a non-negative integer, got -1"),
    ],
)
def test_bad_specs_say_what_was_expected(changes: dict[str, int], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        TinyModelSpec(**changes)


def test_bad_inputs_say_what_was_expected(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="needs corpus texts"):
        build_tiny_model(tmp_path / "empty", [], SMALL)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"messages": []}\n{"question": "?"}\n')
    with pytest.raises(ValueError, match=r"bad\.jsonl:2: expected an mlx-lm record"):
        list(corpus_texts([bad]))
    bad.write_text("not json\n")
    with pytest.raises(ValueError, match=r"bad\.jsonl:1: expected one JSON record per line"):
        list(corpus_texts([bad]))


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser.parse_args(argv)


def test_cli_builds_from_a_data_directory(
    tmp_path: Path, corpus: Path, tiny: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flags = ["--layers", "1", "--hidden-size", "32", "--heads", "2", "--kv-heads", "1"]
    flags += ["--intermediate-size", "64", "--vocab-size", "512"]
    args = _parse(["--out", str(tmp_path / "cli"), "--data", str(corpus), *flags])
    assert run(args) == 0
    assert _digests(tmp_path / "cli") == _digests(tiny)
    assert "model.safetensors" in capsys.readouterr().out
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question": "?"}\n')
    for data, message in [
        (tmp_path / "missing", r"expected an mlx-lm data directory or a .jsonl file"),
        (tmp_path / "cli", r"without train.jsonl"),
        (bad, r"bad.jsonl:1: expected an mlx-lm record"),
    ]:
        assert run(_parse(["--out", str(tmp_path / "x"), "--data", str(data)])) == 2
        error = capsys.readouterr().err
        assert error.startswith("trajectory-pipeline tiny-model: ") and message in error
        assert "Traceback" not in error and error.count("\n") == 1
    assert run(_parse(["--out", str(tmp_path / "x"), "--data", str(corpus), "--layers", "0"])) == 2
    assert "layers must be a positive integer, got 0" in capsys.readouterr().err
