"""The output layer at the target tokens only must be mlx-lm's loss, just cheaper.

Run for real on the bundled tiny model: the loss, its token count and every gradient are compared
with mlx-lm's `default_loss` (prompt masking) and with `turn_loss` (history calls) on the same
batches; a model whose forward pass is more than its output layer over its body keeps mlx-lm's
loss; and `train_adapter` trains the same with the knob on and off.

    .venv/bin/pytest tests/training/test_target_logits.py
"""

from __future__ import annotations

import dataclasses
import json
import types
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.training.small_data import FAST
from tests.training.test_turns import _attempt
from trajectory_pipeline.sample.tiny_model import TinyModelSpec, build_tiny_model
from trajectory_pipeline.training.target_logits import (
    PAD_TO,
    output_split,
    span_mask,
    target_batches,
    target_loss,
    target_positions,
    with_target_logits,
)
from trajectory_pipeline.training.trainer import train_adapter
from trajectory_pipeline.training.turns import AssistantTurns, decision_key, turn_batches, turn_loss


def _lora_model(base_model: Path) -> tuple[Any, Any]:
    from mlx_lm import load
    from mlx_lm.tuner.utils import linear_to_lora_layers

    model, tokenizer = load(str(base_model))[:2]
    model.freeze()
    linear_to_lora_layers(model, 2, {"rank": 4, "scale": 20.0, "dropout": 0.0})
    return model, tokenizer


def _same_loss_and_gradients(model: Any, theirs: tuple[Any, ...], ours: tuple[Any, ...], loss: Any) -> None:
    import mlx.nn as nn
    from mlx.utils import tree_flatten

    (their_loss, their_count), their_grads = nn.value_and_grad(model, loss)(model, *theirs)
    (our_loss, our_count), our_grads = nn.value_and_grad(model, target_loss)(model, *ours)
    assert float(our_count) == float(their_count) > 0
    assert float(our_loss) == pytest.approx(float(their_loss), rel=1e-5)
    theirs_flat, ours_flat = dict(tree_flatten(their_grads)), dict(tree_flatten(our_grads))
    assert theirs_flat.keys() == ours_flat.keys() and theirs_flat
    for name, grad in theirs_flat.items():
        np.testing.assert_allclose(np.array(ours_flat[name]), np.array(grad), rtol=1e-3, atol=1e-6)


def test_the_loss_and_gradients_are_mlx_lms_with_prompt_masking(base_model: Path, data_dir: Path) -> None:
    from mlx_lm.tuner.datasets import CacheDataset, load_dataset
    from mlx_lm.tuner.trainer import default_loss, iterate_batches

    model, tokenizer = _lora_model(base_model)
    args = types.SimpleNamespace(
        data=str(data_dir), train=True, test=False, mask_prompt=True, hf_dataset=None
    )
    train, _, _ = load_dataset(args, tokenizer)
    theirs = next(iterate_batches(CacheDataset(train), 4, 512, seed=0))
    ours = next(target_batches(iterate_batches, spans=True)(CacheDataset(train), 4, 512, seed=0))
    assert (np.array(ours[0]) == np.array(theirs[0])).all()
    assert ours[1].shape[1] < theirs[0].shape[1] - 1  # fewer positions than the sequence: the point
    _same_loss_and_gradients(model, theirs, ours, default_loss)


def test_the_loss_and_gradients_are_turn_losss_with_history_calls(tmp_path: Path) -> None:
    from mlx_lm.tuner.datasets import CacheDataset

    from trajectory_pipeline.schema import canonical_json

    records = [r for s in range(3) for r in _attempt(f"s{s}", 4)]
    model_path = build_tiny_model(tmp_path / "tiny", [canonical_json(r) for r in records], TinyModelSpec())
    model, tokenizer = _lora_model(model_path)
    decisions = frozenset(decision_key(r["messages"], r.get("tools")) for r in records)
    dataset = CacheDataset(AssistantTurns(records, tokenizer, decisions=decisions))
    theirs = next(turn_batches(dataset, 4, 2048, seed=0))
    ours = next(target_batches(turn_batches, spans=False)(dataset, 4, 2048, seed=0))
    _same_loss_and_gradients(model, theirs, ours, turn_loss)


def test_positions_are_padded_to_a_multiple_and_weighted() -> None:
    mask = span_mask(100, np.array([[90, 95], [1, 40], [0, 0]]))
    assert mask[0].nonzero()[0].tolist() == list(range(89, 95))  # offset <= p + 1 <= length
    positions, weights = target_positions(mask)
    assert positions.shape == (3, 2 * PAD_TO)  # the longest row, 40 targets, rounded up
    assert weights.sum(axis=1).tolist() == [6, 40, 0]
    assert positions[0, :6].tolist() == list(range(89, 95)) and not positions[0, 6:].any()
    short, _ = target_positions(np.ones((2, 10), np.float32))
    assert short.shape == (2, 10)  # never wider than the sequence


def test_a_model_that_is_not_head_over_body_keeps_mlx_lms_loss(base_model: Path) -> None:
    import mlx.nn as nn
    from mlx_lm import load

    inner = load(str(base_model))[0]

    class SoftCapped(nn.Module):  # a forward pass that does more than its output layer
        def __init__(self) -> None:
            super().__init__()
            self.model = inner.model

        def __call__(self, tokens: Any) -> Any:
            return 30.0 * nn.tanh(inner(tokens) / 30.0)

    assert output_split(inner) is not None
    routines, note = with_target_logits({}, SoftCapped())
    assert routines == {} and note is not None and "every position" in note
    routines, note = with_target_logits({}, inner)
    assert routines["loss"] is target_loss and note is None


def test_training_is_the_same_with_and_without_it(base_model: Path, data_dir: Path, tmp_path: Path) -> None:
    on = train_adapter(base_model, data_dir, tmp_path / "on", FAST)
    without = dataclasses.replace(FAST, target_logits=False)
    off = train_adapter(base_model, data_dir, tmp_path / "off", without)
    assert on.target_logits and not off.target_logits and on.target_logits_note is None
    assert on.tokens == off.tokens
    val_on, val_off = (
        [row["val_loss"] for row in result.losses if row.get("val_loss") is not None] for result in (on, off)
    )
    assert len(val_on) == len(val_off) > 1
    assert val_on[0] == pytest.approx(val_off[0], rel=1e-5)  # the base weights score the same
    assert val_on == pytest.approx(val_off, rel=1e-2)  # and training follows the same path
    config = json.loads((tmp_path / "on" / "adapter_config.json").read_text())
    assert config["target_logits"] is True
