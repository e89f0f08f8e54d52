"""Model families round-trip: in each tool-call family of the tiny model (hermes, qwen3_coder,
llama3_json, mistral), records rendered by `render` train an adapter with `train_adapter`, and the
replay eval with constrained decoding gets from every case exactly one call of an offered tool in
that family's own convention, which is the one read from the chat template. At string level, each
family's grammar accepts the family's own rendering of a real target call and rejects the other
families'. Also the answer parser's fixes these families needed."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.evaluation.test_replay import _history, _rows
from trajectory_pipeline.dataset.render import RenderConfig, render
from trajectory_pipeline.evaluation.answers import parse_answer
from trajectory_pipeline.evaluation.constrained import detect_convention, grammar_accepts, tool_call_processor
from trajectory_pipeline.evaluation.replay import ReplayConfig, evaluate_model, loaded_model, select_cases
from trajectory_pipeline.evaluation.scoring import score_call
from trajectory_pipeline.sample.chat_templates import FAMILIES, HERMES, LLAMA3_JSON, MISTRAL, QWEN3_CODER
from trajectory_pipeline.sample.tiny_model import TinyModelSpec, build_tiny_model
from trajectory_pipeline.schema import canonical_json
from trajectory_pipeline.training.trainer import TrainConfig, train_adapter

SMALL = TinyModelSpec(layers=1, hidden_size=32, heads=2, kv_heads=1, intermediate_size=64, vocab_size=400)
# The convention parse_answer reports for each family's calls (Llama's JSON has no marker).
PARSED_AS = {HERMES: "hermes", QWEN3_CODER: "qwen3_coder", LLAMA3_JSON: "bare_json", MISTRAL: "mistral"}
FAST = TrainConfig(
    iters=4,
    batch_size=2,
    learning_rate=1e-3,
    num_layers=-1,
    steps_per_report=2,
    steps_per_eval=4,
    val_batches=1,
    save_every=100,
)
READ = ("read_file", {"file_path": "src/a.py", "limit": 20})


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A tiny model per family, its tokenizer trained on the replay test rows' records."""
    texts = list(_rows()["record"])
    return {
        family: build_tiny_model(tmp_path_factory.mktemp(family) / "model", texts, SMALL, family=family)
        for family in FAMILIES
    }


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_render_train_and_constrained_replay_round_trip(
    models: dict[str, Path], family: str, tmp_path: Path
) -> None:
    model = models[family]
    rows = _rows()
    data = tmp_path / "data"
    data.mkdir()
    (data / "train.jsonl").write_text("".join(f"{r}\n" for r in rows[rows["split"] == "train"]["record"]))
    (data / "valid.jsonl").write_text("".join(f"{r}\n" for r in rows[rows["split"] == "test"]["record"][:2]))
    trained = train_adapter(model, data, tmp_path / "adapter", FAST)
    assert trained.iterations == FAST.iters and math.isfinite(trained.last_val_loss or math.nan)

    cases = select_cases(rows, ReplayConfig(holdout_cases=6, seen_exact_cases=3, seen_variant_cases=0))
    with loaded_model(model, tmp_path / "adapter") as (_, tokenizer):
        assert detect_convention(tokenizer.chat_template) == family
        assert tool_call_processor(tokenizer, cases[0].tools).convention == family
    # Room for the longest call here (edit_file's three strings take ~64 tokens in 400 tokens).
    config = ReplayConfig(max_tokens=96)  # decoding "constrained" by default
    results, timing = evaluate_model(
        model, tmp_path / "adapter", cases, config, model_name="tuned", adapter_id="a"
    )
    assert len(results) == len(cases) and timing.extra["constraint_seconds"] > 0
    assert results["parsed"].all() and (results["calls"] == 1).all(), results["raw_text"].tolist()
    for case, text in zip(cases, results["raw_text"], strict=True):
        (call,) = parse_answer(text, case.tools).calls
        assert call.convention == PARSED_AS[family], text
        assert call.name in {tool["function"]["name"] for tool in case.tools or []}, text


def _target_text(tokenizer: Any, record: dict[str, Any]) -> str:
    """The family's rendering of the record's target call: the training text after the
    generation prompt, up to the end-of-turn token."""
    full = tokenizer.apply_chat_template(record["messages"], tools=record["tools"], tokenize=False)
    prompt = tokenizer.apply_chat_template(
        record["messages"][:-1], tools=record["tools"], add_generation_prompt=True, tokenize=False
    )
    assert full.startswith(prompt)
    return str(full[len(prompt) :].split(tokenizer.eos_token)[0])


@pytest.mark.parametrize("family", sorted(FAMILIES))
@pytest.mark.parametrize("tool_arguments", ["json_string", "object"])
def test_the_grammar_accepts_the_familys_rendering_of_a_target_call(
    models: dict[str, Path], family: str, tool_arguments: str
) -> None:
    from transformers import AutoTokenizer

    # As train.jsonl holds it: canonical JSON, so an object's keys are in name order too.
    rendered = render(_history("s", 2), *READ, RenderConfig(tool_arguments=tool_arguments))
    record = orjson.loads(canonical_json(rendered))
    texts = {name: _target_text(AutoTokenizer.from_pretrained(path), record) for name, path in models.items()}
    with loaded_model(models[family]) as (_, tokenizer):
        assert grammar_accepts(tokenizer, record["tools"], texts[family])
        for other, text in texts.items():
            if other != family:
                assert not grammar_accepts(tokenizer, record["tools"], text), (other, text)
    # What the grammar accepts, the answer parser reads back as the target call, typed.
    (call,) = parse_answer(texts[family], record["tools"]).calls
    assert (call.name, call.arguments, call.convention) == (*READ, PARSED_AS[family])


QWEN3_READ = (
    "<tool_call>\n<function=read_file>\n<parameter=file_path>\nsrc/a.py\n</parameter>\n"
    "<parameter=limit>\n{limit}\n</parameter>\n</function>\n</tool_call>"
)


def test_qwen3_coder_values_take_their_schema_types_from_the_tools() -> None:
    record = render(_history("s", 1), *READ)
    (typed,) = parse_answer(QWEN3_READ.format(limit=20), record["tools"]).calls
    assert typed.arguments == READ[1]
    (untyped,) = parse_answer(QWEN3_READ.format(limit=20)).calls  # no tools: strings
    assert untyped.arguments == {"file_path": "src/a.py", "limit": "20"}
    # A value its type cannot read keeps the call, untyped.
    (odd,) = parse_answer(QWEN3_READ.format(limit="twenty"), record["tools"]).calls
    assert odd.arguments["limit"] == "twenty"


def test_llama_python_tag_opens_a_json_call() -> None:
    answer = parse_answer(
        '<|python_tag|>{"name": "read_file", "parameters": {"file_path": "src/a.py", "limit": 20}}'
    )
    assert [(c.name, c.arguments) for c in answer.calls] == [READ]
    assert answer.starts_with_json and not answer.thinking_preamble


def test_integers_beyond_64_bits_are_kept_and_scored() -> None:
    big, huge = 2**70, 10**400
    answer = parse_answer(
        f'{{"name": "run_shell", "parameters": {{"command": "x", "n": [{big}, {huge}, -{huge}, 7]}}}}'
    )
    (call,) = answer.calls
    assert call.arguments["n"] == [big, huge, -huge, 7]
    score = score_call((call.name, call.arguments), "run_shell", {"command": "x"}, source="own_agent")
    assert score.passed and not score.exact_match
