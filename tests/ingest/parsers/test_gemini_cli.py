"""Gemini CLI chat files load into the right events, and bad ones are quarantined, not raised.

Why this exists: Gemini CLI wrote one JSON object per session before v0.39, with tool calls
and their results nested inside assistant messages, and has appended a JSONL log since. These
tests pin the counts of the real published sessions (counted independently from the raw JSON),
the ordering of thoughts, calls and results, what happens to broken files, and how a log is
rebuilt (re-appended messages, rewinds, restatements, subagents) and listed.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest

from trajectory_pipeline.ingest.days import SourceRoot, candidate_files, matching_files
from trajectory_pipeline.ingest.formats import FORMATS, detect_source
from trajectory_pipeline.ingest.parsers import gemini_cli
from trajectory_pipeline.ingest.parsers.lines import file_mtime_us, read_head
from trajectory_pipeline.schema import (
    INVALID_UTF8,
    MALFORMED_JSON,
    NOT_AN_OBJECT,
    TRUNCATED_LINE,
    UNKNOWN_RECORD_TYPE,
    WRONG_FIELD_TYPE,
    BadLine,
    Event,
    parse_ts,
)

FOLDER = "gemini-cli/codemie-code"

REAL = [
    pytest.param(
        "session-2025-12-01T21-45-5b959dae.json",
        {
            "session_id": "5b959dae-8655-4cd1-b10f-720b8c336ea2",
            "start": "2025-12-01T21:45:34.362Z",
            "user": 3,
            "assistant_text": 3,
            "reasoning": 18,
            "calls": 10,
            "tools": {"read_file": 7, "list_directory": 1, "write_file": 1, "replace": 1},
            "model": "gemini-3-pro-image-preview",
        },
        id="2025-12-01",
    ),
    pytest.param(
        "session-2026-01-16T11-01-file-ops-37b7abef.json",
        {
            "session_id": "37b7abef-713d-4522-85f0-8ff15a4e6d17",
            "start": "2026-01-16T11:01:22.281Z",
            "user": 5,
            "assistant_text": 5,
            "reasoning": 0,
            "calls": 14,
            "tools": {
                "read_file": 6,
                "write_todos": 3,
                "write_file": 3,
                "delegate_to_agent": 1,
                "search_file_content": 1,
            },
            "model": "gemini-3-pro",
        },
        id="2026-01-16",
    ),
]


def _split(items: list[Event | BadLine]) -> tuple[list[Event], list[BadLine]]:
    return [i for i in items if isinstance(i, Event)], [i for i in items if isinstance(i, BadLine)]


def _events(path: Path) -> list[Event]:
    """The file's events; none of it may be quarantined."""
    events, bad = _split(list(gemini_cli.parse(path)))
    assert bad == []
    return events


def _one_bad_line(path: Path) -> BadLine:
    [bad] = list(gemini_cli.parse(path))
    assert isinstance(bad, BadLine)
    return bad


def _write(tmp_path: Path, doc: Any, name: str = "session-x.json") -> Path:
    path = tmp_path / name
    path.write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2) if not isinstance(doc, bytes) else doc)
    return path


def _doc(*messages: Any, **top: Any) -> dict[str, Any]:
    return {
        "sessionId": "s-1",
        "projectHash": "ab" * 32,
        "startTime": "2026-02-01T10:00:00.000Z",
        "lastUpdated": "2026-02-01T10:05:00.000Z",
        "messages": list(messages),
        **top,
    }


def _user(text: Any = "hi", ts: str = "2026-02-01T10:00:00.000Z") -> dict[str, Any]:
    return {"id": "u", "timestamp": ts, "type": "user", "content": text}


def _gemini(*calls: dict[str, Any], content: Any = "", **extra: Any) -> dict[str, Any]:
    return {
        "id": "g",
        "timestamp": "2026-02-01T10:00:05.000Z",
        "type": "gemini",
        "content": content,
        "toolCalls": list(calls),
        "model": "gemini-2.5-pro",
        **extra,
    }


def _call(call_id: str, status: str = "success", result: Any = None, ts: str = "2026-02-01T10:00:04.000Z"):
    if result is None:
        result = [
            {"functionResponse": {"id": call_id, "name": "run_shell_command", "response": {"output": "ok"}}}
        ]
    return {
        "id": call_id,
        "name": "run_shell_command",
        "args": {"command": "ls"},
        "result": result,
        "status": status,
        "timestamp": ts,
    }


@pytest.mark.parametrize(("name", "facts"), REAL)
def test_real_session_facts(real_corpus: Path, name: str, facts: dict[str, Any]) -> None:
    events, bad = _split(list(gemini_cli.parse(real_corpus / FOLDER / name)))
    assert bad == []
    kinds = Counter((e.role, e.kind) for e in events)
    assert kinds[("user", "message")] == facts["user"]
    assert kinds[("assistant", "message")] == facts["assistant_text"]
    assert kinds[("assistant", "reasoning")] == facts["reasoning"]
    assert kinds[("assistant", "tool_call")] == facts["calls"]
    assert kinds[("tool", "tool_result")] == facts["calls"]
    calls = [e for e in events if e.kind == "tool_call"]
    results = [e for e in events if e.kind == "tool_result"]
    assert Counter(e.tool_name for e in calls) == facts["tools"]
    assert {e.tool_call_id for e in results} == {e.tool_call_id for e in calls}
    assert len({e.tool_call_id for e in calls}) == facts["calls"]
    assert [e.is_error for e in results] == [False] * facts["calls"]
    assert {e.session_id for e in events} == {facts["session_id"]}
    assert {e.session_start for e in events} == {parse_ts(facts["start"])}
    assert {e.model for e in events if e.role == "assistant"} == {facts["model"]}
    assert [e.seq for e in events] == list(range(len(events)))
    assert all(1 <= e.line_no <= 14 for e in events)
    assert all(e.tool_input is not None and e.tool_input.startswith("{") for e in calls)


@pytest.mark.parametrize(("name", "facts"), REAL)
def test_real_session_earliest_start_is_its_start_time(
    real_corpus: Path, name: str, facts: dict[str, Any]
) -> None:
    assert gemini_cli.earliest_start(real_corpus / FOLDER / name) == parse_ts(facts["start"])


@pytest.mark.parametrize("name", [p.values[0] for p in REAL])
def test_real_session_sniffs_as_gemini_only(real_corpus: Path, name: str) -> None:
    path = real_corpus / FOLDER / name
    head = read_head(path)
    assert [source for source, spec in FORMATS.items() if spec.sniff(path, head)] == ["gemini_cli"]
    assert detect_source(path) == "gemini_cli"


def test_other_sources_real_files_do_not_sniff_as_gemini(real_corpus: Path) -> None:
    others = [p for p in real_corpus.rglob("*") if p.is_file() and not p.is_relative_to(real_corpus / FOLDER)]
    assert len(others) > 20
    assert [p for p in others if gemini_cli.sniff(p, read_head(p))] == []


def test_logs_json_is_neither_globbed_sniffed_nor_misread(real_corpus: Path) -> None:
    logs = real_corpus / FOLDER / "logs.json"
    assert not any(logs.match(glob.removeprefix("**/")) for glob in gemini_cli.GLOBS)
    assert detect_source(logs) is None
    bad = _one_bad_line(logs)
    assert (bad.reason, bad.line_no) == (NOT_AN_OBJECT, 0)


def test_each_model_turn_shows_its_results_before_the_next_turn(real_corpus: Path) -> None:
    """Message 4 of the 2026-01-16 session holds three turns of parallel calls (2, 4 and 3)."""
    events = _events(real_corpus / FOLDER / "session-2026-01-16T11-01-file-ops-37b7abef.json")
    shape = "".join("C" if e.kind == "tool_call" else "R" for e in events if e.line_no == 4)
    assert shape == "CCRR" + "CCCCRRRR" + "CCCRRR"


def test_thoughts_come_before_the_call_they_led_to(real_corpus: Path) -> None:
    events = _events(real_corpus / FOLDER / "session-2025-12-01T21-45-5b959dae.json")
    shape = "".join(e.kind[0] for e in events if e.line_no == 11)
    assert shape == "rr" + "tt" * 3  # 2 thoughts, then 3 call/result turns


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        pytest.param(
            b'{"sessionId": "s", "messages": [{"type": "user", "con', "truncated_file", id="truncated"
        ),
        pytest.param(b"", "truncated_file", id="empty"),
        pytest.param(b'{"sessionId": "s", "messages": []} trailing', MALFORMED_JSON, id="trailing-junk"),
        pytest.param(b'{"sessionId": "s\xff", "messages": []}', INVALID_UTF8, id="invalid-utf8"),
        pytest.param(b"[1, 2]", NOT_AN_OBJECT, id="array"),
    ],
)
def test_unreadable_file_is_one_bad_line(tmp_path: Path, body: bytes, reason: str) -> None:
    bad = _one_bad_line(_write(tmp_path, body))
    assert (bad.reason, bad.line_no, bad.source) == (reason, 0, "gemini_cli")
    assert bad.byte_len == len(body)


def test_file_over_the_cap_is_refused_unread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _write(tmp_path, _doc(_user()))
    monkeypatch.setattr(gemini_cli, "MAX_FILE_BYTES", 100)
    bad = _one_bad_line(path)
    assert (bad.reason, bad.line_no, bad.byte_len) == ("file_too_large", 0, path.stat().st_size)


@pytest.mark.parametrize(
    ("message", "reason"),
    [
        pytest.param("just a string", WRONG_FIELD_TYPE, id="not-an-object"),
        pytest.param({"type": "user", "content": 42}, WRONG_FIELD_TYPE, id="content-number"),
        pytest.param(
            {"type": "gemini", "content": "", "toolCalls": {"id": "x"}}, WRONG_FIELD_TYPE, id="calls-dict"
        ),
        pytest.param(
            {"type": "gemini", "content": "", "toolCalls": [{"id": "x"}]}, WRONG_FIELD_TYPE, id="no-name"
        ),
        pytest.param({"type": 7, "content": "x"}, WRONG_FIELD_TYPE, id="type-number"),
        pytest.param({"type": "compression", "content": "x"}, UNKNOWN_RECORD_TYPE, id="unknown-type"),
    ],
)
def test_bad_message_is_quarantined_and_neighbours_load(tmp_path: Path, message: Any, reason: str) -> None:
    events, bad = _split(
        list(gemini_cli.parse(_write(tmp_path, _doc(_user("before"), message, _user("after")))))
    )
    assert [(b.reason, b.line_no, b.session_id) for b in bad] == [(reason, 2, "s-1")]
    assert [(e.text, e.line_no, e.seq) for e in events] == [("before", 1, 0), ("after", 3, 1)]


def test_messages_of_the_wrong_type_quarantine_the_file(tmp_path: Path) -> None:
    bad = _one_bad_line(_write(tmp_path, _doc(messages={"0": _user()})))
    assert (bad.reason, bad.line_no) == (WRONG_FIELD_TYPE, 0)


@pytest.mark.parametrize(
    ("status", "result", "is_error", "text"),
    [
        ("success", None, False, "ok"),
        ("error", [{"functionResponse": {"response": {"error": "No such file"}}}], True, "No such file"),
        (
            "cancelled",
            "[Operation Cancelled] Reason: User did not allow tool call",
            True,
            "[Operation Cancelled]",
        ),
        ("success", {"text": "a plain part"}, False, "a plain part"),
        ("success", [{"functionResponse": {"response": {"error": "boom"}}}], True, "boom"),
    ],
)
def test_tool_result_shapes_and_error_status(
    tmp_path: Path, status: str, result: Any, is_error: bool, text: str
) -> None:
    events = _events(_write(tmp_path, _doc(_user(), _gemini(_call("c1", status, result)))))
    call, outcome = (e for e in events if e.kind in ("tool_call", "tool_result"))
    assert (call.tool_name, call.tool_call_id, call.tool_input) == (
        "run_shell_command",
        "c1",
        '{"command":"ls"}',
    )
    assert (outcome.role, outcome.tool_call_id, outcome.is_error) == ("tool", "c1", is_error)
    assert outcome.text is not None and outcome.text.startswith(text)


def test_call_still_running_has_no_result(tmp_path: Path) -> None:
    running = {**_call("c1"), "status": "executing", "result": None}
    events = _events(_write(tmp_path, _doc(_gemini(running))))
    assert [e.kind for e in events] == ["tool_call"]


def test_info_error_and_part_list_messages(tmp_path: Path) -> None:
    doc = _doc(
        _user([{"text": "look at"}, {"text": "@src/app.py"}]),
        {"id": "i", "timestamp": "2026-02-01T10:00:01Z", "type": "info", "content": "Request cancelled."},
        {"id": "e", "timestamp": "2026-02-01T10:00:02Z", "type": "error", "content": "API error 429"},
    )
    events = _events(_write(tmp_path, doc))
    assert [(e.role, e.kind, e.text, e.is_error) for e in events] == [
        ("user", "message", "look at\n@src/app.py", None),
        ("system", "meta", "Request cancelled.", None),
        ("system", "error", "API error 429", True),
    ]


def test_session_start_falls_back_to_first_message_then_mtime(tmp_path: Path) -> None:
    no_start = _write(tmp_path, _doc(_user(ts="2026-03-03T03:03:03Z"), startTime=None), "session-a.json")
    assert {e.session_start for e in gemini_cli.parse(no_start)} == {parse_ts("2026-03-03T03:03:03Z")}
    undated = _write(tmp_path, _doc({"type": "user", "content": "x"}, startTime=None), "session-b.json")
    assert {e.session_start for e in gemini_cli.parse(undated)} == {file_mtime_us(undated)}


def test_missing_call_ids_are_generated_deterministically(tmp_path: Path) -> None:
    calls = [{k: v for k, v in _call("x").items() if k != "id"} for _ in range(2)]
    path = _write(tmp_path, _doc(_gemini(*calls)))
    first = [e.tool_call_id for e in _events(path)]
    assert first == [e.tool_call_id for e in _events(path)]
    assert len(set(first)) == 2 and first[:2] == first[2:]


def test_sniff_rejects_jsonl_that_mentions_the_keys() -> None:
    line = orjson.dumps(
        {"type": "user", "message": {"content": '{"sessionId": "a", "projectHash": "b", "messages": []}'}}
    )
    assert not gemini_cli.sniff(Path("x.jsonl"), line + b"\n")
    assert gemini_cli.sniff(Path("x.json"), orjson.dumps(_doc(), option=orjson.OPT_INDENT_2))


# --- JSONL logs (v0.39 on) ---------------------------------------------------------------------

PARENT = "0f1e2d3c-aaaa-4bbb-8ccc-000000000001"
AGENT = "9b2f4c1e-5d6a-4e7b-8c9d-0a1b2c3d4e5f"


def _meta(session_id: str = PARENT, start: str = "2026-02-01T10:00:00.000Z", **extra: Any) -> dict[str, Any]:
    times = {"startTime": start, "lastUpdated": start}
    return {"sessionId": session_id, "projectHash": "ab" * 32, **times, **extra}


def _log(tmp_path: Path, *records: Any, name: str = "session-2026-02-01T10-00-0f1e2d3c.jsonl") -> Path:
    """A log as the CLI appends it, under `<root>/<project>/chats/` (a bytes record is a raw line)."""
    path = tmp_path / "proj" / "chats" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(r if isinstance(r, bytes) else orjson.dumps(r) + b"\n" for r in records))
    return path


def _text(events: list[Event]) -> list[tuple[str, str, str | None]]:
    return [(e.role, e.kind, e.text) for e in events]


def test_jsonl_log_is_sniffed_and_rebuilt_as_the_cli_rebuilds_it(tmp_path: Path) -> None:
    """A message appended again when its tool calls ran keeps the place of its first version."""
    path = _log(
        tmp_path,
        _meta(kind="main"),
        _user("list", ts="2026-02-01T10:00:01.000Z") | {"id": "u1"},
        _gemini(content="Listing.", id="g1", toolCalls=[]),
        {"id": "i1", "timestamp": "2026-02-01T10:00:06Z", "type": "info", "content": "Tool confirmed."},
        _gemini(_call("c1"), content="Listing.", id="g1"),
        {"$set": {"lastUpdated": "2026-02-01T10:00:07.000Z"}},
    )
    head = read_head(path)
    assert [source for source, spec in FORMATS.items() if spec.sniff(path, head)] == ["gemini_cli"]
    events = _events(path)
    assert [(*t, e.line_no) for t, e in zip(_text(events), events, strict=True)] == [
        ("user", "message", "list", 2),
        ("assistant", "message", "Listing.", 5),
        ("assistant", "tool_call", None, 5),
        ("tool", "tool_result", "ok", 5),
        ("system", "meta", "Tool confirmed.", 4),
    ]
    assert {(e.session_id, e.session_start, e.is_sidechain) for e in events} == {
        (PARENT, parse_ts("2026-02-01T10:00:00Z"), False)
    }
    assert gemini_cli.earliest_start(path) == parse_ts("2026-02-01T10:00:00Z")
    assert [e.seq for e in events] == list(range(5))


def test_rewind_drops_the_message_and_all_after_it(tmp_path: Path) -> None:
    path = _log(
        tmp_path,
        _meta(),
        _user("first try", ts="2026-02-01T10:00:01Z") | {"id": "u1"},
        _gemini(content="answer one", id="g1", toolCalls=None),
        {"$rewindTo": "u1"},
        _user("second try", ts="2026-02-01T10:01:01Z") | {"id": "u2"},
        _gemini(content="answer two", id="g2", toolCalls=None),
        {"$rewindTo": "only-a-restatement-held-this"},  # placed nowhere: drops nothing
    )
    events = _events(path)
    assert _text(events) == [("user", "message", "second try"), ("assistant", "message", "answer two")]


def test_restatement_neither_replaces_nor_repeats_the_recorded_turns(tmp_path: Path) -> None:
    """`$set.messages` after a compression: a summary and a copy of the last turns under new ids,
    the copy's call a bare function-call part. Every turn is already a record of its own."""
    restated = [
        _user("<state_snapshot>user asked to list files</state_snapshot>") | {"id": "r1"},
        _user("now count them", ts="2026-02-01T10:02:00Z") | {"id": "r2"},
        _gemini(content=[{"functionCall": {"name": "ls"}}], id="r3", toolCalls=None),
    ]
    path = _log(
        tmp_path,
        _meta(),
        _user("list the files", ts="2026-02-01T10:00:01Z") | {"id": "u1"},
        _gemini(_call("c1"), content="Listing.", id="g1"),
        _user("now count them", ts="2026-02-01T10:00:10Z") | {"id": "u2"},
        {"$set": {"messages": restated, "lastUpdated": "2026-02-01T10:03:00Z"}},
        _gemini(content="Two.", id="g2", toolCalls=None, timestamp="2026-02-01T10:00:11Z"),
    )
    events = _events(path)
    assert _text(events) == [
        ("user", "message", "list the files"),
        ("assistant", "message", "Listing."),
        ("assistant", "tool_call", None),
        ("tool", "tool_result", "ok"),
        ("user", "message", "now count them"),
        ("assistant", "message", "Two."),
    ]


def test_torn_last_line_is_quarantined_and_the_rest_loads(tmp_path: Path) -> None:
    path = _log(
        tmp_path,
        _meta(),
        _user("hi", ts="2026-02-01T10:00:01Z") | {"id": "u1"},
        b'{"id":"g1","timestamp":"2026-02-01T10:00:02Z","type":"gemini","content":"Hel',
    )
    events, bad = _split(list(gemini_cli.parse(path)))
    assert _text(events) == [("user", "message", "hi")]
    assert [(b.reason, b.line_no, b.session_id, b.session_start) for b in bad] == [
        (TRUNCATED_LINE, 3, PARENT, parse_ts("2026-02-01T10:00:00Z"))
    ]


@pytest.mark.parametrize(
    ("record", "reason"),
    [
        pytest.param({"note": "x"}, UNKNOWN_RECORD_TYPE, id="no-kind"),
        pytest.param({"$set": "lastUpdated"}, WRONG_FIELD_TYPE, id="set-not-an-object"),
        pytest.param({"id": 7, "type": "user", "content": "x"}, WRONG_FIELD_TYPE, id="id-number"),
        pytest.param({"id": "m", "type": "compression"}, UNKNOWN_RECORD_TYPE, id="message-type"),
    ],
)
def test_record_the_log_cannot_use_is_quarantined(tmp_path: Path, record: Any, reason: str) -> None:
    path = _log(tmp_path, _meta(), _user("before") | {"id": "u1"}, record, _user("after") | {"id": "u2"})
    events, bad = _split(list(gemini_cli.parse(path)))
    assert [(b.reason, b.line_no, b.session_id) for b in bad] == [(reason, 3, PARENT)]
    assert [e.text for e in events] == ["before", "after"]


def test_function_parts_in_content_are_not_read_as_text(tmp_path: Path) -> None:
    """The CLI records each batch of tool results as a user message of functionResponse parts."""
    response = {"functionResponse": {"id": "c1", "name": "run_shell_command", "response": {"output": "ok"}}}
    path = _log(
        tmp_path,
        _meta(),
        _gemini(_call("c1"), content=[{"text": "Listing."}, {"functionCall": {"id": "c1"}}], id="g1"),
        _user([response]) | {"id": "u1"},
    )
    events = _events(path)
    assert _text(events) == [
        ("assistant", "message", "Listing."),
        ("assistant", "tool_call", None),
        ("tool", "tool_result", "ok"),
    ]


def test_subagent_log_joins_its_parent_session_as_a_sidechain(tmp_path: Path) -> None:
    """Started after midnight, the subagent's events still land on its parent's day."""
    parent = _log(tmp_path, _meta(), _user("investigate") | {"id": "u1"})
    subagent = _log(
        tmp_path,
        _meta(AGENT, "2026-02-02T00:30:00.000Z", kind="subagent", directories=["/repo"]),
        _user("Investigate the codebase", ts="2026-02-02T00:30:01Z") | {"id": "s1"},
        _gemini(content="Found it.", id="s2", toolCalls=None, timestamp="2026-02-02T00:30:02Z"),
        name=f"{PARENT}/{AGENT}.jsonl",
    )
    main_events = _events(parent)
    events = _events(subagent)
    assert {(e.session_id, e.session_start, e.is_sidechain, e.agent_id) for e in events} == {
        (PARENT, main_events[0].session_start, True, AGENT)
    }
    assert gemini_cli.earliest_start(subagent) == parse_ts("2026-02-01T10:00:00Z")
    assert not any(e.is_sidechain for e in main_events)
    parent.unlink()  # its own start is the next best
    assert {e.session_start for e in gemini_cli.parse(subagent)} == {parse_ts("2026-02-02T00:30:00Z")}
    assert gemini_cli.earliest_start(subagent) == parse_ts("2026-02-02T00:30:00Z")


def test_listing_picks_the_cli_logs_and_no_other_jsonl(tmp_path: Path) -> None:
    main = _log(tmp_path, _meta(), _user() | {"id": "u1"})
    subagent = _log(tmp_path, _meta(AGENT, kind="subagent"), name=f"{PARENT}/{AGENT}.jsonl")
    legacy = _write(main.parent, _doc(_user()), "session-2025-12-01T10-00-11111111.json")
    for other in ("notes.jsonl", "chats/export.jsonl", f"chats/{PARENT}/trace.jsonl", "chats/logs.json"):
        (tmp_path / "proj" / other).write_text('{"event": "x"}\n')
    root = SourceRoot("gemini_cli", tmp_path)
    expected = sorted(str(p) for p in (main, subagent, legacy))
    assert sorted(matching_files(root)) == expected
    found = sorted((file.location, file.source, file.problem) for file in candidate_files([root]))
    assert found == [(path, "gemini_cli", None) for path in expected]
