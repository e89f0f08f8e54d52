"""The demo's closing table reads its targets from replay_eval's rows: a target is met only by the
figures the real eval produced (never a special case for the demo)."""

from __future__ import annotations

from tests.evaluation.test_eval_report import MISSED, UNPARSED, frame, row
from trajectory_pipeline.sample.summary import lift_targets, targets_table


def _answers(candidate_passes: int, base_passes: int, seen_passes: int) -> list[dict[str, object]]:
    rows = []
    for i in range(10):
        rows.append(row(decision_id=f"h{i}", **({} if i < candidate_passes else MISSED)))
        rows.append(
            row(model="base", adapter_id=None, decision_id=f"h{i}", **({} if i < base_passes else MISSED))
        )
    for i in range(5):
        rows.append(row(lane="seen-exact", decision_id=f"s{i}", **({} if i < seen_passes else MISSED)))
    return rows


def test_every_target_is_met_by_a_real_lift() -> None:
    targets = lift_targets(frame(_answers(candidate_passes=8, base_passes=3, seen_passes=5)), promoted=True)
    assert all(target.met for target in targets), targets_table(targets)
    assert [t.measured for t in targets][:2] == ["100.0%", "+50.0 points"]


def test_a_small_lift_an_invalid_answer_and_no_promotion_are_reported_as_missed() -> None:
    rows = _answers(candidate_passes=4, base_passes=3, seen_passes=3)
    rows[0] = row(decision_id="h0", **UNPARSED)
    targets = {t.name: t for t in lift_targets(frame(rows), promoted=False)}
    assert not targets["valid calls (holdout)"].met  # 90 %
    assert not targets["pass rate over the base (holdout)"].met  # +0 points
    assert not targets["seen-exact pass rate"].met  # 60 %
    assert not targets["promoted"].met
    assert "NO" in targets_table(list(targets.values()))
