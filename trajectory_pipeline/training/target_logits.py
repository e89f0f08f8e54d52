"""The output layer at the target tokens only: mlx-lm's loss, without the logits it multiplies by zero.

mlx-lm's `default_loss` runs the whole model, output layer included, at every position of every
sequence, then masks the prompt out of the cross-entropy. With `mask_prompt` the targets are a short
tail of each record (a decision is tens of tokens after a prompt of hundreds), so most of the output
layer's work, and most of the training step's memory (batch x length x vocabulary logits: gigabytes
for a 150k-token vocabulary at 2,048 tokens), goes to numbers nobody reads. Here the batch iterator
lists each sequence's target positions, padded to a multiple of `PAD_TO` (so a compiled step sees
few shapes), and the loss runs the model's body over the whole sequence, as before, and its output
layer at those positions alone. Loss, token count and gradients are the same up to float rounding:
the prompt still conditions every target through attention, only the unread logits are gone.

    routines = with_target_logits(routines, model)   # mlx-lm's `loss` and `iterate_batches` for train()
    train(model=model, ..., **routines)

The model is split into body and output layer as mlx-lm's causal models are laid out (`model.model`,
then `lm_head`, or the tied `embed_tokens.as_linear`), and the split is checked on a probe input
against the model's own forward pass: an architecture whose forward does more (logit soft-capping, a
scale) fails the check and keeps mlx-lm's loss, and `with_target_logits` says so.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, cast

import numpy as np

PAD_TO = 32  # target positions per sequence are padded to a multiple of this (mlx-lm pads lengths alike)
_PROBE = [[1, 2, 3, 4, 5, 6, 7, 8]]


def _layout(model: Any) -> tuple[Any, Callable[[Any], Any]] | None:
    """mlx-lm's causal-model layout: the body `model.model`, then `lm_head` or the tied embedding."""
    body = getattr(model, "model", None)
    head = getattr(model, "lm_head", None)
    if head is None:
        head = getattr(getattr(body, "embed_tokens", None), "as_linear", None)
    return None if body is None or head is None else (body, head)


def output_split(model: Any) -> tuple[Any, Callable[[Any], Any]] | None:
    """The model's body (tokens to final hidden states) and output layer (hidden states to logits),
    or None when the model is not laid out so or its forward pass is not exactly head(body(tokens))."""
    import mlx.core as mx

    layout = _layout(model)
    if layout is None:
        return None
    body, head = layout
    probe = mx.array(_PROBE)
    try:
        expected, split = model(probe), head(body(probe))
    except (TypeError, ValueError, AttributeError):
        return None
    if expected.shape != split.shape or not mx.allclose(expected, split, rtol=1e-4, atol=1e-4).item():
        return None
    return body, head


def target_loss(model: Any, tokens: Any, positions: Any, weights: Any) -> tuple[Any, Any]:
    """Mean cross-entropy over the target tokens (mlx-lm's `default_loss`), logits only at `positions`.

    `positions` (batch x k) index the shifted targets, `tokens[:, 1:]`; `weights` is 1 at a real
    target and 0 at padding."""
    import mlx.core as mx
    import mlx.nn as nn

    body, head = cast("tuple[Any, Callable[[Any], Any]]", _layout(model))  # checked by output_split
    hidden = body(tokens[:, :-1])
    logits = head(mx.take_along_axis(hidden, positions[..., None], axis=1))
    targets = mx.take_along_axis(tokens[:, 1:], positions, axis=1)
    losses = nn.losses.cross_entropy(logits, targets) * weights
    count = weights.sum()
    return losses.astype(mx.float32).sum() / count, count


def target_positions(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's target positions (the indices where `mask`, batch x length, is non-zero), padded
    with position 0 at weight 0 to a common width: the most targets of any row, rounded up to a
    multiple of PAD_TO and at most the length."""
    rows = [np.flatnonzero(row) for row in mask]
    most = max((len(row) for row in rows), default=0)
    width = min(max(PAD_TO, -(-most // PAD_TO) * PAD_TO), mask.shape[1])
    positions = np.zeros((len(rows), width), np.int32)
    weights = np.zeros((len(rows), width), np.float32)
    for index, row in enumerate(rows):
        positions[index, : len(row)] = row
        weights[index, : len(row)] = mask[index, row]
    return positions, weights


def span_mask(width: int, lengths: np.ndarray) -> np.ndarray:
    """mlx-lm's `default_loss` mask as an array: position p (predicting token p + 1) is a target when
    offset <= p + 1 <= length, for each row's (offset, length)."""
    steps = np.arange(1, width + 1)[None, :]
    return ((steps >= lengths[:, 0:1]) & (steps <= lengths[:, 1:2])).astype(np.float32)


def target_batches(
    iterate_batches: Callable[..., Iterator[Any]], spans: bool
) -> Callable[..., Iterator[Any]]:
    """`iterate_batches` with each batch's second array, mlx-lm's (offset, length) pairs when `spans`,
    else a target mask aligned with the shifted targets (turns.py), turned into (positions, weights)."""
    import mlx.core as mx

    def iterate(*args: Any, **kwargs: Any) -> Iterator[Any]:
        for tokens, extra in iterate_batches(*args, **kwargs):
            width = tokens.shape[1] - 1
            mask = span_mask(width, np.array(extra)) if spans else np.array(extra)
            positions, weights = target_positions(mask)
            yield tokens, mx.array(positions), mx.array(weights)

    return iterate


def with_target_logits(routines: dict[str, Any], model: Any) -> tuple[dict[str, Any], str | None]:
    """mlx-lm `train`/`evaluate` keyword arguments that compute logits at the targets only, from the
    ones `training_sets` gave (mlx-lm's own when empty); unchanged, with the reason, when the model's
    forward pass cannot be split into body and output layer."""
    from mlx_lm.tuner.trainer import iterate_batches

    if output_split(model) is None:
        return routines, (
            f"{type(model).__module__}.{type(model).__name__}: its forward pass is not its output layer "
            "over its body's hidden states, so training computes logits at every position (mlx-lm's loss)"
        )
    # mlx-lm's batches carry (offset, length) pairs; turns.py's, with its own loss, a target mask.
    batches = target_batches(routines.get("iterate_batches", iterate_batches), spans="loss" not in routines)
    return {"loss": target_loss, "iterate_batches": batches}, None
