"""`repo` names the repository, not the worktree folder or the user.

Why this exists: a session run in a git worktree (`myrepo-feature-x`, `spotter-worktrees/
spotter-dov`, `myrepo/.claude/worktrees/fix-a`) was filed under the worktree's folder name, though
the transcript records the repository (Codex's `git.repository_url`) or the branch that names the
folder (Claude Code's `gitBranch`); and a session started in the home folder itself had its
login name as `repo`, the one column redaction does not touch. The transcripts here are written
for these tests.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.ingest import transcripts as tx
from trajectory_pipeline.ingest.parsers import aider, claude_code, codex
from trajectory_pipeline.schema import Event, repo_name


@pytest.mark.parametrize(
    ("cwd", "remote", "branch", "expected"),
    [
        ("/home/me/src/myrepo-feature-x", None, "feature/x", "myrepo"),
        ("/home/me/src/myrepo_fix-1", None, "fix-1", "myrepo"),
        ("/home/me/projects/spotter-worktrees/spotter-dov", None, "spotter-dov", "spotter"),
        ("/home/me/src/myrepo/.claude/worktrees/fix-a", None, "fix-a", "myrepo"),
        ("/home/me/src/myrepo/.claude/worktrees/fix-a/web", None, None, "myrepo"),
        ("/home/me/src/myrepo/.worktrees/fix-a", None, None, "myrepo"),
        ("/home/me/.codex/worktrees/1a2b/myrepo", None, "codex/fix", "myrepo"),
        ("/home/me/wt/myrepo-feature-x", "git@github.com:org/myrepo.git", "feature-x", "myrepo"),
        ("/home/me/wt/anything", "https://github.com/org/widget/", None, "widget"),
        # The folder is the repository whatever the branch, when nothing says otherwise.
        ("/home/me/src/main", None, "main", "main"),
        ("/home/me/src/app", None, "feature-x", "app"),
        # A home folder itself names the user, not a repository.
        ("/home/dana", None, None, None),
        ("/home/dana/", None, "main", None),
        ("/Users/Dana", None, None, None),
        ("C:\\Users\\dana", None, None, None),
        ("/root", None, None, None),
        # Homes mounted elsewhere: WSL's Windows profiles, Fedora Silverblue, FreeBSD.
        ("/mnt/c/Users/dana", None, None, None),
        ("/var/home/dana", None, "main", None),
        ("/usr/home/dana", None, None, None),
        ("/var/home/dana/app", None, None, "app"),
        ("/home/dana/app", None, None, "app"),
    ],
)
def test_repo_name(cwd: str, remote: str | None, branch: str | None, expected: str | None) -> None:
    assert repo_name(cwd, remote, branch) == expected


def claude_session(tmp_path: Path, cwd: str, branch: str) -> list[Event]:
    lines = [line | {"cwd": cwd, "gitBranch": branch} for line in tx.claude_records()]
    path = tx.write(tmp_path, "claude_code", lines)
    return [item for item in claude_code.parse(path) if isinstance(item, Event)]


def codex_session(tmp_path: Path, cwd: str, **git: str) -> list[Event]:
    meta = tx.codex_meta(**git)
    meta["payload"]["cwd"] = cwd
    turn = tx.codex_line("turn_context", {"cwd": cwd, "model": "gpt-5-codex"}, 0.5)
    path = tx.write(tmp_path, "codex", [meta, turn, *tx.codex_records()[1:]])
    return [item for item in codex.parse(path) if isinstance(item, Event)]


def test_a_claude_session_in_a_worktree_is_filed_under_its_repository(tmp_path: Path) -> None:
    events = claude_session(tmp_path, "/home/dana/src/myrepo-feature-x", "feature/x")
    assert {(e.repo, e.git_branch) for e in events} == {("myrepo", "feature/x")}


def test_a_codex_session_in_a_worktree_is_filed_under_its_remote(tmp_path: Path) -> None:
    events = codex_session(
        tmp_path,
        "/home/dana/wt/myrepo-feature-x",
        repository_url="git@github.com:org/myrepo.git",
        branch="feature-x",
    )
    assert {(e.repo, e.git_branch) for e in events} == {("myrepo", "feature-x")}
    (tmp_path / "b").mkdir()
    no_remote = codex_session(tmp_path / "b", "/home/dana/wt/myrepo-feature-x", branch="feature-x")
    assert {e.repo for e in no_remote} == {"myrepo"}


def test_a_session_in_the_home_folder_has_no_repo_and_no_login_name(tmp_path: Path) -> None:
    claude = claude_session(tmp_path / "c", "/home/dana", "")
    rollout = codex_session(tmp_path / "x", "/Users/dana")
    assert {e.repo for e in claude + rollout} == {None}


@pytest.fixture
def home() -> Iterator[Path]:
    root = Path("/home") / f"pipelinetest{os.getpid()}"
    try:
        root.mkdir(parents=True, exist_ok=False)
    except OSError:
        pytest.skip("cannot make a folder under /home here")
    yield root
    shutil.rmtree(root, ignore_errors=True)


def test_an_aider_history_in_the_home_folder_has_no_repo(home: Path) -> None:
    path = home / ".aider.chat.history.md"
    path.write_text("\n# aider chat started at 2026-03-10 09:00:00\n\n#### fix the greeting\n\nDone.\n")
    events = [item for item in aider.parse(path) if isinstance(item, Event)]
    assert events and {e.repo for e in events} == {None}
