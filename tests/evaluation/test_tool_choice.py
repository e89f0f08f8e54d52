"""Adapters trained with `target_mode: tool_choice` learned which tool to call, not its arguments: their
records' targets carry none, constrained decoding allows such a call, and the replay eval scores
their cases on the tool name, for every model alike, and says so in the report and the registry."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import orjson
import pandas as pd
import pytest

from tests.evaluation.test_replay import _history
from trajectory_pipeline.dataset.render import RenderConfig, prompt_and_target, render
from trajectory_pipeline.evaluation import evaluate
from trajectory_pipeline.evaluation.constrained import declared_only, grammar_accepts
from trajectory_pipeline.evaluation.evaluate import (
    Contender,
    eval_summary,
    run_replay_eval,
    score_tool_choice,
    tool_choice_cases,
)
from trajectory_pipeline.evaluation.promotion import PromotionConfig
from trajectory_pipeline.evaluation.replay import Answer, EvalCase, ReplayConfig, loaded_model, score_cases
from trajectory_pipeline.schema import canonical_json


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _rows(target_mode: str) -> pd.DataFrame:
    rows = []
    for split, sessions in (("test", 3), ("train", 2)):
        for s in range(sessions):
            session = f"{split}{s}"
            for step in range(4):
                target = (
                    ("run_shell", {"command": "pytest -q"})
                    if step % 2
                    else ("read_file", {"file_path": "a.py"})
                )
                record = render(_history(session, step), *target, RenderConfig(target_mode=target_mode))
                prompt, target_key = prompt_and_target(record)
                rows.append(
                    {
                        "decision_id": f"{session}-d{step}",
                        "session_id": session,
                        "source": "own_agent",
                        "target_name": target[0],
                        "action_class": "verification" if step % 2 else "inspect",
                        "family_id": "fam",
                        "decisive": bool(step % 2),
                        "split": split,
                        "target_mode": target_mode,
                        "record": canonical_json(record),
                        "prompt_hash": _sha(prompt),
                        "target_hash": _sha(target_key),
                    }
                )
    return pd.DataFrame(rows)


def _answers(cases: list[EvalCase], right_tool: bool) -> list[Answer]:
    """The right tool aimed elsewhere, or always the wrong tool."""
    answers = []
    for case in cases:
        name = case.target_name if right_tool else ("glob" if case.target_name != "glob" else "read_file")
        call = {"name": name, "arguments": {"file_path": "elsewhere.py", "command": "make"}}
        answers.append(Answer(f"<tool_call>\n{orjson.dumps(call).decode()}\n</tool_call>", 10, 5))
    return answers


def test_tool_choice_cases_pass_on_the_tool_name() -> None:
    rows = _rows("tool_choice")
    assert tool_choice_cases(rows) == set(rows["decision_id"])
    assert tool_choice_cases(rows.drop(columns="target_mode")) == set()  # rows rendered before the mode
    from trajectory_pipeline.evaluation.replay import select_cases

    cases = select_cases(rows, ReplayConfig())
    assert all(case.target_arguments == {} for case in cases)
    scored = score_cases(cases, _answers(cases, right_tool=True), model_name="candidate", adapter_id="a")
    assert not scored["passed"].any()  # as calls, the empty target arguments are never met
    chosen = score_tool_choice(scored, tool_choice_cases(rows))
    assert chosen["passed"].all() and chosen["failure"].isna().all()
    wrong = score_cases(cases, _answers(cases, right_tool=False), model_name="base", adapter_id=None)
    wrong = score_tool_choice(wrong, tool_choice_cases(rows))
    assert not wrong["passed"].any() and set(wrong["failure"]) == {"wrong_tool"}


def test_the_eval_scores_on_the_tool_name_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def answered(
        model_dir: Path, adapter: Path | None, cases: list[EvalCase], config: Any, **names: Any
    ) -> tuple[pd.DataFrame, Any]:
        from trajectory_pipeline.evaluation.replay import Timing

        right = names["model_name"] == "candidate"
        return score_cases(cases, _answers(cases, right), **names), Timing(seconds=1.0, cases=len(cases))

    monkeypatch.setattr(evaluate, "evaluate_model", answered)
    adapter = tmp_path / "adapter"
    adapter.mkdir()
    (adapter / "adapters.safetensors").write_bytes(b"")
    outcome = run_replay_eval(
        _rows("tool_choice"),
        tmp_path / "model",
        Contender("week-1", adapter),
        None,
        ReplayConfig(),
        PromotionConfig(min_cases=1),
        tmp_path / "eval",
    )
    candidate = outcome.results[outcome.results["model"] == "candidate"]
    assert candidate["passed"].all() and outcome.decision.status == "promoted"
    assert outcome.scored_on == "tool_name" and eval_summary(outcome)["scored_on"] == "tool_name"
    report = outcome.report.read_text()
    note = f"Scored on the tool name: {outcome.cases} of {outcome.cases} cases were rendered with target_mode"
    assert note in report
    full = run_replay_eval(
        _rows("full"),
        tmp_path / "model",
        Contender("week-1", adapter),
        None,
        ReplayConfig(),
        PromotionConfig(min_cases=1),
        tmp_path / "eval-full",
    )
    assert full.scored_on == "call" and "Scored on the tool name" not in full.report.read_text()
    assert not full.results["passed"].any()  # the right tool aimed elsewhere fails as a call


def test_constrained_decoding_allows_a_tool_choice_target(tiny_model: Path) -> None:
    with loaded_model(tiny_model) as (_, tokenizer):
        full = render(_history("s", 1), "read_file", {"file_path": "a.py"}, RenderConfig())
        chosen = render(
            _history("s", 1), "read_file", {"file_path": "a.py"}, RenderConfig(target_mode="tool_choice")
        )
        target = '<tool_call>\n{"name": "read_file", "arguments": {}}\n</tool_call>'
        assert grammar_accepts(tokenizer, declared_only(chosen["tools"]), target)
        assert not grammar_accepts(tokenizer, declared_only(full["tools"]), target)  # file_path required
