"""Tests for the sample corpus generator.

`make demo`, the end-to-end tests and the benchmarks run on this corpus, and the parsers are
written against it, so these tests pin what they rely on: the same spec gives the same bytes;
files sit where the real tools put them; every line is JSON except the malformed lines the
summary counts; each file's mtime is its last event; files and folders are private; some
sessions run past midnight yet stay whole in their start day's file; the planted secrets are all
there; and the command line works.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import hashlib
import json
import os
import re
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from trajectory_pipeline.sample.content import REPOS
from trajectory_pipeline.sample.corpus import (
    MARKER,
    CorpusSpec,
    CorpusSummary,
    add_arguments,
    generate_corpus,
    run,
)

SMALL = CorpusSpec(
    days=3, sessions_per_day=4, seed=11
)  # day 0 holds malformed lines, days 0-2 cross midnight

# One pattern per planted kind; group 1 (or the whole match) identifies the value.
SECRET_PATTERNS = {
    "aws_access_key_id": r"AKIA[0-9A-Z]{16}",
    "aws_secret_access_key": r"AWS_SECRET_ACCESS_KEY=([A-Za-z0-9+/]{40})",
    "github_token": r"ghp_[A-Za-z0-9]{36}",
    "openai_key": r"sk-proj-[A-Za-z0-9_-]{48}",
    "anthropic_key": r"sk-ant-api03-[A-Za-z0-9_-]{86}-[A-Za-z0-9]{6}AA",
    "slack_token": r"xoxb-\d{12}-\d{13}-[A-Za-z0-9]{24}",
    "stripe_key": r"sk_live_[A-Za-z0-9]{24}",
    "private_key": "-----BEGIN " + r"RSA PRIVATE KEY-----(?:\\n|\n)(MIIEow[A-Za-z0-9+/]{58})",
    "jwt": r"eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9\.eyJ[A-Za-z0-9_-]{90}\.[A-Za-z0-9_-]{43}",
    "bearer_token": r"Authorization: Bearer ([A-Za-z0-9]{40})",
    "password": r"password=([A-Za-z0-9]{10}[!#%+][A-Za-z0-9]{5})",
    "postgres_password": r"postgresql://\w+:([A-Za-z0-9]{18})@",
}

# Record types each format legitimately writes; anything else is a planted unknown type.
KNOWN_TYPES = {
    "claude": {"user", "assistant", "system", "progress", "summary", "file-history-snapshot"},
    "codex": {"session_meta", "response_item", "event_msg", "turn_context"},
    "agent_logs": {"message", "tool_call", "error", "decision"},
}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, CorpusSummary]:
    out = tmp_path_factory.mktemp("corpus") / "out"
    return out, generate_corpus(out, SMALL)


def transcripts(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.jsonl") if p.is_file())


def family(path: Path, root: Path) -> str:
    return path.relative_to(root).parts[0]


def read_lines(path: Path) -> Iterator[tuple[bytes, dict[str, Any] | None]]:
    """Each line's bytes and its object, or None when the line is not valid UTF-8 JSON."""
    for raw in path.read_bytes().splitlines():
        try:
            yield raw, json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            yield raw, None


def is_unknown(obj: dict[str, Any], kind: str) -> bool:
    if kind == "chat":
        return "messages" not in obj
    return obj.get("type") not in KNOWN_TYPES[kind]


def to_ms(value: str) -> int:
    return int(dt.datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1000)


def timestamps(path: Path) -> list[int]:
    return [to_ms(obj["timestamp"]) for _, obj in read_lines(path) if obj is not None and "timestamp" in obj]


def digests(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_same_spec_gives_identical_bytes(tmp_path: Path) -> None:
    first = generate_corpus(tmp_path / "a", SMALL)
    second = generate_corpus(tmp_path / "b", SMALL)
    assert first == second
    assert digests(tmp_path / "a") == digests(tmp_path / "b")
    assert len(digests(tmp_path / "a")) == first.files + 1  # the marker


def test_sources_written_in_two_processes_give_the_same_bytes_and_times(tmp_path: Path) -> None:
    alone = generate_corpus(tmp_path / "a", SMALL)
    side_by_side = generate_corpus(tmp_path / "b", SMALL, workers=2)
    assert side_by_side == alone
    assert digests(tmp_path / "b") == digests(tmp_path / "a")
    mtimes = [
        {str(p.relative_to(root)): p.stat().st_mtime_ns for p in root.rglob("*.jsonl")}
        for root in (tmp_path / "a", tmp_path / "b")
    ]
    assert mtimes[0] == mtimes[1]


def test_another_seed_gives_another_corpus(tmp_path: Path, corpus: tuple[Path, CorpusSummary]) -> None:
    other = tmp_path / "other"
    generate_corpus(other, CorpusSpec(days=SMALL.days, sessions_per_day=SMALL.sessions_per_day, seed=12))
    assert set(digests(other).values()) != set(digests(corpus[0]).values())


def test_layout_and_counts(corpus: tuple[Path, CorpusSummary]) -> None:
    root, summary = corpus
    files = transcripts(root)
    n = SMALL.days * SMALL.sessions_per_day
    claude_main = [p for p in files if family(p, root) == "claude" and "subagents" not in p.parts]
    subagents = [p for p in files if "subagents" in p.parts]
    codex = [p for p in files if family(p, root) == "codex"]
    dates = [d.isoformat() for d in SMALL.dates]

    assert summary.per_source == {"claude_code": n, "codex": n, "own_agent": n, "chat_jsonl": n}
    assert summary.sessions == 4 * n
    assert summary.files == len(files)
    assert summary.bytes == sum(p.stat().st_size for p in files)
    assert len(claude_main) == n and len(codex) == n
    assert all(re.fullmatch(r"[0-9a-f-]{36}\.jsonl", p.name) for p in claude_main)
    assert all(p.parent.parent.name == "projects" and p.parent.name.startswith("-home-") for p in claude_main)
    assert all(
        re.fullmatch(r"rollout-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-[0-9a-f-]{36}\.jsonl", p.name)
        and p.name[8:18] == "-".join(p.parent.parts[-3:])
        for p in codex
    )
    assert sorted(p.name for p in (root / "agent_logs").iterdir()) == [f"session_{d}.jsonl" for d in dates]
    assert sorted(p.name for p in (root / "chat").iterdir()) == [f"chat_{d}.jsonl" for d in dates]
    assert (root / MARKER).is_file()

    assert subagents, "some Claude sessions should delegate to a sub-agent"
    for path in subagents:
        lines = [obj for _, obj in read_lines(path) if obj is not None]
        parent_id = path.parent.parent.name
        assert re.fullmatch(r"agent-[0-9a-f]{7}\.jsonl", path.name)
        assert (path.parents[2] / f"{parent_id}.jsonl").is_file()
        assert all(o["isSidechain"] and o["sessionId"] == parent_id for o in lines)
        assert all(o["agentId"] == path.stem.removeprefix("agent-") for o in lines)


def test_every_line_is_json_except_the_counted_malformed_ones(corpus: tuple[Path, CorpusSummary]) -> None:
    root, summary = corpus
    invalid = unknown = 0
    for path in transcripts(root):
        kind = family(path, root)
        for _, obj in read_lines(path):
            if obj is None:
                invalid += 1
            elif is_unknown(obj, kind):
                unknown += 1
    # a truncated and a non-UTF-8 line per source, plus one unknown record type per source
    assert (invalid, unknown) == (8, 4)
    assert summary.malformed_lines == invalid + unknown


def test_without_malformed_lines_every_line_parses(tmp_path: Path) -> None:
    spec = CorpusSpec(days=2, sessions_per_day=2, malformed_lines=False)
    summary = generate_corpus(tmp_path, spec)
    assert summary.malformed_lines == 0
    for path in transcripts(tmp_path):
        assert all(
            obj is not None and not is_unknown(obj, family(path, tmp_path)) for _, obj in read_lines(path)
        )


def test_mtime_is_the_last_event(corpus: tuple[Path, CorpusSummary]) -> None:
    root, _ = corpus
    for path in transcripts(root):
        assert abs(path.stat().st_mtime_ns // 1_000_000 - max(timestamps(path))) <= 1, path


def test_files_and_folders_are_private(corpus: tuple[Path, CorpusSummary]) -> None:
    root, _ = corpus
    assert stat.S_IMODE(root.stat().st_mode) == 0o700
    for path in root.rglob("*"):
        expected = 0o700 if path.is_dir() else 0o600
        assert stat.S_IMODE(path.stat().st_mode) == expected, path


def own_agent_sessions(path: Path) -> list[list[int]]:
    """Split a day's own-agent log where more than 5 minutes pass between events."""
    sessions: list[list[int]] = []
    for ms in timestamps(path):
        if not sessions or ms - sessions[-1][-1] > 5 * 60 * 1000:
            sessions.append([])
        sessions[-1].append(ms)
    return sessions


def day_of(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).date().isoformat()


def test_sessions_cross_midnight_and_stay_whole(corpus: tuple[Path, CorpusSummary]) -> None:
    root, _ = corpus
    crossing: dict[str, int] = {"claude": 0, "codex": 0, "agent_logs": 0}
    for path in transcripts(root):
        kind = family(path, root)
        if kind in ("claude", "codex") and "subagents" not in path.parts:
            times = timestamps(path)
            crossing[kind] += day_of(times[0]) != day_of(times[-1])
            if kind == "codex":
                assert day_of(times[0]) == "-".join(path.parent.parts[-3:])
    for path in sorted((root / "agent_logs").iterdir()):
        sessions = own_agent_sessions(path)
        assert len(sessions) == SMALL.sessions_per_day
        assert all(day_of(s[0]) == path.stem.removeprefix("session_") for s in sessions)
        crossing["agent_logs"] += sum(day_of(s[0]) != day_of(s[-1]) for s in sessions)
    assert all(count > 0 for count in crossing.values()), crossing


def test_a_busy_own_agent_day_packs_short_tasks_into_sessions_of_twenty(tmp_path: Path) -> None:
    """`own_agent_tasks`: that many one-instruction tasks a day, BUSY_TASKS_PER_SESSION to a session,
    every session on its own day; the other sources are written as before."""
    spec = CorpusSpec(days=2, sessions_per_day=1, seed=11, own_agent_tasks=45, malformed_lines=False)
    summary = generate_corpus(tmp_path, spec)
    assert summary.per_source == {"claude_code": 2, "codex": 2, "own_agent": 2 * 3, "chat_jsonl": 2}
    for path in sorted((tmp_path / "agent_logs").iterdir()):
        sessions = own_agent_sessions(path)
        assert len(sessions) == 3  # 20 + 20 + 5 tasks
        assert all(day_of(s[0]) == day_of(s[-1]) == path.stem.removeprefix("session_") for s in sessions)
        lines = [json.loads(line) for line in path.read_bytes().splitlines()]
        assert sum(line.get("role") == "user" for line in lines) == 45
    plain = generate_corpus(tmp_path / "plain", dataclasses.replace(spec, own_agent_tasks=0))
    for name in ("claude", "codex", "chat"):
        assert digests(tmp_path / name) == digests(tmp_path / "plain" / name)
    assert plain.per_source["own_agent"] == 2


def test_planted_secrets_are_all_there(corpus: tuple[Path, CorpusSummary]) -> None:
    root, summary = corpus
    found: dict[str, set[str]] = {kind: set() for kind in SECRET_PATTERNS}
    for path in transcripts(root):
        for raw, obj in read_lines(path):
            if obj is None:
                continue  # malformed copies repeat a real line
            text = raw.decode()
            for kind, pattern in SECRET_PATTERNS.items():
                for match in re.finditer(pattern, text):
                    found[kind].add(match.group(match.re.groups and 1))
    assert sum(len(values) for values in found.values()) == summary.planted_secrets
    assert len([kind for kind, values in found.items() if values]) >= 6


def test_tool_calls_and_results_pair_up(corpus: tuple[Path, CorpusSummary]) -> None:
    root, _ = corpus
    for path in transcripts(root):
        kind = family(path, root)
        objs = [obj for _, obj in read_lines(path) if obj is not None and not is_unknown(obj, kind)]
        if kind == "claude":
            uuids: set[str] = set()
            calls: set[str] = set()
            for o in objs:
                if "uuid" in o:
                    assert o["parentUuid"] is None or o["parentUuid"] in uuids, path
                    uuids.add(o["uuid"])
                content = o.get("message", {}).get("content")
                for block in content if isinstance(content, list) else ():
                    if block["type"] == "tool_use":
                        calls.add(block["id"])
                    elif block["type"] == "tool_result":
                        assert block["tool_use_id"] in calls, path
        elif kind == "codex":
            calls = set()
            for o in objs:
                payload = o["payload"]
                if payload.get("type") in ("function_call", "custom_tool_call"):
                    calls.add(payload["call_id"])
                elif payload.get("type") in ("function_call_output", "custom_tool_call_output"):
                    assert payload["call_id"] in calls, path
        elif kind == "chat":
            for o in objs:
                ids = [c["id"] for m in o["messages"] for c in m.get("tool_calls", ())]
                answered = [m["tool_call_id"] for m in o["messages"] if m["role"] == "tool"]
                assert ids == answered and all(
                    json.loads(c["function"]["arguments"])
                    for m in o["messages"]
                    for c in m.get("tool_calls", ())
                )


def test_content_tables_are_consistent() -> None:
    for repo in REPOS:
        for task in repo.tasks:
            for edit in task.edits:
                if edit.old:  # an edit must find its text; an empty `old` creates a new file
                    assert edit.old in repo.files[edit.path], (repo.name, task.intent, edit.path)
                else:
                    assert edit.path not in repo.files, (repo.name, task.intent, edit.path)


def test_spec_rejects_nonsense() -> None:
    with pytest.raises(ValueError, match="days must be at least 1, got 0"):
        CorpusSpec(days=0)
    with pytest.raises(ValueError, match="sessions_per_day must be at least 1"):
        CorpusSpec(sessions_per_day=0)


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser.parse_args(argv)


def test_cli_run_writes_reruns_and_refuses_foreign_directories(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "corpus"
    args = parse(
        ["--out", str(out), "--days", "2", "--end-date", "2026-03-01", "--sessions", "2", "--seed", "5"]
    )
    assert run(args) == 0
    printed = capsys.readouterr().out
    assert "Wrote 16 sessions" in printed and "2 days ending 2026-03-01, seed 5" in printed
    assert sorted(p.name for p in (out / "chat").iterdir()) == [
        "chat_2026-02-28.jsonl",
        "chat_2026-03-01.jsonl",
    ]

    assert run(parse(["--out", str(out), "--days", "1", "--no-malformed"])) == 0  # replaces the earlier run
    assert len(list((out / "chat").iterdir())) == 1

    foreign = tmp_path / "home"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    assert run(parse(["--out", str(foreign)])) == 2
    assert "not empty" in capsys.readouterr().err
    assert [p.name for p in foreign.iterdir()] == ["notes.txt"]

    assert run(parse(["--out", str(foreign / "notes.txt" / "corpus")])) == 2  # under a file
    assert "Not a directory" in capsys.readouterr().err


def test_module_runs_as_a_script_with_the_same_bytes_in_every_process(tmp_path: Path) -> None:
    for hash_seed in ("1", "2"):  # set and dict orders must not leak into the output
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "trajectory_pipeline.sample.corpus",
                "--out",
                str(tmp_path / hash_seed),
                "--days",
                "2",
                "--sessions",
                "2",
            ],
            capture_output=True,
            text=True,
            check=False,
            env={**os.environ, "PYTHONHASHSEED": hash_seed},
        )
        assert result.returncode == 0, result.stderr
        assert "Wrote 16 sessions" in result.stdout
    assert digests(tmp_path / "1") == digests(tmp_path / "2")
