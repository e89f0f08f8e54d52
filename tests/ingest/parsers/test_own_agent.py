"""Why this exists: there are no real samples of the home-made agent's day logs, so these
synthetic tables pin the format's rules: the five-minute session split (exactly five
minutes stays one session), timmy speaking as the assistant, confidence kept, tool results
judged as errors, arguments as string or object, damaged lines quarantined with their
neighbours kept, and session ids that are the same on every run.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import orjson
import pytest

from trajectory_pipeline.ingest.parsers import chat_jsonl, codex, own_agent
from trajectory_pipeline.ingest.parsers.lines import read_head
from trajectory_pipeline.schema import (
    MALFORMED_JSON,
    UNKNOWN_RECORD_TYPE,
    WRONG_FIELD_TYPE,
    BadLine,
    Event,
    parse_ts,
)

DAY = dt.datetime(2025, 3, 14, 9, 15, 0, tzinfo=dt.UTC)


def at(seconds: float) -> str:
    return (DAY + dt.timedelta(seconds=seconds)).isoformat()


def msg(seconds: float, role: str = "user", content: Any = "hi", **extra: Any) -> dict[str, Any]:
    return {"type": "message", "role": role, "content": content, "timestamp": at(seconds), **extra}


def tool(seconds: float, result: Any = "ok", args: Any = None, **extra: Any) -> dict[str, Any]:
    args = {"path": "a.py"} if args is None else args
    return {
        "type": "tool_call",
        "tool": "read_file",
        "args": args,
        "result": result,
        "timestamp": at(seconds),
    } | extra


def write(
    tmp_path: Path, records: list[dict[str, Any] | str], name: str = "session_2025-03-14.jsonl"
) -> Path:
    path = tmp_path / name
    path.write_text("".join((r if isinstance(r, str) else orjson.dumps(r).decode()) + "\n" for r in records))
    return path


def events_of(path: Path) -> list[Event]:
    return [item for item in own_agent.parse(path) if isinstance(item, Event)]


def bad_of(path: Path) -> list[BadLine]:
    return [item for item in own_agent.parse(path) if isinstance(item, BadLine)]


@pytest.mark.parametrize(
    ("gap_seconds", "sessions"),
    [(0, 1), (299, 1), (300, 1), (301, 2), (3600, 2)],
)
def test_sessions_split_on_more_than_five_minutes(tmp_path: Path, gap_seconds: int, sessions: int) -> None:
    events = events_of(write(tmp_path, [msg(0), msg(60, "timmy"), msg(60 + gap_seconds)]))
    ids = list(dict.fromkeys(e.session_id for e in events))
    assert len(ids) == sessions
    assert ids[0] == "session_2025-03-14-091500"
    if sessions == 2:
        assert ids[1] == f"session_2025-03-14-{DAY + dt.timedelta(seconds=60 + gap_seconds):%H%M%S}"
        assert events[2].session_start == parse_ts(at(60 + gap_seconds))
    assert events[0].session_start == events[1].session_start == parse_ts(at(0))


@pytest.mark.parametrize(
    ("role", "kind", "as_role"),
    [
        ("user", "message", "user"),
        ("timmy", "message", "assistant"),
        ("assistant", "message", "assistant"),
        ("system", "meta", "system"),
    ],
)
def test_roles(tmp_path: Path, role: str, kind: str, as_role: str) -> None:
    (event,) = events_of(write(tmp_path, [msg(0, role, "hello")]))
    assert (event.kind, event.role, event.text) == (kind, as_role, "hello")


@pytest.mark.parametrize(("confidence", "kept"), [(0.82, 0.82), (1, 1.0), (None, None)])
def test_confidence_is_kept(tmp_path: Path, confidence: float | None, kept: float | None) -> None:
    (event,) = events_of(write(tmp_path, [msg(0, "timmy", confidence=confidence)]))
    assert event.confidence == kept


@pytest.mark.parametrize(
    ("result", "is_error", "exit_code", "text"),
    [
        ("file contents", False, None, "file contents"),
        ("Error: no such file a.py", True, None, "Error: no such file a.py"),
        (
            "Traceback (most recent call last):\n  ...",
            True,
            None,
            "Traceback (most recent call last):\n  ...",
        ),
        ("Errors: none found", False, None, "Errors: none found"),
        ({"error": "permission denied"}, True, None, '{"error":"permission denied"}'),
        ({"stdout": "", "exit_code": 2}, True, 2, '{"exit_code":2,"stdout":""}'),
        ({"stdout": "3 passed", "returncode": 0}, False, 0, '{"returncode":0,"stdout":"3 passed"}'),
        ({"success": False}, True, None, '{"success":false}'),
        (None, False, None, None),
    ],
)
def test_tool_results(
    tmp_path: Path, result: Any, is_error: bool, exit_code: int | None, text: str | None
) -> None:
    call, res = events_of(write(tmp_path, [tool(0, result)]))
    assert (call.kind, call.role, res.kind, res.role) == ("tool_call", "assistant", "tool_result", "tool")
    assert call.tool_call_id == res.tool_call_id == "session_2025-03-14-L1"
    assert call.tool_name == res.tool_name == "read_file"
    assert (res.is_error, res.exit_code, res.text) == (is_error, exit_code, text)


@pytest.mark.parametrize(
    ("args", "tool_input"),
    [
        ({"path": "a.py", "limit": 5}, '{"limit":5,"path":"a.py"}'),
        ('{"limit": 5, "path": "a.py"}', '{"limit":5,"path":"a.py"}'),
        ("a.py", '{"raw":"a.py"}'),
        ("", "{}"),
    ],
)
def test_arguments_as_string_or_object(tmp_path: Path, args: Any, tool_input: str) -> None:
    call, _ = events_of(write(tmp_path, [tool(0, args=args)]))
    assert call.tool_input == tool_input


def test_a_call_without_result_has_no_result_event(tmp_path: Path) -> None:
    record = tool(0)
    del record["result"]
    assert [e.kind for e in events_of(write(tmp_path, [record]))] == ["tool_call"]


def test_error_and_decision_entries(tmp_path: Path) -> None:
    records: list[dict[str, Any] | str] = [
        {"type": "error", "error": "model timeout", "timestamp": at(0)},
        {"type": "decision", "decision": "run the tests first", "timestamp": at(1), "confidence": 0.6},
        {"type": "decision", "decision": {"plan": ["read", "edit"]}, "timestamp": at(2)},
    ]
    events = events_of(write(tmp_path, records))
    assert [(e.kind, e.role, e.text, e.confidence) for e in events] == [
        ("error", "system", "model timeout", None),
        ("decision", "assistant", "run the tests first", 0.6),
        ("decision", "assistant", '{"plan":["read","edit"]}', None),
    ]
    assert events[0].is_error


def test_malformed_line_in_the_middle(tmp_path: Path) -> None:
    path = write(tmp_path, [msg(0), tool(10), '{"type": "message", "role": "us', msg(20, "timmy"), msg(900)])
    items = list(own_agent.parse(path))
    events = [i for i in items if isinstance(i, Event)]
    assert [(e.line_no, e.seq, e.kind) for e in events] == [
        (1, 0, "message"),
        (2, 1, "tool_call"),
        (2, 2, "tool_result"),
        (4, 3, "message"),
        (5, 4, "message"),
    ]
    (bad,) = [i for i in items if isinstance(i, BadLine)]
    assert (bad.line_no, bad.reason, bad.session_id) == (3, MALFORMED_JSON, "session_2025-03-14-091500")
    assert bad.session_start == parse_ts(at(0))


@pytest.mark.parametrize(
    ("record", "reason"),
    [
        ({"type": "thought", "timestamp": at(5)}, UNKNOWN_RECORD_TYPE),
        ({"type": ["message"], "timestamp": at(5)}, UNKNOWN_RECORD_TYPE),  # unhashable: no crash
        (msg(5, content=42), WRONG_FIELD_TYPE),
        (msg(5, "robot"), WRONG_FIELD_TYPE),
        (msg(5, confidence="high"), WRONG_FIELD_TYPE),
        ({"type": "message", "role": "user", "content": "no time"}, WRONG_FIELD_TYPE),
        ({"type": "tool_call", "tool": ["read_file"], "timestamp": at(5)}, WRONG_FIELD_TYPE),
        (tool(5, args=[1, 2]), WRONG_FIELD_TYPE),
    ],
)
def test_bad_entries_are_quarantined(tmp_path: Path, record: dict[str, Any], reason: str) -> None:
    path = write(tmp_path, [msg(0), record, msg(10, "timmy")])
    (bad,) = bad_of(path)
    assert (bad.line_no, bad.reason, bad.session_id) == (2, reason, "session_2025-03-14-091500")
    assert [e.line_no for e in events_of(path)] == [1, 3]


def test_bad_lines_before_any_session_join_the_first(tmp_path: Path) -> None:
    path = write(tmp_path, ["\x00\x00junk", {"type": "message", "role": "user"}, msg(30)])
    bad = bad_of(path)
    assert [(b.line_no, b.session_id, b.session_start) for b in bad] == [
        (1, "session_2025-03-14-091530", parse_ts(at(30))),
        (2, "session_2025-03-14-091530", parse_ts(at(30))),
    ]


def test_a_file_with_no_session(tmp_path: Path) -> None:
    bad = bad_of(write(tmp_path, ["not json", "[1, 2]"]))
    midnight = parse_ts("2025-03-14T00:00:00+00:00")
    assert [(b.session_id, b.session_start) for b in bad] == [(None, midnight)] * 2


def test_session_ids_are_deterministic(tmp_path: Path) -> None:
    path = write(tmp_path, [msg(0), tool(30), msg(1000, "timmy")])
    first, second = list(own_agent.parse(path)), list(own_agent.parse(path))
    assert first == second
    assert sorted({str(e.session_id) for e in first}) == [
        "session_2025-03-14-091500",
        "session_2025-03-14-093140",
    ]


def test_earliest_start_is_the_first_entry(tmp_path: Path) -> None:
    path = write(tmp_path, ["garbage", msg(42), msg(4000)])
    assert own_agent.earliest_start(path) == parse_ts(at(42))


def test_sniff(tmp_path: Path, real_corpus: Path) -> None:
    own = write(tmp_path, [tool(0), msg(1)])
    assert own_agent.sniff(own, read_head(own))
    assert not codex.sniff(own, read_head(own)) and not chat_jsonl.sniff(own, read_head(own))
    for folder in ("codex", "claude-code"):
        for path in (real_corpus / folder).rglob("*.jsonl"):
            assert not own_agent.sniff(path, read_head(path)), path
    chat = write(tmp_path, [{"messages": [{"role": "user", "content": "hi"}]}], "chat.jsonl")
    assert not own_agent.sniff(chat, read_head(chat))


def test_sniff_survives_a_type_that_is_not_a_string(tmp_path: Path) -> None:
    path = write(tmp_path, [{"type": {"kind": "message"}, "timestamp": at(0)}])
    assert not own_agent.sniff(path, read_head(path))


# --- sessions that cross midnight into the next day file ------------------------------------
# The agent rotates to `session_<D>.jsonl` at midnight; a session running then must stay one
# session, in the partition of the day it started. No real samples: these tables pin the rule.

NOV20 = dt.datetime(2026, 11, 20, tzinfo=dt.UTC)


def when(day: int, clock: str) -> str:
    """An ISO time on November `day` 2026, UTC; `clock` is HH:MM:SS."""
    hours, minutes, seconds = map(int, clock.split(":"))
    return (NOV20.replace(day=day) + dt.timedelta(hours=hours, minutes=minutes, seconds=seconds)).isoformat()


def day_msg(day: int, clock: str, content: str = "hi") -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": content, "timestamp": when(day, clock)}


def day_file(tmp_path: Path, day: int, records: list[dict[str, Any] | str]) -> Path:
    return write(tmp_path, records, f"session_2026-11-{day:02d}.jsonl")


def sessions_of(path: Path) -> list[tuple[str, int | None]]:
    """(session id, start) of each session in the file, in order."""
    return list(dict.fromkeys((e.session_id, e.session_start) for e in events_of(path)))


@pytest.mark.parametrize(
    ("last_of_20", "first_of_21", "continues"),
    [
        ("23:59:30", "00:00:30", True),
        ("23:59:30", "00:04:30", True),  # exactly five minutes stays one session
        ("23:59:30", "00:04:31", False),
        ("23:50:00", "00:01:00", False),
        ("23:59:59", "00:00:00", True),
    ],
)
def test_a_session_crossing_midnight_stays_whole(
    tmp_path: Path, last_of_20: str, first_of_21: str, continues: bool
) -> None:
    nov20 = day_file(
        tmp_path, 20, [day_msg(20, "10:00:00"), day_msg(20, "23:40:00"), day_msg(20, last_of_20)]
    )
    nov21 = day_file(
        tmp_path, 21, [day_msg(21, first_of_21), day_msg(21, "00:05:00"), day_msg(21, "09:00:00")]
    )
    last_session = (f"session_2026-11-20-{last_of_20.replace(':', '')}", parse_ts(when(20, last_of_20)))
    first_id = f"session_2026-11-21-{first_of_21.replace(':', '')}"
    expected = [last_session if continues else (first_id, parse_ts(when(21, first_of_21)))]
    expected.append(("session_2026-11-21-090000", parse_ts(when(21, "09:00:00"))))  # later ones unchanged
    assert sessions_of(nov21) == expected
    assert own_agent.earliest_start(nov21) == expected[0][1]
    # the earlier file is parsed as before: the next day's file changes nothing there
    assert sessions_of(nov20) == [
        ("session_2026-11-20-100000", parse_ts(when(20, "10:00:00"))),
        ("session_2026-11-20-234000", parse_ts(when(20, "23:40:00"))),
        last_session,
    ]


def test_the_issue_example(tmp_path: Path) -> None:
    nov20 = day_file(tmp_path, 20, [day_msg(20, "23:58:00"), day_msg(20, "23:59:30")])
    nov21 = day_file(tmp_path, 21, [day_msg(21, "00:00:30"), day_msg(21, "00:01:00")])
    whole = [("session_2026-11-20-235800", parse_ts(when(20, "23:58:00")))]
    assert sessions_of(nov20) == sessions_of(nov21) == whole
    assert own_agent.earliest_start(nov21) == parse_ts(when(20, "23:58:00"))
    # each file keeps its own source path and seq
    assert [(e.source_path, e.seq) for e in events_of(nov21)] == [(str(nov21), 0), (str(nov21), 1)]


def _every_four_minutes(day: int) -> list[dict[str, Any] | str]:
    """Entries from 00:02 to 23:58, never five minutes apart: a day-long session."""
    return [day_msg(day, f"{m // 60:02d}:{m % 60:02d}:00") for m in range(2, 24 * 60, 4)]


def test_a_chain_across_three_files(tmp_path: Path) -> None:
    day_file(tmp_path, 20, [day_msg(20, "08:00:00"), day_msg(20, "23:58:00")])
    nov21 = day_file(tmp_path, 21, _every_four_minutes(21))
    nov22 = day_file(tmp_path, 22, [day_msg(22, "00:01:00"), day_msg(22, "07:00:00")])
    whole = ("session_2026-11-20-235800", parse_ts(when(20, "23:58:00")))
    assert sessions_of(nov21) == [whole]
    assert sessions_of(nov22) == [whole, ("session_2026-11-22-070000", parse_ts(when(22, "07:00:00")))]
    assert own_agent.earliest_start(nov22) == whole[1]


def test_the_chain_is_followed_back_only_so_far(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(own_agent, "CHAIN_FILES", 1)
    day_file(tmp_path, 20, [day_msg(20, "23:58:00")])
    day_file(tmp_path, 21, _every_four_minutes(21))
    nov22 = day_file(tmp_path, 22, [day_msg(22, "00:01:00")])
    assert sessions_of(nov22) == [("session_2026-11-21-000200", parse_ts(when(21, "00:02:00")))]


@pytest.mark.parametrize(
    "previous",
    [
        None,  # no file for the day before
        "session_2026-11-19.jsonl",  # a file, but two days before
        "session_2026-11-20.txt",  # not a day file
        "session_2026-11-20.jsonl/",  # a folder of that name
    ],
)
def test_no_previous_day_file(tmp_path: Path, previous: str | None) -> None:
    if previous is not None and previous.endswith("/"):
        (tmp_path / previous).mkdir()
    elif previous is not None:
        write(tmp_path, [day_msg(20, "23:59:30")], previous)
    nov21 = day_file(tmp_path, 21, [day_msg(21, "00:00:30")])
    assert sessions_of(nov21) == [("session_2026-11-21-000030", parse_ts(when(21, "00:00:30")))]
    assert own_agent.earliest_start(nov21) == parse_ts(when(21, "00:00:30"))


@pytest.mark.parametrize(
    ("bad_end", "cut_short"),
    [
        ('{"type": "message", "ro', True),  # a crash mid-write
        ('{"type": "message", "ro', False),
        ("\x00\x00junk", False),
        ("[1, 2]\n", False),
        ('{"type": "message", "role": "user"}', False),  # no time: places no session
        ('{"type": "thought", "timestamp": "2026-11-20T23:59:45+00:00"}', False),  # bad, but timed
        ('{"type": "message", "timestamp": "2026-11-21T00:00:00+00:00"', True),
    ],
)
def test_a_previous_file_whose_last_line_is_bad(tmp_path: Path, bad_end: str, cut_short: bool) -> None:
    records: list[dict[str, Any] | str] = [
        day_msg(20, "23:50:00"),
        day_msg(20, "23:58:00"),
        day_msg(20, "23:59:30"),
    ]
    nov20 = day_file(tmp_path, 20, [*records, bad_end])
    if cut_short:
        nov20.write_bytes(nov20.read_bytes().rstrip(b"\n"))
    nov21 = day_file(tmp_path, 21, [day_msg(21, "00:00:30")])
    whole = ("session_2026-11-20-235800", parse_ts(when(20, "23:58:00")))
    assert sessions_of(nov20)[-1] == whole
    assert sessions_of(nov21) == [whole]


@pytest.mark.parametrize(
    "records_of_20",
    [
        [day_msg(20, "23:50:00"), '{"type": "message", "timestamp": "2026-11-20T23:59:30+00:00"'],
        ["not json", "[]"],
        [],
    ],
)
def test_a_previous_file_with_no_entry_near_midnight(
    tmp_path: Path, records_of_20: list[dict[str, Any] | str]
) -> None:
    day_file(tmp_path, 20, records_of_20)
    nov21 = day_file(tmp_path, 21, [day_msg(21, "00:00:30")])
    assert sessions_of(nov21) == [("session_2026-11-21-000030", parse_ts(when(21, "00:00:30")))]
    assert own_agent.earliest_start(nov21) == parse_ts(when(21, "00:00:30"))


def test_the_last_entry_is_found_past_a_long_tail(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(own_agent, "_TAIL_BYTES", 64)
    day_file(tmp_path, 20, [day_msg(20, "23:58:00"), day_msg(20, "23:59:30"), "x" * 200, "y" * 10])
    nov21 = day_file(tmp_path, 21, [day_msg(21, "00:00:30")])
    assert sessions_of(nov21) == [("session_2026-11-20-235800", parse_ts(when(20, "23:58:00")))]


def test_an_oversize_last_line_is_not_an_entry(tmp_path: Path) -> None:
    long_entry = day_msg(20, "23:59:30", "x" * 500)
    nov20 = day_file(tmp_path, 20, [day_msg(20, "23:50:00"), long_entry])
    nov21 = day_file(tmp_path, 21, [day_msg(21, "00:00:30")])
    assert [i.line_no for i in own_agent.parse(nov20, max_line_bytes=300) if isinstance(i, BadLine)] == [2]
    events = [i for i in own_agent.parse(nov21, max_line_bytes=300) if isinstance(i, Event)]
    assert [e.session_id for e in events] == ["session_2026-11-21-000030"]
    assert [e.session_id for e in events_of(nov21)] == ["session_2026-11-20-235930"]  # under the default cap


def test_bad_lines_before_the_first_entry_join_the_continued_session(tmp_path: Path) -> None:
    day_file(tmp_path, 20, [day_msg(20, "23:59:30")])
    nov21 = day_file(tmp_path, 21, ["not json", day_msg(21, "00:00:30")])
    (bad,) = bad_of(nov21)
    assert (bad.line_no, bad.session_id, bad.session_start) == (
        1,
        "session_2026-11-20-235930",
        parse_ts(when(20, "23:59:30")),
    )


def test_continued_sessions_are_deterministic(tmp_path: Path) -> None:
    day_file(tmp_path, 20, [day_msg(20, "23:58:00"), day_msg(20, "23:59:30")])
    nov21 = day_file(tmp_path, 21, [day_msg(21, "00:00:30"), tool(0), day_msg(21, "12:00:00")])
    first, second = list(own_agent.parse(nov21)), list(own_agent.parse(nov21))
    assert first == second
    assert (
        own_agent.earliest_start(nov21) == own_agent.earliest_start(nov21) == parse_ts(when(20, "23:58:00"))
    )
