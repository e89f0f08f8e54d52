"""Training on every call of a record (`history_calls`): the calls in a history are decisions too, so
one pass over an attempt's last record teaches all of its calls, and validation still scores the
decision alone, exactly as mlx-lm's prompt masking does."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import mlx.core as mx
import numpy as np
import pytest
from mlx_lm import load
from mlx_lm.tuner.datasets import ChatDataset
from mlx_lm.tuner.trainer import default_loss, iterate_batches

from trajectory_pipeline.dataset.mlx_data import write_mlx_dataset
from trajectory_pipeline.dataset.render import RenderConfig, render
from trajectory_pipeline.sample.tiny_model import TinyModelSpec, build_tiny_model
from trajectory_pipeline.schema import canonical_json
from trajectory_pipeline.training.trainer import TrainConfig, train_adapter
from trajectory_pipeline.training.turns import (
    AssistantTurns,
    decision_key,
    turn_batches,
    turn_loss,
    uncovered,
)


def _attempt(session: str, calls: int) -> list[dict[str, Any]]:
    """The records of one attempt: decision k reads src/m{k}.py after the reads before it."""
    records = []
    for step in range(calls):
        history: list[dict[str, Any]] = [
            {"role": "system", "content": "You are a coding agent."},
            {"role": "user", "content": f"Fix the failing test in {session}."},
        ]
        for done in range(step):
            call = {
                "id": f"{session}-{done}",
                "name": "read_file",
                "arguments": {"file_path": f"src/m{done}.py"},
            }
            history.append({"role": "assistant", "content": "", "tool_calls": [call]})
            history.append(
                {"role": "tool", "tool_call_id": call["id"], "name": "read_file", "content": f"x = {done}"}
            )
        records.append(render(history, "read_file", {"file_path": f"src/m{step}.py"}, RenderConfig()))
    return records


@pytest.fixture(scope="module")
def tokenizer_and_model(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Path]:
    texts = [canonical_json(r) for s in range(3) for r in _attempt(f"s{s}", 4)]
    model = build_tiny_model(tmp_path_factory.mktemp("model") / "tiny", texts, TinyModelSpec(vocab_size=400))
    return load(str(model))[1], model


def test_only_the_last_decision_of_an_attempt_is_kept() -> None:
    first, second = _attempt("a", 4), _attempt("b", 2)
    kept = uncovered([*first, *second])
    assert kept == [first[-1], second[-1]]


def test_every_assistant_turn_is_a_target(tokenizer_and_model: tuple[Any, Path]) -> None:
    tokenizer, _ = tokenizer_and_model
    record = _attempt("a", 4)[-1]
    decisions = frozenset(decision_key(r["messages"], r.get("tools")) for r in _attempt("a", 4))
    tokens, spans = AssistantTurns([record], tokenizer, decisions=decisions).process(record)
    assert len(spans) == 4  # three calls in the history, then the decision
    for start, end in spans:
        turn = tokenizer.decode(tokens[start:end])
        assert turn.startswith("<tool_call>") and '"read_file"' in turn


def test_a_call_that_is_no_decision_is_no_target(tokenizer_and_model: tuple[Any, Path]) -> None:
    """A history can hold a call that is no decision to learn (a refused one, say): not a target."""
    tokenizer, _ = tokenizer_and_model
    records = _attempt("a", 4)
    decisions = frozenset(decision_key(r["messages"], r.get("tools")) for r in records if r is not records[1])
    _, spans = AssistantTurns(records[-1:], tokenizer, decisions=decisions).process(records[-1])
    assert len(spans) == 3


def test_the_decision_alone_is_what_mask_prompt_trains_on(tokenizer_and_model: tuple[Any, Path]) -> None:
    """`last_only` gives mlx-lm's own tokens and targets. (mlx-lm's mask also takes the padding
    position after each sequence's last token, `steps <= lengths`; ours stops at the last token.)"""
    tokenizer, model_dir = tokenizer_and_model
    records = _attempt("a", 4)
    ours = AssistantTurns(records, tokenizer, last_only=True)
    theirs = ChatDataset(records, tokenizer, mask_prompt=True)
    for record in records:
        tokens, spans = ours.process(record)
        their_tokens, offset = theirs.process(record)
        assert tokens == list(their_tokens) and spans == [(offset, len(tokens))]
    model = load(str(model_dir))[0]
    cached = [ours.process(r) for r in records]
    their_cached = [theirs.process(r) for r in records]
    ours_batch = next(turn_batches(cached, 4, 2048, seed=0))
    theirs_batch = next(iterate_batches(their_cached, 4, 2048, seed=0))
    assert (np.array(ours_batch[0]) == np.array(theirs_batch[0])).all()
    ours_loss, ours_count = turn_loss(model, *ours_batch)
    theirs_loss, theirs_count = default_loss(model, *theirs_batch)
    assert int(ours_count) == int(theirs_count) - len(records)
    assert np.isfinite(float(ours_loss)) and np.isfinite(float(theirs_loss))


def test_training_on_history_calls_runs_and_keeps_the_decision_loss(
    tokenizer_and_model: tuple[Any, Path], tmp_path: Path
) -> None:
    import pandas as pd

    rows = []
    for s in range(6):
        for step, record in enumerate(_attempt(f"s{s}", 3)):
            split = "train" if s < 4 else ("valid" if s == 4 else "test")
            rows.append(
                {
                    "decision_id": f"s{s}-{step}",
                    "split": split,
                    "target_name": "read_file",
                    "record": canonical_json(record),
                }
            )
    write_mlx_dataset(pd.DataFrame(rows), tmp_path / "data", batch_size=2)
    config = TrainConfig(
        fine_tune_type="lora",
        num_layers=-1,
        iters=6,
        batch_size=2,
        learning_rate=1e-3,
        steps_per_report=2,
        steps_per_eval=3,
        val_batches=-1,
        history_calls=True,
    )
    _, model_dir = tokenizer_and_model
    result = train_adapter(model_dir, tmp_path / "data", tmp_path / "adapter", config)
    assert result.iterations == 6 and np.isfinite(result.last_val_loss)
    assert (tmp_path / "adapter" / "adapters.safetensors").exists()
    lines = (tmp_path / "data" / "train.jsonl").read_text().splitlines()
    assert len(uncovered([json.loads(line) for line in lines])) == 4  # one record per attempt


def test_history_calls_need_prompt_masking() -> None:
    with pytest.raises(ValueError, match="needs mask_prompt"):
        TrainConfig(history_calls=True, mask_prompt=False)


def test_a_template_that_renders_turns_differently_is_refused(tokenizer_and_model: tuple[Any, Path]) -> None:
    from trajectory_pipeline.training.turns import TemplateError

    tokenizer, _ = tokenizer_and_model

    class Shifty:
        """A template whose every rendering starts with the number of messages it got."""

        def apply_chat_template(self, messages: list[Any], **kwargs: Any) -> list[int]:
            return [len(messages), *tokenizer.apply_chat_template(messages, **kwargs)]

    records = _attempt("a", 2)
    decisions = frozenset(decision_key(r["messages"], r.get("tools")) for r in records)
    with pytest.raises(TemplateError, match="history_calls off"):
        AssistantTurns(records[-1:], Shifty(), decisions=decisions).process(records[-1])
    assert mx.array([1]).item() == 1
