"""The action memory: built from the training split only, kept in a SQL table a server can query, and
its selector at replay fixes a wrong aim with the repository's remembered call, leaves remembered
answers alone, and gives the same rows every time (trajectory_pipeline/evaluation/memory.py)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import orjson
import pandas as pd
import pytest
import sqlalchemy as sa

from trajectory_pipeline.dataset.render import RenderConfig, prompt_and_target, render
from trajectory_pipeline.evaluation import evaluate
from trajectory_pipeline.evaluation.evaluate import Contender, eval_summary, run_replay_eval
from trajectory_pipeline.evaluation.memory import (
    MemoryIndex,
    MemoryStoreConfig,
    build_memory,
    memory_rows,
    remembered_calls,
    select_call,
    write_memory_sql,
)
from trajectory_pipeline.evaluation.promotion import PromotionConfig
from trajectory_pipeline.evaluation.replay import (
    Answer,
    EvalCase,
    ReplayConfig,
    Timing,
    score_cases,
)
from trajectory_pipeline.evaluation.report import memory_table, summarize
from trajectory_pipeline.schema import canonical_json

pytestmark = pytest.mark.action_memory

REPO = "ledger-api"
TEST_COMMAND = "uv run pytest -x tests/unit"
TYPECHECK = "uv run mypy src"
TEST_FILE = "tests/unit/test_fees.py"


def _decision(session: str, step: int, tool: str, arguments: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "decision_id": f"{session}-{step:02d}",
        "session_id": session,
        "repo": extra.get("repo", REPO),
        "family_id": extra.get("family_id", "fam-fix"),
        "target_name": tool,
        "target_arguments": canonical_json(arguments),
        "action_class": extra.get("action_class", "verification" if tool == "run_shell" else "inspect"),
    }


def _window() -> tuple[dict[str, pd.DataFrame], pd.DataFrame]:
    """Two days of decision points: three training sessions of ledger-api with the user's habits, a
    held-out session and a validation session whose calls are theirs alone."""
    day1 = [
        _decision("train-a", 0, "read_file", {"file_path": "src/ledger/fees.py"}),
        _decision("train-a", 1, "read_file", {"file_path": TEST_FILE}),
        _decision("train-a", 2, "run_shell", {"command": TYPECHECK}),
        _decision("train-a", 3, "run_shell", {"command": TEST_COMMAND, "description": "tests"}),
        _decision("train-b", 0, "run_shell", {"command": "git status  -sb"}, action_class="inspect"),
        _decision("train-b", 1, "run_shell", {"command": TEST_COMMAND}),
        _decision("test-x", 0, "run_shell", {"command": "pytest --held-out-only"}),
        _decision("test-x", 1, "read_file", {"file_path": "secret/held_out.py"}),
    ]
    day2 = [
        _decision(
            "train-c",
            0,
            "edit_file",
            {"file_path": "./src/ledger/fees.py", "old_string": "a", "new_string": "b"},
        ),
        _decision("train-c", 1, "run_shell", {"command": TEST_COMMAND}),
        _decision("train-c", 2, "apply_patch", {"patch_text": "*** Update File: x.py"}),
        _decision("train-c", 3, "run_shell", {"command": "ls"}, repo=None),
        _decision("valid-y", 0, "run_shell", {"command": "make validation-only"}),
    ]
    decisions = {"2026-11-21": pd.DataFrame(day1), "2026-11-22": pd.DataFrame(day2)}
    rendered = pd.DataFrame(
        [
            {"session_id": "train-a", "split": "train"},
            {"session_id": "train-b", "split": "train"},
            {"session_id": "train-c", "split": "train"},
            {"session_id": "test-x", "split": "test"},
            {"session_id": "valid-y", "split": "valid"},
        ]
    )
    return decisions, rendered


def _memory() -> pd.DataFrame:
    decisions, rendered = _window()
    return build_memory(decisions, rendered)[0]


def test_memory_is_built_from_the_train_split_only() -> None:
    decisions, rendered = _window()
    memory, counts = build_memory(decisions, rendered)
    text = memory.to_json()
    # Held-out and validation sessions never reach the memory.
    assert "held-out-only" not in text and "held_out.py" not in text and "validation-only" not in text
    assert counts["held_out"] == 3 and counts["no_repo"] == 1 and counts["not_remembered"] == 1
    assert counts["remembered"] == 8
    shell = memory[memory["tool"] == "run_shell"].set_index("arguments")
    test_command = shell.loc[canonical_json({"command": TEST_COMMAND})]
    assert (test_command["calls"], test_command["sessions"]) == (3, 3)
    assert (test_command["first_seen"], test_command["last_seen"]) == ("2026-11-21", "2026-11-22")
    # Aims only: whitespace folded, paths normalized, no edit text kept, edits and reads apart.
    assert canonical_json({"command": "git status -sb"}) in shell.index
    edits = memory[memory["tool"] == "edit_file"]
    assert list(edits["arguments"]) == [canonical_json({"file_path": "src/ledger/fees.py"})]
    # A session with a row in another split (a holdout file moved some of it) is left out whole.
    moved = pd.concat([rendered, pd.DataFrame([{"session_id": "train-b", "split": "test"}])])
    without_b, _ = build_memory(decisions, moved)
    assert without_b["calls"].sum() == memory["calls"].sum() - 2


def _case(
    target: tuple[str, dict[str, Any]], messages: list[dict[str, Any]] | None = None, **extra: Any
) -> EvalCase:
    return EvalCase(
        lane=extra.get("lane", "holdout"),
        decision_id=extra.get("decision_id", "d1"),
        session_id="test-z",
        source="claude_code",
        family_id=extra.get("family_id", "fam-fix"),
        action_class="verification",
        decisive=True,
        target_name=target[0],
        target_arguments=target[1],
        messages=messages or [{"role": "user", "content": "Fix the fee rounding."}],
        tools=None,
        repo=extra.get("repo", REPO),
    )


def _answer(name: str, arguments: dict[str, Any]) -> Answer:
    call = orjson.dumps({"name": name, "arguments": arguments}).decode()
    return Answer(f"<tool_call>\n{call}\n</tool_call>", 10, 5)


def _scored(cases: list[EvalCase], answers: list[Answer], threshold: float = 0.6) -> pd.DataFrame:
    own = score_cases(cases, answers, model_name="candidate", adapter_id="a1")
    return pd.concat([own, memory_rows(own, cases, MemoryIndex(_memory()), threshold)], ignore_index=True)


def test_the_selector_fixes_a_wrong_command_with_the_repositorys_own() -> None:
    """The model knows it is time to run the tests but names another ecosystem's runner."""
    case = _case(("run_shell", {"command": TEST_COMMAND}))
    rows = _scored([case], [_answer("Bash", {"command": "npm test"})]).set_index("selector")
    assert not rows.loc["none", "passed"] and rows.loc["none", "failure"] == "wrong_target"
    assert rows.loc["memory", "passed"] and rows.loc["memory", "from_memory"]
    assert orjson.loads(rows.loc["memory", "predicted_arguments"]) == {"command": TEST_COMMAND}
    assert rows.loc["memory", "oracle"] and rows.loc["memory", "candidates"] == 3
    table = memory_table(rows.reset_index())
    assert table[["fixed", "broke"]].values.tolist() == [[1, 0]]


def test_the_selector_fixes_a_path_with_the_file_the_history_read() -> None:
    history = [
        {"role": "user", "content": "Fix the fee rounding."},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"name": "read_file", "arguments": {"file_path": TEST_FILE}}],
        },
    ]
    case = _case(("edit_file", {"file_path": TEST_FILE, "old_string": "1", "new_string": "2"}), history)
    # Never an edit of it in memory: the read of the same file name is the candidate it takes.
    answer = _answer("Edit", {"file_path": "tests/test_fees.py", "old_string": "1", "new_string": "2"})
    rows = _scored([case], [answer]).set_index("selector")
    assert not rows.loc["none", "passed"]
    # edit_file's candidates are remembered edits: src/ledger/fees.py only, another file name.
    assert not rows.loc["memory", "from_memory"] and rows.loc["memory", "candidates"] == 1
    read = _case(("read_file", {"file_path": TEST_FILE}), history, decision_id="d2")
    rows = _scored([read], [_answer("Read", {"file_path": "tests/test_fees.py"})]).set_index("selector")
    assert not rows.loc["none", "passed"] and rows.loc["memory", "passed"]
    assert orjson.loads(rows.loc["memory", "predicted_arguments"]) == {"file_path": TEST_FILE}


def test_a_remembered_answer_is_left_alone() -> None:
    """Right or wrong, an answer the memory holds for the repository and tool stands: memory breaks
    nothing that was remembered, and never second-guesses a habit."""
    cases = [
        _case(("run_shell", {"command": TEST_COMMAND}), decision_id="d1"),
        _case(("run_shell", {"command": TEST_COMMAND}), decision_id="d2"),
        _case(("read_file", {"file_path": TEST_FILE}), decision_id="d3"),
    ]
    answers = [
        _answer("Bash", {"command": TEST_COMMAND}),
        _answer("Bash", {"command": TYPECHECK}),  # remembered, though not the target
        _answer("Read", {"file_path": "./" + TEST_FILE}),
    ]
    rows = _scored(cases, answers)
    own, memory = rows[rows["selector"] == "none"], rows[rows["selector"] == "memory"]
    assert not memory["from_memory"].any()
    columns = ["predicted_arguments", "passed", "failure"]
    assert memory[columns].reset_index(drop=True).equals(own[columns].reset_index(drop=True))
    assert memory_table(rows)[["fixed", "broke"]].values.tolist() == [[0, 0]]


def test_low_scores_and_unknown_repositories_keep_the_answer() -> None:
    # A read of an unrelated kind of file: no candidate reaches the threshold.
    case = _case(("read_file", {"file_path": "README.md"}))
    rows = _scored([case], [_answer("Read", {"file_path": "docs/README.md"})]).set_index("selector")
    assert not rows.loc["memory", "from_memory"]
    assert rows.loc["memory", "passed"] == rows.loc["none", "passed"]
    # Another repository: no candidates at all; a case without a repository is placed by its family.
    other = _case(("run_shell", {"command": TEST_COMMAND}), repo="web-console", family_id="other")
    rows = _scored([other], [_answer("Bash", {"command": "npm test"})]).set_index("selector")
    assert rows.loc["memory", "candidates"] == 0 and not rows.loc["memory", "from_memory"]
    placed = _case(("run_shell", {"command": TEST_COMMAND}), repo=None)
    rows = _scored([placed], [_answer("Bash", {"command": "npm test"})]).set_index("selector")
    assert rows.loc["memory", "passed"]


def test_selection_is_deterministic() -> None:
    decisions, rendered = _window()
    first, _ = build_memory(decisions, rendered)
    shuffled = {day: frame.sample(frac=1.0, random_state=3) for day, frame in reversed(decisions.items())}
    again, _ = build_memory(shuffled, rendered.sample(frac=1.0, random_state=4))
    assert first.equals(again)
    index = MemoryIndex(first)
    picks = {
        canonical_json(
            select_call(index, REPO, "fam-fix", [], "run_shell", {"command": "npm test"}, 0.6).arguments
        )
        for _ in range(5)
    }
    assert picks == {canonical_json({"command": TEST_COMMAND})}
    cases = [_case(("run_shell", {"command": TEST_COMMAND}), decision_id=f"d{i}") for i in range(3)]
    answers = [_answer("Bash", {"command": c}) for c in ("npm test", "cargo test", TYPECHECK)]
    assert _scored(cases, answers).equals(_scored(cases, answers))


def test_the_sql_table_is_queryable(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'registry.sqlite'}"
    memory = _memory()
    assert write_memory_sql(memory, url, week="2026-11-15") == len(memory)
    shell = remembered_calls(url, REPO, "run_shell")
    assert shell[0] == {
        "tool": "run_shell",
        "arguments": {"command": TEST_COMMAND},
        "calls": 3,
        "last_seen": "2026-11-22",
    }
    assert {call["tool"] for call in remembered_calls(url, REPO)} == {"read_file", "run_shell", "edit_file"}
    # A plain SQL client sees the same rows; a week written again is replaced, not doubled.
    write_memory_sql(memory, url, week="2026-11-15")
    engine = sa.create_engine(url)
    with engine.connect() as conn:
        count = conn.execute(
            sa.text("SELECT count(*) FROM action_memory WHERE repo = :r"), {"r": REPO}
        ).scalar()
    engine.dispose()
    assert count == len(memory)
    # The latest week is what a server reads.
    write_memory_sql(memory[memory["tool"] != "run_shell"], url, week="2026-11-22")
    assert remembered_calls(url, REPO, "run_shell") == []
    assert remembered_calls(url, REPO, "run_shell", week="2026-11-15")[0]["calls"] == 3
    assert remembered_calls(f"sqlite:///{tmp_path / 'empty.sqlite'}", REPO) == []
    with pytest.raises(ValueError, match="sql_table"):
        MemoryStoreConfig(sql_table="memory; drop table x")


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _rendered_rows() -> pd.DataFrame:
    rows = []
    for split, sessions in (("test", 4), ("train", 2)):
        for s in range(sessions):
            session = f"{split}{s}"
            for step in range(3):
                history = [
                    {"role": "system", "content": "You are a coding agent."},
                    {"role": "user", "content": f"Fix {session} step {step}."},
                ]
                record = render(history, "run_shell", {"command": TEST_COMMAND}, RenderConfig())
                prompt, target = prompt_and_target(record)
                rows.append(
                    {
                        "decision_id": f"{session}-d{step}",
                        "session_id": session,
                        "source": "claude_code",
                        "repo": REPO,
                        "target_name": "run_shell",
                        "action_class": "verification",
                        "family_id": "fam-fix",
                        "decisive": True,
                        "split": split,
                        "record": canonical_json(record),
                        "prompt_hash": _sha(prompt),
                        "target_hash": _sha(target),
                    }
                )
    return pd.DataFrame(rows)


def test_the_eval_reports_memory_beside_and_promotes_without_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The candidate names the wrong runner, the base model the repository's own: memory lifts the
    candidate to the base's pass rate, but promotion is decided on the answers alone."""

    def answered(
        model_dir: Path, adapter: Path | None, cases: list[EvalCase], config: Any, **names: Any
    ) -> tuple[pd.DataFrame, Timing]:
        command = "npm test" if names["model_name"] == "candidate" else TEST_COMMAND
        answers = [_answer("Bash", {"command": command}) for _ in cases]
        return score_cases(cases, answers, **names), Timing(seconds=1.0, cases=len(cases))

    monkeypatch.setattr(evaluate, "evaluate_model", answered)
    adapter = tmp_path / "adapter"
    adapter.mkdir()
    (adapter / "adapters.safetensors").write_bytes(b"")
    rows = _rendered_rows()
    outcome = run_replay_eval(
        rows,
        tmp_path / "model",
        Contender("week-1", adapter),
        None,
        ReplayConfig(),
        PromotionConfig(min_cases=1),
        tmp_path / "eval",
        memory=_memory(),
    )
    results = outcome.results
    assert set(results["selector"]) == {"none", "memory"}
    assert outcome.decision.status == "rejected"  # 0% against the base's 100%, memory aside
    assert summarize(results).equals(summarize(results[results["selector"] == "none"]))
    table = outcome.memory
    assert table is not None
    holdout = table[table["lane"] == "holdout"].set_index("model")
    assert holdout.loc["candidate", ["pass_rate", "memory_pass_rate", "oracle_rate"]].tolist() == [0, 1, 1]
    assert holdout.loc["candidate", "fixed"] == holdout.loc["candidate", "cases"] == 12
    assert holdout.loc["base", ["fixed", "broke"]].tolist() == [0, 0]
    report = outcome.report.read_text()
    assert "## Action memory" in report and "pass with memory" in report
    assert eval_summary(outcome)["memory"]["holdout"]["candidate"]["memory_pass_rate"] == 1.0
    # Without the memory selector, no memory rows and no memory table.
    alone = run_replay_eval(
        rows,
        tmp_path / "model",
        Contender("week-1", adapter),
        None,
        ReplayConfig(selectors=("none",)),
        PromotionConfig(min_cases=1),
        tmp_path / "eval2",
        memory=_memory(),
    )
    assert set(alone.results["selector"]) == {"none"} and alone.memory is None
    assert alone.decision == outcome.decision


def test_selectors_must_include_none() -> None:
    with pytest.raises(ValueError, match="selectors"):
        ReplayConfig(selectors=("memory",))
    with pytest.raises(ValueError, match="memory_threshold"):
        ReplayConfig(memory_threshold=1.5)


def test_a_relative_path_of_a_remembered_file_is_remembered() -> None:
    """The memory holds what the agent wrote (absolute paths from Claude Code); the model's relative
    path to the same file stands, even where another remembered file shares its name."""
    memory = pd.DataFrame(
        [
            {
                "repo": REPO,
                "family_id": "f",
                "tool": "read_file",
                "arguments": canonical_json({"file_path": p}),
                "action_class": "inspect",
                "calls": n,
                "sessions": 1,
                "first_seen": "2026-11-21",
                "last_seen": "2026-11-21",
            }
            for p, n in (
                ("/home/<user>/src/ledger-api/src/a/util.py", 1),
                ("/home/<user>/src/ledger-api/src/b/util.py", 9),
            )
        ]
    )
    chosen = select_call(MemoryIndex(memory), REPO, "f", [], "read_file", {"file_path": "src/a/util.py"}, 0.0)
    assert not chosen.from_memory and chosen.arguments == {"file_path": "src/a/util.py"}
    other = select_call(MemoryIndex(memory), REPO, "f", [], "read_file", {"file_path": "lib/util.py"}, 0.6)
    assert other.from_memory and other.arguments == {"file_path": "/home/<user>/src/ledger-api/src/b/util.py"}
