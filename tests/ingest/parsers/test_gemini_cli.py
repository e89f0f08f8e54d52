"""Gemini CLI chat files load into the right events, and bad ones are quarantined, not raised.

Why this exists: Gemini CLI writes one JSON object per session, with tool calls
and their results nested inside assistant messages. These tests pin the counts of
the real published sessions (counted independently from the raw JSON), the
ordering of thoughts, calls and results, and what happens to broken files.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest

from trajectory_pipeline.ingest.formats import FORMATS, detect_source
from trajectory_pipeline.ingest.parsers import gemini_cli
from trajectory_pipeline.ingest.parsers.lines import file_mtime_us, read_head
from trajectory_pipeline.schema import (
    INVALID_UTF8,
    MALFORMED_JSON,
    NOT_AN_OBJECT,
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
    [bad] = list(gemini_cli.parse(logs))
    assert (bad.reason, bad.line_no) == (NOT_AN_OBJECT, 0)


def test_each_model_turn_shows_its_results_before_the_next_turn(real_corpus: Path) -> None:
    """Message 4 of the 2026-01-16 session holds three turns of parallel calls (2, 4 and 3)."""
    events = list(gemini_cli.parse(real_corpus / FOLDER / "session-2026-01-16T11-01-file-ops-37b7abef.json"))
    shape = "".join("C" if e.kind == "tool_call" else "R" for e in events if e.line_no == 4)
    assert shape == "CCRR" + "CCCCRRRR" + "CCCRRR"


def test_thoughts_come_before_the_call_they_led_to(real_corpus: Path) -> None:
    events = list(gemini_cli.parse(real_corpus / FOLDER / "session-2025-12-01T21-45-5b959dae.json"))
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
    [bad] = list(gemini_cli.parse(_write(tmp_path, body)))
    assert (bad.reason, bad.line_no, bad.source) == (reason, 0, "gemini_cli")
    assert bad.byte_len == len(body)


def test_file_over_the_cap_is_refused_unread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _write(tmp_path, _doc(_user()))
    monkeypatch.setattr(gemini_cli, "MAX_FILE_BYTES", 100)
    [bad] = list(gemini_cli.parse(path))
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
    [bad] = list(gemini_cli.parse(_write(tmp_path, _doc(messages={"0": _user()}))))
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
    events = list(gemini_cli.parse(_write(tmp_path, _doc(_user(), _gemini(_call("c1", status, result))))))
    call, outcome = (e for e in events if e.kind in ("tool_call", "tool_result"))
    assert (call.tool_name, call.tool_call_id, call.tool_input) == (
        "run_shell_command",
        "c1",
        '{"command":"ls"}',
    )
    assert (outcome.role, outcome.tool_call_id, outcome.is_error) == ("tool", "c1", is_error)
    assert outcome.text.startswith(text)


def test_call_still_running_has_no_result(tmp_path: Path) -> None:
    running = {**_call("c1"), "status": "executing", "result": None}
    events = list(gemini_cli.parse(_write(tmp_path, _doc(_gemini(running)))))
    assert [e.kind for e in events] == ["tool_call"]


def test_info_error_and_part_list_messages(tmp_path: Path) -> None:
    doc = _doc(
        _user([{"text": "look at"}, {"text": "@src/app.py"}]),
        {"id": "i", "timestamp": "2026-02-01T10:00:01Z", "type": "info", "content": "Request cancelled."},
        {"id": "e", "timestamp": "2026-02-01T10:00:02Z", "type": "error", "content": "API error 429"},
    )
    events = list(gemini_cli.parse(_write(tmp_path, doc)))
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
    first = [e.tool_call_id for e in gemini_cli.parse(path)]
    assert first == [e.tool_call_id for e in gemini_cli.parse(path)]
    assert len(set(first)) == 2 and first[:2] == first[2:]


def test_sniff_rejects_jsonl_that_mentions_the_keys() -> None:
    line = orjson.dumps(
        {"type": "user", "message": {"content": '{"sessionId": "a", "projectHash": "b", "messages": []}'}}
    )
    assert not gemini_cli.sniff(Path("x.jsonl"), line + b"\n")
    assert gemini_cli.sniff(Path("x.json"), orjson.dumps(_doc(), option=orjson.OPT_INDENT_2))
