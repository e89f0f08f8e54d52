"""The replay eval's summary is what people read to judge an adapter, and what promotion decides on:
a rate over the wrong denominator, a prose answer counted as a JSON slip, or a pass^k off by one
would mislead both. These tests pin every summary column on small hand-made result frames with
hand-computed numbers, the breakdowns and failure counts, the chart (written owner-only and
byte-identical for equal data) and the Markdown report.
"""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from trajectory_pipeline.evaluation.promotion import PromotionConfig, decide_promotion
from trajectory_pipeline.evaluation.report import (
    breakdown,
    failure_counts,
    pass_hat_k,
    pass_rate_chart,
    report_markdown,
    summarize,
)
from trajectory_pipeline.evaluation.schema import EVAL_COLUMNS

ARGS = '{"file_path":"app/main.py"}'


def row(**overrides: Any) -> dict[str, Any]:
    """One scored answer: a correct read_file call by the candidate on a holdout decision."""
    base: dict[str, Any] = {
        "model": "candidate",
        "adapter_id": "adapter-1",
        "selector": "none",
        "lane": "holdout",
        "decision_id": "d1",
        "session_id": "s1",
        "source": "claude_code",
        "family_id": "f1",
        "target_name": "read_file",
        "target_arguments": ARGS,
        "action_class": "inspect",
        "decisive": False,
        "sample": 0,
        "raw_text": '{"name":"read_file","arguments":{"file_path":"app/main.py"}}',
        "starts_with_json": True,
        "thinking_preamble": False,
        "parsed": True,
        "calls": 1,
        "predicted_name": "read_file",
        "predicted_arguments": ARGS,
        "name_match": True,
        "required_present": True,
        "target_match": True,
        "exact_match": True,
        "arg_shape": 1.0,
        "param_names_match": True,
        "param_values_match": True,
        "passed": True,
        "failure": None,
        "candidates": 0,
        "from_memory": False,
        "oracle": True,
        "prompt_tokens": 100,
        "generated_tokens": 20,
    }
    unknown = set(overrides) - set(base)
    assert not unknown, f"not a result column: {unknown}"
    return {**base, **overrides}


MISSED = {
    "name_match": False,
    "required_present": False,
    "target_match": False,
    "exact_match": False,
    "arg_shape": 0.0,
    "param_names_match": False,
    "param_values_match": False,
    "passed": False,
}
UNPARSED = {**MISSED, "parsed": False, "calls": 0, "predicted_name": None, "predicted_arguments": None}


def frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=list(EVAL_COLUMNS))


def mixed_answers() -> pd.DataFrame:
    """Five candidate answers on holdout, one of each kind, and one failed base answer."""
    return frame(
        [
            row(decision_id="d1", decisive=True),
            row(decision_id="d2", decisive=True, target_name="edit_file", action_class="edit",
                predicted_name="run_shell", failure="wrong_tool", **MISSED),
            row(decision_id="d3", starts_with_json=False, raw_text="I would read the file.",
                failure="no_call_parsed", **UNPARSED),
            row(decision_id="d4", name_match=True, required_present=True, param_names_match=True,
                target_match=False, exact_match=False, arg_shape=0.5, param_values_match=False,
                thinking_preamble=True, passed=False, failure="wrong_target"),
            row(decision_id="d5", raw_text='{"name": "read_file", "arguments": {',
                failure="no_call_parsed", **UNPARSED),
            row(model="base", adapter_id=None, decision_id="d1", decisive=True,
                failure="wrong_tool", **MISSED),
        ]
    )  # fmt: skip


def test_summary_rates_are_over_answers() -> None:
    summary = summarize(mixed_answers())
    assert list(summary[["model", "lane"]].itertuples(index=False, name=None)) == [
        ("base", "holdout"),
        ("candidate", "holdout"),
    ]
    candidate = summary.iloc[1].to_dict()
    expected = {
        "cases": 5,
        "answers": 5,
        "samples": 1,
        "pass_rate": 0.2,
        "name_match_rate": 0.4,
        "required_present_rate": 0.4,
        "target_match_rate": 0.2,
        "exact_match_rate": 0.2,
        "arg_shape_mean": 0.3,
        "param_names_rate": 0.4,
        "param_values_rate": 0.2,
        "invalid_rate": 0.4,  # d3 (prose) and d5 (broken JSON)
        "prose_rate": 0.2,  # d3 only: d5 started as JSON
        "thinking_rate": 0.2,
        "decisive_cases": 2,
        "decisive_pass_rate": 0.5,
    }
    assert {key: candidate[key] for key in expected} == pytest.approx(expected)
    assert not any(column.startswith("pass^") for column in summary.columns)  # one sample each
    assert summary.iloc[0]["pass_rate"] == 0.0 and summary.iloc[0]["decisive_pass_rate"] == 0.0


def test_decisive_pass_rate_is_nan_without_decisive_cases() -> None:
    summary = summarize(frame([row(decision_id="d1"), row(decision_id="d2", **MISSED)]))
    assert summary.loc[0, "decisive_cases"] == 0
    assert summary["decisive_pass_rate"].isna().all()


@pytest.mark.parametrize(
    ("n", "c", "k", "expected"),
    [(4, 2, 2, 1 / 6), (4, 2, 1, 0.5), (4, 4, 4, 1.0), (4, 3, 4, 0.0), (5, 3, 2, 0.3), (3, 0, 1, 0.0)],
)
def test_pass_hat_k(n: int, c: int, k: int, expected: float) -> None:
    assert pass_hat_k(n, c, k) == pytest.approx(expected)


@pytest.mark.parametrize(("n", "c", "k"), [(2, 1, 3), (2, 3, 1), (2, 1, 0), (2, -1, 1)])
def test_pass_hat_k_rejects_impossible_counts(n: int, c: int, k: int) -> None:
    with pytest.raises(ValueError, match=f"got n={n}, c={c}, k={k}"):
        pass_hat_k(n, c, k)


def test_pass_k_columns_average_cases() -> None:
    # d1: 2 of 4 samples pass; d2: 4 of 4 pass.
    rows = [row(decision_id="d1", sample=s, **({} if s < 2 else MISSED)) for s in range(4)]
    rows += [row(decision_id="d2", sample=s) for s in range(4)]
    summary = summarize(frame(rows))
    got = summary.iloc[0]
    assert (got["cases"], got["answers"], got["samples"], got["pass_rate"]) == (2, 8, 4, 0.75)
    assert [got[f"pass^{k}"] for k in range(1, 5)] == pytest.approx([0.75, (1 / 6 + 1) / 2, 0.5, 0.5])


def test_pass_k_uses_only_cases_with_enough_samples() -> None:
    rows = [row(decision_id="d1", sample=0), row(decision_id="d1", sample=1, **MISSED), row(decision_id="d2")]
    got = summarize(frame(rows)).iloc[0]
    assert got["pass^1"] == pytest.approx(0.75)  # (1/2 + 1) / 2
    assert got["pass^2"] == 0.0  # d1 alone: C(1, 2) / C(2, 2)


def test_summary_is_sorted_and_independent_of_row_order() -> None:
    rows = [
        row(model=model, lane=lane, decision_id=f"d{i}")
        for model in ("promoted", "experiment", "candidate", "base")
        for lane in ("seen-variant", "holdout", "seen-exact")
        for i in range(2)
    ]
    summary = summarize(frame(rows))
    assert list(summary["model"].drop_duplicates()) == ["base", "candidate", "promoted", "experiment"]
    assert list(summary["lane"][:3]) == ["holdout", "seen-exact", "seen-variant"]
    shuffled = summarize(frame(rows).sample(frac=1.0, random_state=7))
    pd.testing.assert_frame_equal(summary, shuffled)


def test_empty_results_give_an_empty_summary() -> None:
    summary = summarize(frame([]))
    assert summary.empty and {"model", "lane", "pass_rate", "decisive_pass_rate"} <= set(summary.columns)


def test_results_are_validated() -> None:
    with pytest.raises(ValueError, match=r"lack columns \['passed'"):
        summarize(frame([row()]).drop(columns=["passed", "failure"]))
    with pytest.raises(ValueError, match=r"null counts \{'parsed': 1\}"):
        summarize(frame([row(parsed=None)]))
    with pytest.raises(ValueError, match="breakdown is by one of"):
        breakdown(mixed_answers(), "session_id")


def test_breakdown_by_tool_and_failure() -> None:
    by_tool = breakdown(mixed_answers(), "target_name")
    candidate = by_tool[by_tool["model"] == "candidate"].set_index("target_name")
    assert [candidate.loc["read_file", key] for key in ("cases", "answers", "passed")] == [4, 4, 1]
    assert candidate.loc["read_file", "pass_rate"] == 0.25
    assert candidate.loc["edit_file", "pass_rate"] == 0.0
    by_failure = breakdown(mixed_answers(), "failure")
    candidate = by_failure[by_failure["model"] == "candidate"]
    assert list(candidate["failure"]) == ["(passed)", "no_call_parsed", "wrong_target", "wrong_tool"]
    assert list(candidate["answers"]) == [1, 2, 1, 1]


def test_failure_counts_most_frequent_first() -> None:
    failures = failure_counts(mixed_answers())
    assert list(failures.itertuples(index=False, name=None)) == [
        ("base", "holdout", "wrong_tool", 1, 1.0),
        ("candidate", "holdout", "no_call_parsed", 2, 0.4),
        ("candidate", "holdout", "wrong_target", 1, 0.2),
        ("candidate", "holdout", "wrong_tool", 1, 0.2),
    ]


def test_chart_is_private_and_byte_identical(tmp_path: Path) -> None:
    results = mixed_answers()
    summary, by_tool = summarize(results), breakdown(results, "target_name")
    first = pass_rate_chart(summary, by_tool, tmp_path / "one" / "pass_rate.png")
    second = pass_rate_chart(summary, by_tool, tmp_path / "two" / "pass_rate.png")
    assert first.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert first.read_bytes() == second.read_bytes()
    assert b"Software" not in first.read_bytes()
    assert stat.S_IMODE(first.stat().st_mode) == 0o600


def test_chart_without_holdout_tools(tmp_path: Path) -> None:
    results = frame([row(lane="seen-exact")])
    path = pass_rate_chart(summarize(results), breakdown(results, "target_name"), tmp_path / "c.png")
    assert path.stat().st_size > 0


def test_report_holds_decision_tables_and_speed() -> None:
    results = mixed_answers()
    summary = summarize(results)
    decision = decide_promotion(summary, PromotionConfig(min_cases=1))
    timings = {
        "candidate": {"seconds": 10.0, "cases": 5, "generated_tokens": 200, "prompt_tokens": 500},
        "base": {"seconds": 4.0, "cases": 1, "generated_tokens": 30, "prompt_tokens": 100},
    }
    text = report_markdown(
        summary,
        breakdown(results, "target_name"),
        breakdown(results, "action_class"),
        failure_counts(results),
        decision,
        timings,
        "pass_rate.png",
    )
    assert text.startswith("# Replay eval: candidate promoted\n")
    assert f"\n{decision.reason[0].upper()}{decision.reason[1:]}.\n" in text
    assert "Holdout pass rate: candidate 20.0%, base 0.0% (5 cases)." in text
    assert "![pass rate](pass_rate.png)" in text
    assert "| model | cases | answers | pass | tool selection | param names | param values |" in text
    assert "| candidate | 5 | 5 | 20.0% | 40.0% | 40.0% | 20.0% | 40.0% | 20.0% | 20.0% | 30.0% |" in text
    assert "| holdout | read_file | 0.0% (1) | 25.0% (4) |" in text
    assert "| holdout | edit | — | 0.0% (1) |" in text
    assert "| holdout | no_call_parsed | — | 2 (40.0%) |" in text
    assert text.index("| no_call_parsed |") < text.index("| wrong_target |")  # most frequent first
    assert text.index("| read_file |") < text.index("| edit_file |")
    assert "| base | 1 | 4.0 | 4.00 | 7.5 | 100 |" in text
    assert "| candidate | 5 | 10.0 | 2.00 | 20.0 | 500 |" in text
    assert text.index("| base | 1 |") < text.index("| candidate | 5 | 10.0")
    assert "Decoding: free (the models' own tokens)." in text
    constrained = {m: {**t, "constraint_seconds": 0.01, "closed_by_budget": 1.0} for m, t in timings.items()}
    text = report_markdown(
        summary,
        breakdown(results, "target_name"),
        breakdown(results, "action_class"),
        failure_counts(results),
        decision,
        constrained,
        "pass_rate.png",
    )
    assert "Grammar time per case: base 10.0 ms, candidate 2.0 ms." in text
    assert "Calls the token budget closed: base 1 of 1, candidate 1 of 5." in text


def test_report_rejects_incomplete_timings() -> None:
    results = mixed_answers()
    summary = summarize(results)
    decision = decide_promotion(summary, PromotionConfig(min_cases=1))
    by_tool, by_action = breakdown(results, "target_name"), breakdown(results, "action_class")
    timings = {"base": {"seconds": 1.0, "cases": 1, "generated_tokens": 3}}
    with pytest.raises(ValueError, match=r"timings\['base'\] lacks \['prompt_tokens'\]"):
        report_markdown(summary, by_tool, by_action, failure_counts(results), decision, timings, "c.png")
