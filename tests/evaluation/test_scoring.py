"""Tests for replay scoring: how one predicted tool call is judged against the real one.

The replay eval decides whether an adapter is promoted, so these tables pin every rule of
docs/design.md's "Scoring": path normalization and suffix matching, shell
commands by whitespace folding and by intent class, patch file sets, source tool names mapped
into the canonical vocabulary, each failure reason and its precedence, the RoTBench-style
parameter columns, the argument-shape formula, and tau-bench's pass^k on hand-computed cases.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest

from trajectory_pipeline.evaluation.schema import EVAL_RESULT_SCHEMA
from trajectory_pipeline.evaluation.scoring import (
    FAILURES,
    NO_CALL,
    Score,
    argument_shape,
    commands_match,
    normalize_path,
    pass_at_k_table,
    pass_hat_k,
    patch_files,
    paths_match,
    score_call,
)

ABS = "/home/u/repo/src/app.py"


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("src/app.py", "src/app.py"),
        ("./src/app.py", "src/app.py"),
        ("src//app.py", "src/app.py"),
        ("src/./app.py/", "src/app.py"),
        ("/home//u/./repo/", "/home/u/repo"),
        ("./", "."),
        (".", "."),
        ("/", "/"),
        ("../lib/x.py", "../lib/x.py"),
        ("  src/app.py ", "src/app.py"),
    ],
)
def test_normalize_path(path: str, expected: str) -> None:
    assert normalize_path(path) == expected


@pytest.mark.parametrize(
    ("predicted", "target", "expected"),
    [
        ("src/app.py", ABS, True),  # relative suffix of the absolute target
        (ABS, "src/app.py", True),  # and the other way round
        ("app.py", ABS, True),  # a bare basename is a one-component suffix
        ("./src/app.py", "src/app.py", True),
        ("src/app.py/", "./src//app.py", True),
        ("xapp.py", ABS, False),  # components, not characters
        ("rc/app.py", ABS, False),
        ("lib/app.py", ABS, False),
        ("repo/src/app.py", "src/app.py", True),  # two relative paths: either ends the other
        ("/repo/src/app.py", ABS, False),  # two absolute paths must be equal
        ("/home/u/repo/src/app.py", ABS, True),
        ("home/u/repo/src/app.py", "/src/app.py", False),  # a relative path must end the absolute one
        (".", "/home/u/repo", False),  # `.` names no file
        ("./", ".", True),
        ("src", "src/app.py", False),
    ],
)
def test_paths_match(predicted: str, target: str, expected: bool) -> None:
    assert paths_match(predicted, target) is expected


@pytest.mark.parametrize(
    ("predicted", "target", "expected"),
    [
        ("pytest  -q\n", "pytest -q", True),  # whitespace folding
        ("git   log --oneline", "git log --oneline", True),
        ("pytest -q", "python -m pytest tests/", True),  # intent: pytest
        ("uv run pytest tests/test_x.py -k foo", "pytest", True),
        ("npm test", "pnpm test", True),  # intent: npm_test
        ("yarn test", "npm test", True),
        ("node --test", "node --test test/", True),
        ("node --test", "npm test", False),  # node_test is its own class
        ("cargo test", "cargo test -p core", True),
        ("go test ./...", "go test ./pkg/...", True),
        ("git status", "git status -sb", True),
        ("git diff --check", "git diff --check HEAD", True),
        ("ruff check . && pytest", "pytest -x", True),  # the chain's test run speaks for it
        ("pytest", "cargo test", False),
        ("cat a.py", "cat b.py", False),  # read: the target is in the arguments
        ("ls", "ls -la", False),  # list is not an intent-match class
        ("git diff", "git diff src/app.py", False),
        ("pip install x", "pip install y", False),
        ("echo a", "echo b", False),  # no intent at all
    ],
)
def test_commands_match(predicted: str, target: str, expected: bool) -> None:
    assert commands_match(predicted, target) is expected


CODEX_PATCH = """*** Begin Patch
*** Update File: src/app.py
@@
-x = 1
+x = 2
*** Add File: ./tests/test_app.py
+def test(): pass
*** Delete File: old.py
*** End Patch"""

UNIFIED = """diff --git a/src/app.py b/src/app.py
--- a/src/app.py\t2024-01-01
+++ b/src/app.py
@@ -1 +1 @@
-x = 1
+x = 2
--- /dev/null
+++ b/src/new.py
@@ -0,0 +1 @@
+y = 1
"""


@pytest.mark.parametrize(
    ("patch", "expected"),
    [
        (CODEX_PATCH, {"src/app.py", "tests/test_app.py", "old.py"}),
        ("*** Update File: a.py\n*** Move to: b.py\n", {"a.py", "b.py"}),
        (UNIFIED, {"src/app.py", "src/new.py"}),
        ("--- a/gone.py\n+++ /dev/null\n", {"gone.py"}),
        ("just some text", set()),
    ],
)
def test_patch_files(patch: str, expected: set[str]) -> None:
    assert patch_files(patch) == expected


def _score(
    predicted: tuple[str, dict[str, Any]] | None,
    target_name: str,
    target_arguments: dict[str, Any],
    source: str = "own_agent",
) -> Score:
    return score_call(predicted, target_name, target_arguments, source)


READ = ("read_file", {"file_path": ABS})
EDIT = ("edit_file", {"file_path": ABS, "old_string": "x = 1", "new_string": "x = 2"})
SHELL = ("run_shell", {"command": "pytest -q"})

# (predicted, target, source) → failure; None means passed.
FAILURE_CASES: list[
    tuple[str, tuple[str, dict[str, Any]] | None, tuple[str, dict[str, Any]], str, str | None]
] = [
    ("no call", None, READ, "own_agent", "no_call_parsed"),
    ("other tool", ("run_shell", {"command": f"cat {ABS}"}), READ, "own_agent", "wrong_tool"),
    ("unknown tool", ("open_file_please", {"file_path": ABS}), READ, "claude_code", "wrong_tool"),
    ("no file_path", ("read_file", {}), READ, "own_agent", "missing_required_argument"),
    ("blank file_path", ("read_file", {"file_path": "  "}), READ, "own_agent", "missing_required_argument"),
    ("null command", ("run_shell", {"command": None}), SHELL, "own_agent", "missing_required_argument"),
    (
        "edit lacks new",
        ("edit_file", {"file_path": ABS, "old_string": "x"}),
        EDIT,
        "own_agent",
        "missing_required_argument",
    ),
    ("file_path a list", ("read_file", {"file_path": [ABS]}), READ, "own_agent", "wrong_argument_type"),
    (
        "no-op edit",
        ("edit_file", {"file_path": ABS, "old_string": "x", "new_string": "x"}),
        EDIT,
        "own_agent",
        "edit_no_change",
    ),
    (
        "no-op edit, other file",
        ("edit_file", {"file_path": "b.py", "old_string": "x", "new_string": "x"}),
        EDIT,
        "own_agent",
        "edit_no_change",
    ),
    ("other file", ("read_file", {"file_path": "src/xapp.py"}), READ, "own_agent", "wrong_target"),
    ("other command", ("run_shell", {"command": "ls"}), SHELL, "own_agent", "wrong_target"),
    (
        "other pattern",
        ("glob", {"pattern": "*.js"}),
        ("glob", {"pattern": "**/*.py"}),
        "own_agent",
        "wrong_target",
    ),
    (
        "unknown tool, other args",
        ("TodoWrite", {"todos": []}),
        ("TodoWrite", {"todos": [{"a": 1}]}),
        "claude_code",
        "wrong_target",
    ),
    (
        "patch other files",
        ("apply_patch", {"patch_text": "*** Update File: src/app.py\n"}),
        ("apply_patch", {"patch_text": CODEX_PATCH}),
        "own_agent",
        "wrong_target",
    ),
    # passes
    ("same call", READ, READ, "own_agent", None),
    ("suffix path", ("read_file", {"file_path": "./src/app.py"}), READ, "own_agent", None),
    (
        "edit, relative",
        ("edit_file", {"file_path": "app.py", "old_string": "a", "new_string": "b"}),
        EDIT,
        "own_agent",
        None,
    ),
    (
        "delete text",
        ("edit_file", {"file_path": ABS, "old_string": "x = 1", "new_string": ""}),
        EDIT,
        "own_agent",
        None,
    ),
    (
        "empty file",
        ("write_file", {"file_path": "a.py", "content": ""}),
        ("write_file", {"file_path": "a.py", "content": "x"}),
        "own_agent",
        None,
    ),
    ("same intent", ("run_shell", {"command": "python -m pytest tests/"}), SHELL, "own_agent", None),
    (
        "grep pattern",
        ("grep_files", {"pattern": "def main", "path": "lib"}),
        ("grep_files", {"pattern": "def main", "path": "src"}),
        "own_agent",
        None,
    ),
    (
        "unknown tool, same args",
        ("TodoWrite", {"todos": [{"a": 1}]}),
        ("TodoWrite", {"todos": [{"a": 1}]}),
        "claude_code",
        None,
    ),
    (
        "patch same files",
        ("apply_patch", {"patch_text": UNIFIED}),
        ("apply_patch", {"patch_text": "*** Update File: src/app.py\n*** Add File: src/new.py\n"}),
        "own_agent",
        None,
    ),
]


@pytest.mark.parametrize(
    ("predicted", "target", "source", "failure"),
    [case[1:] for case in FAILURE_CASES],
    ids=[case[0] for case in FAILURE_CASES],
)
def test_failure_reasons(
    predicted: tuple[str, dict[str, Any]] | None,
    target: tuple[str, dict[str, Any]],
    source: str,
    failure: str | None,
) -> None:
    score = _score(predicted, *target, source=source)
    assert score.failure == failure
    assert score.passed is (failure is None)
    assert failure is None or failure in FAILURES


def test_every_failure_reason_is_reached() -> None:
    assert {case[-1] for case in FAILURE_CASES} - {None} == set(FAILURES)


@pytest.mark.parametrize(
    ("predicted", "failure"),
    [
        (("run_shell", {}), "wrong_tool"),  # also lacks file_path: the tool comes first
        (("edit_file", {"file_path": [ABS], "old_string": "x"}), "missing_required_argument"),
        (("edit_file", {"file_path": [ABS], "old_string": "x", "new_string": "x"}), "wrong_argument_type"),
        (("edit_file", {"file_path": "b.py", "old_string": "x", "new_string": "x"}), "edit_no_change"),
    ],
)
def test_failures_follow_precedence(predicted: tuple[str, dict[str, Any]], failure: str) -> None:
    assert _score(predicted, *(READ if predicted[0] == "run_shell" else EDIT)).failure == failure


@pytest.mark.parametrize(
    ("source", "name", "arguments", "canonical", "passed"),
    [
        ("claude_code", "Read", {"file_path": "src/app.py"}, "read_file", True),
        ("claude_code", "Bash", {"command": "pytest -q", "timeout": 60000}, "run_shell", False),
        ("claude_code", "read_file", {"file_path": "src/app.py"}, "read_file", True),  # canonical kept
        ("codex", "shell", {"command": ["bash", "-lc", f"sed -n 1,40p {ABS}"]}, "run_shell", False),
        ("own_agent", "read_file", {"path": "src/app.py"}, "read_file", True),  # alias mapped
        ("gemini_cli", "read_file", {"absolute_path": ABS}, "read_file", True),
        ("swe_agent", "open", {"path": "src/app.py"}, "read_file", True),
        ("swe_agent", "str_replace_editor", {"command": "view", "path": ABS}, "read_file", True),
    ],
)
def test_source_names_are_canonicalized(
    source: str, name: str, arguments: dict[str, Any], canonical: str, passed: bool
) -> None:
    score = _score((name, arguments), *READ, source=source)
    assert score.predicted_name == canonical
    assert score.passed is passed


def test_codex_patch_and_shell_against_canonical_targets() -> None:
    patch = _score(
        ("apply_patch", {"input": CODEX_PATCH}), "apply_patch", {"patch_text": CODEX_PATCH}, "codex"
    )
    assert patch.passed and patch.exact_match
    shell = _score(("shell", {"command": ["bash", "-lc", "pytest -q"]}), *SHELL, source="codex")
    assert shell.passed and shell.exact_match
    assert shell.predicted_arguments == '{"command":"pytest -q"}'


def test_unknown_source_is_rejected() -> None:
    with pytest.raises(ValueError, match="source must be one of"):
        score_call(READ, *READ, source="cursor")


def test_malformed_prediction_is_rejected() -> None:
    with pytest.raises(TypeError, match=r"predicted must be \(name: str, arguments: dict\)"):
        score_call(("read_file", "src/app.py"), *READ, source="own_agent")  # type: ignore[arg-type]


def test_no_call_scores_zero() -> None:
    assert _score(None, *READ) == NO_CALL
    assert NO_CALL.predicted_name is None and NO_CALL.arg_shape == 0.0 and not NO_CALL.passed


@pytest.mark.parametrize(
    ("predicted", "target", "target_match", "exact"),
    [
        (READ, READ, True, True),
        (("read_file", {"file_path": "./src/app.py"}), READ, True, False),  # exact means byte-equal JSON
        (("run_shell", {"command": "pytest  -q"}), SHELL, True, False),
        (("read_file", {"file_path": ABS, "limit": 40}), READ, True, False),
        (("run_shell", {"command": f"cat {ABS}"}), READ, False, False),  # other tool: no target match
    ],
)
def test_target_and_exact_match(
    predicted: tuple[str, dict[str, Any]], target: tuple[str, dict[str, Any]], target_match: bool, exact: bool
) -> None:
    score = _score(predicted, *target)
    assert (score.target_match, score.exact_match) == (target_match, exact)


@pytest.mark.parametrize(
    ("predicted", "target", "names", "values"),
    [
        (READ, READ, True, True),
        (("read_file", {"file_path": "./home/u/repo/src/app.py"}), READ, True, False),  # relative ≠ absolute
        (
            ("read_file", {"file_path": "src//app.py/"}),
            ("read_file", {"file_path": "src/app.py"}),
            True,
            True,
        ),
        (("read_file", {"file_path": ABS, "limit": 40}), READ, True, True),  # a known optional key
        (("read_file", {"file_path": ABS, "encoding": "utf8"}), READ, False, False),  # an unexpected key
        (("read_file", {"file_path": ABS}), ("read_file", {"file_path": ABS, "offset": 10}), True, False),
        (("read_file", {"file_path": "src/app.py"}), READ, True, False),  # a target match, another value
        (("run_shell", {"command": " pytest\t-q "}), SHELL, True, True),  # folded whitespace
        (("run_shell", {"command": "python -m pytest"}), SHELL, True, False),  # same intent, other text
        (("edit_file", {"file_path": ABS, "old_string": "x = 1"}), EDIT, False, False),  # required key absent
        (
            ("grep_files", {"pattern": "x", "path": "./src/"}),
            ("grep_files", {"pattern": "x", "path": "src"}),
            True,
            True,
        ),
        (("TodoWrite", {"todos": []}), ("TodoWrite", {"todos": [1]}), True, False),
        (("TodoWrite", {"todos": [], "x": 1}), ("TodoWrite", {"todos": []}), False, False),
        (("run_shell", {"file_path": ABS}), READ, False, False),  # other tool: nothing further
    ],
)
def test_parameter_names_and_values(
    predicted: tuple[str, dict[str, Any]], target: tuple[str, dict[str, Any]], names: bool, values: bool
) -> None:
    score = _score(predicted, *target, source="claude_code" if predicted[0] == "TodoWrite" else "own_agent")
    assert (score.param_names_match, score.param_values_match) == (names, values)


@pytest.mark.parametrize(
    ("predicted", "target", "expected"),
    [
        ({}, {}, 1.0),
        ({"file_path": "a"}, {"file_path": "b"}, 1.0),  # same keys, same types
        ({"file_path": 3}, {"file_path": "b"}, 0.5),  # same keys, type disagrees
        ({"file_path": "a"}, {"file_path": "b", "offset": 1, "limit": 2}, (1 / 3 + 1) / 2),
        ({"command": "ls"}, {"file_path": "a"}, 0.0),  # nothing shared
        ({"a": True, "b": [1]}, {"a": 1, "b": [], "c": None}, (2 / 3 + 1 / 2) / 2),  # bool is not a number
        ({"a": 1.5, "b": {}}, {"a": 2, "b": {"k": 1}}, 1.0),  # int and float are both numbers
    ],
)
def test_argument_shape(predicted: dict[str, Any], target: dict[str, Any], expected: float) -> None:
    assert argument_shape(predicted, target) == pytest.approx(expected)


def test_arg_shape_ignores_the_tool_name() -> None:
    assert _score(("write_file", {"file_path": ABS}), *READ).arg_shape == 1.0


@pytest.mark.parametrize(
    ("n", "c", "k", "expected"),
    [
        (4, 2, 2, 1 / 6),
        (4, 2, 1, 0.5),
        (4, 4, 4, 1.0),
        (4, 0, 1, 0.0),
        (5, 3, 1, 0.6),
        (5, 3, 2, 3 / 10),
        (5, 3, 3, 1 / 10),
        (5, 3, 4, 0.0),
        (1, 1, 1, 1.0),
    ],
)
def test_pass_hat_k(n: int, c: int, k: int, expected: float) -> None:
    assert pass_hat_k(n, c, k) == pytest.approx(expected)


@pytest.mark.parametrize(("n", "c", "k"), [(4, 5, 1), (4, -1, 1), (4, 2, 0), (4, 2, 5)])
def test_pass_hat_k_rejects_impossible_counts(n: int, c: int, k: int) -> None:
    with pytest.raises(ValueError, match="pass\\^k needs 0 <= c <= n and 1 <= k <= n"):
        pass_hat_k(n, c, k)


def test_pass_at_k_table_averages_pass_hat_k_over_cases() -> None:
    table = pass_at_k_table({"d1": [True, True, True, True], "d2": [True, False, True, False]})
    assert table == pytest.approx({1: 0.75, 2: (1 + 1 / 6) / 2, 3: 0.5, 4: 0.5})
    assert pass_at_k_table({"d1": [True, False]}, ks=[2]) == {2: 0.0}


def test_pass_at_k_table_reads_a_grouped_frame() -> None:
    frame = pd.DataFrame(
        {"decision_id": ["a", "a", "b", "b"], "sample": [0, 1, 0, 1], "passed": [True, True, False, True]}
    )
    table = pass_at_k_table(frame.groupby("decision_id")["passed"].agg(list))
    assert table == pytest.approx({1: 0.75, 2: 0.5})


@pytest.mark.parametrize(
    ("passed", "ks", "message"),
    [
        ({}, None, "at least one case"),
        ({"a": []}, None, "case 'a' has none"),
        ({"a": [True, True], "b": [True]}, [2], r"fewest samples of any case \(1\), got 2"),
        ({"a": [True]}, [0], "got 0"),
    ],
)
def test_pass_at_k_table_rejects(passed: dict[str, list[bool]], ks: list[int] | None, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        pass_at_k_table(passed, ks)


def test_score_fields_are_eval_columns() -> None:
    row = dataclasses.asdict(_score(("read_file", {"file_path": "app.py"}), *READ))
    schema = pa.schema([EVAL_RESULT_SCHEMA.field(name) for name in row])
    assert pa.Table.from_pylist([row, dataclasses.asdict(NO_CALL)], schema=schema).num_rows == 2
