"""Outcomes recovered from git: did an attempt's edits land in a commit soon after it?

Many good attempts end without a test run, but their edits are committed soon after. When the
attempt's repository is on this machine, a commit made from the attempt's first edit to
`window_minutes` after its end that touches a file the attempt edited is evidence the work
landed: mining records the commit (`landed_commit`) and, for an attempt with edits and no failing
verification, counts it as the outcome signal it otherwise lacks (`landed_in_commit`; see
`attempts.py`, tiers). It never makes an attempt gold: that still needs a passing verification.

Where the repository is: `repo_paths` (`name=path,...`, by the attempt's `repo` name) first, else
the attempt's working folder (`cwd`) where it exists, a home folder that redaction wrote as
`/home/<user>` read as this user's. `git rev-parse --show-toplevel` finds the repository's root
from a subfolder. No repository: outcome `no_repository`, nothing changes.

Which commits: one `git log --all` per repository and day, over the span the day's attempts need,
by committer date (`%ct`); each attempt takes the earliest commit in its window whose files
(repository-relative, renames as both names) include one it edited, where an edited file is
joined to the working folder's place in the repository and two paths match when one's components
end the other's (`src/app.py` and `app.py`). A commit in the window that touches none of them is a
weak match: `landed_weak` (recorded, and counted as landed) only with `weak`, else `no_overlap`.

Outcomes (`OUTCOMES`), counted per day in the asset's metadata: `landed`, `landed_weak`,
`no_overlap`, `no_commit`, `no_repository`, `untimed` (the attempt has no times), `git_failed` (git
is missing, refused the repository, or ran past `timeout_s`).

Git is only read: `git --no-optional-locks` (no index refresh), no prompt, a timeout on every
command; nothing in the repository is written. Outputs depend on the repositories as they are when
mining runs: a commit made later inside an old window, or a rewritten history, can change a
re-run's `landed_commit`.

    landings, counts = find_landings([AttemptEdits("/home/<user>/src/app", "app", ("a.py",), t0, t1)],
                                     LandingOptions(window_minutes=30))
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import re
import signal
import subprocess
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

LANDED = "landed"
LANDED_WEAK = "landed_weak"
NO_OVERLAP = "no_overlap"
NO_COMMIT = "no_commit"
NO_REPOSITORY = "no_repository"
UNTIMED = "untimed"
GIT_FAILED = "git_failed"
OUTCOMES = (LANDED, LANDED_WEAK, NO_OVERLAP, NO_COMMIT, NO_REPOSITORY, UNTIMED, GIT_FAILED)

_REDACTED_HOME = re.compile(r"^(?:/home|/Users|/users)/<user>(?=/|$)")
_RECORD = "\x1e"
_FIELD = "\x1f"


def parse_repo_paths(text: str) -> dict[str, str]:
    """`name=path,...` as a dict; raises ValueError naming a bad entry."""
    found: dict[str, str] = {}
    for item in text.split(","):
        if not item.strip():
            continue
        name, sep, path = item.partition("=")
        if not sep or not name.strip() or not path.strip():
            raise ValueError(f"expected repo=path, got {item.strip()!r}")
        found[name.strip()] = path.strip()
    return found


@dataclass(frozen=True)
class LandingOptions:
    window_minutes: int = 30
    weak: bool = False
    repo_paths: Mapping[str, str] = field(default_factory=dict)
    timeout_s: float = 10.0
    home: str | None = None  # the home folder a redacted `/home/<user>` stands for; None: this user's


@dataclass(frozen=True)
class AttemptEdits:
    """What an attempt with edits tells of where and when they were made."""

    cwd: str | None
    repo: str | None
    files: tuple[str, ...]  # as mining records them: relative to cwd, or absolute
    first_edit_us: int | None
    ended_us: int | None


class Landing(NamedTuple):
    outcome: str
    commit: str | None = None


class _GitFailed(Exception):
    pass


class _NotARepository(Exception):
    pass


@dataclass
class _Repository:
    top: str
    attempts: list[int] = field(default_factory=list)


class _Git:
    """The git CLI, read-only, with a timeout; what repeats within a day is asked once."""

    def __init__(self, timeout_s: float) -> None:
        self.timeout_s = timeout_s
        self._tops: dict[str, str | Exception] = {}
        self.env = {
            **os.environ,
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_OPTIONAL_LOCKS": "0",
            "LC_ALL": "C",
        }

    def run(self, folder: str, *args: str) -> str:
        command = ["git", "--no-optional-locks", "-c", "core.quotePath=false", "-C", folder, *args]
        try:
            # Its own process group, so a timeout stops whatever git started too (a credential
            # helper, a filesystem monitor), and no pipe is left open by a child still running.
            process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=self.env,
                start_new_session=True,
            )
        except OSError as err:
            raise _GitFailed(str(err)) from None
        try:
            out, err_out = process.communicate(timeout=self.timeout_s)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
            raise _GitFailed(f"git {args[0]} ran past {self.timeout_s} s") from None
        if process.returncode != 0:
            message = err_out.decode("utf-8", "replace")
            if "not a git repository" in message:
                raise _NotARepository(message)
            raise _GitFailed(message.strip()[:300])
        return out.decode("utf-8", "replace")

    def toplevel(self, folder: str) -> str:
        found = self._tops.get(folder)
        if found is None:
            try:
                found = self.run(folder, "rev-parse", "--show-toplevel").strip()
            except (_GitFailed, _NotARepository) as err:
                found = err
            self._tops[folder] = found
        if isinstance(found, Exception):
            raise found
        return found

    def commits(self, top: str, since_s: int, until_s: int) -> list[tuple[int, str, frozenset[str]]]:
        """(committer time, hash, files) of every commit of any branch in [since, until]."""
        out = self.run(
            top,
            "log",
            "--all",
            "--no-renames",
            "--name-only",
            f"--format={_RECORD}%H{_FIELD}%ct",
            f"--since=@{since_s}",
            f"--until=@{until_s}",
        )
        found = []
        for record in out.split(_RECORD)[1:]:
            head, _, names = record.partition("\n")
            commit, _, stamp = head.partition(_FIELD)
            if not stamp.strip().isdigit():
                continue
            time = int(stamp)
            if since_s <= time <= until_s:
                files = frozenset(line.strip() for line in names.splitlines() if line.strip())
                found.append((time, commit.strip(), files))
        found.sort()
        return found


def _on_disk(path: str | None, home: str) -> str | None:
    """The folder a recorded path names on this machine: a redacted home folder read as `home`."""
    if not path or "[REDACTED" in path:
        return None
    path = _REDACTED_HOME.sub(lambda _: home.rstrip("/"), path)
    if "<user>" in path:
        return None
    return os.path.expanduser(path)


def _repo_relative(files: Sequence[str], cwd: str | None, top: str, home: str) -> list[str]:
    """The edited files as paths relative to the repository's root, where that can be told."""
    prefix = ""
    if cwd:
        try:
            relative = os.path.relpath(cwd, top)
        except ValueError:
            relative = ".."
        if not relative.startswith(".."):
            prefix = "" if relative == "." else relative
    out = []
    for name in files:
        local = _on_disk(name, home) or name
        if local.startswith("/"):
            relative = os.path.relpath(local, top)
            out.append(relative if not relative.startswith("..") else local.lstrip("/"))
        else:
            out.append(posixpath.normpath(posixpath.join(prefix, local)))
    return out


def _matches(committed: frozenset[str], edited: Sequence[str]) -> bool:
    for path in edited:
        if path in committed:
            return True
        for name in committed:
            if name.endswith("/" + path) or path.endswith("/" + name):
                return True
    return False


def find_landings(
    attempts: Sequence[AttemptEdits], options: LandingOptions
) -> tuple[list[Landing], Counter[str]]:
    """Each attempt's outcome and landed commit (see the module docstring), and the outcomes counted."""
    home = options.home if options.home is not None else str(Path.home())
    git = _Git(options.timeout_s)
    landings: list[Landing | None] = [None] * len(attempts)
    repositories: dict[str, _Repository] = {}
    window_us = options.window_minutes * 60 * 1_000_000
    for index, attempt in enumerate(attempts):
        if attempt.ended_us is None:
            landings[index] = Landing(UNTIMED)
            continue
        mapped = options.repo_paths.get(attempt.repo or "") if attempt.repo else None
        folder = _on_disk(mapped, home) if mapped else _on_disk(attempt.cwd, home)
        if folder is None or not os.path.isdir(folder):
            landings[index] = Landing(NO_REPOSITORY)
            continue
        try:
            top = git.toplevel(folder)
        except _NotARepository:
            landings[index] = Landing(NO_REPOSITORY)
            continue
        except _GitFailed:
            landings[index] = Landing(GIT_FAILED)
            continue
        repositories.setdefault(top, _Repository(top)).attempts.append(index)
    for top, repository in sorted(repositories.items()):
        members = repository.attempts
        starts = [_start(attempts[i]) for i in members]
        ends = [(attempts[i].ended_us or 0) + window_us for i in members]
        try:
            commits = git.commits(top, min(starts) // 1_000_000, -(-max(ends) // 1_000_000))
        except (_GitFailed, _NotARepository):
            for i in members:
                landings[i] = Landing(GIT_FAILED)
            continue
        for i, start in zip(members, starts, strict=True):
            attempt = attempts[i]
            lo, hi = start // 1_000_000, -(-((attempt.ended_us or 0) + window_us) // 1_000_000)
            within = [commit for commit in commits if lo <= commit[0] <= hi]
            cwd = _on_disk(attempt.cwd, home)
            edited = _repo_relative(attempt.files, cwd, top, home)
            landed = next((commit for _, commit, files in within if _matches(files, edited)), None)
            if landed is not None:
                landings[i] = Landing(LANDED, landed)
            elif within and options.weak:
                landings[i] = Landing(LANDED_WEAK, within[0][1])
            else:
                landings[i] = Landing(NO_OVERLAP if within else NO_COMMIT)
    done = [landing if landing is not None else Landing(NO_REPOSITORY) for landing in landings]
    return done, Counter(landing.outcome for landing in done)


def _start(attempt: AttemptEdits) -> int:
    """Where an attempt's window opens: its first edit, else its end."""
    if attempt.first_edit_us is not None:
        return attempt.first_edit_us
    return attempt.ended_us or 0
