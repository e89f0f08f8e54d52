"""Training on every call of a record, not only its last: the assistant turns of agent histories.

A rendered record is one decision: the history before a tool call, then the call. mlx-lm's
`mask_prompt` trains on that last call alone, so an attempt of six calls is six records whose
histories repeat each other, and a step spends most of its tokens on prompts it does not learn
from. The calls in a record's history are decisions of the same attempt, made on the same
context (the history before them), so they can be learned from the same forward pass: this
module marks the tokens of every assistant turn that is itself one of the window's training
decisions as targets (a refused call in a history is not), and keeps only the records that no
other record of the window holds whole (the last decision of each attempt, when the history budget
holds the attempt and the history keeps only calls and results: `DecisionConfig.agent_text` off).
On the sample corpus that is about five times the decisions per token.

    decisions = frozenset(decision_key(r["messages"], r.get("tools")) for r in records)
    dataset = AssistantTurns(uncovered(records), tokenizer, decisions=decisions)  # (tokens, spans)
    train(..., train_dataset=CacheDataset(dataset), loss=turn_loss, iterate_batches=turn_batches)

Validation keeps scoring the decision alone (`AssistantTurns(..., last_only=True)`), so a
validation loss means the same with and without this mode. It needs a chat template that renders
a conversation's earlier turns as a prefix of the whole (what `mask_prompt` already relies on for
the last turn); a template that does not is refused with the record that shows it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

Record = dict[str, Any]
PAD_TO = 32  # mlx-lm pads a batch to one plus a multiple of this


class TemplateError(ValueError):
    """The chat template renders an earlier turn differently inside the whole conversation."""


def _comparable(message: dict[str, Any]) -> dict[str, Any]:
    """A message without the ids the chat template never renders (a call's id, a result's link)."""
    kept = {key: value for key, value in message.items() if key not in ("tool_call_id",)}
    if "tool_calls" in kept:
        kept["tool_calls"] = [{k: v for k, v in call.items() if k != "id"} for call in kept["tool_calls"]]
    return kept


def decision_key(messages: Sequence[dict[str, Any]], tools: Any = None) -> str:
    """What identifies a decision: its messages (the target last) without ids, and its tools."""
    return repr(([_comparable(m) for m in messages], tools))


def uncovered(records: Sequence[Record]) -> list[Record]:
    """The records whose messages are not the beginning of another record's (with the same tools):
    what remains holds every call once, with the longest history the window kept for it."""
    keys = [([_comparable(m) for m in record["messages"]], record.get("tools")) for record in records]
    by_start: dict[str, list[int]] = defaultdict(list)
    for index, (messages, _) in enumerate(keys):
        by_start[repr(messages[:2])].append(index)  # the system prompt and the instruction
    kept = []
    for index, (messages, tools) in enumerate(keys):
        covered = any(
            other != index
            and len(keys[other][0]) > len(messages)
            and keys[other][1] == tools
            and keys[other][0][: len(messages)] == messages
            for other in by_start[repr(messages[:2])]
        )
        if not covered:
            kept.append(records[index])
    return kept


class AssistantTurns:
    """Records as (tokens, target spans): the assistant turns that are decisions of `decisions`
    (`decision_key`s: the window's training records; a history also holds calls that are no
    decision to learn, such as a refused one) are targets, or the last turn alone with
    `last_only`. Indexable as mlx-lm's datasets are, for its `CacheDataset`."""

    def __init__(
        self,
        records: Sequence[Record],
        tokenizer: Any,
        *,
        decisions: frozenset[str] = frozenset(),
        last_only: bool = False,
    ) -> None:
        self._records = list(records)
        self._tokenizer = tokenizer
        self._decisions = decisions
        self._last_only = last_only

    def __len__(self) -> int:
        return len(self._records)

    def __getitem__(self, index: int) -> Record:
        return self._records[index]

    def _tokens(self, messages: list[dict[str, Any]], tools: Any, *, open_turn: bool = False) -> list[int]:
        return list(
            self._tokenizer.apply_chat_template(
                messages, tools=tools, add_generation_prompt=open_turn, tokenize=True, return_dict=False
            )
        )

    def process(self, record: Record) -> tuple[list[int], list[tuple[int, int]]]:
        """The record's tokens and the (start, end) token spans of its target turns."""
        messages, tools = record["messages"], record.get("tools")
        tokens = self._tokens(messages, tools)
        last = len(messages) - 1
        turns = [
            i
            for i, message in enumerate(messages)
            if message.get("role") == "assistant"
            and (
                i == last
                or (not self._last_only and decision_key(messages[: i + 1], tools) in self._decisions)
            )
        ]
        spans = []
        for i in turns:
            start = len(self._tokens(messages[:i], tools, open_turn=True))
            through = self._tokens(messages[: i + 1], tools)
            if tokens[: len(through)] != through:
                raise TemplateError(
                    f"the chat template renders turn {i} of a record differently inside the whole "
                    "conversation, so its calls cannot be learned from one pass: train with "
                    f"history_calls off (first message: {str(messages[0].get('content'))[:80]!r})"
                )
            spans.append((start, len(through)))
        return tokens, spans


def turn_batches(
    dataset: Any,
    batch_size: int,
    max_seq_length: int,
    loop: bool = False,
    seed: int | None = None,
    comm_group: Any = None,
) -> Iterator[tuple[Any, Any]]:
    """mlx-lm's `iterate_batches` (length-sorted batches in a seeded order, padded as it pads) for
    `AssistantTurns` items: yields (tokens, target mask), the mask aligned with the shifted targets."""
    import mlx.core as mx

    if comm_group is not None and comm_group.size() > 1:
        raise ValueError("training on history calls does not run distributed; turn history_calls off")
    if len(dataset) < batch_size:
        raise ValueError(
            f"Dataset must have at least batch_size={batch_size} examples but only has {len(dataset)}."
        )
    order = sorted(range(len(dataset)), key=lambda i: len(dataset[i][0]))
    batches = [order[i : i + batch_size] for i in range(0, len(order) - batch_size + 1, batch_size)]
    if seed is not None:
        np.random.seed(seed)
    while True:
        for b in np.random.permutation(len(batches)):
            items = [dataset[j] for j in batches[b]]
            longest = max(len(tokens) for tokens, _ in items)
            width = min(1 + PAD_TO * ((longest + PAD_TO - 1) // PAD_TO), max_seq_length)
            tokens = np.zeros((batch_size, width), np.int32)
            mask = np.zeros((batch_size, width - 1), np.float32)
            for row, (ids, spans) in enumerate(items):
                ids = ids[:width]
                tokens[row, : len(ids)] = ids
                for start, end in spans:
                    # position t predicts token t + 1: a target token at index k is mask index k - 1
                    mask[row, max(start - 1, 0) : min(end, width) - 1] = 1.0
            yield mx.array(tokens), mx.array(mask)
        if not loop:
            break


def turn_loss(model: Any, tokens: Any, mask: Any) -> tuple[Any, Any]:
    """Mean cross-entropy over the target tokens, as mlx-lm's `default_loss` (and its token count)."""
    import mlx.core as mx
    import mlx.nn as nn

    logits = model(tokens[:, :-1])
    losses = nn.losses.cross_entropy(logits, tokens[:, 1:]) * mask
    count = mask.sum()
    return losses.astype(mx.float32).sum() / count, count
