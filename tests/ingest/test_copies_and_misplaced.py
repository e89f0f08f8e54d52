"""A session is ingested once however many copies of its file exist, and a misplaced file is
reported on its sessions' day with its path redacted.

Why this exists: the same session file in two project folders gave every decision of the
session twice under one id, and `rendered_splits` stopped on "decision_id must be unique"; a
renamed copy doubled its decisions, each with a history holding both copies' events. And a
rollout under Claude Code's folder was parsed right, but its `wrong_source_folder` row landed on
the file's modification day, and the run metadata kept its path with the login name in it.
"""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from tests.ingest import transcripts as tx
from trajectory_pipeline.decisions.points import DecisionConfig, decision_id, extract_decision_points
from trajectory_pipeline.ingest.days import WRONG_SOURCE_FOLDER
from trajectory_pipeline.mining.attempts import mine_trajectories
from trajectory_pipeline.schema import DUPLICATE_SESSION

EVERY_TIER = DecisionConfig(included_tiers=("gold", "silver", "bronze", "reject"))


def decisions(rows: list[dict[str, Any]]) -> pd.DataFrame:
    events = pd.DataFrame(rows)
    return extract_decision_points(events, mine_trajectories(events), EVERY_TIER)


def session_rows(source: str, copies: list[str], tmp_path: Path, **write: Any) -> tuple[Any, ...]:
    root = tmp_path / "root"
    for name in copies:
        tx.write(root, source, tx.BUILDERS[source](), name, **write)
    return tx.ingest(tmp_path, {source: root})


def single(source: str, tmp_path: Path) -> list[dict[str, Any]]:
    (tmp_path / "one").mkdir()
    return session_rows(source, [tx.NAMES[source]], tmp_path / "one")[1]


@pytest.mark.parametrize(
    ("source", "copies"),
    [
        # the same file in two folders
        ("claude_code", [f"proj-a/{tx.CLAUDE_SESSION}.jsonl", f"proj-b/{tx.CLAUDE_SESSION}.jsonl"]),
        # a renamed copy beside it
        ("claude_code", [f"proj/{tx.CLAUDE_SESSION}.jsonl", f"proj/{tx.CLAUDE_SESSION} (copy).jsonl"]),
        ("codex", [tx.NAMES["codex"], "backup/" + tx.NAMES["codex"].rpartition("/")[2]]),
        ("codex", [tx.NAMES["codex"], tx.NAMES["codex"].replace("rollout-", "rollout-copy-")]),
        ("own_agent", ["a/session_2026-03-10.jsonl", "b/session_2026-03-10.jsonl"]),
        ("chat_jsonl", ["chats.jsonl", "old/chats.jsonl"]),
    ],
)
def test_copies_of_a_session_are_ingested_once_and_reported(
    tmp_path: Path, source: str, copies: list[str]
) -> None:
    stats, rows, bad = session_rows(source, copies, tmp_path)
    assert tx.content(rows) == tx.content(single(source, tmp_path))
    first, second = sorted(copies)
    assert {r["source_path"].rpartition("/")[2] for r in rows} == {first.rpartition("/")[2]}, (
        "the first in path order"
    )
    sessions = {r["session_id"] for r in rows}
    assert [b["reason"] for b in bad] == [DUPLICATE_SESSION] * len(sessions)
    assert all(b["source_path"].endswith(second) and first in b["excerpt"] for b in bad), (
        "it names both files"
    )
    assert stats.duplicate_events == len(rows)
    points = decisions(rows)
    assert not points.empty and points["decision_id"].is_unique


def test_a_longer_copy_adds_only_what_the_shorter_lacks(tmp_path: Path) -> None:
    """A backup taken mid-session, in another folder under the same name: the session once, whole."""
    root = tmp_path / "root"
    records = tx.claude_records()
    name = f"proj/{tx.CLAUDE_SESSION}.jsonl"
    tx.write(root / "a-backup", "claude_code", records[:3], name)
    tx.write(root / "b-live", "claude_code", records, name)
    _, rows, bad = tx.ingest(tmp_path, {"claude_code": root})
    assert tx.content(rows) == tx.content(single("claude_code", tmp_path))
    assert [(r["source_path"].split("/")[-3], r["line_no"]) for r in rows] == [
        ("a-backup", 1),
        ("a-backup", 2),
        ("a-backup", 3),
        ("b-live", 4),
        ("b-live", 5),
    ]
    assert [b["reason"] for b in bad] == [DUPLICATE_SESSION]
    ids = [decision_id(r["session_id"], r["source_path"], r["seq"]) for r in rows]
    assert len(set(ids)) == len(ids)


def test_parts_of_one_session_are_not_copies(tmp_path: Path) -> None:
    """A sub-agent's file carries its parent's session id; a day log continues yesterday's session."""
    root = tmp_path / "root"
    main = tx.write(root, "claude_code", tx.claude_records())
    agent = [
        tx.claude_user(20, "look for the bug", 6, isSidechain=True, agentId="a1"),
        tx.claude_call(21, "toolu_a1", "Grep", {"pattern": "def f"}, 7)
        | {"isSidechain": True, "agentId": "a1"},
    ]
    tx.write(root, "claude_code", agent, f"proj/{tx.CLAUDE_SESSION}/subagents/agent-a1.jsonl")
    _, rows, bad = tx.ingest(tmp_path, {"claude_code": root})
    assert bad == []
    assert len(rows) == len(tx.claude_records()) + len(agent)
    assert {r["source_path"].rpartition("/")[2] for r in rows} == {main.name, "agent-a1.jsonl"}


def test_the_copy_kept_does_not_depend_on_the_order_they_were_written_in(tmp_path: Path) -> None:
    """The first in path order is kept: the same rows on every machine and every run."""
    copies = [f"proj-a/{tx.CLAUDE_SESSION}.jsonl", f"proj-b/{tx.CLAUDE_SESSION}.jsonl"]
    _, once, _ = session_rows("claude_code", copies, tmp_path / "x")
    _, again, _ = session_rows("claude_code", list(reversed(copies)), tmp_path / "y")
    assert [(r["source_path"].split("/")[-2], r["seq"]) for r in once] == [
        (r["source_path"].split("/")[-2], r["seq"]) for r in again
    ]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A home folder under /home/<user>: the redactor replaces user names in such paths."""
    root = Path("/home") / f"pipelinetest{abs(hash(str(tmp_path))) % 10**8}"
    try:
        root.mkdir(parents=True)
    except OSError:
        pytest.skip("cannot make a folder under /home here")
    yield root
    shutil.rmtree(root, ignore_errors=True)


def test_a_misplaced_rollout_is_reported_on_its_sessions_day_with_its_path_redacted(
    tmp_path: Path, home: Path
) -> None:
    claude_root = home / ".claude" / "projects"
    rollout = tx.NAMES["codex"].rpartition("/")[2]
    # Last written five days after the session started: the two days differ.
    path = tx.write(
        claude_root / "proj", "codex", tx.codex_records(), rollout, mtime=tx.T0 + dt.timedelta(days=5)
    )
    days = [tx.T0.date() + dt.timedelta(days=k) for k in range(7)]
    stats, rows, bad = tx.ingest(tmp_path, {"claude_code": claude_root}, days)
    assert rows and {r["source"] for r in rows} == {"codex"}
    assert [(b["reason"], b["session_start"].date()) for b in bad] == [(WRONG_SOURCE_FOLDER, tx.T0.date())]
    assert bad[0]["session_id"] == tx.CODEX_SESSION
    user = home.name
    assert user not in bad[0]["source_path"] and "<user>" in bad[0]["source_path"]
    assert len(stats.misassigned_files) == 1
    assert user not in stats.misassigned_files[0] and str(path) not in stats.misassigned_files[0]
    assert "looks like codex" in stats.misassigned_files[0]
