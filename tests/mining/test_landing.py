"""Outcomes recovered from git (trajectory_pipeline/mining/landing.py), on real repositories made here:
`git init`, commits with set dates. A commit soon after an attempt that touches a file it edited
lands its edits (`landed_commit`, `landed_in_commit`), lifting an unverified edit to silver but never
to gold; later commits, commits of other files (unless weak matches are on), missing repositories,
a hanging git and a switched-off check change nothing; git is only read."""

from __future__ import annotations

import os
import subprocess
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from assets.mined_trajectories import mining_metadata
from tests.mining.test_mining import START, Session, records
from trajectory_pipeline.mining import landing
from trajectory_pipeline.mining.attempts import MiningConfig, mine_trajectories
from trajectory_pipeline.mining.landing import AttemptEdits, LandingOptions, find_landings

MINUTE_US = 60 * 1_000_000
END = START + 3_000_000  # the built attempt's last event: instruction, edit call, its result


def _git(repo: Path, *args: str, at_us: int | None = None) -> str:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_SYSTEM": os.devnull}
    if at_us is not None:
        stamp = f"@{at_us // 1_000_000} +0000"
        env.update(GIT_AUTHOR_DATE=stamp, GIT_COMMITTER_DATE=stamp)
    done = subprocess.run(
        ["git", "-C", str(repo), *args], env=env, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def make_repo(path: Path) -> Path:
    path.mkdir(parents=True)
    _git(path, "init", "-q", "-b", "main")
    _git(path, "config", "user.name", "Dana")
    _git(path, "config", "user.email", "dana@example.com")
    commit(path, {"src/cli.py": "print(1)\n", "README.md": "cli\n"}, START - 24 * 60 * MINUTE_US)
    return path


def commit(repo: Path, files: dict[str, str], at_us: int) -> str:
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", f"change {sorted(files)}", at_us=at_us)
    return _git(repo, "rev-parse", "HEAD")


def edit_session(cwd: str, path: str = "src/cli.py", repo: str = "cli", tests: bool | None = None) -> Session:
    """Add a flag: one edit, then optionally a test run that passes or fails."""
    s = Session(repo=repo).user("add a --verbose flag to the cli", cwd=cwd)
    s.tool(
        "Edit", {"file_path": path, "old_string": "print(1)", "new_string": "print(2)"}, "updated", cwd=cwd
    )
    if tests is not None:
        output, code = ("3 passed in 0.1s", 0) if tests else ("1 failed, 2 passed", 1)
        s.tool("Bash", {"command": "pytest -q"}, output, is_error=not tests, exit_code=code, cwd=cwd)
    return s


def mined(session: Session, **config: Any) -> tuple[dict[str, Any], Counter[str]]:
    counts: Counter[str] = Counter()
    (row,) = records(mine_trajectories(session.frame(), MiningConfig(**config), counts))
    if not isinstance(row["landed_commit"], str):  # pandas reads an all-null column as NaN
        row["landed_commit"] = None
    return row, counts


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "cli")


def test_a_commit_soon_after_that_touches_the_edits_lands_them(repo: Path) -> None:
    landed = commit(repo, {"src/cli.py": "print(2)\n"}, END + 10 * MINUTE_US)
    row, counts = mined(edit_session(str(repo)))
    assert row["landed_commit"] == landed
    assert row["tier"] == "silver" and list(row["tier_reasons"]) == [
        "edit_without_verification",
        "landed_in_commit",
    ]
    assert counts == {"landed": 1}
    # Where only evidence lifts an unverified edit, the commit is that evidence: bronze to silver.
    strict, _ = mined(edit_session(str(repo)), unverified_edit_tier="bronze")
    assert strict["tier"] == "silver" and strict["landed_commit"] == landed


def test_without_a_landing_commit_an_unverified_edit_stays_where_it_was(repo: Path) -> None:
    commit(repo, {"src/cli.py": "print(3)\n"}, END + 45 * MINUTE_US)  # past the 30 minutes
    row, counts = mined(edit_session(str(repo)), unverified_edit_tier="bronze")
    assert row["landed_commit"] is None and row["tier"] == "bronze" and counts == {"no_commit": 1}
    assert list(row["tier_reasons"]) == ["edit_without_verification"]
    wider, _ = mined(edit_session(str(repo)), landing_window_minutes=60)
    assert wider["landed_commit"] is not None


def test_a_commit_of_other_files_is_a_weak_match_off_by_default(repo: Path) -> None:
    other = commit(repo, {"README.md": "cli, documented\n"}, END + 5 * MINUTE_US)
    row, counts = mined(edit_session(str(repo)), unverified_edit_tier="bronze")
    assert row["landed_commit"] is None and row["tier"] == "bronze" and counts == {"no_overlap": 1}
    weak, counts = mined(edit_session(str(repo)), unverified_edit_tier="bronze", landing_weak_match=True)
    assert weak["landed_commit"] == other and weak["tier"] == "silver" and counts == {"landed_weak": 1}


def test_gold_still_needs_a_passing_verification_and_a_failing_one_still_rejects(repo: Path) -> None:
    landed = commit(repo, {"src/cli.py": "print(2)\n"}, END + 20 * MINUTE_US)
    gold, _ = mined(edit_session(str(repo), tests=True))
    assert gold["tier"] == "gold" and gold["landed_commit"] == landed
    failed, _ = mined(edit_session(str(repo), tests=False))
    assert failed["tier"] == "reject" and failed["landed_commit"] == landed
    assert "final_verification_failed" in list(failed["tier_reasons"])


def test_a_working_subfolder_and_absolute_paths_are_read_against_the_repository_root(repo: Path) -> None:
    landed = commit(repo, {"src/cli.py": "print(2)\n"}, END + MINUTE_US)
    row, _ = mined(edit_session(str(repo / "src"), path="cli.py"))
    assert row["landed_commit"] == landed
    absolute, _ = mined(edit_session(str(repo), path=str(repo / "src" / "cli.py")))
    assert absolute["landed_commit"] == landed


def test_a_repository_is_found_by_name_or_not_at_all(repo: Path, tmp_path: Path) -> None:
    landed = commit(repo, {"src/cli.py": "print(2)\n"}, END + MINUTE_US)
    elsewhere = "/home/<user>/work/cli"  # the agent ran on another machine (or the home is redacted)
    row, counts = mined(edit_session(elsewhere))
    assert row["landed_commit"] is None and counts == {"no_repository": 1}
    mapped, counts = mined(edit_session(elsewhere), landing_repo_paths=f"cli={repo}")
    assert mapped["landed_commit"] == landed and counts == {"landed": 1}
    plain = make_repo(tmp_path / "plain")  # a folder that exists but is no repository: not-git is fine
    (plain / ".git").rename(tmp_path / "moved-git")
    row, counts = mined(edit_session(str(plain)))
    assert row["landed_commit"] is None and counts == {"no_repository": 1}


def test_a_redacted_home_folder_is_read_as_this_users(repo: Path, tmp_path: Path) -> None:
    landed = commit(repo, {"src/cli.py": "print(2)\n"}, END + MINUTE_US)
    relative = repo.relative_to(tmp_path)
    attempt = AttemptEdits(f"/home/<user>/{relative}", "cli", ("src/cli.py",), START, END)
    found, counts = find_landings([attempt], LandingOptions(home=str(tmp_path)))
    assert found[0] == landing.Landing("landed", landed) and counts == {"landed": 1}


def test_git_is_only_read(repo: Path) -> None:
    commit(repo, {"src/cli.py": "print(2)\n"}, END + MINUTE_US)

    def snapshot() -> dict[str, tuple[int, int]]:
        return {
            str(p): (p.stat().st_mtime_ns, p.stat().st_size)
            for p in sorted((repo / ".git").rglob("*"))
            if p.is_file()
        }

    before = snapshot()
    mined(edit_session(str(repo)))
    assert snapshot() == before


def test_a_hanging_git_costs_its_attempts_the_check_not_the_run(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    slow = tmp_path / "bin"
    slow.mkdir()
    (slow / "git").write_text("#!/bin/sh\nsleep 30\n")
    (slow / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{slow}:{os.environ['PATH']}")
    started = time.monotonic()
    row, counts = mined(edit_session(str(repo)), landing_timeout_s=0.2)
    assert time.monotonic() - started < 10  # its child killed too, not waited for
    assert row["landed_commit"] is None and row["tier"] == "silver" and counts == {"git_failed": 1}


def test_switched_off_it_runs_no_git(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_git(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("git ran")

    monkeypatch.setattr(landing.subprocess, "Popen", no_git)
    row, counts = mined(edit_session(str(repo)), landing_window_minutes=0)
    assert row["landed_commit"] is None and not counts


def test_the_metadata_counts_outcomes(repo: Path) -> None:
    commit(repo, {"src/cli.py": "print(2)\n"}, END + MINUTE_US)
    counts: Counter[str] = Counter()
    attempts = mine_trajectories(edit_session(str(repo)).frame(), MiningConfig(), counts)
    metadata = mining_metadata(attempts, attempts, dict(counts))
    assert metadata["landed_in_commit"] == 1
    assert "| landed | 1 |" in metadata["git_outcomes"].value
