"""Promotion swaps the adapter people use: a wrong comparison, a margin applied loosely at the
boundary, or a silent pass on too few cases would ship a worse model. These tests pin the rule on
hand-made summaries: a promotion, a rejection for each reason with the sentence the UI shows, the
margin exactly at the boundary, no promoted adapter, and config validation; one test goes through
`eval_report.summarize` so the rule reads the columns the real summary has.
"""

from __future__ import annotations

import dataclasses

import pandas as pd
import pytest

from trajectory_pipeline.evaluation.promotion import PromotionConfig, PromotionDecision, decide_promotion
from trajectory_pipeline.evaluation.report import summarize
from trajectory_pipeline.evaluation.schema import EVAL_COLUMNS

NAN = float("nan")


def summary(
    candidate: float,
    base: float,
    promoted: float | None = None,
    cases: int = 40,
    decisive: tuple[float, float, float] = (NAN, NAN, NAN),
) -> pd.DataFrame:
    """Holdout rows (pass rate, decisive pass rate) per model, and a seen-exact lane that must not count."""
    rows = [("candidate", candidate, decisive[0]), ("base", base, decisive[1])]
    rows += [] if promoted is None else [("promoted", promoted, decisive[2])]
    holdout = [("holdout", cases, m, r, d) for m, r, d in rows]
    seen = [("seen-exact", 999, m, 1 - r, d) for m, r, d in rows]
    return pd.DataFrame(holdout + seen, columns=["lane", "cases", "model", "pass_rate", "decisive_pass_rate"])


def test_promotes_a_candidate_that_beats_both() -> None:
    decision = decide_promotion(summary(0.6, 0.3, promoted=0.5, decisive=(0.7, 0.2, 0.7)), PromotionConfig())
    assert decision == PromotionDecision(
        status="promoted",
        reason="holdout pass rate 60.0% beats the base model's 30.0% and the promoted adapter's 50.0% "
        "by more than 0.0 points on 40 cases",
        candidate_pass_rate=0.6,
        base_pass_rate=0.3,
        promoted_pass_rate=0.5,
        candidate_decisive_pass_rate=0.7,
        reference_decisive_pass_rate=0.7,
        cases=40,
    )


@pytest.mark.parametrize(
    ("frame", "reason"),
    [
        (summary(0.9, 0.1, cases=12), "too few holdout cases: 12 < 20"),
        (
            summary(0.31, 1 / 3, promoted=0.9),
            "holdout pass rate 31.0% does not beat the base model's 33.3% by more than 0.0 points",
        ),
        (
            summary(0.5, 0.3, promoted=0.55),
            "holdout pass rate 50.0% does not beat the promoted adapter's 55.0% by more than 0.0 points",
        ),
        (
            summary(0.6, 0.3, promoted=0.5, decisive=(0.4, 0.1, 0.45)),
            "holdout decisive-call pass rate 40.0% drops below the promoted adapter's 45.0%",
        ),
        (
            summary(0.6, 0.3, decisive=(0.4, 0.5, NAN)),
            "holdout decisive-call pass rate 40.0% drops below the base model's 50.0%",
        ),
    ],
    ids=["too-few-cases", "not-beating-base", "not-beating-promoted", "decisive-drop", "decisive-drop-base"],
)
def test_rejects_with_the_first_failing_reason(frame: pd.DataFrame, reason: str) -> None:
    decision = decide_promotion(frame, PromotionConfig())
    assert (decision.status, decision.reason) == ("rejected", reason)


def test_equal_pass_rates_do_not_beat_with_zero_margin() -> None:
    assert decide_promotion(summary(0.5, 0.5), PromotionConfig()).status == "rejected"


@pytest.mark.parametrize(("candidate", "status"), [(0.55, "rejected"), (0.5501, "promoted")])
def test_margin_must_be_exceeded(candidate: float, status: str) -> None:
    decision = decide_promotion(summary(candidate, 0.5), PromotionConfig(margin=0.05))
    assert decision.status == status
    if status == "rejected":
        assert decision.reason.endswith("the base model's 50.0% by more than 5.0 points")


def test_min_cases_is_inclusive() -> None:
    assert decide_promotion(summary(0.9, 0.1, cases=20), PromotionConfig()).status == "promoted"


def test_without_a_promoted_adapter_the_base_is_the_reference() -> None:
    decision = decide_promotion(summary(0.6, 0.3, decisive=(0.5, 0.5, NAN)), PromotionConfig())
    assert decision.status == "promoted"
    assert decision.promoted_pass_rate is None
    assert decision.reference_decisive_pass_rate == 0.5
    assert (
        decision.reason
        == "holdout pass rate 60.0% beats the base model's 30.0% by more than 0.0 points on 40 cases"
    )


def test_no_decisive_cases_on_either_side_does_not_block() -> None:
    decision = decide_promotion(summary(0.6, 0.3, promoted=0.4), PromotionConfig())
    assert decision.status == "promoted"
    assert decision.candidate_decisive_pass_rate is None and decision.reference_decisive_pass_rate is None


def test_an_empty_lane_is_rejected_for_too_few_cases() -> None:
    decision = decide_promotion(summary(0.9, 0.1), PromotionConfig(lane="seen-variant"))
    assert (decision.status, decision.reason, decision.cases) == (
        "rejected",
        "too few seen-variant cases: 0 < 20",
        0,
    )
    assert decision.candidate_pass_rate is None


def test_the_configured_lane_decides() -> None:
    # seen-exact in `summary` has the rates flipped: base 0.9, candidate 0.1.
    assert decide_promotion(summary(0.1, 0.9), PromotionConfig(lane="seen-exact")).status == "promoted"


def test_summary_without_base_is_an_error() -> None:
    frame = summary(0.6, 0.3)
    with pytest.raises(ValueError, match=r"needs 'candidate' and 'base' rows, got \['candidate'\]"):
        decide_promotion(frame[frame["model"] != "base"], PromotionConfig())
    with pytest.raises(ValueError, match=r"lacks columns \['decisive_pass_rate'\]"):
        decide_promotion(frame.drop(columns="decisive_pass_rate"), PromotionConfig())


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"margin": -0.1}, "margin must be a fraction in [0, 1) (0.02 = 2 points), got -0.1"),
        ({"margin": 1.0}, "margin must be a fraction in [0, 1) (0.02 = 2 points), got 1.0"),
        ({"min_cases": 0}, "min_cases must be an integer of at least 1, got 0"),
        ({"lane": "test"}, "lane must be one of ('holdout', 'seen-exact', 'seen-variant'), got 'test'"),
    ],
)
def test_config_is_validated(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError) as raised:
        PromotionConfig(**kwargs)  # type: ignore[arg-type]
    assert str(raised.value) == message


def test_decision_is_frozen() -> None:
    decision = decide_promotion(summary(0.6, 0.3), PromotionConfig())
    with pytest.raises(dataclasses.FrozenInstanceError):
        decision.status = "promoted"  # type: ignore[misc]


def test_decides_on_a_real_summary() -> None:
    def answer(model: str, decision_id: str, passed: bool) -> dict[str, object]:
        row: dict[str, object] = dict.fromkeys(EVAL_COLUMNS, False)
        row.update(model=model, lane="holdout", decision_id=decision_id, passed=passed, arg_shape=0.0)
        return row

    rows = [answer("base", f"d{i:02d}", i < 5) for i in range(20)]
    rows += [answer("candidate", f"d{i:02d}", i < 7) for i in range(20)]
    decision = decide_promotion(summarize(pd.DataFrame(rows)), PromotionConfig())
    assert (decision.status, decision.cases) == ("promoted", 20)
    assert (decision.candidate_pass_rate, decision.base_pass_rate) == (0.35, 0.25)
