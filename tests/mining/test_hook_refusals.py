"""A call a PreToolUse hook refused, in the forms Claude Code 2.x writes it, is a guard denial.

Why this exists: on a new user's Claude Code 2.1.x transcripts a call refused by a PreToolUse hook
(hook_progress lines before it, a "PreToolUse:<Tool> hook blocking error from command ..." text,
the refusal as the tool_result) was counted as an ordinary error: guard_denials was 0, the next
call no recovery, and the refused call became a training target. The transcripts here are written
for these tests in the shapes 2.x writes (tests/ingest/transcripts.py builds their lines).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from tests.ingest import transcripts as tx
from trajectory_pipeline.decisions.points import DecisionConfig, extract_decision_points, learnable
from trajectory_pipeline.ingest.parsers import claude_code
from trajectory_pipeline.mining.attempts import is_guard_denial, mine_trajectories
from trajectory_pipeline.schema import Event

HOOK = "$HOME/.claude/hooks/guard.sh"
EVERY_TIER = DecisionConfig(included_tiers=("gold", "silver", "bronze", "reject"))


def progress(n: int, call_id: str, event: str, tool: str, seconds: float) -> dict[str, Any]:
    data = {"type": "hook_progress", "hookEvent": event, "hookName": f"{event}:{tool}", "command": HOOK}
    return {
        **tx.claude_user(n, "", seconds),
        "type": "progress",
        "data": data,
        "parentToolUseID": call_id,
        "toolUseID": call_id,
    }


def blocking_attachment(n: int, call_id: str, event: str, tool: str, seconds: float) -> dict[str, Any]:
    attachment = {
        "type": "hook_blocking_error",
        "hookName": f"{event}:{tool}",
        "toolUseID": call_id,
        "hookEvent": event,
        "blockingError": {"blockingError": f"[{HOOK}]: rm -rf is not allowed here", "command": HOOK},
    }
    return {**tx.claude_user(n, "", seconds), "type": "attachment", "attachment": attachment}


def blocking_system_line(n: int, call_id: str, seconds: float) -> dict[str, Any]:
    text = BLOCKED
    line = {**tx.claude_user(n, "", seconds), "type": "system", "content": text, "level": "error"}
    del line["message"]
    return line | {"toolUseID": call_id}


BLOCKED = f'PreToolUse:Bash hook blocking error from command: "{HOOK}": [{HOOK}]: rm -rf is not allowed here'
RESULT_TEXTS = {
    "2.x blocking error": BLOCKED,
    "hook error": f"PreToolUse:Bash hook error: [{HOOK}]: rm -rf is not allowed here",
    "wrapped": f"<tool_use_error>Error: PreToolUse:Bash hook error: [{HOOK}]: no</tool_use_error>",
    "stopped": "Execution stopped by PreToolUse hook: the policy forbids deleting build/",
    "stderr alone": f"[{HOOK}]: rm -rf is not allowed here",  # recognized by the hook_progress line
    "reason alone": "rm -rf is not allowed here; use rm -r on one folder",  # by the attachment
}


def session(
    result: str, *, attachment: bool, system_line: bool = False, event: str = "PreToolUse"
) -> list[Any]:
    """A prompt, a Bash call a hook refuses, a different call after it, an edit and a passing test."""
    lines = [
        tx.claude_user(0, "clean the build folder and fix the test", 0),
        tx.claude_call(1, "toolu_rm", "Bash", {"command": "rm -rf build"}, 2),
        progress(2, "toolu_rm", event, "Bash", 2.1),
    ]
    if attachment:
        lines.append(blocking_attachment(3, "toolu_rm", event, "Bash", 2.2))
    if system_line:
        lines.append(blocking_system_line(4, "toolu_rm", 2.2))
    lines += [
        tx.claude_result(5, "toolu_rm", result, 2.3, is_error=True),
        tx.claude_call(6, "toolu_rm2", "Bash", {"command": "rm -r build/cache"}, 4),
        tx.claude_result(7, "toolu_rm2", "", 5),
        tx.claude_call(
            8, "toolu_edit", "Edit", {"file_path": "app.py", "old_string": "a", "new_string": "b"}, 6
        ),
        tx.claude_result(9, "toolu_edit", "The file app.py has been updated.", 7),
        tx.claude_call(10, "toolu_test", "Bash", {"command": "pytest -q"}, 8),
        tx.claude_result(11, "toolu_test", "3 passed in 0.1s", 9),
    ]
    return lines


def parsed(tmp_path: Path, lines: list[Any]) -> pd.DataFrame:
    path = tx.write(tmp_path, "claude_code", lines)
    items = list(claude_code.parse(path))
    assert all(isinstance(item, Event) for item in items), items
    return pd.DataFrame(items)


@pytest.mark.parametrize("form", RESULT_TEXTS)
def test_a_pre_tool_use_hook_refusal_is_a_guard_denial_and_the_next_call_a_recovery(
    tmp_path: Path, form: str
) -> None:
    events = parsed(tmp_path, session(RESULT_TEXTS[form], attachment=form != "stderr alone"))
    [attempt] = mine_trajectories(events).to_dict("records")
    assert (attempt["guard_denials"], attempt["guard_recoveries"], attempt["errors"]) == (1, 1, 0)
    assert attempt["tier"] == "gold", attempt["tier_reasons"]
    points = extract_decision_points(events, mine_trajectories(events), EVERY_TIER)
    refused = points[points["target_guard_denied"]]
    assert len(refused) == 1 and '"rm -rf build"' in refused.iloc[0]["target_arguments"]
    kept, set_aside = learnable(points)
    assert set_aside["refused_by_guard"] == 1 and len(kept) == len(points) - 1
    assert bool(points[points["guard_recovery"]].shape[0] == 1)


def test_a_refusal_in_a_system_line_names_the_call_and_is_no_error(tmp_path: Path) -> None:
    events = parsed(tmp_path, session(RESULT_TEXTS["reason alone"], attachment=False, system_line=True))
    notice = events[(events["role"] == "system") & events["tool_call_id"].notna()]
    assert list(notice["kind"]) == ["meta"] and list(notice["tool_call_id"]) == ["toolu_rm"]
    [attempt] = mine_trajectories(events).to_dict("records")
    assert (attempt["guard_denials"], attempt["guard_recoveries"], attempt["errors"]) == (1, 1, 0)


def test_the_attachment_is_read_as_the_model_reads_it(tmp_path: Path) -> None:
    events = parsed(tmp_path, session(RESULT_TEXTS["reason alone"], attachment=True))
    notice = events[events["text"].str.contains("hook blocking error", na=False)]
    assert list(notice["text"]) == [BLOCKED]
    assert list(notice["tool_call_id"]) == ["toolu_rm"]


def test_a_failed_call_after_a_hook_that_let_it_run_is_an_error(tmp_path: Path) -> None:
    """PreToolUse hooks run before every call: their progress lines alone refuse nothing."""
    events = parsed(tmp_path, session("rm: build: Permission denied\nExit code 1", attachment=False))
    [attempt] = mine_trajectories(events).to_dict("records")
    assert (attempt["guard_denials"], attempt["errors"]) == (0, 1)


def test_a_post_tool_use_blocking_error_is_no_refusal(tmp_path: Path) -> None:
    text = f'PostToolUse:Bash hook blocking error from command: "{HOOK}": lint failed'
    events = parsed(tmp_path, session(text, attachment=True, event="PostToolUse"))
    [attempt] = mine_trajectories(events).to_dict("records")
    assert (attempt["guard_denials"], attempt["errors"]) == (0, 1)


@pytest.mark.parametrize(
    ("text", "refused"),
    [
        *((text, True) for text in RESULT_TEXTS.values() if text.startswith(("Pre", "<", "Exec"))),
        ("PreToolUse:Edit hook stopped continuation: read-only session", True),
        ("PostToolUse:Edit hook blocking error from command: lint", False),
        ("Stop hook blocking error from command: keep going", False),
        ("the PreToolUse hook error handling is in hooks.ts", False),
    ],
)
def test_is_guard_denial_reads_2x_hook_texts(text: str, refused: bool) -> None:
    assert is_guard_denial(text) is refused
