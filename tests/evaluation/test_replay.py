"""The replay eval's runner: lanes pick whole sessions from the right splits, every record format
gives back its history and target, the prompt is the one training masked, and the three generation
strategies (one at a time, prompt cache, batched) give identical answers on a real tiny model, with
free and with constrained decoding (tests/evaluation/test_constrained.py tests the constraint)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import orjson
import pandas as pd
import pytest

from trajectory_pipeline.dataset.render import RenderConfig, render
from trajectory_pipeline.evaluation.replay import (
    DECODINGS,
    STRATEGIES,
    ReplayConfig,
    case_from_row,
    evaluate_model,
    generate_answers,
    loaded_model,
    prompt_tokens,
    score_cases,
    select_cases,
)
from trajectory_pipeline.evaluation.schema import EVAL_COLUMNS, HOLDOUT, SEEN_EXACT, SEEN_VARIANT
from trajectory_pipeline.schema import canonical_json


def _history(session: str, steps: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": f"Fix the failing test in {session}."},
    ]
    for step in range(steps):
        call_id = f"{session}-{step}"
        messages.append(
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {"id": call_id, "name": "read_file", "arguments": {"file_path": f"src/m{step}.py"}}
                ],
            }
        )
        messages.append(
            {"role": "tool", "tool_call_id": call_id, "name": "read_file", "content": f"x = {step}"}
        )
    return messages


def _row(
    session: str, step: int, split: str, family: str | None = None, fmt: str = "tools"
) -> dict[str, Any]:
    """A rendered row: decision `step` of a session whose calls read src/m0.py, src/m1.py, ..."""
    target = (
        ("run_shell", {"command": "pytest -q"})
        if step % 2
        else ("read_file", {"file_path": f"src/m{step}.py"})
    )
    record = render(_history(session, step), target[0], target[1], RenderConfig(format=fmt))
    return {
        "decision_id": f"{session}-d{step}",
        "session_id": session,
        "source": "own_agent",
        "tier": "gold",
        "target_name": target[0],
        "action_class": "verification" if step % 2 else "inspect",
        "family_id": family,
        "decisive": bool(step % 2),
        "split": split,
        "record": canonical_json(record),
    }


def _rows() -> pd.DataFrame:
    rows = [_row(f"test{s}", step, "test", family=f"fam{s}") for s in range(3) for step in range(3)]
    rows += [_row(f"train{s}", step, "train", family=f"fam{s % 2}") for s in range(4) for step in range(3)]
    rows += [_row("valid0", 0, "valid")]
    return pd.DataFrame(rows)


def test_lanes_take_whole_sessions_from_their_splits() -> None:
    cases = select_cases(_rows(), ReplayConfig(holdout_cases=5, seen_exact_cases=100, seen_variant_cases=100))
    by_lane: dict[str, list[Any]] = {}
    for case in cases:
        by_lane.setdefault(case.lane, []).append(case)
    assert len(by_lane[HOLDOUT]) == 5 and {c.session_id[:4] for c in by_lane[HOLDOUT]} == {"test"}
    sessions = [c.session_id for c in by_lane[HOLDOUT]]
    assert sessions == sorted(sessions, key=sessions.index)  # one session's decisions stay together
    assert len(by_lane[SEEN_EXACT]) == 12 and {c.session_id[:5] for c in by_lane[SEEN_EXACT]} == {"train"}
    # Families fam0 and fam1 were trained on; test2's fam2 was not.
    assert {c.session_id for c in by_lane[SEEN_VARIANT]} == {"test0", "test1"}
    assert "valid0" not in {c.session_id for c in cases}


def test_lane_order_is_seeded_and_deterministic() -> None:
    config = ReplayConfig(holdout_cases=3, seen_exact_cases=0, seen_variant_cases=0)
    first = [c.decision_id for c in select_cases(_rows(), config)]
    shuffled = _rows().sample(frac=1.0, random_state=7)
    assert [c.decision_id for c in select_cases(shuffled, config)] == first
    other = {
        tuple(c.decision_id for c in select_cases(_rows(), dataclasses.replace(config, seed=seed)))
        for seed in range(8)
    }
    assert len(other) > 1


@pytest.mark.parametrize("fmt", ["tools", "chat", "completions"])
def test_case_from_row_gives_the_history_and_target_of_each_format(fmt: str) -> None:
    case = case_from_row(_row("s", 2, "test", fmt=fmt), HOLDOUT)
    assert (case.target_name, case.target_arguments) == ("read_file", {"file_path": "src/m2.py"})
    if fmt == "completions":
        assert [m["role"] for m in case.messages] == ["user"] and case.tools is None
    else:
        # The chat format writes tool results as user text; only the tools format carries `tools`.
        assert case.messages[-1]["role"] == ("tool" if fmt == "tools" else "user")
        assert (case.tools is not None) == (fmt == "tools")


def test_select_cases_names_missing_columns() -> None:
    with pytest.raises(ValueError, match=r"lack the columns.*split"):
        select_cases(_rows().drop(columns=["split"]), ReplayConfig())


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("max_tokens", 0),
        ("strategy", "fast"),
        ("holdout_cases", -1),
        ("samples", 0),
        ("decoding", "json"),
        ("call_convention", "xml"),
    ],
)
def test_config_rejects_bad_values(field: str, value: Any) -> None:
    with pytest.raises(ValueError, match=field):
        ReplayConfig(**{field: value})


def test_prompt_is_what_training_masks(tiny_model: Path) -> None:
    row = _row("s", 2, "test")
    case = case_from_row(row, HOLDOUT)
    with loaded_model(tiny_model) as (_, tokenizer):
        prompt = prompt_tokens(tokenizer, case)
        record = orjson.loads(row["record"])  # as train.jsonl holds it (canonical JSON: sorted keys)
        full = tokenizer.apply_chat_template(record["messages"], tools=record["tools"], return_dict=False)
    assert full[: len(prompt)] == prompt and len(full) > len(prompt)
    assert tokenizer.decode(prompt).endswith("<|im_start|>assistant\n")


@pytest.mark.parametrize("batch_size", [1, 3, 16])
@pytest.mark.parametrize("decoding", DECODINGS)
def test_strategies_give_identical_answers(tiny_model: Path, decoding: str, batch_size: int) -> None:
    cases = select_cases(_rows(), ReplayConfig(holdout_cases=6, seen_exact_cases=3, seen_variant_cases=0))
    # Constrained answers need room for a whole call (about 30 tokens here); free ones are cut at 12.
    config = ReplayConfig(
        max_tokens=12 if decoding == "free" else 40, batch_size=batch_size, decoding=decoding
    )
    with loaded_model(tiny_model) as (model, tokenizer):
        prompts = [prompt_tokens(tokenizer, case) for case in cases]
        tools = [case.tools for case in cases]
        answers, timings = {}, {}
        for strategy in STRATEGIES:
            got, timing = generate_answers(
                model, tokenizer, prompts, dataclasses.replace(config, strategy=strategy), tools=tools
            )
            answers[strategy], timings[strategy] = got, timing
    reference = answers["one_at_a_time"]
    assert all(a.generated_tokens > 0 for a in reference)
    for strategy in STRATEGIES:
        assert answers[strategy] == reference, strategy
        # The grammar went through the same states: the budget closed the same calls as much.
        for key in ("forced_tokens", "closed_by_budget"):
            assert timings[strategy].extra.get(key) == timings["one_at_a_time"].extra.get(key), key
    # Decisions of one session extend each other's prompts: the cache spares most of the prefill.
    assert timings["prompt_cache"].prefilled_tokens < timings["one_at_a_time"].prefilled_tokens / 2
    assert timings["batched"].prefilled_tokens < timings["one_at_a_time"].prefilled_tokens / 2
    assert timings["one_at_a_time"].prefilled_tokens == sum(len(p) for p in prompts)


def test_batched_answers_of_different_lengths_leave_their_batch(tiny_model: Path) -> None:
    """Calls the model completes, calls the budget closes and answers max_tokens cuts, side by side
    in one batch, come out as one at a time gives them: each row leaves when its answer is decided."""
    cases = select_cases(_rows(), ReplayConfig(holdout_cases=9, seen_exact_cases=12, seen_variant_cases=0))
    # Every other case offers one tool without arguments: its call is over after a few tokens,
    # while the random model runs the others' strings until the budget closes them.
    closed = {"type": "object", "properties": {}, "additionalProperties": False}
    done = {"type": "function", "function": {"name": "done", "parameters": closed}}
    with loaded_model(tiny_model) as (model, tokenizer):
        prompts = [prompt_tokens(tokenizer, case) for case in cases]
        tools = [case.tools if index % 2 else [done] for index, case in enumerate(cases)]
        # 32: the budget closes the short calls and max_tokens cuts the long ones (no room to close
        # them); 64: the model completes the short calls, the budget closes the long ones.
        for max_tokens in (32, 64):
            config = ReplayConfig(max_tokens=max_tokens, batch_size=len(prompts))
            got = {
                strategy: generate_answers(
                    model, tokenizer, prompts, dataclasses.replace(config, strategy=strategy), tools=tools
                )
                for strategy in ("one_at_a_time", "batched")
            }
            assert got["batched"][0] == got["one_at_a_time"][0], max_tokens
            lengths = sorted({answer.generated_tokens for answer in got["one_at_a_time"][0]})
            assert len(lengths) > 1, lengths  # the rows leave the batch at different steps
            for key in ("forced_tokens", "closed_by_budget"):
                assert got["batched"][1].extra[key] == got["one_at_a_time"][1].extra[key], key
        assert 0 < got["batched"][1].extra["closed_by_budget"] < len(prompts)


def test_evaluate_model_scores_every_case_in_the_schema(tiny_model: Path) -> None:
    cases = select_cases(_rows(), ReplayConfig(holdout_cases=3, seen_exact_cases=2, seen_variant_cases=0))
    config = ReplayConfig(max_tokens=8, samples=2, temperature=1.0)
    results, timing = evaluate_model(tiny_model, None, cases, config, model_name="base", adapter_id=None)
    assert list(results.columns) == list(EVAL_COLUMNS)
    assert len(results) == 2 * len(cases) and sorted(set(results["sample"])) == [0, 1]
    assert timing.cases == 2 * len(cases) and timing.seconds > 0
    again, _ = evaluate_model(tiny_model, None, cases, config, model_name="base", adapter_id=None)
    pd.testing.assert_frame_equal(results, again)  # seeded sampling: the same rows


def test_score_cases_parses_and_scores_answers() -> None:
    from trajectory_pipeline.evaluation.replay import Answer

    cases = [case_from_row(_row("s", 2, "test"), HOLDOUT), case_from_row(_row("s", 1, "test"), HOLDOUT)]
    answers = [
        Answer(
            '<tool_call>\n{"name": "read_file", "arguments": {"file_path": "./src/m2.py"}}\n</tool_call>',
            10,
            5,
        ),
        Answer("I would run the tests.", 10, 5),
    ]
    rows = score_cases(cases, answers, model_name="candidate", adapter_id="a1")
    assert rows["passed"].tolist() == [True, False]
    assert rows["failure"].tolist()[1] == "no_call_parsed"
    assert rows.loc[0, "predicted_name"] == "read_file" and bool(rows.loc[0, "starts_with_json"])


def test_a_decision_in_two_lanes_is_asked_once(tiny_model: Path) -> None:
    cases = select_cases(_rows(), ReplayConfig(holdout_cases=3, seen_exact_cases=0, seen_variant_cases=3))
    assert [c.lane for c in cases] == ["holdout"] * 3 + ["seen-variant"] * 3
    assert {c.decision_id for c in cases[:3]} == {c.decision_id for c in cases[3:]}
    results, timing = evaluate_model(
        tiny_model, None, cases, ReplayConfig(max_tokens=6), model_name="base", adapter_id=None
    )
    assert timing.cases == 3 and len(results) == 6
    by_lane = results.set_index(["lane", "decision_id"])["raw_text"]
    assert by_lane["holdout"].sort_index().tolist() == by_lane["seen-variant"].sort_index().tolist()
