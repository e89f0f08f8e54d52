"""Decision points from every real transcript in ../shared/corpus/real: what the chain makes of them.

The sample corpus is generated from the shapes the parsers were written for; these files were
written by real agents (Claude Code, Codex, Gemini CLI, SWE-agent, aider) and published by others,
with what real logs hold: arguments the publisher redacted (localpush's Codex rollouts), tools
outside the canonical vocabulary (Codex's write_stdin), calls a person refused, sub-agents. So this
pins, per source, how many attempts and decision points they give, which targets the vocabulary
maps, what `learnable` sets aside and why, and a few decision points read by hand. The numbers were
measured on the corpus; a change in parsing, mining or extraction that moves one should say why.

    .venv/bin/pytest tests/decisions/test_decisions_real_corpus.py
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pandas as pd
import pyarrow as pa
import pytest

from tests.conftest import REAL_FOLDERS
from trajectory_pipeline.decisions.points import TIERS, DecisionConfig, extract_decision_points, learnable
from trajectory_pipeline.events import order_session_events
from trajectory_pipeline.ingest.days import SourceRoot, candidate_files
from trajectory_pipeline.ingest.formats import FORMATS
from trajectory_pipeline.mining.attempts import mine_trajectories
from trajectory_pipeline.mining.vocabulary import CANONICAL_TOOLS
from trajectory_pipeline.schema import EVENT_SCHEMA, Event

CODEX_GOLD = "codex/codemie-code/rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl"
LOCALPUSH = "codex/localpush/rollout-2026-02-23T12-40-23-019c8a4c-ed82-79a1-aa28-7738fc5ab61a.jsonl"
LOCALPUSH_DANGLING = "codex/localpush/rollout-2026-02-23T13-19-38-019c8a70-dda7-7f33-98ea-f30553347322.jsonl"


class Real:
    """The corpus parsed, mined and extracted: default decisions (gold and silver attempts) and
    those of every tier, each with the file of its session beside it."""

    def __init__(self, corpus: Path) -> None:
        rows: list[Event] = []
        for file in candidate_files(
            [SourceRoot(source, corpus / folder) for source, folder in REAL_FOLDERS.items()]
        ):
            for item in FORMATS[file.source].parse(file.path):
                assert isinstance(item, Event), f"{file.path} line {item.line_no}: {item.reason}"
                rows.append(item)
        main_file: dict[str, str] = {}
        for row in rows:  # a session's own file: the first one that is not a sub-agent's
            if not row.is_sidechain:
                main_file.setdefault(row.session_id, Path(row.source_path).relative_to(corpus).as_posix())
        self.events = pa.Table.from_pylist([row._asdict() for row in rows], schema=EVENT_SCHEMA).to_pandas()
        self.attempts = mine_trajectories(self.events)
        self.decisions = extract_decision_points(self.events, self.attempts)
        self.every_tier = extract_decision_points(
            self.events, self.attempts, DecisionConfig(included_tiers=TIERS)
        )
        for frame in (self.attempts, self.decisions, self.every_tier):
            frame["file"] = frame["session_id"].map(main_file)


@pytest.fixture(scope="module")
def real(real_corpus: Path) -> Real:
    return Real(real_corpus)


def counts(frame: pd.DataFrame, *columns: str) -> dict[Any, int]:
    grouped = frame.groupby(list(columns) if len(columns) > 1 else columns[0]).size()
    return {key: int(n) for key, n in grouped.items()}


def test_attempts_and_decision_points_per_source_and_tier(real: Real) -> None:
    assert counts(real.attempts, "source") == {
        "aider": 6,
        "claude_code": 42,
        "codex": 9,
        "gemini_cli": 8,
        "swe_agent": 3,
    }
    assert counts(real.attempts, "source", "tier") == {
        ("aider", "reject"): 2,
        ("aider", "silver"): 4,
        ("claude_code", "bronze"): 10,
        ("claude_code", "reject"): 19,
        ("claude_code", "silver"): 13,
        ("codex", "bronze"): 5,
        ("codex", "gold"): 1,
        ("codex", "silver"): 3,
        ("gemini_cli", "bronze"): 2,
        ("gemini_cli", "reject"): 2,
        ("gemini_cli", "silver"): 4,
        ("swe_agent", "bronze"): 3,
    }
    # Gold and silver attempts only (the default): SWE-agent's three runs are all bronze.
    assert counts(real.decisions, "source") == {
        "aider": 8,
        "claude_code": 211,
        "codex": 186,
        "gemini_cli": 10,
    }
    assert counts(real.decisions, "tier") == {"gold": 103, "silver": 312}
    assert counts(real.decisions, "file") == {
        "aider/health-analyzer-poc/.aider.chat.history.md": 8,
        "claude-code/codemie-code/-tmp-private/4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl": 5,
        "claude-code/codemie-code/incremental-subagents/turn-2.jsonl": 14,
        "claude-code/codemie-code/session-196820da.jsonl": 7,
        "claude-code/codemie-code/session-624a4a58.jsonl": 35,
        "claude-code/spotter/4d5611e5-241a-462a-8d15-5122611a9569.jsonl": 150,
        CODEX_GOLD: 103,
        LOCALPUSH: 83,
        "gemini-cli/codemie-code/session-2025-12-01T21-45-5b959dae.json": 5,
        "gemini-cli/codemie-code/session-2026-01-16T11-01-file-ops-37b7abef.json": 5,
    }
    assert counts(real.every_tier, "source", "tier") == {
        ("aider", "silver"): 8,
        ("claude_code", "bronze"): 72,
        ("claude_code", "reject"): 32,
        ("claude_code", "silver"): 211,
        ("codex", "bronze"): 28,
        ("codex", "gold"): 103,
        ("codex", "silver"): 83,
        ("gemini_cli", "bronze"): 14,
        ("gemini_cli", "silver"): 10,
        ("swe_agent", "bronze"): 28,
    }
    # An attempt's decision points do not depend on which other tiers are extracted.
    chosen = real.every_tier[real.every_tier["tier"].isin(["gold", "silver"])].reset_index(drop=True)
    pd.testing.assert_frame_equal(chosen, real.decisions)


def test_every_main_chain_call_of_an_attempt_is_one_decision_point(real: Real) -> None:
    ordered = order_session_events(real.events)
    main_calls = ordered[(ordered["kind"] == "tool_call") & ~ordered["is_sidechain"]]
    per_attempt: Counter[str] = Counter()
    spans = real.attempts[["attempt_id", "session_id", "first_ordinal", "last_ordinal"]]
    for attempt_id, session_id, first, last in spans.itertuples(index=False):
        ordinals = main_calls.loc[main_calls["session_id"] == session_id, "ordinal"]
        per_attempt[attempt_id] = int(((ordinals >= first) & (ordinals <= last)).sum())
    assert Counter(real.every_tier["attempt_id"]) == +per_attempt
    # spotter's subagent.jsonl opens with a plugin command: the person's request, its attempt 12 calls
    assert len(real.every_tier) == 589 and real.every_tier["decision_id"].is_unique
    assert not real.every_tier["is_sidechain"].any()
    sidechain = extract_decision_points(
        real.events, real.attempts, DecisionConfig(included_tiers=TIERS, include_sidechain=True)
    )
    # spotter's Explore agent (33 calls) and codemie-code's agent-a485154 (20).
    assert int(sidechain["is_sidechain"].sum()) == 53
    # The default budget of 24,000 characters holds; 212 histories had to drop their oldest turns.
    assert real.decisions["history_chars"].max() <= 24_000
    assert int((real.decisions["history_dropped"] > 0).sum()) == 212
    for text in real.every_tier["messages"]:
        roles = [message["role"] for message in orjson.loads(text)]
        assert roles[:2] == ["system", "user"]


def test_known_targets_have_a_canonical_name_and_the_rest_keep_their_own(real: Real) -> None:
    frame = real.every_tier
    assert (frame["target_known"] == frame["target_name"].isin(list(CANONICAL_TOOLS))).all()
    assert counts(real.decisions, "target_known") == {False: 74, True: 341}
    # Codex's polls of a running command, its plan updates and web searches, Claude Code's Task,
    # TodoWrite, Web*, ExitPlanMode, SWE-agent's line edits and submit: tools the vocabulary does not map.
    assert counts(frame[~frame["target_known"]], "source", "target_name") == {
        ("claude_code", "AskUserQuestion"): 2,
        ("claude_code", "ExitPlanMode"): 1,
        ("claude_code", "Task"): 5,
        ("claude_code", "TaskOutput"): 1,
        ("claude_code", "TodoWrite"): 9,
        ("claude_code", "WebFetch"): 2,
        ("claude_code", "WebSearch"): 6,
        ("codex", "update_plan"): 4,
        ("codex", "web_search"): 4,
        ("codex", "write_stdin"): 63,
        ("gemini_cli", "delegate_to_agent"): 1,
        ("gemini_cli", "write_todos"): 3,
        ("swe_agent", "create"): 2,
        ("swe_agent", "edit"): 9,
        ("swe_agent", "submit"): 3,
    }
    assert counts(frame[frame["target_known"]], "target_name") == {
        "apply_patch": 25,
        "edit_file": 63,
        "glob": 10,
        "grep_files": 17,
        "list_directory": 1,
        "read_file": 82,
        "run_shell": 254,
        "write_file": 22,
    }


def test_learnable_sets_aside_redacted_and_refused_targets(real: Real) -> None:
    frame = real.every_tier
    incomplete = frame[frame["missing_required"].map(len) > 0]
    # localpush redacted every exec_command's arguments to one marker: no command is left.
    assert counts(incomplete, "file") == {LOCALPUSH: 71, LOCALPUSH_DANGLING: 1}
    assert set(incomplete["target_source_name"]) == {"exec_command"}
    assert {tuple(missing) for missing in incomplete["missing_required"]} == {("command",)}
    assert (
        incomplete["target_arguments"]
        .str.fullmatch(r'\{"raw":"\[REDACTED_ARGUMENTS len=\d+ sha=[0-9a-f]{8}\]"\}')
        .all()
    )

    refused = frame[frame["target_guard_denied"]]
    assert list(zip(refused["file"], refused["tier"], refused["target_name"], strict=True)) == [
        ("claude-code/spotter/short.jsonl", "reject", "run_shell"),
        ("claude-code/spotter/short.jsonl", "reject", "glob"),
        ("claude-code/codemie-code/session-9eda1058.jsonl", "reject", "write_file"),
    ]
    assert orjson.loads(refused["target_arguments"].iloc[0])["command"] == "mix phx.server 2>&1 | head -80"

    # Those arguments are not JSON: kept as {"raw": marker}. Tools outside the canonical eight
    # (write_stdin, update_plan) have no required argument to miss, and used to stay targets.
    unparseable = frame[frame["arguments_unparseable"]]
    assert counts(unparseable, "target_name") == {"run_shell": 72, "write_stdin": 9, "update_plan": 2}
    kept, set_aside = learnable(frame)
    assert len(kept) == 503
    assert set_aside == {"refused_by_guard": 3, "unparseable_arguments": 83, "missing_required_arguments": 0}
    kept, set_aside = learnable(real.decisions)  # no refused call in a gold or silver attempt
    assert len(kept) == 355
    assert set_aside == {"refused_by_guard": 0, "unparseable_arguments": 60, "missing_required_arguments": 0}


SKILLS = "/Users/Sample_User/.codex/plugins/cache/openai-curated/superpowers/63976030/skills"


def test_the_codex_gold_attempt_opens_by_reading_skills_and_patches_its_test_first(real: Real) -> None:
    (attempt,) = real.attempts[
        (real.attempts["file"] == CODEX_GOLD) & (real.attempts["tier"] == "gold")
    ].itertuples()
    rows = real.decisions[real.decisions["attempt_id"] == attempt.attempt_id]
    assert len(rows) == 103 and list(rows["step"]) == list(range(103))
    first = rows.iloc[0]
    assert (first["target_name"], first["target_source_name"], first["action_class"]) == (
        "run_shell",
        "exec_command",
        "inspect",
    )
    assert first["first_action"] and first["decisive"] and first["target_known"]
    arguments = orjson.loads(first["target_arguments"])
    assert arguments["command"] == (
        f"sed -n '1,220p' {SKILLS}/brainstorming/SKILL.md"
        f" && sed -n '1,220p' {SKILLS}/test-driven-development/SKILL.md"
    )
    assert arguments["workdir"] == "/Users/Sample_User/repos/codemie-ai/codemie-code"
    assert orjson.loads(first["messages"]) == [
        {
            "role": "system",
            "content": "You are a coding agent working in codemie-code. Decide the next tool call.",
        },
        {"role": "user", "content": "let's update the defailt context compart to 90 in env var"},
    ]
    # Then it polls the command it started: write_stdin with nothing to send.
    second = rows.iloc[1]
    assert (second["target_name"], second["target_known"]) == ("write_stdin", False)
    assert orjson.loads(second["target_arguments"])["chars"] == ""
    # Its first edit, after 68 calls of reading and running, adds a test before the code.
    patches = rows[rows["target_name"] == "apply_patch"]
    assert list(patches["step"]) == [68, 72, 73]
    patch = orjson.loads(patches["target_arguments"].iloc[0])["patch_text"]
    assert patch.startswith(
        "*** Begin Patch\n*** Update File: src/agents/plugins/__tests__/codemie-code-reasoning.test.ts\n"
    )
