"""Whether a newly trained adapter replaces the one in use: a pure rule over the replay-eval summary.

`replay_eval` calls it with the frame `eval_report.summarize` returns (one row per model and lane):

    decision = decide_promotion(summarize(results), PromotionConfig(margin=0.02, min_cases=50))
    decision.status   # "promoted" | "rejected"
    decision.reason   # one sentence for the UI, e.g. "too few holdout cases: 12 < 20"

The candidate is promoted only when, on the configured lane (held-out sessions by default):
1. there are at least `min_cases` distinct decisions;
2. its pass rate beats the base model's by more than `margin`;
3. it beats the promoted adapter's by more than `margin` (when one is in use);
4. its pass rate on decisive calls does not drop below the reference's (the promoted adapter, else
   the base model); this holds when either side has no decisive cases, as there is nothing to compare.
The summary is of the models' own calls (selector `none`): the action memory's selector is
reported beside them but never decides, because the memory is built from the same training split
whatever the adapter, so it lifts every contender alike and cannot tell a better adapter from a
worse one, and the promoted adapter may be run without it (evaluate.py).
The reason names the first rule that fails, in that order. A lead within 1e-9 of the margin counts as
a tie, so float noise never decides a promotion. `cases` is the candidate's count of distinct
decisions in the lane; a lane with no rows is rejected as "0 < min_cases", while a lane with rows
but no candidate or base row is an error (both models always run on the same cases). Run the tests with
`.venv/bin/python -m pytest tests/evaluation/test_promotion.py`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from trajectory_pipeline.config import knob
from trajectory_pipeline.evaluation.schema import BASE, CANDIDATE, HOLDOUT, LANES, PROMOTED

PROMOTED_STATUS, REJECTED_STATUS = "promoted", "rejected"
_TIE = 1e-9
_NAMES = {BASE: "the base model's", PROMOTED: "the promoted adapter's"}


@dataclass(frozen=True)
class PromotionConfig:
    """What the candidate must show on the replay eval before it replaces the adapter in use."""

    margin: float = knob(
        0.0, "Holdout pass-rate lead needed over each baseline, strictly (a fraction: 0.02 = 2 points)."
    )
    min_cases: int = knob(20, "Never promote on fewer distinct decisions than this in the lane.")
    lane: str = knob(HOLDOUT, "The lane the decision is made on.")

    def __post_init__(self) -> None:
        if isinstance(self.margin, bool) or not 0.0 <= self.margin < 1.0:
            raise ValueError(f"margin must be a fraction in [0, 1) (0.02 = 2 points), got {self.margin!r}")
        if isinstance(self.min_cases, bool) or not isinstance(self.min_cases, int) or self.min_cases < 1:
            raise ValueError(f"min_cases must be an integer of at least 1, got {self.min_cases!r}")
        if self.lane not in LANES:
            raise ValueError(f"lane must be one of {LANES}, got {self.lane!r}")


@dataclass(frozen=True)
class PromotionDecision:
    """The verdict with the figures it rests on; rates are fractions, None where a model has none."""

    status: str
    reason: str
    candidate_pass_rate: float | None
    base_pass_rate: float | None
    promoted_pass_rate: float | None
    candidate_decisive_pass_rate: float | None
    reference_decisive_pass_rate: float | None
    cases: int


def decide_promotion(summary: pd.DataFrame, config: PromotionConfig) -> PromotionDecision:
    """Apply the promotion rule (see the module docstring) to a `summarize` frame."""
    missing = {"model", "lane", "cases", "pass_rate", "decisive_pass_rate"} - set(summary.columns)
    if missing:
        raise ValueError(
            f"summary lacks columns {sorted(missing)}; pass the frame eval_report.summarize returns"
        )
    lane = summary[summary["lane"] == config.lane]
    models = [str(model) for model in lane["model"]]
    if len(set(models)) != len(models):
        raise ValueError(f"summary must have one row per model in lane {config.lane!r}, got models {models}")
    if models and not {CANDIDATE, BASE} <= set(models):
        raise ValueError(f"summary lane {config.lane!r} needs {CANDIDATE!r} and {BASE!r} rows, got {models}")
    rates = dict(zip(models, lane["pass_rate"].astype(float), strict=True))
    decisive = {m: _optional(float(r)) for m, r in zip(models, lane["decisive_pass_rate"], strict=True)}
    cases = int(dict(zip(models, lane["cases"], strict=True)).get(CANDIDATE, 0))
    reference = PROMOTED if PROMOTED in rates else BASE

    def decision(status: str, reason: str) -> PromotionDecision:
        return PromotionDecision(
            status=status,
            reason=reason,
            candidate_pass_rate=rates.get(CANDIDATE),
            base_pass_rate=rates.get(BASE),
            promoted_pass_rate=rates.get(PROMOTED),
            candidate_decisive_pass_rate=decisive.get(CANDIDATE),
            reference_decisive_pass_rate=decisive.get(reference),
            cases=cases,
        )

    if cases < config.min_cases:
        return decision(REJECTED_STATUS, f"too few {config.lane} cases: {cases} < {config.min_cases}")
    candidate = rates[CANDIDATE]
    candidate_decisive, reference_decisive = decisive[CANDIDATE], decisive[reference]
    baselines = [BASE, PROMOTED] if PROMOTED in rates else [BASE]
    for model in baselines:
        if not candidate - rates[model] > config.margin + _TIE:
            return decision(
                REJECTED_STATUS,
                f"{config.lane} pass rate {_pct(candidate)} does not beat {_NAMES[model]} "
                f"{_pct(rates[model])} by more than {config.margin * 100:.1f} points",
            )
    if (
        candidate_decisive is not None
        and reference_decisive is not None
        and candidate_decisive < reference_decisive - _TIE
    ):
        return decision(
            REJECTED_STATUS,
            f"{config.lane} decisive-call pass rate {_pct(candidate_decisive)} drops below "
            f"{_NAMES[reference]} {_pct(reference_decisive)}",
        )
    beaten = " and ".join(f"{_NAMES[model]} {_pct(rates[model])}" for model in baselines)
    return decision(
        PROMOTED_STATUS,
        f"{config.lane} pass rate {_pct(candidate)} beats {beaten} by more than "
        f"{config.margin * 100:.1f} points on {cases} cases",
    )


def _optional(value: float) -> float | None:
    return None if math.isnan(value) else value


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 100:.1f}%"
