"""How a replay eval's decision reaches the registry: a promotion carries its summary in the same
transaction, a rejection is recorded with its reason, an adapter already in use is never demoted by
a re-run of its week, and an adapter the registry does not know is a clear error."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from tests.training.test_registry import _record
from trajectory_pipeline.evaluation.evaluate import EvalOutcome, eval_summary, record_decision
from trajectory_pipeline.evaluation.promotion import PromotionDecision
from trajectory_pipeline.training.registry import AdapterRegistry, sqlite_url


def _outcome(status: str, tmp_path: Path) -> EvalOutcome:
    results = pd.DataFrame(
        {
            "model": ["candidate", "candidate", "base"],
            "lane": ["seen-exact", "seen-exact", "seen-exact"],
            "decision_id": ["d2", "d1", "d1"],
            "passed": [False, True, False],
        }
    )
    summary = pd.DataFrame(
        {
            "model": ["base", "candidate"],
            "lane": ["holdout", "holdout"],
            "cases": [30, 30],
            "pass_rate": [0.2, 0.3],
            "decisive_pass_rate": [float("nan"), 0.5],
        }
    )
    decision = PromotionDecision(status, f"{status} for a reason", 0.3, 0.2, None, 0.5, None, 30)
    empty = pd.DataFrame()
    return EvalOutcome(
        results, summary, empty, empty, empty, decision, {}, tmp_path / "report.md", tmp_path / "c.png", 30
    )


@pytest.fixture
def registry(tmp_path: Path) -> AdapterRegistry:
    registry = AdapterRegistry(sqlite_url(tmp_path / "registry.db"))
    registry.register(_record("a1"))
    return registry


def test_the_summary_holds_rates_reason_and_failing_training_decisions(tmp_path: Path) -> None:
    summary = eval_summary(_outcome("rejected", tmp_path))
    assert summary["lanes"]["holdout"]["candidate"] == {
        "cases": 30,
        "pass_rate": 0.3,
        "decisive_pass_rate": 0.5,
    }
    assert summary["lanes"]["holdout"]["base"]["decisive_pass_rate"] is None
    assert summary["failing_seen_exact"] == ["d2"]


def test_a_promotion_carries_its_summary(registry: AdapterRegistry, tmp_path: Path) -> None:
    assert record_decision(registry, "a1", _outcome("promoted", tmp_path)) == "promoted"
    record = registry.get("a1")
    assert record.status == "promoted" and record.eval_summary is not None
    assert record.eval_summary["reason"] == "promoted for a reason"


def test_a_rejection_is_recorded_with_its_reason(registry: AdapterRegistry, tmp_path: Path) -> None:
    assert record_decision(registry, "a1", _outcome("rejected", tmp_path)) == "rejected"
    record = registry.get("a1")
    assert record.status == "rejected" and record.eval_summary is not None


def test_a_rerun_never_demotes_the_adapter_in_use(registry: AdapterRegistry, tmp_path: Path) -> None:
    registry.promote("a1")
    said = record_decision(registry, "a1", _outcome("rejected", tmp_path))
    assert said.startswith("left promoted") and "promote another adapter" in said
    assert registry.get("a1").status == "promoted"


def test_an_unknown_adapter_is_a_clear_error(registry: AdapterRegistry, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"no adapter 'zz'.*point the registry resource"):
        record_decision(registry, "zz", _outcome("promoted", tmp_path))
