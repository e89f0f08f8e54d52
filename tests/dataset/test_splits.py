"""The split decides whether every later number can be trusted: a session on both sides of the
train/test line, a (prompt, target) pair seen in training and scored in test, or a held-out session
trained on would all make replay scores a lie. These tests pin the split function, each filter of
`select` with its count, the dedupe rules, length trimming that never touches the target, and the
leakage check catching each kind of planted leak by name.

Decision points are built by hand with `messages` JSON shaped like decision_points' (system prompt,
instruction, assistant turns with canonical tool_calls, tool results) and rendered by the real
`trajectory_pipeline.dataset.render`.
"""

from __future__ import annotations

import hashlib
import random
from pathlib import Path
from typing import Any

import orjson
import pandas as pd
import pytest

from trajectory_pipeline.dataset.render import (
    RenderConfig,
    prompt_and_target,
    record_length,
    render,
    render_row,
)
from trajectory_pipeline.dataset.splits import (
    COUNT_KEYS,
    OUTPUT_COLUMNS,
    SPLITS,
    LeakageReport,
    SelectConfig,
    assign_split,
    check_leakage,
    load_holdout,
    parse_tool_caps,
    select,
)
from trajectory_pipeline.schema import canonical_json

SYSTEM = "You are a coding agent working in app. Decide the next tool call."
RENDER = RenderConfig()
NO_NEAR = SelectConfig(near_duplicate_threshold=1.0)


def words(key: object, n: int) -> str:
    """`n` pseudo-random words fixed by `key`, so unrelated rows share almost no shingles."""
    return " ".join("w" + hashlib.sha256(f"{key}:{i}".encode()).hexdigest()[:6] for i in range(n))


def turn(index: int, name: str, arguments: dict[str, Any], result: str) -> list[dict[str, Any]]:
    call_id = f"call_{index}"
    return [
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": call_id, "name": name, "arguments": arguments}],
        },
        {"role": "tool", "tool_call_id": call_id, "name": name, "content": result},
    ]


def decision(
    decision_id: str,
    session_id: str,
    *,
    tier: str = "gold",
    quality: float = 0.8,
    target: tuple[str, dict[str, Any]] = ("read_file", {"file_path": "src/app.py"}),
    instruction: str | None = None,
    history: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """One decision_points row; its instruction is unique to `decision_id` unless given."""
    messages = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": instruction if instruction is not None else words(decision_id, 12)},
        *(history or []),
    ]
    name, arguments = target
    return {
        "decision_id": decision_id,
        "attempt_id": f"a-{session_id}",
        "session_id": session_id,
        "source": "claude_code",
        "repo": "app",
        "tier": tier,
        "quality": quality,
        "family_id": "f1",
        "intent": "fix_bug",
        "step": 0,
        "ordinal": 0,
        "messages": canonical_json(messages),
        "target_name": name,
        "target_arguments": canonical_json(arguments),
        "target_source_name": name,
        "target_source_arguments": canonical_json(arguments),
        "target_known": True,
        "missing_required": [],
        "action_class": "inspect",
        "decisive": False,
        "first_action": not history,
        "after_guard": False,
        "guard_recovery": False,
        "repeated_inspection_after_guard": False,
        "target_guard_denied": False,
        "history_messages": len(messages),
        "history_dropped": 0,
        "history_chars": len(canonical_json(messages)),
        "is_sidechain": False,
    }


def frame(*rows: dict[str, Any]) -> pd.DataFrame:
    return pd.DataFrame(list(rows))


def long_history(key: object, turns: int, result_words: int = 60) -> list[dict[str, Any]]:
    history: list[dict[str, Any]] = []
    for i in range(turns):
        history += turn(i, "read_file", {"file_path": f"src/m{i}.py"}, words((key, i), result_words))
    return history


def session_in(split: str, seed: int = 0, prefix: str = "s") -> str:
    """A session id that assign_split puts in `split`."""
    return next(f"{prefix}{i}" for i in range(10_000) if assign_split(f"{prefix}{i}", seed) == split)


# --- assign_split ---------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 12345])
def test_assign_split_is_stable_and_valid(seed: int) -> None:
    sessions = [f"session-{i}" for i in range(200)]
    first = [assign_split(s, seed) for s in sessions]
    assert first == [assign_split(s, seed) for s in sessions]
    assert set(first) <= set(SPLITS)


@pytest.mark.parametrize(
    "ratios", [(0.8, 0.1, 0.1), (0.5, 0.25, 0.25), (0.7, 0.0, 0.3), (1.0, 0.0, 0.0), (0.6, 0.3, 0.1)]
)
def test_assign_split_follows_ratios_within_two_percent(ratios: tuple[float, float, float]) -> None:
    sessions = [f"2025-01-{i % 28:02d}-session-{i}" for i in range(5_000)]
    assigned = pd.Series([assign_split(s, 7, ratios) for s in sessions]).value_counts(normalize=True)
    for name, share in zip(SPLITS, ratios, strict=True):
        assert abs(assigned.get(name, 0.0) - share) <= 0.02, (name, assigned.to_dict())


def test_seed_changes_assignments() -> None:
    sessions = [f"session-{i}" for i in range(1_000)]
    changed = sum(assign_split(s, 0) != assign_split(s, 1) for s in sessions)
    # Two independent 0.8/0.1/0.1 draws differ for 1 - (0.64 + 0.01 + 0.01) = 34% of sessions.
    assert 0.25 < changed / len(sessions) < 0.45


@pytest.mark.parametrize(
    "ratios, message",
    [
        ((0.8, 0.1), "one share per split"),
        ((0.8, 0.3, -0.1), "non-negative"),
        ((0.8, 0.1, float("nan")), "non-negative"),
        ((0.8, 0.1, 0.2), "sum to 1"),
        ((0.5, 0.1, 0.1), "sum to 1"),
    ],
)
def test_assign_split_rejects_bad_ratios(ratios: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        assign_split("s1", 0, ratios)


def test_select_keeps_each_session_in_one_split() -> None:
    rows = [decision(f"d{s:03d}{k}", f"sess-{s}") for s in range(60) for k in range(3)]
    kept, counts = select(frame(*rows), RENDER, NO_NEAR)
    assert counts["kept"] == len(rows)
    assert (kept.groupby("session_id")["split"].nunique() == 1).all()
    assert set(kept["split"]) == set(SPLITS)
    for session_id, split in zip(kept["session_id"], kept["split"], strict=True):
        assert split == assign_split(session_id)


# --- holdout file and tool caps -------------------------------------------------------------


@pytest.mark.parametrize(
    "text, expected",
    [
        ("s1\ns2\n", {"s1", "s2"}),
        ("# held out for the March eval\n\ns1\n   \n  s2  \n", {"s1", "s2"}),
        ("s1  # flaky session\n" + "a" * 64 + "\n", {"s1", "a" * 64}),
        ("s1\ns1\n", {"s1"}),
        ("# only comments\n\n", set()),
        ("", set()),
    ],
)
def test_load_holdout(tmp_path: Path, text: str, expected: set[str]) -> None:
    path = tmp_path / "holdout.txt"
    path.write_text(text)
    assert load_holdout(path) == frozenset(expected)


def test_load_holdout_without_a_path_holds_nothing_out() -> None:
    assert load_holdout(None) == frozenset()


def test_load_holdout_names_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"holdout file .*nope\.txt does not exist"):
        load_holdout(tmp_path / "nope.txt")


@pytest.mark.parametrize(
    "text, expected",
    [
        ("read_file=400,run_shell=220", {"read_file": 400, "run_shell": 220}),
        (" read_file = 400 , run_shell=0 ", {"read_file": 400, "run_shell": 0}),
        ("grep_files=5,", {"grep_files": 5}),
        ("", {}),
    ],
)
def test_parse_tool_caps(text: str, expected: dict[str, int]) -> None:
    assert parse_tool_caps(text) == expected


@pytest.mark.parametrize(
    "text, message",
    [
        ("read_file", "'read_file' must look like name=count"),
        ("=400", "'=400' must look like name=count"),
        ("read_file=many", "'read_file=many' needs a non-negative whole count, got 'many'"),
        ("read_file=-1", "'read_file=-1' needs a non-negative whole count"),
        ("read_file=1.5", "'read_file=1.5' needs a non-negative whole count"),
        ("read_file=1,read_file=2", "'read_file' is given twice"),
    ],
)
def test_parse_tool_caps_names_the_bad_item(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_tool_caps(text)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"included_tiers": ()}, "included_tiers"),
        ({"included_tiers": ("platinum",)}, "included_tiers"),
        ({"min_quality": float("nan")}, "min_quality"),
        ({"tool_caps": "read_file=-1"}, "tool_caps"),
        ({"max_length": 0}, "max_length"),
        ({"near_duplicate_threshold": 0.0}, "near_duplicate_threshold"),
        ({"near_duplicate_threshold": 1.5}, "near_duplicate_threshold"),
        ({"train_ratio": 0.9}, "sum to 1"),
    ],
)
def test_select_config_rejects_bad_values(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        SelectConfig(**kwargs)


def test_select_config_spells_caps_one_way() -> None:
    config = SelectConfig(tool_caps="run_shell=2, read_file=3")
    assert config.tool_caps == "read_file=3,run_shell=2"
    assert config.caps == {"read_file": 3, "run_shell": 2}
    assert hash(config) == hash(SelectConfig(tool_caps="read_file=3,run_shell=2"))


# --- filters ----------------------------------------------------------------------------------


def test_output_columns_order_and_counts() -> None:
    rows = [decision(f"d{i:02d}", f"s{i}") for i in range(20)]
    kept, counts = select(frame(*rows), RENDER, NO_NEAR)
    assert tuple(kept.columns) == OUTPUT_COLUMNS
    assert tuple(counts) == COUNT_KEYS
    assert counts["input"] == counts["kept"] == 20
    assert list(kept.index) == list(range(20))
    assert kept[["split", "decision_id"]].values.tolist() == sorted(
        kept[["split", "decision_id"]].values.tolist()
    )
    assert kept["tokens"].isna().all() and str(kept["tokens"].dtype) == "Int64"
    record = orjson.loads(kept["record"].iloc[0])
    row = next(r for r in rows if r["decision_id"] == kept["decision_id"].iloc[0])
    assert kept["record"].iloc[0] == canonical_json(render_row(row, RENDER))
    prompt, target = prompt_and_target(record)
    assert kept["prompt_hash"].iloc[0] == hashlib.sha256(prompt.encode()).hexdigest()
    assert kept["target_hash"].iloc[0] == hashlib.sha256(target.encode()).hexdigest()
    assert kept["chars"].iloc[0] == record_length(record)


def test_empty_input_gives_empty_typed_frame() -> None:
    kept, counts = select(frame(decision("d1", "s1", tier="reject")), RENDER)
    assert kept.empty and tuple(kept.columns) == OUTPUT_COLUMNS
    assert counts["dropped_tier"] == 1 and counts["kept"] == 0


def test_missing_columns_are_named() -> None:
    with pytest.raises(ValueError, match=r"lack the columns \['messages'\]"):
        select(frame(decision("d1", "s1")).drop(columns="messages"), RENDER)


@pytest.mark.parametrize(
    "config, kept_ids, count, number",
    [
        (SelectConfig(), {"d1", "d2"}, "dropped_tier", 2),
        (SelectConfig(included_tiers=("gold",)), {"d1"}, "dropped_tier", 3),
        (SelectConfig(included_tiers=("gold", "silver", "bronze")), {"d1", "d2", "d3"}, "dropped_tier", 1),
        (
            SelectConfig(included_tiers=("gold", "silver", "bronze", "reject")),
            {"d1", "d2", "d3", "d4"},
            "dropped_tier",
            0,
        ),
    ],
)
def test_tier_filter(config: SelectConfig, kept_ids: set[str], count: str, number: int) -> None:
    rows = [
        decision("d1", "s1", tier="gold"),
        decision("d2", "s2", tier="silver"),
        decision("d3", "s3", tier="bronze"),
        decision("d4", "s4", tier="reject"),
    ]
    kept, counts = select(frame(*rows), RENDER, config)
    assert set(kept["decision_id"]) == kept_ids
    assert counts[count] == number


@pytest.mark.parametrize("min_quality, dropped", [(0.0, 0), (0.5, 1), (0.75, 2), (0.9, 3), (0.95, 4)])
def test_quality_filter(min_quality: float, dropped: int) -> None:
    rows = [decision(f"d{i}", f"s{i}", quality=q) for i, q in enumerate((0.2, 0.5, 0.75, 0.9))]
    kept, counts = select(frame(*rows), RENDER, SelectConfig(min_quality=min_quality))
    assert counts["dropped_quality"] == dropped
    assert len(kept) == 4 - dropped
    assert (kept["quality"] >= min_quality).all()


def test_length_trims_history_from_the_left_and_keeps_the_target() -> None:
    target = ("edit_file", {"file_path": "src/app.py", "old_string": "a = 1", "new_string": "a = 2"})
    row = decision("d1", "s1", target=target, history=long_history("d1", 6))
    messages = orjson.loads(row["messages"])
    full = render_row(row, RENDER)
    minimal = render(messages[:2], target[0], target[1], RENDER)
    limit = (record_length(full) + record_length(minimal)) // 2
    kept, counts = select(frame(row), RENDER, SelectConfig(max_length=limit))
    assert counts["trimmed_history"] == 1 and counts["dropped_too_long"] == 0
    [record_json] = kept["record"]
    record = orjson.loads(record_json)
    assert kept["chars"].iloc[0] == record_length(record) <= limit
    dropped = int(kept["history_dropped"].iloc[0])
    assert 0 < dropped < len(messages) - 2
    assert prompt_and_target(record)[1] == prompt_and_target(full)[1]
    # What is left is the newest history: the system prompt, the instruction, then the latest turns.
    assert record == render([*messages[:2], *messages[2 + dropped :]], target[0], target[1], RENDER)


def test_row_too_long_even_without_history_is_dropped() -> None:
    target = ("write_file", {"file_path": "big.txt", "content": words("big", 800)})
    short = decision("d1", "s1")
    big = decision("d2", "s2", target=target, history=long_history("d2", 2))
    limit = record_length(render_row(short, RENDER)) + 100
    kept, counts = select(frame(short, big), RENDER, SelectConfig(max_length=limit))
    assert list(kept["decision_id"]) == ["d1"]
    assert counts["dropped_too_long"] == 1 and counts["trimmed_history"] == 0


def test_exact_duplicates_keep_the_first_by_decision_id() -> None:
    history = long_history("shared", 2)
    a = decision("d2", "s1", instruction="fix the failing test", history=history)
    b = decision("d1", "s2", instruction="fix the failing test", history=history)
    other_target = decision(
        "d3",
        "s3",
        instruction="fix the failing test",
        history=history,
        target=("run_shell", {"command": "pytest"}),
    )
    kept, counts = select(frame(a, b, other_target), RENDER, NO_NEAR)
    assert counts["dropped_exact_duplicate"] == 1
    assert sorted(kept["decision_id"]) == ["d1", "d3"]


def near_pair(first_session: str, second_session: str) -> pd.DataFrame:
    """Two long prompts that differ in one word of one tool result, with different targets."""
    history = long_history("near", 4, result_words=80)
    changed = [dict(m) for m in history]
    changed[-1]["content"] = changed[-1]["content"].replace(changed[-1]["content"][:7], "wchange", 1)
    return frame(
        decision("d1", first_session, instruction="make the build green", history=history),
        decision(
            "d2",
            second_session,
            instruction="make the build green",
            history=changed,
            target=("run_shell", {"command": "make"}),
        ),
        decision("d3", "s9", history=long_history("unrelated", 4, result_words=80)),
    )


def test_near_duplicates_across_sessions_are_dropped() -> None:
    kept, counts = select(near_pair("s1", "s2"), RENDER)
    assert counts["dropped_near_duplicate"] == 1 and counts["dropped_exact_duplicate"] == 0
    assert sorted(kept["decision_id"]) == ["d1", "d3"]


def test_near_duplicates_within_a_session_are_kept() -> None:
    kept, counts = select(near_pair("s1", "s1"), RENDER)
    assert counts["dropped_near_duplicate"] == 0
    assert sorted(kept["decision_id"]) == ["d1", "d2", "d3"]


def test_threshold_one_turns_near_dedupe_off() -> None:
    kept, counts = select(near_pair("s1", "s2"), RENDER, NO_NEAR)
    assert counts["dropped_near_duplicate"] == 0 and len(kept) == 3


@pytest.mark.parametrize(
    "caps, kept_per_tool",
    [
        ("", {"read_file": 10, "run_shell": 3}),
        ("read_file=4", {"read_file": 4, "run_shell": 3}),
        ("read_file=4,run_shell=1", {"read_file": 4, "run_shell": 1}),
        ("run_shell=0,grep_files=2", {"read_file": 10}),
        ("read_file=50", {"read_file": 10, "run_shell": 3}),
    ],
)
def test_tool_caps(caps: str, kept_per_tool: dict[str, int]) -> None:
    rows = [decision(f"r{i:02d}", f"s{i}") for i in range(10)]
    rows += [
        decision(f"x{i:02d}", f"t{i}", target=("run_shell", {"command": f"pytest -k t{i}"})) for i in range(3)
    ]
    config = SelectConfig(tool_caps=caps, near_duplicate_threshold=1.0, seed=3)
    kept, counts = select(frame(*rows), RENDER, config)
    assert kept["target_name"].value_counts().to_dict() == kept_per_tool
    assert counts["dropped_tool_cap"] == 13 - sum(kept_per_tool.values())
    # The rows kept are the first by the seeded hash order, not the first ids.
    order = sorted(
        (r["decision_id"] for r in rows if r["target_name"] == "read_file"),
        key=lambda d: hashlib.sha256(f"3:{d}".encode()).hexdigest(),
    )
    assert set(kept.loc[kept["target_name"] == "read_file", "decision_id"]) == set(
        order[: kept_per_tool["read_file"]]
    )


def test_holdout_sessions_move_whole_to_test() -> None:
    held = session_in("train")
    by_prompt = session_in("valid")
    other = session_in("train", prefix="o")
    rows = [
        decision("h1", held),
        decision("h2", held),
        decision("p1", by_prompt),
        decision("p2", by_prompt),
        decision("o1", other),
    ]
    prompt_hash = dict(
        zip(*select(frame(*rows), RENDER)[0][["decision_id", "prompt_hash"]].T.values, strict=True)
    )
    holdout = frozenset({held, prompt_hash["p2"]})
    kept, counts = select(frame(*rows), RENDER, holdout=holdout)
    splits = dict(zip(kept["decision_id"], kept["split"], strict=True))
    assert splits == {"h1": "test", "h2": "test", "p1": "test", "p2": "test", "o1": "train"}
    assert counts["holdout_moved"] == 4
    assert check_leakage(kept, holdout).passed


def test_same_input_in_any_order_gives_the_same_rows() -> None:
    rows = [
        decision(f"d{s:02d}{k}", f"sess-{s}", history=long_history((s, k), k))
        for s in range(30)
        for k in range(3)
    ]
    rows += [
        decision(f"e{s:02d}", f"dup-{s}", instruction="same", history=long_history("same", 2))
        for s in range(5)
    ]
    config = SelectConfig(tool_caps="read_file=70", max_length=4_000, near_duplicate_threshold=0.8)
    first, first_counts = select(frame(*rows), RENDER, config)
    shuffled = rows[:]
    random.Random(0).shuffle(shuffled)
    again, again_counts = select(frame(*shuffled), RENDER, config)
    pd.testing.assert_frame_equal(first, again)
    assert first_counts == again_counts
    assert first_counts["dropped_exact_duplicate"] == 4
    assert (
        first_counts["input"]
        == sum(v for k, v in first_counts.items() if k.startswith("dropped_")) + first_counts["kept"]
    )


# --- leakage ----------------------------------------------------------------------------------


def clean_rows() -> pd.DataFrame:
    rows = [decision(f"d{s:02d}{k}", f"sess-{s}") for s in range(40) for k in range(2)]
    kept, _ = select(frame(*rows), RENDER, NO_NEAR)
    assert set(kept["split"]) == set(SPLITS)
    return kept


def test_clean_splits_pass() -> None:
    report = check_leakage(clean_rows(), frozenset({"not-a-session"}))
    assert report == LeakageReport(True, [], [], [])
    assert report.message().startswith("no leakage")


def test_session_in_two_splits_is_named() -> None:
    rows = clean_rows()
    victim = rows.index[rows["split"] == "train"][0]
    session_id = str(rows.at[victim, "session_id"])
    rows.loc[victim, "split"] = "valid"
    report = check_leakage(rows)
    assert not report.passed
    assert report.sessions_in_several_splits == [session_id]
    assert report.shared_prompt_target == [] and report.holdout_in_train_or_valid == []
    assert session_id in report.message()


def test_prompt_target_pair_in_train_and_test_is_named() -> None:
    rows = clean_rows()
    train_row = rows[rows["split"] == "train"].iloc[0]
    test_index = rows.index[rows["split"] == "test"][0]
    rows.loc[test_index, ["prompt_hash", "target_hash"]] = [
        train_row["prompt_hash"],
        train_row["target_hash"],
    ]
    report = check_leakage(rows)
    assert not report.passed
    leaked = str(rows.at[test_index, "decision_id"])
    assert report.shared_prompt_target == [leaked]
    assert report.sessions_in_several_splits == []
    assert leaked in report.message()


@pytest.mark.parametrize("by", ["session_id", "prompt_hash"])
def test_holdout_item_in_train_or_valid_is_named(by: str) -> None:
    rows = clean_rows()
    leaked = rows[rows["split"] == "valid"].iloc[0]
    report = check_leakage(rows, frozenset({leaked[by]}))
    assert not report.passed
    expected = rows.loc[(rows[by] == leaked[by]) & (rows["split"] != "test"), "decision_id"].tolist()
    assert report.holdout_in_train_or_valid == sorted(expected)
    assert leaked["decision_id"] in report.message()


def test_leak_message_is_capped() -> None:
    ids = [f"d{i:03d}" for i in range(25)]
    report = LeakageReport(False, [], ids, [])
    message = report.message()
    assert "25 test decisions" in message and "d009" in message and "d010" not in message
    assert "and 15 more" in message


def test_check_leakage_rejects_unknown_splits() -> None:
    rows = clean_rows()
    rows.loc[0, "split"] = "dev"
    with pytest.raises(ValueError, match="dev"):
        check_leakage(rows)


class WordTokenizer:
    """Just enough of a Hugging Face tokenizer for `record_length`: one token per word of the
    messages' text, so lengths in tokens are easy to predict."""

    def apply_chat_template(
        self,
        messages: list[dict[str, Any]],
        tools: Any = None,
        tokenize: bool = True,
        return_dict: bool = False,
    ) -> list[int]:
        text = " ".join(str(m.get("content") or "") for m in messages)
        return list(range(len(text.split())))


def test_a_tokenizer_measures_and_limits_in_tokens() -> None:
    short = decision("d1", "s1")
    long = decision("d2", "s2", history=long_history("d2", 5, result_words=40))
    kept, counts = select(frame(short, long), RENDER, SelectConfig(max_length=100), tokenizer=WordTokenizer())
    tokens = dict(zip(kept["decision_id"], kept["tokens"], strict=True))
    assert tokens["d1"] == record_length(render_row(short, RENDER), WordTokenizer()) <= 100
    assert 0 < tokens["d2"] <= 100 and counts["trimmed_history"] == 1
    assert str(kept["tokens"].dtype) == "Int64"
    # Characters are still reported, and are over the token limit: the limit was applied in tokens.
    chars = dict(zip(kept["decision_id"], kept["chars"], strict=True))
    assert chars["d2"] > 100


@pytest.mark.parametrize("render_config", [RenderConfig(format=f) for f in ("tools", "chat", "completions")])
def test_every_format_keeps_the_same_decisions(render_config: RenderConfig) -> None:
    rows = near_pair("s1", "s2")
    kept, _ = select(rows, render_config)
    assert sorted(kept["decision_id"]) == ["d1", "d3"]
    assert set(kept["format"]) == {render_config.format}
    for record in kept["record"]:
        assert canonical_json(orjson.loads(record)) == record  # canonical JSON: one line of a .jsonl
