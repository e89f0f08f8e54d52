"""Decision points are the training examples: each must show the agent exactly what it had seen
before the call (capped, oldest dropped first, never a result without its call), carry the
labels mining gave the call, and keep the same id however often and in whatever order it is built.

Unit tests build transcripts and `CallInfo` lists by hand (mining's annotations are stubbed), so
they pin this module alone; the last test runs the real chain on a generated sample-corpus day.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections import Counter
from pathlib import Path, PurePath
from typing import Any

import orjson
import pandas as pd
import pyarrow as pa
import pytest

from trajectory_pipeline.decisions import points as decisions
from trajectory_pipeline.decisions.points import (
    CUT_BATCH_EVENTS,
    DECISION_SCHEMA,
    TIERS,
    DecisionConfig,
    arguments_unparseable,
    build_history,
    cap_result,
    decision_points_table,
    extract_decision_points,
    learnable,
    learnable_table,
)
from trajectory_pipeline.events import order_session_events
from trajectory_pipeline.ingest.days import SourceRoot, ingest_day
from trajectory_pipeline.mining.actions import CallInfo
from trajectory_pipeline.mining.attempts import mine_trajectories
from trajectory_pipeline.mining.vocabulary import CanonicalCall
from trajectory_pipeline.sample.corpus import SOURCE_FOLDERS, CorpusSpec, generate_corpus

MAIN = "/home/dana/.claude/projects/app/s1.jsonl"
SUB = "/home/dana/.claude/projects/app/s1/subagents/agent-abc1234.jsonl"
PROMPT = "You are a coding agent working in {repo}. Decide the next tool call."


class Transcript:
    """One session written by hand: events in the order they happened, and the calls as mining
    would annotate them. Event i gets ordinal i (its timestamp is i)."""

    def __init__(self, session_id: str = "s1", source: str = "claude_code") -> None:
        self.session_id, self.source = session_id, source
        self.rows: list[dict[str, Any]] = []
        self.calls: list[CallInfo] = []
        self._seq: Counter[str] = Counter()

    def add(self, role: str, kind: str, text: str | None = None, *, sub: bool = False, **fields: Any) -> int:
        path = SUB if sub else MAIN
        ordinal = len(self.rows)
        self.rows.append(
            {
                "source": self.source,
                "session_id": self.session_id,
                "session_start": 0,
                "source_path": path,
                "seq": self._seq[path],
                "ts": ordinal,
                "role": role,
                "kind": kind,
                "text": text,
                "cwd": "/home/<user>/src/app",
                "is_sidechain": sub,
                "agent_id": "abc1234" if sub else None,
                "tool_call_id": fields.pop("tool_call_id", None),
                **fields,
            }
        )
        self._seq[path] += 1
        return ordinal

    def user(self, text: str, **kw: Any) -> int:
        return self.add("user", "message", text, **kw)

    def say(self, text: str, **kw: Any) -> int:
        return self.add("assistant", "message", text, **kw)

    def call(
        self,
        name: str,
        arguments: dict[str, Any],
        result: str | None = None,
        *,
        sub: bool = False,
        **labels: Any,
    ) -> int:
        """A tool call, followed by its result unless `result` is None (see `result`); returns its index."""
        call_id = f"call_{len(self.calls)}"
        ordinal = self.add("assistant", "tool_call", tool_call_id=call_id, sub=sub, tool_name=name)
        canonical = CanonicalCall(name, arguments, name.title(), {"raw": arguments}, known=True)
        info = CallInfo(
            ordinal=ordinal,
            call=canonical,
            action_class=labels.pop("action_class", "inspect"),
            decisive=labels.pop("decisive", False),
            tool_call_id=call_id,
            is_sidechain=sub,
            result_ordinal=None,
            result_text=None,
            is_error=False,
            verification_intent=None,
            verification_outcome=None,
            guard_denied=labels.pop("guard_denied", False),
            first_action=labels.pop("first_action", not self.calls),
            after_guard=labels.pop("after_guard", False),
            guard_recovery=labels.pop("guard_recovery", False),
            repeated_inspection_after_guard=labels.pop("repeated_inspection_after_guard", False),
        )
        assert not labels, labels
        self.calls.append(info)
        if result is not None:
            self.result(len(self.calls) - 1, result)
        return len(self.calls) - 1

    def result(self, index: int, text: str) -> None:
        info = self.calls[index]
        ordinal = self.add("tool", "tool_result", text, tool_call_id=info.tool_call_id, sub=info.is_sidechain)
        self.calls[index] = info._replace(result_ordinal=ordinal, result_text=text)

    def events(self) -> pd.DataFrame:
        return pd.DataFrame(self.rows)

    def ordered(self) -> pd.DataFrame:
        return order_session_events(self.events())

    def attempt(
        self, attempt_id: str = "a1", tier: str = "gold", first: int = 0, last: int | None = None
    ) -> dict:
        return {
            "attempt_id": attempt_id,
            "session_id": self.session_id,
            "source": self.source,
            "repo": "app",
            "first_ordinal": first,
            "last_ordinal": len(self.rows) - 1 if last is None else last,
            "instruction": self.rows[first]["text"],
            "tier": tier,
            "tier_reasons": [f"{tier} reason"],
            "quality": 0.9,
            "family_id": f"fam-{attempt_id}",
            "intent": "fix",
        }


@pytest.fixture
def stub_mining(monkeypatch: pytest.MonkeyPatch):
    """Point extract_decision_points at hand-built CallInfo lists instead of mining's annotate_attempts."""

    def install(*transcripts: Transcript) -> None:
        by_session = {t.session_id: t.calls for t in transcripts}

        def annotate_attempts(
            ordered_events: pd.DataFrame, spans: list[tuple[str, int, int]], *, outcomes: bool = True
        ) -> dict[tuple[str, int], list[CallInfo]]:
            return {
                (session_id, first): [c for c in by_session[session_id] if first <= c.ordinal <= last]
                for session_id, first, last in spans
            }

        monkeypatch.setattr(decisions, "annotate_attempts", annotate_attempts)

    return install


def history_of(t: Transcript, index: int, config: DecisionConfig | None = None) -> tuple[list, int]:
    return build_history(t.ordered(), t.calls, index, t.rows[0]["text"], config or DecisionConfig(), "app")


def call_names(messages: list[dict[str, Any]]) -> list[str]:
    return [c["arguments"]["tag"] for m in messages for c in m.get("tool_calls", [])]


def assert_well_formed(messages: list[dict[str, Any]]) -> None:
    """System, instruction, then every tool result after the call it answers."""
    assert [m["role"] for m in messages[:2]] == ["system", "user"]
    seen: set[str] = set()
    for message in messages[2:]:
        seen.update(c["id"] for c in message.get("tool_calls", []))
        if message["role"] == "tool":
            assert message["tool_call_id"] in seen


def json_len(messages: list[dict[str, Any]]) -> int:
    return len(orjson.dumps(messages, option=orjson.OPT_SORT_KEYS).decode())


# ---- history: what it holds -------------------------------------------------------------------


def four_turns() -> Transcript:
    """Three earlier turns (each a call and its result, of growing size) before the target call."""
    t = Transcript()
    t.user("fix the fee rounding")
    t.say("Reading fees.py first.")
    t.call("read_file", {"file_path": "fees.py", "tag": "A"}, "a" * 300)
    t.call("grep_files", {"pattern": "quantize", "tag": "B"}, "b" * 400)
    t.say("Now the fix.")
    t.call("edit_file", {"file_path": "fees.py", "tag": "C"}, "c" * 500)
    t.say("Running the tests.")
    t.call("run_shell", {"command": "pytest", "tag": "T"}, "passed")
    return t


def test_history_holds_instruction_turns_and_results_in_order() -> None:
    t = four_turns()
    messages, dropped = history_of(t, 3)
    assert dropped == 0
    assert messages[0] == {"role": "system", "content": PROMPT.format(repo="app")}
    assert messages[1] == {"role": "user", "content": "fix the fee rounding"}
    assert [(m["role"], m.get("content", "")[:12]) for m in messages[2:]] == [
        ("assistant", "Reading fees"),
        ("tool", "a" * 12),
        ("assistant", ""),
        ("tool", "b" * 12),
        ("assistant", "Now the fix."),
        ("tool", "c" * 12),
    ]
    assert messages[2]["tool_calls"] == [
        {"id": "call_0", "name": "read_file", "arguments": {"file_path": "fees.py", "tag": "A"}}
    ]
    assert messages[3] == {
        "role": "tool",
        "tool_call_id": "call_0",
        "name": "read_file",
        "content": "a" * 300,
    }
    assert_well_formed(messages)


def test_the_targets_own_text_is_left_out_but_earlier_parallel_calls_stay() -> None:
    """'Running the tests.' announces the target; parallel calls made before it in its turn stay."""
    t = Transcript()
    t.user("why is the build red?")
    t.say("Looking at both files.")
    first = t.call("read_file", {"tag": "A"})
    second = t.call("read_file", {"tag": "B"})
    t.result(first, "a")
    t.result(second, "b")
    messages, _ = history_of(t, second)
    assert messages[2:] == [
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "call_0", "name": "read_file", "arguments": {"tag": "A"}}],
        }
    ]
    assert "Running the tests." not in str(history_of(four_turns(), 3)[0])
    # The first call's history has no trace of its own turn.
    assert history_of(t, first)[0][2:] == []


def test_user_messages_before_the_agent_acts_are_the_instruction_not_repeated() -> None:
    """Mining joins them (a text block and an image note, say) into the attempt's instruction."""
    t = Transcript()
    t.user("the export is broken")
    t.user("[image: screenshot.png]")
    t.call("read_file", {"tag": "A"}, "export.py")
    t.call("edit_file", {"tag": "T"}, "ok")
    messages, _ = build_history(
        t.ordered(), t.calls, 1, "the export is broken\n\n[image: screenshot.png]", DecisionConfig(), "app"
    )
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool"]
    assert messages[1]["content"] == "the export is broken\n\n[image: screenshot.png]"


def test_blank_assistant_text_adds_nothing() -> None:
    t = Transcript()
    t.user("go")
    t.say("\n\n")
    t.call("read_file", {"tag": "A"}, "a")
    t.say("  Next, the edit.\n")
    t.call("edit_file", {"tag": "B"}, "ok")
    t.call("run_shell", {"tag": "T"}, "ok")
    messages, _ = history_of(t, 2)
    assert [m["content"] for m in messages if m["role"] == "assistant"] == ["", "Next, the edit."]


def test_reasoning_meta_and_errors_are_left_out_and_later_user_messages_kept() -> None:
    t = Transcript()
    t.user("add pagination")
    t.add("assistant", "reasoning", "I should read the routes first")
    t.add("system", "meta", "[turn_duration]")
    t.call("read_file", {"tag": "A"}, "routes")
    t.add("system", "error", "API error: overloaded")
    t.add("assistant", "decision", "edit the handler next")
    t.user("[Request interrupted by user]", interrupted=True)
    t.user("only the handler, no refactor")
    t.call("edit_file", {"tag": "T"}, "ok")
    messages, _ = history_of(t, 1)
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "user", "user"]
    assert [m["content"] for m in messages[4:]] == [
        "[Request interrupted by user]",
        "only the handler, no refactor",
    ]
    left_out = ("read the routes", "turn_duration", "overloaded", "edit the handler")
    assert not any(text in str(messages) for text in left_out)


# ---- history: the budget ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kept", "slack", "expected"),
    [
        (3, 0, ["A", "B", "C"]),  # budget exactly the whole history: nothing dropped
        (3, -1, ["B", "C"]),  # one character short: the oldest turn goes first
        (2, 0, ["B", "C"]),
        (2, -1, ["C"]),
        (1, 0, ["C"]),
        (1, -1, []),
        (0, 0, []),  # system and instruction only
    ],
)
def test_budget_drops_the_oldest_turn_with_its_results_first(
    kept: int, slack: int, expected: list[str]
) -> None:
    t = four_turns()
    full, _ = history_of(t, 3)
    units = [full[2:4], full[4:6], full[6:8]]  # (call, result) pairs, oldest first
    fitting = full[:2] + [m for unit in units[3 - kept :] for m in unit]
    budget = json_len(fitting) + slack
    messages, dropped = history_of(t, 3, DecisionConfig(history_budget_chars=max(budget, 1)))
    assert call_names(messages) == expected
    assert dropped == len(full) - len(messages)
    assert len(messages) == 2 + 2 * len(expected)  # never a call without its result, or the reverse
    assert_well_formed(messages)
    if expected:
        assert json_len(messages) <= budget


@pytest.mark.parametrize("budget", [1, 50, 200])
def test_system_and_instruction_stay_even_when_alone_over_the_budget(budget: int) -> None:
    t = four_turns()
    t.rows[0]["text"] = "x" * 5_000
    messages, dropped = history_of(t, 3, DecisionConfig(history_budget_chars=budget))
    assert [m["role"] for m in messages] == ["system", "user"]
    assert messages[1]["content"] == "x" * 5_000
    assert dropped == 6


def test_the_target_is_never_cut(stub_mining) -> None:
    t = four_turns()
    t.calls[3] = t.calls[3]._replace(call=t.calls[3].call._replace(arguments={"command": "y" * 50_000}))
    stub_mining(t)
    config = DecisionConfig(history_budget_chars=100, max_result_chars=100)
    row = extract_decision_points(t.events(), pd.DataFrame([t.attempt()]), config).iloc[3]
    assert row["target_arguments"] == '{"command":"' + "y" * 50_000 + '"}'
    assert row["history_messages"] == 2 and row["history_dropped"] == 6


# ---- tool results are capped ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("length", "limit", "cut"),
    [
        (0, 100, False),
        (99, 100, False),
        (100, 100, False),
        (101, 100, True),
        (10_000, 100, True),
        (50_000, 2_000, True),
    ],
)
def test_cap_result_keeps_head_and_tail_within_the_limit(length: int, limit: int, cut: bool) -> None:
    text = "".join(chr(ord("a") + i % 26) for i in range(length))
    capped = cap_result(text, limit)
    assert len(capped) <= limit
    if not cut:
        assert capped == text
        return
    head, marker, tail = capped.split("\n")
    assert text.startswith(head) and text.endswith(tail) and abs(len(head) - len(tail)) <= 1
    assert marker == f"[... {length - len(head) - len(tail)} characters omitted ...]"


def test_results_in_the_history_are_capped() -> None:
    t = Transcript()
    t.user("show me the log")
    t.call("read_file", {"tag": "A"}, "H" * 1_000 + "T" * 1_000)
    t.call("read_file", {"tag": "T"}, "short")
    messages, _ = history_of(t, 1, DecisionConfig(max_result_chars=500))
    content = messages[3]["content"]
    assert len(content) <= 500 and content.startswith("H" * 200) and content.endswith("T" * 200)
    assert "characters omitted" in content


# ---- rows: ids, order, tiers, labels ----------------------------------------------------------


def two_sessions() -> tuple[Transcript, Transcript, pd.DataFrame]:
    first, second = four_turns(), Transcript("s0", source="codex")
    second.user("run the linter")
    second.call("run_shell", {"command": "ruff check ."}, "All checks passed!")
    second.user("and the types")
    second.call("run_shell", {"command": "mypy"}, "Success")
    attempts = pd.DataFrame(
        [first.attempt(), second.attempt("b1", "silver", 0, 2), second.attempt("b2", "bronze", 3, 4)]
    )
    return first, second, attempts


def test_ids_are_stable_across_runs_and_input_row_order(stub_mining) -> None:
    first, second, attempts = two_sessions()
    stub_mining(first, second)
    events = pd.concat([first.events(), second.events()], ignore_index=True)
    once = extract_decision_points(events, attempts)
    again = extract_decision_points(events, attempts)
    shuffled = extract_decision_points(
        events.sample(frac=1, random_state=3).reset_index(drop=True),
        attempts.iloc[::-1].reset_index(drop=True),
    )
    pd.testing.assert_frame_equal(once, again)
    pd.testing.assert_frame_equal(once, shuffled)
    assert list(once[["session_id", "ordinal"]].itertuples(index=False, name=None)) == [
        ("s0", 1),
        ("s1", 2),
        ("s1", 4),
        ("s1", 7),
        ("s1", 10),
    ]
    expected = hashlib.sha256(f"s1\x1f{PurePath(MAIN).name}\x1f2".encode()).hexdigest()[:16]
    assert once.loc[1, "decision_id"] == expected
    assert once["decision_id"].is_unique


@pytest.mark.parametrize(
    ("tiers", "attempt_ids"),
    [
        (("gold", "silver"), {"a1", "b1"}),
        (("gold",), {"a1"}),
        (("bronze",), {"b2"}),
        (("reject",), set()),
        (("gold", "silver", "bronze", "reject"), {"a1", "b1", "b2"}),
    ],
)
def test_only_attempts_of_the_included_tiers_give_decisions(stub_mining, tiers, attempt_ids) -> None:
    first, second, attempts = two_sessions()
    stub_mining(first, second)
    events = pd.concat([first.events(), second.events()], ignore_index=True)
    rows = extract_decision_points(events, attempts, DecisionConfig(included_tiers=tiers))
    assert set(rows["attempt_id"]) == attempt_ids
    assert list(rows.columns) == DECISION_SCHEMA.names
    pa.Table.from_pandas(rows, schema=DECISION_SCHEMA, preserve_index=False)  # the schema holds


def test_rows_copy_the_attempt_and_the_target_call(stub_mining) -> None:
    first, second, attempts = two_sessions()
    stub_mining(first, second)
    rows = extract_decision_points(first.events(), attempts[attempts["session_id"] == "s1"])
    row = rows.iloc[2].to_dict()
    messages = orjson.loads(row.pop("messages"))
    assert row | {"decision_id": None, "missing_required": list(row["missing_required"])} == {
        "decision_id": None,
        "attempt_id": "a1",
        "session_id": "s1",
        "source": "claude_code",
        "repo": "app",
        "tier": "gold",
        "quality": 0.9,
        "family_id": "fam-a1",
        "intent": "fix",
        "step": 2,
        "ordinal": 7,
        "target_name": "edit_file",
        "target_arguments": '{"file_path":"fees.py","tag":"C"}',
        "target_source_name": "Edit_File",
        "target_source_arguments": '{"raw":{"file_path":"fees.py","tag":"C"}}',
        "target_known": True,
        "missing_required": ["old_string", "new_string"],
        "arguments_unparseable": False,  # "raw" holds an object here, not text that failed to parse
        "action_class": "inspect",
        "decisive": False,
        "first_action": False,
        "after_guard": False,
        "guard_recovery": False,
        "repeated_inspection_after_guard": False,
        "target_guard_denied": False,
        "history_messages": 6,
        "history_dropped": 0,
        "history_chars": json_len(messages),
        "is_sidechain": False,
    }


LABELS = [
    "action_class",
    "decisive",
    "first_action",
    "after_guard",
    "guard_recovery",
    "repeated_inspection_after_guard",
]


@pytest.mark.parametrize(
    "labels",
    [
        {"action_class": "edit", "decisive": True},
        {"action_class": "verification", "decisive": True, "first_action": True},
        {"action_class": "other", "after_guard": True, "guard_recovery": True},
        {"action_class": "inspect", "after_guard": True, "repeated_inspection_after_guard": True},
        {"action_class": "patch", "decisive": True, "guard_denied": True},
    ],
)
def test_labels_are_copied_from_mining_not_recomputed(stub_mining, labels: dict[str, Any]) -> None:
    t = Transcript()
    t.user("go")
    # A read_file labelled as anything: the row must say what mining said, whatever the tool.
    t.call("read_file", {"file_path": "x"}, "ok", **{"first_action": False, **labels})
    stub_mining(t)
    row = extract_decision_points(t.events(), pd.DataFrame([t.attempt()])).iloc[0]
    expected = {"first_action": False, "decisive": False, "after_guard": False} | labels
    for label in LABELS:
        assert row[label] == expected.get(label, False), label


# ---- sub-agents -------------------------------------------------------------------------------


def with_subagent() -> Transcript:
    t = Transcript()
    t.user("add pagination")
    task = t.call("Task", {"prompt": "find list_entries", "tag": "task"})
    t.user("find list_entries in the routes", sub=True)
    t.call("read_file", {"tag": "S1"}, "routes.py body", sub=True)
    t.say("Searching next.", sub=True)
    t.call("grep_files", {"tag": "S2"}, "api.py:22", sub=True)
    t.say("It is in api.py:22.", sub=True)
    t.result(task, "It is in api.py:22.")
    t.call("edit_file", {"tag": "M"}, "ok")
    return t


def test_sidechain_calls_are_left_out_by_default_and_absent_from_main_histories(stub_mining) -> None:
    t = with_subagent()
    stub_mining(t)
    rows = extract_decision_points(t.events(), pd.DataFrame([t.attempt()]))
    assert list(rows["step"]) == [0, 3] and not rows["is_sidechain"].any()
    main = orjson.loads(rows.iloc[1]["messages"])
    assert call_names(main) == ["task"]
    assert main[-1] == {
        "role": "tool",
        "tool_call_id": "call_0",
        "name": "Task",
        "content": "It is in api.py:22.",
    }
    assert "routes.py body" not in rows.iloc[1]["messages"]


def test_sidechain_calls_are_decided_in_the_subagents_own_context(stub_mining) -> None:
    t = with_subagent()
    stub_mining(t)
    rows = extract_decision_points(
        t.events(), pd.DataFrame([t.attempt()]), DecisionConfig(include_sidechain=True)
    )
    assert list(rows["is_sidechain"]) == [False, True, True, False]
    sub = orjson.loads(rows.iloc[2]["messages"])
    assert sub[1] == {"role": "user", "content": "find list_entries in the routes"}
    assert call_names(sub) == ["S1"]  # its own earlier call, nothing of the main agent's
    assert "Searching next." not in rows.iloc[2]["messages"]  # the target's own text
    assert call_names(orjson.loads(rows.iloc[3]["messages"])) == ["task"]


# ---- validation -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"included_tiers": ("gold", "platinum")}, "included_tiers must be a non-empty selection"),
        ({"included_tiers": ()}, "included_tiers must be a non-empty selection"),
        ({"max_result_chars": 10}, "max_result_chars must be at least 100, got 10"),
        ({"history_budget_chars": 0}, "history_budget_chars must be positive, got 0"),
        (
            {"system_prompt": "Working in {repository}."},
            "may only use the fields ['cwd', 'repo'], got ['repository']",
        ),
    ],
)
def test_config_rejects_what_it_cannot_use(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        DecisionConfig(**fields)


def test_system_prompt_is_formatted_with_repo_and_cwd() -> None:
    config = DecisionConfig(system_prompt="Repo {repo} at {cwd}.")
    messages, _ = build_history(four_turns().ordered(), four_turns().calls, 0, "go", config, None)
    assert messages[0]["content"] == "Repo the current repository at /home/<user>/src/app."


def test_an_attempt_outside_its_session_is_an_error(stub_mining) -> None:
    t = four_turns()
    stub_mining(t)
    with pytest.raises(
        ValueError, match=r"attempt a1 spans ordinals 0\.\.40 of session s1, which has 12 events"
    ):
        extract_decision_points(t.events(), pd.DataFrame([t.attempt(last=40)]))


@pytest.mark.parametrize("batch_events", [1, CUT_BATCH_EVENTS])
def test_an_attempt_of_a_session_without_events_is_an_error(stub_mining, batch_events: int) -> None:
    """Cut in batches, a session with no events is a batch of its own: the same clear message."""
    t = four_turns()
    stub_mining(t)
    orphan = {**t.attempt(), "attempt_id": "a0", "session_id": "s0"}
    attempts = pa.Table.from_pandas(pd.DataFrame([orphan, t.attempt()]), preserve_index=False)
    events = pa.Table.from_pandas(t.events(), preserve_index=False)
    with pytest.raises(
        ValueError, match=r"attempt a0 spans ordinals 0\.\.\d+ of session s0, which has 0 events"
    ):
        decision_points_table(events, attempts, batch_events_at_most=batch_events)


def test_missing_columns_are_named() -> None:
    t = four_turns()
    with pytest.raises(ValueError, match=r"attempts lack the columns \['tier'\]"):
        extract_decision_points(t.events(), pd.DataFrame([t.attempt()]).drop(columns="tier"))


def test_no_accepted_attempt_gives_an_empty_frame_with_the_schema() -> None:
    t = four_turns()
    rows = extract_decision_points(t.events(), pd.DataFrame([t.attempt(tier="reject")]))
    assert rows.empty and list(rows.columns) == DECISION_SCHEMA.names


@pytest.mark.parametrize(
    ("arguments", "unparseable"),
    [
        ({"raw": "ls -la |"}, True),
        ({"raw": "{not json"}, True),
        ({"raw": {"file_path": "a.py"}}, False),  # an object under "raw": parsed
        ({"raw": "x", "path": "a.py"}, False),  # a tool's own argument named raw
        ({}, False),
        ({"command": "ls"}, False),
    ],
)
def test_unparseable_arguments_are_the_raw_text_wrapper_alone(arguments: dict, unparseable: bool) -> None:
    assert arguments_unparseable(arguments) is unparseable


def test_unparseable_arguments_are_set_aside_whatever_the_tool_counted_by_reason(tmp_path: Path) -> None:
    """A call whose arguments were not JSON becomes `{"raw": text}`; an unknown tool's used to be
    kept (72 on one day of a real corpus), a canonical tool's counted as missing arguments."""
    events, attempts = sample_day(tmp_path)
    ordered = order_session_events(events)  # rows in any order give the same decision points
    gold = attempts[attempts["tier"] == "gold"].iloc[0]
    in_gold = ordered[
        (ordered["session_id"] == gold["session_id"])
        & ordered["ordinal"].between(gold["first_ordinal"], gold["last_ordinal"])
        & (ordered["kind"] == "tool_call")
    ]
    unknown, known = in_gold.index[0], in_gold.index[1]
    events = ordered.drop(columns="ordinal")
    events.loc[unknown, ["tool_name", "tool_input"]] = ["mcp__browser_click", '{"raw":"click #submit ("}']
    events.loc[known, "tool_input"] = '{"raw":"{\\"file_path\\": "}'
    points = extract_decision_points(events, attempts)
    flagged = points[points["arguments_unparseable"]]
    assert len(flagged) == 2 and "mcp__browser_click" in set(flagged["target_name"])
    kept, set_aside = learnable(points)
    assert set_aside["unparseable_arguments"] == 2
    assert not kept["arguments_unparseable"].any()
    assert list(set_aside) == ["refused_by_guard", "unparseable_arguments", "missing_required_arguments"]


# ---- the real chain on a sample-corpus day ----------------------------------------------------

DAY = dt.date(2026, 11, 20)


def sample_day(tmp_path: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A generated corpus day's events, ingested, and their mined attempts."""
    generate_corpus(tmp_path / "corpus", CorpusSpec(days=1, end_date=DAY, sessions_per_day=6, seed=7))
    roots = [SourceRoot(source, tmp_path / "corpus" / folder) for source, folder in SOURCE_FOLDERS.items()]
    ingest_day(roots, DAY, tmp_path / "events.parquet", tmp_path / "quarantine.parquet")
    events = pd.read_parquet(tmp_path / "events.parquet")
    return events, mine_trajectories(events)


def test_arrow_tables_give_the_rows_of_the_frames(tmp_path: Path) -> None:
    """The day stages cut Arrow tables (`decision_points_table`, `learnable_table`): the same rows."""
    events, attempts = sample_day(tmp_path)
    for config in (DecisionConfig(), DecisionConfig(included_tiers=TIERS, include_sidechain=True)):
        frame = extract_decision_points(events, attempts, config)
        table = decision_points_table(
            pa.Table.from_pandas(events, preserve_index=False),
            pa.Table.from_pandas(attempts, preserve_index=False),
            config,
        )
        assert table.schema.equals(DECISION_SCHEMA) and len(frame) > 0
        pd.testing.assert_frame_equal(table.to_pandas(), frame, check_exact=True)
        kept, set_aside = learnable(frame)
        kept_table, set_aside_table = learnable_table(table)
        assert set_aside_table == set_aside
        pd.testing.assert_frame_equal(kept_table.to_pandas(), kept, check_exact=True)
    rejects = pa.Table.from_pandas(attempts[attempts["tier"] == "reject"], preserve_index=False)
    empty = decision_points_table(pa.Table.from_pandas(events, preserve_index=False), rejects)
    assert empty.equals(DECISION_SCHEMA.empty_table())


@pytest.mark.parametrize("batch_events", [1, 40, 10**9])
def test_cutting_a_few_sessions_at_a_time_gives_the_same_rows(tmp_path: Path, batch_events: int) -> None:
    """A worker cuts a day's sessions in runs (`CUT_BATCH_EVENTS`) to bound its memory: one session
    a run, a few, or all of them at once give equal rows in equal order."""
    events, attempts = sample_day(tmp_path)
    config = DecisionConfig(included_tiers=TIERS, include_sidechain=True)
    frame = extract_decision_points(events, attempts, config)
    table = decision_points_table(
        pa.Table.from_pandas(events, preserve_index=False),
        pa.Table.from_pandas(attempts, preserve_index=False),
        config,
        batch_events_at_most=batch_events,
    )
    assert frame["session_id"].nunique() > 1
    pd.testing.assert_frame_equal(table.to_pandas(), frame, check_exact=True)


def test_a_sample_corpus_day_gives_decisions_for_every_accepted_tool_call(tmp_path: Path) -> None:
    events, attempts = sample_day(tmp_path)
    rows = extract_decision_points(events, attempts)

    ordered = order_session_events(events).set_index(["session_id", "ordinal"])
    targets = ordered.loc[list(zip(rows["session_id"], rows["ordinal"], strict=True))]
    assert (targets["kind"] == "tool_call").all() and not targets["is_sidechain"].any()
    spans = attempts.set_index("attempt_id").loc[rows["attempt_id"]]
    assert set(spans["tier"]) <= {"gold", "silver"}
    assert (
        (spans["first_ordinal"].to_numpy() <= rows["ordinal"])
        & (rows["ordinal"] <= spans["last_ordinal"].to_numpy())
    ).all()
    # Every main-chain tool call of a gold or silver attempt is there, once.
    expected = 0
    for attempt in attempts[attempts["tier"].isin(["gold", "silver"])].itertuples():
        session = ordered.loc[str(attempt.session_id)]
        inside = session.loc[attempt.first_ordinal : attempt.last_ordinal]
        expected += int(((inside["kind"] == "tool_call") & ~inside["is_sidechain"]).sum())
    assert len(rows) == expected
    assert rows["decision_id"].is_unique
    for text in rows["messages"]:
        assert_well_formed(orjson.loads(text))

    # What the generator and mining make of this day (6 sessions per source, seed 7).
    assert attempts["tier"].value_counts().to_dict() == {"gold": 17, "bronze": 10, "silver": 2, "reject": 3}
    assert rows["tier"].value_counts().to_dict() == {"gold": 144, "silver": 2}
    assert rows["source"].value_counts().to_dict() == {
        "own_agent": 41,
        "codex": 36,
        "claude_code": 35,
        "chat_jsonl": 34,
    }
    assert rows["action_class"].value_counts().to_dict() == {
        "inspect": 69,
        "verification": 54,
        "edit": 16,
        "patch": 5,
        "other": 2,
    }
    assert rows["first_action"].sum() == 19 and rows["decisive"].sum() == 111
    assert rows[rows["after_guard"]]["guard_recovery"].tolist() == [True]
    assert rows["target_known"].all() and not rows["missing_required"].map(len).any()
    assert rows["history_dropped"].sum() == 0

    tight = extract_decision_points(events, attempts, DecisionConfig(history_budget_chars=4_000))
    assert (tight["history_dropped"] > 0).sum() == 54
    assert (tight["history_chars"] <= 4_000).all()
    assert tight["target_arguments"].tolist() == rows["target_arguments"].tolist()
    for text in tight["messages"]:
        assert_well_formed(orjson.loads(text))
