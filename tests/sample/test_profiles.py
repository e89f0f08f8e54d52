"""The sample corpus's two profiles: the demo user's habits, and the generic corpus a learned base trains on.

What the demo's learning story relies on: each profile is deterministic; the generic corpus shares no
repository, file path, function name, home, session id or date with the demo's; the demo user's
routines (`scenarios` module docstring) hold in every generated demo session and in no generic one;
and the generated generic repositories are consistent (every edit applies, every failure names a
test of its suites, every test report reads as what it is).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import itertools
import json
import random
import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from trajectory_pipeline.mining.verification import (
    VERIFICATION_INTENTS,
    command_intent,
    command_outcome,
    runner_outcome,
)
from trajectory_pipeline.sample.content import PHRASING, REPOS, Phrasing, Repo, RepoIndex, Task, suite_report
from trajectory_pipeline.sample.corpus import PROFILES, CorpusSpec, generate_corpus
from trajectory_pipeline.sample.generic import (
    GENERIC_EXPOSURES,
    GENERIC_PHRASING,
    LANGUAGES,
    MANIFESTS,
    generic_repos,
)
from trajectory_pipeline.sample.scenarios import Call, Delegate, Options, Scenario, build_scenario

GENERIC = generic_repos()
SMALL_DEMO = CorpusSpec(days=3, sessions_per_day=4)
SMALL_GENERIC = CorpusSpec(days=3, sessions_per_day=4, profile="generic")
UUID = re.compile(rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
# Names every language's programs share; they say nothing about the demo's repositories.
UNIVERSAL_NAMES = {"main", "new", "get", "insert", "len", "is_empty", "service", "client"}


def corpus_bytes(root: Path) -> bytes:
    return b"\n".join(p.read_bytes() for p in sorted(root.rglob("*.jsonl")))


def digests(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def corpora(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """The default demo and generic corpora (14 days each), as one blob of bytes per profile."""
    root = tmp_path_factory.mktemp("profiles")
    for profile in PROFILES:
        generate_corpus(root / profile, CorpusSpec(profile=profile))
    return {profile: corpus_bytes(root / profile) for profile in PROFILES}


def calls_of(scenario: Scenario) -> list[Call]:
    """The session's calls in order, sub-agent calls inlined (they run where the Task call is)."""
    calls: list[Call] = []
    for turn in scenario.turns:
        for step in turn.steps:
            calls.extend(step.calls if isinstance(step, Delegate) else (step,))
    return calls


def scenarios(repos: tuple[Repo, ...], routines: bool, per_task: int = 12) -> list[Scenario]:
    """Sessions of every task of `repos`, with every source's options, many random draws each."""
    built = []
    for repo in repos:
        index = RepoIndex.of(repo)
        for t, task in enumerate(repo.tasks):
            for k in range(per_task):
                options = Options(
                    delegate=k % 2 == 0,
                    guard_styles=("denied_user", "denied_policy"),
                    plant_secret=k % 3 == 0,
                    long=k % 5 == 0,
                    routines=routines,
                )
                rng = random.Random(f"{repo.name}:{t}:{k}")
                built.append(build_scenario(rng, index, task, dt.date(2026, 11, 20), options))
    return built


# --------------------------------------------------------------------------- specs and determinism


def test_each_profile_has_its_own_defaults_and_explicit_values_win() -> None:
    assert (CorpusSpec().end_date, CorpusSpec().seed, CorpusSpec().profile) == (
        dt.date(2026, 11, 22),
        7,
        "demo",
    )
    generic = CorpusSpec(profile="generic")
    assert (generic.end_date, generic.seed) == (dt.date(2026, 10, 31), 1031)
    assert generic.dates[-1] < CorpusSpec().dates[0]  # the generic window ends before the demo's
    pinned = CorpusSpec(profile="generic", end_date=dt.date(2026, 11, 22), seed=7)
    assert (pinned.end_date, pinned.seed) == (dt.date(2026, 11, 22), 7)
    assert CorpusSpec() == CorpusSpec(end_date=dt.date(2026, 11, 22), seed=7)
    assert type(CorpusSpec().end_date) is dt.date and type(CorpusSpec().seed) is int
    with pytest.raises(ValueError, match="profile must be one of demo, generic"):
        CorpusSpec(profile="mine")


def test_the_generic_profile_gives_the_same_bytes_for_the_same_spec(tmp_path: Path) -> None:
    first = generate_corpus(tmp_path / "a", SMALL_GENERIC)
    second = generate_corpus(tmp_path / "b", SMALL_GENERIC, workers=2)
    assert first == second and digests(tmp_path / "a") == digests(tmp_path / "b")
    marker = json.loads((tmp_path / "a" / ".sample-corpus.json").read_text())
    assert marker["spec"]["profile"] == "generic" and marker["spec"]["end_date"] == "2026-10-31"
    other = generate_corpus(tmp_path / "c", dataclasses.replace(SMALL_GENERIC, seed=5))
    assert other != first


def test_the_generic_repositories_are_the_same_in_every_process() -> None:
    script = (
        "import hashlib; from trajectory_pipeline.sample.generic import generic_repos; "
        "print(hashlib.sha256(repr(generic_repos()).encode()).hexdigest())"
    )
    outputs = {
        subprocess.run(
            [sys.executable, "-c", script],
            capture_output=True,
            text=True,
            check=True,
            env={"PYTHONHASHSEED": seed, "PATH": "/usr/bin:/bin"},
        ).stdout
        for seed in ("1", "2")
    }
    assert len(outputs) == 1


def test_both_profiles_keep_the_planted_behaviours(tmp_path: Path) -> None:
    """Secrets, malformed lines, every source, sessions past midnight: in the generic profile too."""
    for spec in (SMALL_DEMO, SMALL_GENERIC):
        summary = generate_corpus(tmp_path / spec.profile, spec)
        n = spec.days * spec.sessions_per_day
        assert summary.per_source == dict.fromkeys(("claude_code", "codex", "own_agent", "chat_jsonl"), n)
        assert summary.planted_secrets > 10 and summary.malformed_lines == 12
        data = corpus_bytes(tmp_path / spec.profile)
        assert all(value.encode() in data for value in summary.secret_values if "\n" not in value)


# --------------------------------------------------------------------------- disjointness


def demo_identifiers() -> set[str]:
    """Functions, types and tests the demo's files define (local variables aside)."""
    pattern = re.compile(
        r"\b(?:def|function|func|fn|class|struct|type)\s+(?:\([^)]*\)\s*)?([A-Za-z_]\w*)"
        r"|\bit\(\"([^\"]+)\""
    )
    names = set()
    for repo in REPOS:
        for text in repo.files.values():
            names.update(a or b for a, b in pattern.findall(text))
        names.update(name for _, tests in repo.suites for name in tests)
    return {n for n in names if n not in UNIVERSAL_NAMES and len(n) > 3}


def test_generic_corpus_shares_no_repository_path_name_home_or_session_with_the_demo(
    corpora: dict[str, bytes],
) -> None:
    demo, generic = corpora["demo"], corpora["generic"]
    demo_paths = {p for r in REPOS for p in r.files} | {t for r in REPOS for t, _ in r.suites if "." in t}
    generic_paths = {p for r in GENERIC for p in r.files}
    assert not (demo_paths & generic_paths) - MANIFESTS
    assert {r.name for r in REPOS}.isdisjoint(r.name for r in GENERIC)
    for repo in REPOS:
        assert repo.name.encode() not in generic, repo.name
        for path in set(repo.files) - MANIFESTS:
            assert path.encode() not in generic, path
    for repo in GENERIC:
        assert repo.name.encode() not in demo, repo.name
        assert repo.cwd.encode() not in demo
        for path in set(repo.files) - MANIFESTS:
            assert path.encode() not in demo, path
    for marker in (b"/home/dana", b"northwind", b"deploy/keys/staging-deploy.pem"):
        assert marker in demo and marker not in generic
    names = demo_identifiers()
    assert {"apply_fee", "formatMoney", "TileCache", "Allow", "rollup"} <= names
    hits = [name for name in sorted(names) if re.search(rb"\b" + re.escape(name.encode()) + rb"\b", generic)]
    assert hits == []
    assert set(UUID.findall(demo)).isdisjoint(UUID.findall(generic))
    # generic sessions start before the demo window: no demo date appears in a generic timestamp
    demo_days = {d.isoformat().encode() for d in CorpusSpec().dates}
    assert not any(day + b"T" in generic for day in demo_days)


def _typed(phrasing: Phrasing) -> list[bytes]:
    """What the profile's person types mid-session, as it appears in a transcript (ASCII pieces:
    an interruption is cut at its path)."""
    texts = [text for text, _, _ in phrasing.follow_ups] + list(phrasing.user_replies)
    texts += [piece for text in phrasing.interruptions for piece in text.split("{path}")]
    return [text.strip().encode() for text in texts if text.strip().isascii() and len(text.strip()) > 8]


def test_no_typed_prompt_of_one_profile_is_the_others(corpora: dict[str, bytes]) -> None:
    """A held-out prompt of the demo window is never the learned base's: with a compact state, a
    prompt can be the typed words alone."""
    for mine, other, phrasing in (("demo", "generic", PHRASING), ("generic", "demo", GENERIC_PHRASING)):
        typed = _typed(phrasing)
        assert any(text in corpora[mine] for text in typed), mine  # the check is not vacuous
        assert [text for text in typed if text in corpora[other]] == [], mine


def test_generic_exposures_are_the_demo_steps_without_the_demo_user() -> None:
    assert len(GENERIC_EXPOSURES) > 5
    for exposure in GENERIC_EXPOSURES:
        text = exposure.arg + exposure.output
        assert "northwind" not in text and "dana" not in text and "staging-deploy" not in text


# --------------------------------------------------------------------------- the demo user's routines


def test_every_demo_repository_has_its_own_commands_and_the_routines_inputs() -> None:
    generic_default = {"python": "pytest", "typescript": "npm_test", "go": "go_test", "rust": "cargo_test"}
    commands = {repo.name: repo.test_command for repo in REPOS}
    assert commands == {
        "ledger-api": "uv run pytest -x tests/unit",
        "web-console": "pnpm vitest run",
        "tilecache": "cargo nextest run",
        "edge-proxy": "go test -race ./...",
        "etl-jobs": "make test",
    }
    # a Python repository tested with make is a different intent class from the generic default
    assert command_intent(commands["etl-jobs"]) != generic_default["python"]
    for repo in REPOS:
        assert command_intent(repo.test_command) in VERIFICATION_INTENTS
        assert command_intent(repo.check_command) in {"typecheck", "lint"}, repo.check_command
        assert repo.test_of and all(module in repo.files for module in repo.test_of)
        assert all(test in repo.files for test in repo.test_of.values())
    ledger = REPOS[0]
    assert {test for test, _ in ledger.suites} == {p for p in ledger.files if p.startswith("tests/")}
    assert all(path.startswith("tests/unit/") for path in ledger.test_of.values())


def test_demo_sessions_follow_the_routines() -> None:
    built = scenarios(REPOS, routines=True)
    counts: Counter[str] = Counter()
    for scenario in built:
        calls = calls_of(scenario)
        repo = scenario.repo
        if not scenario.task.edits:
            assert all(c.action.purpose != "check" for c in calls)
            assert calls[0].action.command != "git status -sb"
            continue
        # 1. a session that changes code looks at the working tree first
        assert calls[0].action.command == "git status -sb", (repo.name, scenario.task.intent)
        counts["opened"] += 1
        edited: list[str] = []  # since the last verification
        read: set[str] = set()
        for n, call in enumerate(calls):
            a = call.action
            if a.kind == "read":
                read.add(a.path)
            elif a.kind in ("edit", "write") and call.result.status == "ok":
                edited.append(a.path)
            elif a.purpose in ("test", "check") and edited:
                # 2. every edited module's test was read before its first verification
                for path in edited:
                    if path in repo.test_of:
                        assert repo.test_of[path] in read, (repo.name, path)
                        counts["test_read"] += 1
                # 3. the static check comes first, and is the only check since the edit
                assert a.purpose == "check", (repo.name, scenario.task.intent, a.command)
                assert a.command == repo.check_command
                counts["checked"] += 1
                if call.result.status == "ok":
                    following = [c for c in calls[n + 1 :] if c.action.purpose in ("test", "check")]
                    assert following and following[0].action.purpose == "test"
                else:
                    counts["check_failed"] += 1
                edited = []
            elif a.purpose == "check":
                raise AssertionError(f"a check with nothing edited since the last one: {repo.name}")
        # the last verification follows the last edit
        if scenario.outcome == "success":
            assert not edited, (repo.name, scenario.task.intent)
    assert min(counts.values()) > 5, counts


def test_a_module_test_read_follows_its_edit_directly_in_most_sessions() -> None:
    """What a decision point sees: when the edits stop, the next call reads the test not read yet.

    Not always: a planted secret or a refused command may land in between.
    """
    pairs: Counter[bool] = Counter()
    for scenario in scenarios(REPOS, routines=True):
        calls = calls_of(scenario)
        read: set[str] = set()
        for call, following in itertools.pairwise(calls):
            if call.action.kind == "read":
                read.add(call.action.path)
            test = scenario.repo.test_of.get(call.action.path)
            if call.action.kind == "edit" and following.action.kind != "edit" and test and test not in read:
                pairs[following.action.kind == "read" and following.action.path == test] += 1
    assert pairs[True] > 50 and pairs[True] >= 9 * pairs[False], pairs


def test_generic_sessions_follow_none_of_the_routines() -> None:
    for scenario in scenarios(GENERIC, routines=False, per_task=3):
        calls = calls_of(scenario)
        assert calls[0].action.command != "git status -sb"
        assert all(c.action.purpose != "check" for c in calls)
        tests = {c.action.command for c in calls if c.action.purpose == "test"}
        if scenario.outcome == "success":
            assert scenario.repo.test_command in tests, (scenario.repo.name, tests)
        for command in tests:
            assert command_intent(command) == command_intent(scenario.repo.test_command)


# --------------------------------------------------------------------------- the generic repositories


def test_generic_repositories_are_many_and_varied() -> None:
    assert len(GENERIC) >= 12
    assert Counter(r.language for r in GENERIC) == dict.fromkeys(LANGUAGES, len(GENERIC) // 4)
    assert len({r.name for r in GENERIC}) == len(GENERIC)
    assert len({r.home for r in GENERIC}) >= 4 and len({r.remote.split("/")[0] for r in GENERIC}) >= 4
    intents = Counter(t.intent for r in GENERIC for t in r.tasks)
    assert set(intents) == {"fix_bug", "add_feature", "write_tests", "explain", "bump_dependency", "ops"}
    instructions = {text for r in GENERIC for t in r.tasks for text in t.instructions}
    assert len(instructions) > 400
    modules = {p for r in GENERIC for p in r.files if p not in MANIFESTS and "test" not in p}
    assert len(modules) > 40
    defaults = {"python": "pytest -q", "typescript": "npm test", "go": "go test ./...", "rust": "cargo test"}
    assert all(
        r.test_command == defaults[r.language] and not r.check_command and not r.test_of for r in GENERIC
    )


def replayed(repo: Repo, task: Task) -> dict[str, str]:
    """The repository's files after the task's edits, each checked to apply."""
    files = dict(repo.files)
    for edit in task.edits:
        if edit.old:
            assert edit.old in files[edit.path], (repo.name, task.intent, edit.path, edit.old)
            files[edit.path] = files[edit.path].replace(edit.old, edit.new, 1)
        else:
            assert edit.path not in files
            files[edit.path] = edit.new
    return files


@pytest.mark.parametrize("repo", GENERIC, ids=[r.name for r in GENERIC])
def test_a_generic_repository_is_consistent(repo: Repo) -> None:
    suites = dict(repo.suites)
    for task in repo.tasks:
        after = replayed(repo, task)
        assert task.instructions and all("«" not in text for text in task.instructions)
        for probe in task.probes:
            if probe.kind == "read":
                assert probe.arg in repo.files
            if probe.kind == "grep":
                assert RepoIndex.of(repo).grep(probe.arg, probe.path), (repo.name, probe)
        failure = task.failure
        if failure is not None:
            assert failure.test_name in suites[failure.test_file], (repo.name, failure)
            assert "«" not in failure.detail + failure.summary
            if task.intent == "fix_bug":  # the fix changes the line the bug is on
                assert after != dict(repo.files)
    for text in repo.files.values():
        assert "«" not in text and "»" not in text
    if repo.language in ("python", "typescript", "go"):
        for test_file in suites:
            assert test_file in repo.files or repo.language == "go"


@pytest.mark.parametrize("repo", GENERIC, ids=[r.name for r in GENERIC])
def test_a_generic_repository_reports_read_as_what_they_are(repo: Repo) -> None:
    assert command_intent(repo.lint_command) == "lint"
    for failure in [None, *(t.failure for t in repo.tasks if t.failure is not None)]:
        output, code = suite_report(repo, failure, 1.5)
        expected = "passed" if failure is None else "failed"
        assert (code == 0) == (failure is None)
        assert runner_outcome(output) == expected, output
        assert command_outcome(command_intent(repo.test_command), None, None, output) == expected
        if failure is None:
            continue
        focused_command = repo.focused_test.format(test_file=failure.test_file, test_name=failure.test_name)
        assert command_intent(focused_command) == command_intent(repo.test_command)
        focused = dataclasses.replace(
            repo, suites=((failure.test_file, (failure.test_name,)),), test_banner=""
        )
        for fails in (failure, None):
            output, _ = suite_report(focused, fails, 0.5)
            assert runner_outcome(output) == ("failed" if fails else "passed"), output


def test_generation_takes_about_as_long_as_before(tmp_path: Path) -> None:
    """The default spec took about 0.3 s on two shared cores before the profiles; allow for a busy machine."""
    for profile in PROFILES:
        started = time.perf_counter()
        generate_corpus(tmp_path / profile, CorpusSpec(profile=profile))
        assert time.perf_counter() - started < 15, profile


@pytest.mark.parametrize("repo", REPOS, ids=[r.name for r in REPOS])
def test_a_demo_static_check_reads_as_a_passing_or_failing_verification(repo: Repo) -> None:
    intent = command_intent(repo.check_command)
    passing = command_outcome(intent, 0, None, repo.check_output, command=repo.check_command)
    assert passing == "passed" and runner_outcome(repo.check_output) in (None, "passed")
    for task in repo.tasks:
        if task.failure is not None and task.failure.check_output:
            output = task.failure.check_output
            assert command_outcome(intent, 1, None, output, command=repo.check_command) == "failed"
            assert runner_outcome(output) in (None, "failed")
