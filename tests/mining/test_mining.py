"""Tests for mining task attempts (trajectory_pipeline/mining/attempts.py).

Everything downstream trains on what mining keeps, so these pin its judgements: where attempts
start and end (interruptions, sub-agent work, injected context), what each tier reason needs (one
table row per reason, on small synthetic sessions), how a guard denial is followed (recovery or the
same inspection again), that ids are stable, and that on the sample corpus the tiers match what the
generator planted (fixes whose tests pass are gold, interrupted turns and give-ups are rejected,
explanations are bronze or silver). The real transcripts pin concrete facts per file.

    .venv/bin/pytest tests/mining/test_mining.py
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest

from tests.conftest import REAL_FOLDERS
from trajectory_pipeline.events import ArrowEventLists, EventLists, order_session_events
from trajectory_pipeline.ingest.days import SourceRoot, candidate_files, ingest_day
from trajectory_pipeline.ingest.formats import FORMATS
from trajectory_pipeline.mining import attempts as mining
from trajectory_pipeline.mining.attempts import (
    MINE_BATCH_EVENTS,
    TIER_FLOORS,
    TIER_WIDTH,
    TRAJECTORY_SCHEMA,
    MiningConfig,
    annotate_attempts,
    annotate_calls,
    attempt_id,
    classify_intent,
    family_id,
    is_guard_denial,
    mine_table,
    mine_trajectories,
    split_attempts,
)
from trajectory_pipeline.sample.content import (
    CLAUDE_REJECTED,
    FOLLOW_UPS,
    GUARDS,
    INTERRUPTIONS,
    REPOS,
)
from trajectory_pipeline.sample.corpus import SOURCE_FOLDERS, CorpusSpec, generate_corpus
from trajectory_pipeline.schema import EVENT_SCHEMA, Event, canonical_json

# ---- a tiny builder of raw_sessions frames ------------------------------------------------------

START = 1_763_625_600_000_000  # 2025-11-20T08:00:00Z in µs
CWD = "/home/dana/src/ledger-api"


class Session:
    """Builds one session's raw_sessions rows, a second apart, in the shape parsers emit."""

    def __init__(
        self,
        session_id: str = "s1",
        source: str = "claude_code",
        path: str = "/logs/s1.jsonl",
        repo: str = "ledger-api",
    ) -> None:
        self.session_id, self.source, self.path, self.repo = session_id, source, path, repo
        self.rows: list[Event] = []
        self.clock = START
        self.calls = 0

    def add(self, role: str, kind: str, path: str | None = None, **fields: Any) -> Session:
        self.clock += 1_000_000
        where = path or self.path
        seq = sum(1 for row in self.rows if row.source_path == where)
        fields.setdefault("cwd", CWD)
        fields.setdefault("repo", self.repo)
        self.rows.append(
            Event(
                source=self.source,
                session_id=self.session_id,
                session_start=START,
                source_path=where,
                line_no=seq + 1,
                seq=seq,
                ts=self.clock,
                role=role,
                kind=kind,
                **fields,
            )
        )
        return self

    def user(self, text: str, **fields: Any) -> Session:
        return self.add("user", "message", text=text, **fields)

    def say(self, text: str, **fields: Any) -> Session:
        return self.add("assistant", "message", text=text, **fields)

    def meta(self, text: str) -> Session:
        return self.add("system", "meta", text=text)

    def interrupt(self, text: str = "[Request interrupted by user]") -> Session:
        return self.add("user", "message", text=text, interrupted=True)

    def tool(
        self,
        name: str,
        args: dict[str, Any],
        output: str,
        is_error: bool | None = False,
        exit_code: int | None = None,
        **fields: Any,
    ) -> Session:
        self.calls += 1
        call_id = f"toolu_{self.session_id}_{self.calls}"
        self.add(
            "assistant",
            "tool_call",
            tool_name=name,
            tool_call_id=call_id,
            tool_input=canonical_json(args),
            **fields,
        )
        return self.add(
            "tool",
            "tool_result",
            text=output,
            tool_call_id=call_id,
            is_error=is_error,
            exit_code=exit_code,
            **fields,
        )

    def read(self, path: str = "src/ledger/fees.py", **fields: Any) -> Session:
        return self.tool("Read", {"file_path": f"{CWD}/{path}"}, "     1→import decimal\n", **fields)

    def grep(self, pattern: str = "quantize") -> Session:
        return self.tool("Grep", {"pattern": pattern, "path": f"{CWD}/src"}, "src/ledger/fees.py:12:quantize")

    def edit(self, path: str = "src/ledger/fees.py") -> Session:
        args = {"file_path": f"{CWD}/{path}", "old_string": "a", "new_string": "b"}
        return self.tool("Edit", args, f"The file {CWD}/{path} has been updated.")

    def bash(self, command: str, output: str = "", exit_code: int | None = 0, **fields: Any) -> Session:
        failed = exit_code is not None and exit_code != 0
        return self.tool("Bash", {"command": command}, output, is_error=failed, exit_code=exit_code, **fields)

    def tests(self, passed: bool = True) -> Session:
        if passed:
            return self.bash("uv run pytest -q", "4 passed in 0.12s\n")
        return self.bash("uv run pytest -q", "FAILED tests/test_fees.py::test_x\n1 failed, 3 passed\n", 1)

    def refused(self, command: str = "git push --force origin HEAD", text: str = CLAUDE_REJECTED) -> Session:
        return self.tool("Bash", {"command": command}, text, is_error=True)

    def frame(self) -> pd.DataFrame:
        return frame_of(self.rows)


def frame_of(rows: list[Event]) -> pd.DataFrame:
    """raw_sessions rows as the Parquet file gives them back (same dtypes)."""
    return pa.Table.from_pylist([row._asdict() for row in rows], schema=EVENT_SCHEMA).to_pandas()


def mine(session: Session, config: MiningConfig | None = None) -> list[dict[str, Any]]:
    """The mined rows of one built session, as dicts."""
    return records(mine_trajectories(session.frame(), config or MiningConfig()))


def records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    return [{str(key): value for key, value in row.items()} for row in frame.to_dict("records")]


# ---- tiering: one case per reason -----------------------------------------------------------------


def _fix(s: Session) -> Session:
    return s.user("test_fee_rounds_half_up fails, fix it").read().edit()


TIER_CASES: list[tuple[str, Callable[[Session], Session], MiningConfig, str, list[str]]] = [
    (
        "edit then passing tests",
        lambda s: _fix(s).tests(),
        MiningConfig(),
        "gold",
        ["edit_then_passing_verification"],
    ),
    (
        "gold work, then a refused push",
        lambda s: _fix(s).tests().refused(),
        MiningConfig(),
        "silver",
        ["edit_then_passing_verification", "ended_on_guard_denial"],
    ),
    (
        "gold work with a failed read, under a strict gold threshold",
        lambda s: s.user("fix the rounding").read("missing.py", is_error=True).read().edit().tests(),
        MiningConfig(gold_min_quality=0.99),
        "silver",
        ["edit_then_passing_verification", "below_gold_quality"],
    ),
    ("edit, never verified", lambda s: _fix(s), MiningConfig(), "silver", ["edit_without_verification"]),
    (
        "edit, then tests that say nothing",
        lambda s: _fix(s).tool("Bash", {"command": "uv run pytest -q"}, "", is_error=None),
        MiningConfig(),
        "silver",
        ["edit_verification_unknown"],
    ),
    (
        "inspect-only task checked by a passing run",
        lambda s: s.user("does the suite pass on main?").read().tests(),
        MiningConfig(),
        "silver",
        ["inspect_only_verified"],
    ),
    (
        "inspections only",
        lambda s: s.user("how does rounding work here?").read().grep(),
        MiningConfig(),
        "bronze",
        ["no_outcome_signal"],
    ),
    (
        "an answer without tools",
        lambda s: s.user("hi").say("Hello! What should we work on?"),
        MiningConfig(),
        "reject",
        ["no_tool_calls"],
    ),
    (
        "fewer calls than min_tool_calls",
        lambda s: s.user("how does rounding work here?").read().grep(),
        MiningConfig(min_tool_calls=3),
        "reject",
        ["too_short"],
    ),
    (
        "interrupted by the user",
        lambda s: _fix(s).interrupt(),
        MiningConfig(),
        "reject",
        ["interrupted"],
    ),
    (
        "tests still failing after the last edit",
        lambda s: _fix(s).tests(passed=False),
        MiningConfig(),
        "reject",
        ["final_verification_failed", "unresolved_error_at_end"],  # the failed run is the open error
    ),
    (
        "ends on an error",
        lambda s: s.user("read the config").read().read("config.toml", is_error=True),
        MiningConfig(),
        "reject",
        ["unresolved_error_at_end"],
    ),
    (
        "every call refused",
        lambda s: s.user("push it").refused(),
        MiningConfig(),
        "reject",
        ["all_calls_refused", "ended_on_guard_denial"],
    ),
]


@pytest.mark.parametrize(
    ("build", "config", "tier", "reasons"),
    [pytest.param(*case[1:], id=case[0]) for case in TIER_CASES],
)
def test_tiers_and_reasons(
    build: Callable[[Session], Session], config: MiningConfig, tier: str, reasons: list[str]
) -> None:
    (row,) = mine(build(Session()), config)
    assert (row["tier"], list(row["tier_reasons"])) == (tier, reasons)
    assert TIER_FLOORS[tier] <= row["quality"] <= TIER_FLOORS[tier] + TIER_WIDTH


def test_every_documented_tier_reason_has_a_case() -> None:
    covered = {reason for case in TIER_CASES for reason in case[4]}
    assert covered <= set(re.findall(r"`([a-z_]+)`", mining.__doc__ or ""))
    assert {
        "edit_then_passing_verification",
        "ended_on_guard_denial",
        "below_gold_quality",
        "edit_without_verification",
        "edit_verification_unknown",
        "inspect_only_verified",
        "no_outcome_signal",
        "no_tool_calls",
        "too_short",
        "interrupted",
        "final_verification_failed",
        "unresolved_error_at_end",
        "all_calls_refused",
    } == covered


def test_signals_of_a_gold_attempt() -> None:
    s = Session().user("test_fee_rounds_half_up fails, fix it").read("missing.py", is_error=True)
    s.read().edit().tests()
    (row,) = mine(s)
    assert row["tool_calls"] == 4 and row["edits"] == 1 and row["errors"] == 1
    assert list(row["tool_sequence"]) == ["read_file", "read_file", "edit_file", "run_shell"]
    assert list(row["tools_used"]) == ["read_file", "edit_file", "run_shell"]
    assert list(row["files_inspected"]) == ["src/ledger/fees.py"]  # the failed read saw nothing
    assert list(row["files_edited"]) == ["src/ledger/fees.py"]
    assert list(row["verification_intents"]) == ["pytest"]
    assert list(row["verification_outcomes"]) == ["passed"]
    assert row["final_verification"] == "passed" and row["verified_after_last_edit"]
    assert not row["unresolved_error_at_end"]
    assert row["shape"] == "inspect>edit>verification"
    assert row["intent"] == "fix_bug" and row["repo"] == "ledger-api"
    assert row["duration_s"] == 8.0
    assert row["started_at"] == pd.Timestamp(START + 1_000_000, unit="us", tz="UTC")
    assert pd.isna(row["confidence"])


def test_only_verifications_after_the_last_edit_decide() -> None:
    s = Session().user("fix it").read().tests().edit().tests(passed=False).edit()
    (row,) = mine(s)
    assert list(row["verification_outcomes"]) == ["passed", "failed"]
    assert pd.isna(row["final_verification"]) and not row["verified_after_last_edit"]
    assert row["tier"] == "silver"


# ---- splitting a session into attempts ------------------------------------------------------------


def test_an_interruption_ends_the_attempt_and_the_correction_counts_on_it() -> None:
    s = Session().user("fix the fee rounding").read().interrupt().user("no, look at the tests first")
    s.read("tests/test_fees.py").say("Done.")
    assert split_attempts(order_session_events(s.frame())) == [(0, 3), (4, 7)]
    first, second = mine(s)
    assert (first["interruptions"], first["corrections"], first["tier"]) == (1, 1, "reject")
    assert (second["interruptions"], second["corrections"]) == (0, 0)
    assert second["intent"] == first["intent"] == "fix_bug"  # the correction continues the task


def test_sub_agent_work_stays_in_the_attempt_that_spawned_it() -> None:
    sub = "/logs/s1/subagents/agent-a1.jsonl"
    s = Session().user("where is the fee computed?")
    s.add(
        "assistant", "tool_call", tool_name="Task", tool_call_id="task1", tool_input='{"prompt":"find fees"}'
    )
    side: dict[str, Any] = {"path": sub, "is_sidechain": True, "agent_id": "a1"}
    s.add("user", "message", text="find fees", **side)  # the sub-agent's prompt is not an instruction
    s.add(
        "assistant", "tool_call", tool_name="Grep", tool_call_id="g1", tool_input='{"pattern":"fee"}', **side
    )
    s.add("tool", "tool_result", text="src/ledger/fees.py:3:fee", tool_call_id="g1", is_error=False, **side)
    s.add("assistant", "message", text="fees.py", **side)
    s.add("tool", "tool_result", text="fees.py", tool_call_id="task1", is_error=False)
    s.say("In src/ledger/fees.py.").user("thanks, now add a test for it").read("tests/test_fees.py")
    first, second = mine(s)
    assert (first["first_ordinal"], first["last_ordinal"]) == (0, 7)
    assert first["sidechain_events"] == 4 and second["sidechain_events"] == 0
    assert list(first["tool_sequence"]) == ["Task", "grep_files"]
    calls = annotate_calls(order_session_events(s.frame()).iloc[0:8])
    assert [(c.call.name, c.is_sidechain, c.first_action) for c in calls] == [
        ("Task", False, True),
        ("grep_files", True, False),
    ]


def test_injected_context_and_what_comes_before_the_first_instruction_start_no_attempt() -> None:
    s = (
        Session(source="codex")
        .meta("You are Codex...")
        .meta("<environment_context>...</environment_context>")
    )
    s.user("explain the fee module").read().meta("<system-reminder>todo list is empty</system-reminder>")
    s.say("It adds a fixed fee.")
    assert split_attempts(order_session_events(s.frame())) == [(2, 6)]


def test_user_messages_without_agent_activity_between_them_are_one_instruction() -> None:
    s = Session().user("fix the rounding").user("[image]").meta("<system-reminder>x</system-reminder>")
    s.user("it's in fees.py").read().user("thanks")
    first, second = mine(s)
    assert first["instruction"] == "fix the rounding\n\n[image]\n\nit's in fees.py"
    assert first["attempt_id"] == attempt_id("s1", "/logs/s1.jsonl", 0)
    assert second["instruction"] == "thanks" and second["tool_calls"] == 0


def test_a_refusal_notice_is_part_of_the_refusal_not_an_interruption() -> None:
    s = Session().user("ship it").read().refused()
    s.interrupt("[Request interrupted by user for tool use]").user("don't push, show me the diff")
    s.bash("git diff --stat", " 1 file changed")
    first, second = mine(s)
    assert (first["interruptions"], first["guard_denials"], first["corrections"]) == (0, 1, 1)
    assert list(first["tier_reasons"]) == ["no_outcome_signal", "ended_on_guard_denial"]
    assert second["tier"] == "bronze"


def test_a_chat_log_cut_off_mid_work_is_an_interruption_elsewhere_it_is_not() -> None:
    for source, expected in (("chat_jsonl", 1), ("claude_code", 0)):
        s = Session(source=source).user("fix the rounding").read().user("hold on, read the tests first")
        s.read("tests/test_fees.py").say("ok")
        first, _ = mine(s)
        assert first["interruptions"] == expected, source


def test_an_interrupted_tool_run_and_its_notice_are_one_interruption() -> None:
    s = Session().user("run the suite").bash("uv run pytest", "", exit_code=None)
    s.rows[-1] = s.rows[-1]._replace(interrupted=True)  # Claude Code: toolUseResult.interrupted
    s.interrupt().user("never mind")
    first, _ = mine(s)
    assert first["interruptions"] == 1


def test_an_agent_log_interrupt_notice_is_an_interruption_not_an_error() -> None:
    s = Session(source="own_agent").user("fix it").read()
    s.add("system", "error", text="interrupted by user (KeyboardInterrupt)", is_error=True)
    (row,) = mine(s)
    assert (row["interruptions"], row["errors"], row["tier"]) == (1, 0, "reject")


def test_a_failed_result_and_its_notice_are_one_error() -> None:
    s = Session(source="own_agent").user("fix it")
    s.tool("read_file", {"path": "nope.py"}, "ERROR: no such file: nope.py", is_error=True)
    s.add("system", "error", text="read_file failed: FileNotFoundError: nope.py", is_error=True)
    s.tool("read_file", {"path": "fees.py"}, "import decimal")
    (row,) = mine(s)
    assert (row["errors"], row["unresolved_error_at_end"]) == (1, False)


def test_a_session_without_instruction_has_no_attempts() -> None:
    s = Session().meta("a summary line").say("resumed")
    assert split_attempts(order_session_events(s.frame())) == []
    assert mine(s) == []


# ---- guards -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "denied"),
    [
        (CLAUDE_REJECTED, True),
        ("User rejected tool use", True),
        ("PreToolUse:Bash hook error: [guard.sh]: Blocked: sudo is not permitted", True),
        ("exec command rejected by user", True),
        ("failed in sandbox LinuxSeccomp with execution error: sandbox denied exec error", True),
        ("DENIED: network access is disabled in this sandbox", True),
        ("Error: the user declined to run this command.", True),
        ("Error: blocked by policy: force-push is not allowed", True),
        ("Permission to use Bash with command rm -rf / has been denied.", True),
        ("Permission denied: writes outside the workspace need approval", True),
        ("cat: /root/.ssh/id_rsa: Permission denied", False),  # the OS, not a guard
        ("<system-reminder>you MUST refuse to improve malware</system-reminder>\n 1→code", False),
        ("Exit code 1\nFAILED tests/test_x.py", False),
        ("", False),
        (None, False),
    ],
)
def test_guard_denials_are_recognized(text: str | None, denied: bool) -> None:
    assert is_guard_denial(text) is denied


def test_a_different_call_after_a_guard_is_a_recovery() -> None:
    s = Session().user("set up tooling").read().refused("curl -fsSL x | sh", "Blocked: no network")
    s.bash("ls ~/.local/bin", "uv\n")
    calls = annotate_calls(order_session_events(s.frame()))
    assert [(c.guard_denied, c.after_guard, c.guard_recovery) for c in calls] == [
        (False, False, False),
        (True, False, False),
        (False, True, True),
    ]
    (row,) = mine(s)
    assert (row["guard_denials"], row["guard_recoveries"], row["repeated_inspections_after_guard"]) == (
        1,
        1,
        0,
    )


def test_the_same_inspection_again_after_a_guard_is_no_recovery() -> None:
    s = Session().user("set up tooling").read().grep().refused("sudo make install", "Blocked: no sudo")
    s.grep().read("src/ledger/api.py")
    calls = annotate_calls(order_session_events(s.frame()))
    repeat = calls[3]
    assert (repeat.after_guard, repeat.repeated_inspection_after_guard, repeat.guard_recovery) == (
        True,
        True,
        False,
    )
    assert not calls[4].after_guard
    (row,) = mine(s)
    assert (row["guard_recoveries"], row["repeated_inspections_after_guard"]) == (0, 1)


def test_retrying_the_refused_call_is_no_recovery() -> None:
    s = Session().user("push").refused().refused()
    calls = annotate_calls(order_session_events(s.frame()))
    assert (calls[1].after_guard, calls[1].guard_recovery, calls[1].repeated_inspection_after_guard) == (
        True,
        False,
        False,
    )


def test_a_span_outside_the_ordered_events_is_refused() -> None:
    ordered = order_session_events(_fix(Session()).tests().frame())
    assert annotate_attempts(ordered, []) == {}
    with pytest.raises(ValueError, match=r"span 0\.\.40 of session s1 .* hold 7 events of that session"):
        annotate_attempts(ordered, [("s1", 0, 40)])
    with pytest.raises(ValueError, match=r"session elsewhere .* hold 0 events"):
        annotate_attempts(ordered, [("elsewhere", 0, 1)])


# ---- ids, order, schema ------------------------------------------------------------------------------


def _two_fixes(repo_b: str = "ledger-api", test_b: bool = True) -> pd.DataFrame:
    """Two fixes in different words, files and commands; the second's repo and last step vary."""
    a = _fix(Session("a", path="/logs/a.jsonl")).tests()
    b = Session("b", path="/logs/b.jsonl", repo=repo_b).user("CI is red: fix the fee rounding")
    b.read("src/ledger/api.py").read("src/ledger/store.py").edit("src/ledger/api.py")
    if test_b:
        b.bash("make test", "4 passed")
    return frame_of(a.rows + b.rows)


def test_family_ids_are_stable_and_shared_by_the_same_workflow() -> None:
    assert family_id("ledger-api", "fix_bug", "inspect>edit>verification") == "67a948e485ec"
    first, second = records(mine_trajectories(_two_fixes()))
    assert first["shape"] == second["shape"] == "inspect>edit>verification"
    assert first["family_id"] == second["family_id"] == family_id("ledger-api", "fix_bug", first["shape"])
    other_shape = records(mine_trajectories(_two_fixes(test_b=False)))[1]
    other_repo = records(mine_trajectories(_two_fixes(repo_b="web-console")))[1]
    assert len({first["family_id"], other_shape["family_id"], other_repo["family_id"]}) == 3


def test_the_same_events_in_any_order_give_the_same_rows() -> None:
    events = _two_fixes()
    once = mine_trajectories(events)
    again = mine_trajectories(events.sample(frac=1.0, random_state=3).reset_index(drop=True))
    pd.testing.assert_frame_equal(once, again)
    assert list(once["session_id"]) == ["a", "b"]
    assert once["attempt_id"].str.fullmatch(r"[0-9a-f]{16}").all()
    assert once["family_id"].str.fullmatch(r"[0-9a-f]{12}").all()


def test_rows_follow_the_schema_and_an_empty_input_gives_an_empty_frame() -> None:
    rows = mine_trajectories(_two_fixes())
    assert list(rows.columns) == TRAJECTORY_SCHEMA.names
    assert pa.Table.from_pandas(rows, schema=TRAJECTORY_SCHEMA, preserve_index=False).num_rows == 2
    empty = mine_trajectories(frame_of([]))
    assert empty.empty and list(empty.columns) == TRAJECTORY_SCHEMA.names


def test_missing_columns_are_named() -> None:
    with pytest.raises(ValueError, match=r"raw_sessions columns \['session_start'\]"):
        mine_trajectories(_two_fixes().drop(columns="session_start"))


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("min_tool_calls", -1),
        ("gold_min_quality", 1.5),
        ("weight_verified", -0.1),
        ("correction_pattern", "("),
    ],
)
def test_bad_config_is_refused(field: str, value: object) -> None:
    with pytest.raises(ValueError, match=field):
        dataclasses.replace(MiningConfig(), **{field: value})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("instruction", "intent"),
    [
        ("test_fee_rounds_half_up is failing on main, can you fix it?", "fix_bug"),
        ("negative amounts render as $-12.00 instead of -$12.00", "fix_bug"),
        ("add pagination to GET /entries", "add_feature"),
        ("InvoiceTable needs a `status` prop to filter rows", "add_feature"),
        ("we have no test for net_amount(0). add one", "write_tests"),
        ("rename fetchJson to requestJson", "refactor"),
        ("clippy fails on tilecache, please make it clean", "refactor"),
        ("bump pydantic to 2.10 and make sure the tests still pass", "bump_dependency"),
        ("let's update the default context to 90 in env var", "other"),
        ("how do idempotency keys work? don't change anything", "explain"),
        ("where do we set the auth header?", "explain"),
        ("rerun yesterday's job as a dry run", "ops"),
        ("commit this with a sensible message", "ops"),
        ("hi", "other"),
    ],
)
def test_intent_keywords(instruction: str, intent: str) -> None:
    assert classify_intent(instruction) == intent


# ---- the sample corpus: tiers match what the generator planted ---------------------------------------

SPEC = CorpusSpec(days=2, end_date=dt.date(2026, 11, 20), sessions_per_day=10, seed=5)


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> tuple[pd.DataFrame, pd.DataFrame]:
    root = tmp_path_factory.mktemp("mining")
    generate_corpus(root / "corpus", SPEC)
    roots = [SourceRoot(source, root / "corpus" / folder) for source, folder in SOURCE_FOLDERS.items()]
    frames = []
    for day in SPEC.dates:
        ingest_day(roots, day, root / f"{day}.parquet", root / f"q{day}.parquet")
        frames.append(pd.read_parquet(root / f"{day}.parquet"))
    events = pd.concat(frames, ignore_index=True)
    return events, mine_trajectories(events)


@pytest.mark.parametrize("batch_events", [1, 50, MINE_BATCH_EVENTS])
def test_mine_table_gives_the_rows_of_mine_trajectories(
    sample: tuple[pd.DataFrame, pd.DataFrame], batch_events: int
) -> None:
    """Mined in runs of whole sessions (one session a run at 1, a few at 50): the same rows."""
    events, attempts = sample
    table = mine_table(pa.Table.from_pandas(events, preserve_index=False), batch_events_at_most=batch_events)
    assert table.schema.equals(TRAJECTORY_SCHEMA)
    pd.testing.assert_frame_equal(table.to_pandas(), attempts, check_exact=True)
    assert mine_table(EVENT_SCHEMA.empty_table()).equals(TRAJECTORY_SCHEMA.empty_table())


@pytest.mark.parametrize(
    ("kind", "values"),
    [
        (pa.string(), ["a", None, ""]),
        (pa.large_string(), ["a", None, "é"]),
        (pa.int64(), [1, None, 0]),
        (pa.int32(), [3, 2, 1]),
        (pa.bool_(), [True, None, False]),
        (pa.float64(), [0.5, None, float("nan")]),
        (pa.timestamp("us", tz="UTC"), [0, None, 1_700_000_000_123_456]),
        (pa.timestamp("ns"), [1_000, None, 1_700_000_000_123_456_000]),
        (pa.dictionary(pa.int8(), pa.string()), ["x", None, "y"]),
        (pa.null(), [None, None, None]),
    ],
)
@pytest.mark.filterwarnings("ignore::UserWarning")  # pandas parsing text as times, one value at a time
def test_arrow_event_lists_give_the_lists_of_the_pandas_frame(kind: pa.DataType, values: list[Any]) -> None:
    table = pa.table({"c": pa.array(values, kind)})
    arrow, frame = ArrowEventLists(table), EventLists(table.to_pandas())
    for convert in (
        "values",
        "texts",
        "optional_ints",
        "optional_bools",
        "optional_floats",
        "flags",
        "micros",
        "strings",
        "ints",
    ):
        try:
            expected: Any = getattr(frame, convert)("c")
        except (TypeError, ValueError) as error:
            expected = type(error)
        try:
            got: Any = getattr(arrow, convert)("c")
        except (TypeError, ValueError) as error:
            got = type(error)
        assert repr(got) == repr(expected), convert  # repr: NaN is not equal to itself
    assert arrow.texts("absent") == frame.texts("absent") == [None] * 3


@pytest.mark.parametrize("kind", [pa.string(), pa.large_string()])
@pytest.mark.parametrize(
    "chunks",
    [[["a.jsonl", None, "b.jsonl", "a.jsonl"], ["", "b.jsonl", None]], [["é", "é"]], [[None]], [[]]],
)
def test_arrow_event_lists_of_a_column_of_few_distinct_strings(
    kind: pa.DataType, chunks: list[list[str | None]]
) -> None:
    # These columns go through a dictionary, not `to_pylist`: the lists must be the same.
    column = pa.chunked_array([pa.array(chunk, kind) for chunk in chunks], kind)
    table = pa.table({"source_path": column})
    arrow, frame = ArrowEventLists(table), EventLists(table.to_pandas())
    assert arrow.values("source_path") == frame.values("source_path") == column.to_pylist()
    assert arrow.texts("source_path") == frame.texts("source_path")
    if not column.null_count:
        assert arrow.strings("source_path") == frame.strings("source_path")


def _planted(events: pd.DataFrame, attempts: pd.DataFrame) -> list[tuple[str, dict[str, Any]]]:
    """(what the generator planted, the attempt's row) for every attempt the tables identify."""
    interruption = re.compile(
        "|".join(re.escape(t).replace(re.escape("{path}"), ".+") for t in INTERRUPTIONS)
    )
    guard_replies = {guard.user_reply for guard in GUARDS}
    tasks = {text: task for repo in REPOS for task in repo.tasks for text in task.instructions}
    follow_ups = {text: kind for text, kind, _ in FOLLOW_UPS}
    ordered = order_session_events(events)
    said = ordered[(ordered["role"] == "assistant") & (ordered["kind"] == "message")]
    closing = {
        (str(session), int(ordinal)): str(text)
        for session, ordinal, text in zip(said["session_id"], said["ordinal"], said["text"], strict=True)
    }
    planted = []
    rows = records(attempts)
    for row, after in zip(rows, [*rows[1:], None], strict=True):
        nxt = after["instruction"] if after is not None and after["session_id"] == row["session_id"] else ""
        last_words = [
            text
            for (session, ordinal), text in closing.items()
            if session == row["session_id"] and row["first_ordinal"] <= ordinal <= row["last_ordinal"]
        ]
        final = last_words[-1] if last_words else ""
        task = tasks.get(row["instruction"])
        if interruption.fullmatch(nxt):
            planted.append(("interrupted", row))
        elif nxt in guard_replies:
            planted.append(("refused_by_person", row))
        elif final.startswith(("I couldn't find why", "I wasn't able to get")):
            planted.append(("gave_up", row))
        elif task is not None and task.edits and final == task.answer:
            planted.append(("fixed_and_tested", row))
        elif task is not None and task.intent == "explain":
            planted.append(("explained", row))
        elif row["instruction"] in follow_ups:
            planted.append((f"follow_up_{follow_ups[row['instruction']]}", row))
    return planted


EXPECTED_TIERS = {
    "interrupted": {"reject"},
    "gave_up": {"reject"},
    "fixed_and_tested": {"gold"},
    "explained": {"bronze", "silver"},
    "follow_up_commit": {"bronze"},
    "follow_up_lint": {"silver", "bronze"},  # eslint prints nothing on success: outcome unknown
    "refused_by_person": {"gold", "silver", "bronze", "reject"},
}


def test_sample_corpus_tiers_match_what_the_generator_planted(
    sample: tuple[pd.DataFrame, pd.DataFrame],
) -> None:
    events, attempts = sample
    planted = _planted(events, attempts)
    kinds = Counter(kind for kind, _ in planted)
    assert set(kinds) == set(EXPECTED_TIERS), kinds
    for kind, row in planted:
        assert row["tier"] in EXPECTED_TIERS[kind], (kind, row["instruction"], list(row["tier_reasons"]))
        if kind == "interrupted":
            assert "interrupted" in row["tier_reasons"]
        if kind == "gave_up":
            assert "final_verification_failed" in row["tier_reasons"]
        if kind == "refused_by_person":
            assert "ended_on_guard_denial" in row["tier_reasons"] and row["guard_denials"] >= 1
        if kind == "fixed_and_tested":
            assert row["verified_after_last_edit"] and row["edits"] >= 1
    # Hooks and sandboxes refuse mid-attempt; the agent takes another route, never the same read.
    assert attempts["guard_recoveries"].sum() > 0
    assert attempts["repeated_inspections_after_guard"].sum() == 0
    assert attempts["sidechain_events"].sum() > 0
    assert attempts["confidence"].notna().sum() > 0
    assert set(attempts["tier"]) == {"gold", "silver", "bronze", "reject"}
    assert (attempts.groupby("family_id").size() > 1).any()  # workflows recur across sessions


def attempt_spans(attempts: pd.DataFrame) -> list[tuple[str, int, int]]:
    """(session, first ordinal, last ordinal) of each mined attempt: what annotate_attempts takes."""
    return list(zip(attempts["session_id"], attempts["first_ordinal"], attempts["last_ordinal"], strict=True))


def test_annotating_all_attempts_at_once_gives_what_each_attempt_gives_alone(
    sample: tuple[pd.DataFrame, pd.DataFrame],
) -> None:
    events, attempts = sample
    ordered, spans = order_session_events(events), attempt_spans(attempts)
    annotated = annotate_attempts(ordered, spans)
    assert list(annotated) == [(session_id, first) for session_id, first, _ in spans]
    starts = {str(session): int(rows[0]) for session, rows in ordered.groupby("session_id").indices.items()}
    for (session_id, first, last), sequence in zip(spans, attempts["tool_sequence"], strict=True):
        calls = annotated[(session_id, first)]
        start = starts[session_id]
        assert calls == annotate_calls(ordered.iloc[start + first : start + last + 1])
        assert [info.call.name for info in calls] == list(sequence)


def test_annotating_without_outcomes_changes_only_the_outcomes(
    sample: tuple[pd.DataFrame, pd.DataFrame],
) -> None:
    # Decision points skip reading runner output; every other fact of every call must stay the same.
    events, attempts = sample
    ordered, spans = order_session_events(events), attempt_spans(attempts)
    full, bare = annotate_attempts(ordered, spans), annotate_attempts(ordered, spans, outcomes=False)
    assert list(full) == list(bare)
    pairs = [(a, b) for key in full for a, b in zip(full[key], bare[key], strict=True)]
    assert pairs and all(b.verification_outcome is None for _, b in pairs)
    assert any(a.verification_outcome is not None for a, _ in pairs)
    assert all(a._replace(verification_outcome=None) == b for a, b in pairs)


# ---- the real transcripts ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def real(real_corpus: Path) -> tuple[pd.DataFrame, dict[str, str]]:
    rows: list[Event] = []
    for file in candidate_files(
        [SourceRoot(source, real_corpus / folder) for source, folder in REAL_FOLDERS.items()]
    ):
        rows += [item for item in FORMATS[file.source].parse(file.path) if isinstance(item, Event)]
    events = frame_of(rows)
    main_file: dict[str, str] = {}
    for row in rows:  # a session's own file: the first one that is not a sub-agent's
        if not row.is_sidechain:
            main_file.setdefault(row.session_id, Path(row.source_path).relative_to(real_corpus).as_posix())
    return mine_trajectories(events), main_file


REAL_ATTEMPTS = {
    "claude-code/spotter/short.jsonl": 1,
    "claude-code/spotter/tool_heavy.jsonl": 2,
    "claude-code/spotter/4d5611e5-241a-462a-8d15-5122611a9569.jsonl": 2,  # + its sub-agents' work
    "claude-code/codemie-code/session-624a4a58.jsonl": 14,
    "claude-code/codemie-code/session-9eda1058.jsonl": 3,
    "claude-code/claude-parser/4762e53b-7ca8-4464-9eac-d1816c343c50.jsonl": 0,  # a summary line only
    "codex/codemie-code/rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl": 2,
    "gemini-cli/codemie-code/session-2026-01-16T11-01-file-ops-37b7abef.json": 5,
    "swe-agent/SWE-agent/pydicom__pydicom-1458.traj": 1,
}


def test_real_transcripts_give_the_attempts_people_made(real: tuple[pd.DataFrame, dict[str, str]]) -> None:
    attempts, main_file = real
    per_file = Counter(main_file[session] for session in attempts["session_id"])
    for file, count in REAL_ATTEMPTS.items():
        assert per_file[file] == count, file
    assert len(attempts) == 68  # spotter/subagent.jsonl: its plugin command is the request
    by_file = {file: attempts[attempts["session_id"].map(main_file) == file] for file in REAL_ATTEMPTS}

    # short.jsonl: both calls refused by the person, then "[Request interrupted by user for tool use]".
    (short,) = records(by_file["claude-code/spotter/short.jsonl"])
    assert (short["guard_denials"], short["interruptions"], short["tier"]) == (2, 0, "reject")
    assert list(short["tier_reasons"]) == ["all_calls_refused", "ended_on_guard_denial"]
    # session-624a4a58: three "[Request interrupted by user]". "no, it's not phase 1 ..." and "don't
    # add notes ..." correct the attempts they cut short; "it's bad idea ..." and "don't create
    # separate documents ..." correct finished ones.
    session = by_file["claude-code/codemie-code/session-624a4a58.jsonl"]
    assert list(session.loc[session["interruptions"] > 0, "attempt_index"]) == [3, 6, 8]
    assert list(session.loc[session["corrections"] > 0, "attempt_index"]) == [0, 2, 3, 6]
    assert (session.loc[session["interruptions"] > 0, "tier"] == "reject").all()
    # spotter: the first attempt holds the main agent's 22 calls and its Explore sub-agent's 33;
    # the agent then stopped on its own and "continue" started the second.
    first, second = records(by_file["claude-code/spotter/4d5611e5-241a-462a-8d15-5122611a9569.jsonl"])
    assert first["instruction"].startswith("Work on bead spotter-dov") and second["instruction"] == "continue"
    assert (first["tool_calls"], first["sidechain_events"], first["interruptions"]) == (55, 74, 0)
    # Codex: the second turn edits, runs checks after the last edit and they pass.
    codex = by_file[
        "codex/codemie-code/rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl"
    ]
    assert list(codex["tier"]) == ["bronze", "gold"]

    assert Counter(attempts["tier"]) == {"silver": 24, "reject": 23, "bronze": 20, "gold": 1}
    assert attempts["quality"].between(0, 1).all()
