"""Replay real decisions: pick the evaluation cases, ask a model for the next tool call, and score it.

The core behind the `replay_eval` asset (no dagster here). A case is a rendered decision point of
the adapter's training window; the model sees exactly what training showed it before the
decision (the chat template over the history, with the tools) and answers at temperature 0:

    cases = select_cases(window_rows, ReplayConfig(holdout_cases=64))
    with loaded_model(Path("data/tiny-model"), adapter_path=None) as (model, tokenizer):
        answers = generate_answers(model, tokenizer, [prompt_tokens(tokenizer, c) for c in cases],
                                   ReplayConfig())
    rows = score_cases(cases, answers, model_name="base", adapter_id=None)

Lanes (eval_schema.LANES): `holdout` is the test split (sessions never trained on; the headline);
`seen-exact` a sample of training decisions (are known workflows reproduced); `seen-variant` the
test-split decisions whose workflow family also occurs in training. Each lane takes whole
sessions in a seeded hash order until its cap, so decisions of one attempt stay together and
share their prompt prefixes.

Decoding (`ReplayConfig.decoding`): `constrained` (default) masks every token that would not make
the answer exactly one call of a tool the case offers, with arguments that match its schema, in
the model's tool-call convention, closed within `max_tokens` (`constrained.tool_call_processor`,
a fresh processor per case); `free` takes the model's tokens as they come. Every strategy below
masks with the same processor and samples the same way.

Generation strategies, all on mlx-lm's models and KV caches, with greedy answers identical token
for token (tests/evaluation/test_replay.py pins it, the bench checks it on the demo's cases; a
batch's rows go through other kernels than a lone row, so in float32 on the CPU they agree, while
a near tie in a coarser dtype could in principle fall the other way):
- `one_at_a_time`: `stream_generate` per case, the reference;
- `prompt_cache`: cases in token order, one KV cache trimmed back to the prefix the next prompt
  shares (decisions of one attempt extend each other's history, and all share the system prompt
  and tools block), so only the new tail is prefilled, as mlx-lm's server does; it still decodes
  one token of one case per forward pass;
- `batched` (default): the same trimmed cache prefills each prompt, then groups of `batch_size`
  cases (in token order) decode together, one forward pass a token for the whole group
  (`_decode_batch`, over mlx-lm's `BatchKVCache`). Each case's grammar masks its own row; the
  rows' masks go to mlx as one array. A case leaves its group as soon as its grammar decides the
  rest: the budget's closing plan is written out, and a complete call ends there rather than
  after a forward pass whose only allowed token is the end of the turn. On the demo's 48 cases
  (bench/RESULTS.md) it is several times faster than one at a time on two CPU cores: a tiny
  model's forward pass is mostly fixed cost, 16 rows take about 3.5 times one row. Sampled answers
  (`samples` > 1) are drawn per row from the same distribution as the other strategies', but
  not from the same random numbers.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import orjson
import pandas as pd

from trajectory_pipeline.config import knob
from trajectory_pipeline.dataset.render import parse_call_text
from trajectory_pipeline.evaluation.answers import parse_answer
from trajectory_pipeline.evaluation.constrained import (
    CONVENTIONS,
    ToolCallProcessor,
    allowed_rows,
    declared_only,
    tool_call_processor,
)
from trajectory_pipeline.evaluation.schema import (
    EVAL_COLUMNS,
    HOLDOUT,
    NONE,
    SEEN_EXACT,
    SEEN_VARIANT,
    SELECTORS,
)
from trajectory_pipeline.evaluation.scoring import score_call
from trajectory_pipeline.schema import canonical_json

STRATEGIES = ("one_at_a_time", "prompt_cache", "batched")
DECODINGS = ("constrained", "free")
PREFILL_STEP = 2048  # mlx-lm's prefill_step_size


@dataclass(frozen=True)
class ReplayConfig:
    """Lane sizes and how answers are generated."""

    holdout_cases: int = knob(
        64, "Most held-out cases (whole sessions are taken in a seeded order until the cap)."
    )
    seen_exact_cases: int = knob(16, "Most training decisions replayed (are known workflows reproduced).")
    seen_variant_cases: int = knob(16, "Most test-split decisions of workflow families seen in training.")
    max_tokens: int = knob(
        192, "Generated tokens per answer: a tool call with its arguments fits; a rambling model is cut."
    )
    samples: int = knob(
        1, "Answers per case; above 1 they are sampled at `temperature` (pass^k), else greedy."
    )
    temperature: float = knob(0.7, "Sampling temperature when samples > 1.")
    seed: int = knob(0, "Seed of the lanes' session order and of sampling.")
    strategy: str = knob(
        "batched",
        f"How answers are generated, one of {STRATEGIES}; all give the same greedy answers, batched fastest.",
    )
    batch_size: int = knob(16, "Cases decoded together (strategy batched).")
    decoding: str = knob(
        "constrained",
        "constrained: every answer is one call of an offered tool with schema-valid arguments; "
        "free: the model's own tokens.",
    )
    extra_arguments: bool = knob(
        False,
        "Constrained answers may hold arguments a tool does not declare, where its schema allows; "
        "off: only the declared ones.",
    )
    call_convention: str | None = knob(
        None,
        f"Tool-call convention of constrained answers, one of {CONVENTIONS}; empty: from the chat template.",
    )
    selectors: tuple[str, ...] = knob(
        SELECTORS,
        "How each answer's call is chosen, scored side by side: none (the model's own call; promotion "
        "is decided on it, so it always runs) and memory (a wrong aim replaced by the nearest call of "
        "the action memory, no extra generation).",
    )
    memory_threshold: float = knob(
        0.6,
        "The memory selector takes a remembered call when its score (0..1: agreement with the answer, "
        "mention in the history, frequency, workflow family) reaches this.",
    )

    def __post_init__(self) -> None:
        for name in ("holdout_cases", "seen_exact_cases", "seen_variant_cases"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"{name} must be a non-negative integer, got {value!r}")
        for name in ("max_tokens", "samples", "batch_size"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if self.strategy not in STRATEGIES:
            raise ValueError(f"strategy must be one of {STRATEGIES}, got {self.strategy!r}")
        if self.decoding not in DECODINGS:
            raise ValueError(f"decoding must be one of {DECODINGS}, got {self.decoding!r}")
        if self.call_convention is not None and self.call_convention not in CONVENTIONS:
            raise ValueError(
                f"call_convention must be one of {sorted(CONVENTIONS)} or None, got {self.call_convention!r}"
            )
        unknown = [selector for selector in self.selectors if selector not in SELECTORS]
        if unknown or NONE not in self.selectors or len(set(self.selectors)) != len(self.selectors):
            raise ValueError(
                f"selectors must be distinct values of {SELECTORS}, {NONE!r} included, got {self.selectors!r}"
            )
        if isinstance(self.memory_threshold, bool) or not 0.0 <= self.memory_threshold <= 1.0:
            raise ValueError(f"memory_threshold must be in [0, 1], got {self.memory_threshold!r}")
        if self.samples > 1 and not self.temperature > 0:
            raise ValueError(f"samples > 1 needs a temperature above 0, got {self.temperature}")


@dataclass(frozen=True)
class EvalCase:
    """One decision to replay, in one lane."""

    lane: str
    decision_id: str
    session_id: str
    source: str
    family_id: str | None
    action_class: str
    decisive: bool
    target_name: str
    target_arguments: dict[str, Any]
    messages: list[dict[str, Any]]  # the history before the decision, as the record holds it
    tools: list[dict[str, Any]] | None
    repo: str | None = None  # the repository (rendered rows before it was a column have none)


@dataclass(frozen=True)
class Answer:
    text: str
    prompt_tokens: int
    generated_tokens: int


@dataclass
class Timing:
    """What generating one model's answers cost (metadata, never rows: wall-clock values)."""

    seconds: float = 0.0
    cases: int = 0
    prompt_tokens: int = 0
    prefilled_tokens: int = 0  # prompt tokens actually computed (the rest came from a cache)
    generated_tokens: int = 0
    extra: dict[str, float] = field(default_factory=dict)

    def as_dict(self) -> dict[str, float]:
        return {
            "seconds": self.seconds,
            "cases": self.cases,
            "prompt_tokens": self.prompt_tokens,
            "prefilled_tokens": self.prefilled_tokens,
            "generated_tokens": self.generated_tokens,
            **self.extra,
        }


# --- cases -------------------------------------------------------------------------------------


def case_from_row(row: dict[str, Any], lane: str) -> EvalCase:
    """The history and the target of a rendered row (tools, chat or completions record)."""
    record = orjson.loads(row["record"])
    if "prompt" in record:
        messages = [{"role": "user", "content": record["prompt"]}]
        name, arguments = parse_call_text(record["completion"])
    else:
        *messages, last = record["messages"]
        if last.get("tool_calls"):
            function = last["tool_calls"][0]["function"]
            raw = function["arguments"]
            name, arguments = function["name"], json.loads(raw) if isinstance(raw, str) else raw
        else:
            name, arguments = parse_call_text(last["content"])
    decisive = row.get("decisive")
    family = row.get("family_id")
    repo = row.get("repo")
    return EvalCase(
        lane=lane,
        decision_id=str(row["decision_id"]),
        session_id=str(row["session_id"]),
        source=str(row["source"]),
        family_id=None if family is None or pd.isna(family) else str(family),
        action_class=str(row["action_class"]),
        decisive=bool(decisive) if decisive is not None and not pd.isna(decisive) else False,
        target_name=name,
        target_arguments=arguments,
        messages=messages,
        tools=record.get("tools"),
        repo=None if repo is None or pd.isna(repo) else str(repo),
    )


def _session_order(sessions: Sequence[str], seed: int) -> list[str]:
    return sorted(set(sessions), key=lambda s: hashlib.sha256(f"{seed}:{s}".encode()).hexdigest())


def _take_sessions(rows: pd.DataFrame, cap: int, seed: int, lane: str) -> list[EvalCase]:
    """Whole sessions in seeded order until `cap` cases; the last session may be cut."""
    cases: list[EvalCase] = []
    by_session = {str(sid): group for sid, group in rows.groupby("session_id", sort=False)}
    for session in _session_order(list(by_session), seed):
        group = by_session[session].sort_values("decision_id", kind="stable")
        for row in cast(list[dict[str, Any]], group.to_dict("records")):
            if len(cases) >= cap:
                return cases
            cases.append(case_from_row(row, lane))
    return cases


def select_cases(rows: pd.DataFrame, config: ReplayConfig) -> list[EvalCase]:
    """The cases of every lane, from the window's rendered rows (after the window's dedupe)."""
    missing = {"decision_id", "session_id", "split", "record", "source", "action_class"} - set(rows.columns)
    if missing:
        raise ValueError(f"rendered rows lack the columns {sorted(missing)}; got {list(rows.columns)}")
    test = rows[rows["split"] == "test"]
    train = rows[rows["split"] == "train"]
    cases = _take_sessions(test, config.holdout_cases, config.seed, HOLDOUT)
    cases += _take_sessions(train, config.seen_exact_cases, config.seed, SEEN_EXACT)
    if "family_id" in rows.columns:
        trained_families = set(train["family_id"].dropna())
        variants = test[test["family_id"].isin(trained_families)]
        cases += _take_sessions(variants, config.seen_variant_cases, config.seed, SEEN_VARIANT)
    return cases


def prompt_tokens(tokenizer: Any, case: EvalCase) -> list[int]:
    """The prompt as training saw it: the chat template over the history and tools, then the
    assistant's turn opened (mlx-lm's ChatDataset masks exactly this much with mask_prompt)."""
    tokens = tokenizer.apply_chat_template(
        case.messages, tools=case.tools, add_generation_prompt=True, tokenize=True, return_dict=False
    )
    return list(tokens)


# --- models and generation ---------------------------------------------------------------------


@contextmanager
def loaded_model(model_dir: Path, adapter_path: Path | None = None) -> Iterator[tuple[Any, Any]]:
    """`mlx_lm.load` with an optional adapter; the model is dropped when the block ends."""
    from mlx_lm import load

    loaded = load(str(model_dir), adapter_path=str(adapter_path) if adapter_path is not None else None)
    model, tokenizer = loaded[0], loaded[1]
    try:
        yield model, tokenizer
    finally:
        del model


def _common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def _sampler(config: ReplayConfig) -> Any:
    from mlx_lm.sample_utils import make_sampler

    return make_sampler(temp=config.temperature if config.samples > 1 else 0.0)


Constraint = Callable[[int], ToolCallProcessor | None]  # a fresh processor for prompt i, or None


def _processors_kwargs(processor: ToolCallProcessor | None) -> dict[str, Any]:
    """`logits_processors` for mlx-lm only when there is one: free decoding calls it as before."""
    return {"logits_processors": [processor]} if processor is not None else {}


def _one_at_a_time(
    model: Any,
    tokenizer: Any,
    prompts: list[list[int]],
    config: ReplayConfig,
    timing: Timing,
    constraint: Constraint,
) -> list[Answer]:
    from mlx_lm.generate import stream_generate

    answers = []
    for index, prompt in enumerate(prompts):
        generated: list[int] = []
        for response in stream_generate(
            model,
            tokenizer,
            prompt,
            max_tokens=config.max_tokens,
            sampler=_sampler(config),
            **_processors_kwargs(constraint(index)),
        ):
            if response.finish_reason != "stop":
                generated.append(int(response.token))
        timing.prefilled_tokens += len(prompt)
        answers.append(Answer(tokenizer.decode(generated), len(prompt), len(generated)))
    return answers


def _prompt_cache(
    model: Any,
    tokenizer: Any,
    prompts: list[list[int]],
    config: ReplayConfig,
    timing: Timing,
    constraint: Constraint,
) -> list[Answer]:
    import mlx.core as mx
    from mlx_lm.generate import generate_step
    from mlx_lm.models.cache import can_trim_prompt_cache, make_prompt_cache, trim_prompt_cache

    eos = set(tokenizer.eos_token_ids)
    answers: list[Answer | None] = [None] * len(prompts)
    cache: list[Any] | None = None
    in_cache: list[int] = []  # the tokens the cache holds, in order
    previous: list[int] = []
    for index in sorted(range(len(prompts)), key=lambda i: prompts[i]):
        prompt = prompts[index]
        # Reuse only what the previous prompt's prefill computed (decoded tokens' keys come from
        # other kernels, equal here but not promised in every dtype), and feed at least one token.
        shared = min(_common_prefix(previous, prompt), len(prompt) - 1)
        if cache is None or shared == 0 or not can_trim_prompt_cache(cache):
            cache, in_cache, shared = make_prompt_cache(model), [], 0
        else:
            trim_prompt_cache(cache, len(in_cache) - shared)
        fed: list[int] = []  # answer tokens, the end-of-turn token included
        steps = generate_step(
            mx.array(prompt[shared:]),
            model,
            max_tokens=config.max_tokens,
            sampler=_sampler(config),
            prompt_cache=cache,
            **_processors_kwargs(constraint(index)),
        )
        for token, _ in steps:
            fed.append(int(token))
            if fed[-1] in eos:
                break
        steps.close()
        timing.prefilled_tokens += len(prompt) - shared
        # generate_step computes a token's successor before yielding it: every yielded token was fed.
        in_cache, previous = [*prompt, *fed], prompt
        generated = fed[:-1] if fed and fed[-1] in eos else fed
        answers[index] = Answer(tokenizer.decode(generated), len(prompt), len(generated))
    return [answer for answer in answers if answer is not None]


class _PrefixCache:
    """One KV cache over the last prompt but its final token, trimmed back to the prefix the next
    prompt shares, so only each prompt's new tail is prefilled (as `_prompt_cache` does); every
    prompt's state is taken out as its own cache. Caches that cannot be trimmed or copied (not
    mlx-lm's plain `KVCache`) are made afresh for each prompt."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self.cache: list[Any] | None = None
        self.held: list[int] = []  # the tokens the cache holds

    def fill(self, prompt: list[int]) -> tuple[list[Any], int]:
        """A cache of `prompt` but its last token (fed by the first decoding step), and how many
        tokens were computed for it."""
        import mlx.core as mx
        from mlx_lm.models.cache import KVCache, make_prompt_cache, trim_prompt_cache

        body = prompt[:-1]
        reusable = self.cache is not None and all(type(c) is KVCache for c in self.cache)
        shared = _common_prefix(self.held, body) if reusable else 0
        if self.cache is None or shared == 0:
            self.cache, self.held = make_prompt_cache(self.model), []
        else:
            trim_prompt_cache(self.cache, len(self.held) - shared)
        for chunk in range(shared, len(body), PREFILL_STEP):  # in chunks, as generate_step prefills
            self.model(mx.array(body[chunk : chunk + PREFILL_STEP])[None], cache=self.cache)
            mx.eval([c.state for c in self.cache])
        self.held = body
        if not all(type(c) is KVCache for c in self.cache):
            taken, self.cache, self.held = self.cache, None, []
            return taken, len(body)
        copies = []
        for layer in self.cache:
            copy = KVCache()
            if layer.keys is not None and layer.offset:
                # A slice is a new array: the next prompt's writes into the cache leave it as it is.
                copy.keys = layer.keys[..., : layer.offset, :]
                copy.values = layer.values[..., : layer.offset, :]
                copy.offset = layer.offset
            copies.append(copy)
        return copies, len(body) - shared


def _only_end_allowed(bitmask: Any, eos: Sequence[int]) -> bool:
    """The grammar allows no token but an end-of-sequence one (or none at all, which the mask turns
    into those): whatever the model would pick there ends the answer."""
    import numpy as np

    words = bitmask.view(np.uint32).copy()
    for token in eos:
        words[token // 32] &= np.uint32(~(1 << (token % 32)) & 0xFFFFFFFF)
    return not words.any()


def _decode_batch(
    model: Any,
    cache: list[Any],
    last_tokens: list[int],
    grammars: list[ToolCallProcessor | None],
    config: ReplayConfig,
    eos: set[int],
) -> list[list[int]]:
    """Greedy (or sampled) decoding of several sequences at once, one forward pass a token for all;
    `cache` holds each prompt but its last token (`last_tokens`, fed by the first pass).

    Each sequence's logits are masked by its own grammar, the whole batch's masks applied in one
    operation, then reduced and sampled per row as `generate_step` does with its one row. A
    sequence leaves the batch at an end-of-sequence token or `max_tokens`, and, where its grammar
    decides the rest of the answer, as soon as it does: a closing plan being written is written
    out, and a grammar that allows only the end of the turn ends the answer (the model could only
    pick an end token, which the answer leaves out). Same tokens, fewer forward passes."""
    import mlx.core as mx
    import numpy as np

    sampler = _sampler(config)
    constrained = [g for g in grammars if g is not None]
    if constrained and len(constrained) != len(grammars):
        raise ValueError("a batch is constrained throughout or not at all")
    ends = sorted(constrained[0].eos) if constrained else []
    generated: list[list[int]] = [[] for _ in last_tokens]
    live = list(range(len(last_tokens)))  # the batch's rows, as indices into last_tokens
    bitmasks = [g.next_bitmask([]).copy() for g in constrained]  # of the live rows, when constrained
    inputs = mx.array(last_tokens)
    while live:
        logits = model(inputs[:, None], cache=cache)[:, -1, :]
        if bitmasks:
            allowed = allowed_rows(np.stack(bitmasks), logits.shape[-1], ends)
            logits = mx.where(mx.array(allowed), logits, mx.array(-float("inf"), dtype=logits.dtype))
        logprobs = logits - mx.logsumexp(logits, axis=-1, keepdims=True)
        sampled = cast(list[int], sampler(logprobs).tolist())
        keep: list[int] = []
        bitmasks = []
        for row, index in enumerate(live):
            token, answer, grammar = sampled[row], generated[index], grammars[index]
            if token in eos:
                continue
            answer.append(token)
            if grammar is not None and len(answer) < config.max_tokens:
                bitmask = grammar.next_bitmask([token])
                # A closing plan being written is the rest of the answer: written here, not decoded.
                for planned in grammar.closing[: config.max_tokens - len(answer)]:
                    answer.append(planned)
                    bitmask = grammar.next_bitmask([planned])
                if _only_end_allowed(bitmask, ends) or len(answer) >= config.max_tokens:
                    continue
                bitmasks.append(bitmask.copy())
            if len(answer) < config.max_tokens:
                keep.append(row)
        if len(keep) < len(live):
            if keep:
                for layer in cache:
                    layer.filter(keep)
            live = [live[row] for row in keep]
        inputs = mx.array([sampled[row] for row in keep])
    return generated


def _batched(
    model: Any,
    tokenizer: Any,
    prompts: list[list[int]],
    config: ReplayConfig,
    timing: Timing,
    constraint: Constraint,
) -> list[Answer]:
    eos = set(tokenizer.eos_token_ids)
    answers: list[Answer | None] = [None] * len(prompts)
    order = sorted(range(len(prompts)), key=lambda i: prompts[i])
    prefix = _PrefixCache(model)
    for start in range(0, len(order), config.batch_size):
        group = order[start : start + config.batch_size]
        caches = []
        for i in group:
            cache, computed = prefix.fill(prompts[i])
            caches.append(cache)
            timing.prefilled_tokens += computed + 1  # the last token, fed by the first decoding step
        batch = [type(layer).merge([c[n] for c in caches]) for n, layer in enumerate(caches[0])]
        generated = _decode_batch(
            model, batch, [prompts[i][-1] for i in group], [constraint(i) for i in group], config, eos
        )
        for i, tokens in zip(group, generated, strict=True):
            answers[i] = Answer(tokenizer.decode(tokens), len(prompts[i]), len(tokens))
    return [answer for answer in answers if answer is not None]


_STRATEGY = {"one_at_a_time": _one_at_a_time, "prompt_cache": _prompt_cache, "batched": _batched}


def generate_answers(
    model: Any,
    tokenizer: Any,
    prompts: list[list[int]],
    config: ReplayConfig,
    sample: int = 0,
    tools: Sequence[list[dict[str, Any]] | None] | None = None,
) -> tuple[list[Answer], Timing]:
    """One answer per prompt, in prompt order, with what generating them cost.

    `tools` are the tools each prompt offers (the cases' `tools`): constrained decoding allows a
    call of those only. Without them (or for a prompt whose tools are None) any tool name is
    allowed, with any object as arguments."""
    import mlx.core as mx

    if tools is not None and len(tools) != len(prompts):
        raise ValueError(f"got {len(tools)} tool lists for {len(prompts)} prompts; give one per prompt")
    mx.random.seed(config.seed + sample)
    timing = Timing(cases=len(prompts), prompt_tokens=sum(len(p) for p in prompts))
    made: list[ToolCallProcessor] = []

    def constraint(index: int) -> ToolCallProcessor | None:
        if config.decoding == "free":
            return None
        offered = tools[index] if tools is not None else None
        processor = tool_call_processor(
            tokenizer,
            offered if config.extra_arguments else declared_only(offered),
            config.call_convention,
            max_tokens=config.max_tokens,
        )
        made.append(processor)
        return processor

    started = time.perf_counter()
    strategy = _STRATEGY[config.strategy]
    answers = strategy(model, tokenizer, prompts, config, timing, constraint) if prompts else []
    timing.seconds = time.perf_counter() - started
    timing.generated_tokens = sum(a.generated_tokens for a in answers)
    if config.decoding == "constrained":
        timing.extra.update(
            constraint_seconds=sum(p.seconds for p in made),
            forced_tokens=sum(p.forced for p in made),
            closed_by_budget=sum(1 for p in made if p.forced),
        )
    return answers, timing


# --- scoring -----------------------------------------------------------------------------------


def score_cases(
    cases: Sequence[EvalCase],
    answers: Sequence[Answer],
    *,
    model_name: str,
    adapter_id: str | None,
    sample: int = 0,
) -> pd.DataFrame:
    """One eval_schema row per case: the parsed answer and its score."""
    rows = []
    for case, answer in zip(cases, answers, strict=True):
        parsed = parse_answer(answer.text, case.tools)
        first = (parsed.calls[0].name, parsed.calls[0].arguments) if parsed.calls else None
        score = score_call(first, case.target_name, case.target_arguments, case.source)
        rows.append(
            {
                "model": model_name,
                "adapter_id": adapter_id,
                "selector": NONE,
                "lane": case.lane,
                "decision_id": case.decision_id,
                "session_id": case.session_id,
                "source": case.source,
                "family_id": case.family_id,
                "target_name": case.target_name,
                "target_arguments": canonical_json(case.target_arguments),
                "action_class": case.action_class,
                "decisive": case.decisive,
                "sample": sample,
                "raw_text": parsed.raw_text,
                "starts_with_json": parsed.starts_with_json,
                "thinking_preamble": parsed.thinking_preamble,
                "parsed": parsed.parsed,
                "calls": len(parsed.calls),
                **dataclasses.asdict(score),  # the Score's fields are the result schema's columns
                "candidates": 0,
                "from_memory": False,
                "oracle": score.passed,
                "prompt_tokens": answer.prompt_tokens,
                "generated_tokens": answer.generated_tokens,
            }
        )
    return pd.DataFrame(rows, columns=list(EVAL_COLUMNS))


def evaluate_model(
    model_dir: Path,
    adapter_path: Path | None,
    cases: Sequence[EvalCase],
    config: ReplayConfig,
    *,
    model_name: str,
    adapter_id: str | None,
) -> tuple[pd.DataFrame, Timing]:
    """Load one model, answer every case `config.samples` times, and score the answers.

    A decision in two lanes (holdout and seen-variant) is asked once: the same prompt."""
    frames, total = [], Timing()
    first = {case.decision_id: index for index, case in reversed(list(enumerate(cases)))}
    asked = sorted(set(first.values()))
    with loaded_model(model_dir, adapter_path) as (model, tokenizer):
        prompts = [prompt_tokens(tokenizer, cases[index]) for index in asked]
        tools = [cases[index].tools for index in asked]
        for sample in range(config.samples):
            answers, timing = generate_answers(model, tokenizer, prompts, config, sample, tools)
            by_decision = {
                cases[index].decision_id: answer for index, answer in zip(asked, answers, strict=True)
            }
            every = [by_decision[case.decision_id] for case in cases]
            frames.append(
                score_cases(cases, every, model_name=model_name, adapter_id=adapter_id, sample=sample)
            )
            total.seconds += timing.seconds
            total.cases += timing.cases
            total.prompt_tokens += timing.prompt_tokens
            total.prefilled_tokens += timing.prefilled_tokens
            total.generated_tokens += timing.generated_tokens
            for key, value in timing.extra.items():
                total.extra[key] = total.extra.get(key, 0.0) + value
    return pd.concat(frames, ignore_index=True), total
