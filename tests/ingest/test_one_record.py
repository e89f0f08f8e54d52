"""One record must not sink a run: whatever a line holds, it costs that line alone, and says so.

Why this exists: a tool input nested a few hundred levels deep, or a `timestamp` of 1e308, used to
raise out of the parser and fail the whole `raw_sessions` step, naming no file; a file whose
first line was odd (a header, an entry type added since, `{"messages": []}`) was not recognized at
all; a byte-order mark cost a file its first line; half an emoji (`\\ud83d`) cost a line; and a
session whose first time was 1970 or in the future vanished into a day no run ingests. Every
transcript here is written for these tests in the shape the fault came in (tests/ingest/transcripts.py).
"""

from __future__ import annotations

import codecs
import dataclasses
import datetime as dt
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.ingest import transcripts as tx
from trajectory_pipeline.ingest import days
from trajectory_pipeline.ingest.formats import FORMATS, detect_source
from trajectory_pipeline.ingest.parsers import claude_code, own_agent
from trajectory_pipeline.ingest.parsers.lines import read_head
from trajectory_pipeline.schema import (
    EARLIEST_PLAUSIBLE_TS,
    IMPLAUSIBLE_TIMESTAMP,
    MAX_JSON_DEPTH,
    NON_FINITE_NUMBER,
    TOO_DEEP,
    UNKNOWN_RECORD_TYPE,
    UNREADABLE_RECORD,
    WRONG_FIELD_TYPE,
    TooDeepError,
    canonical_json,
    parse_ts,
)

SOURCES = ("claude_code", "codex", "own_agent", "chat_jsonl")


def clean_rows(tmp_path: Path, source: str) -> list[dict[str, Any]]:
    root = tmp_path / "clean"
    tx.write(root, source, tx.BUILDERS[source]())
    return tx.ingest(tmp_path / "clean-out", {source: root})[1]


@pytest.fixture(autouse=True)
def _out(tmp_path: Path) -> None:
    (tmp_path / "clean-out").mkdir()


# ---------------------------------------------------------------- item 1: exceptions


@pytest.mark.parametrize("levels", [MAX_JSON_DEPTH + 1, 600, 1000])
@pytest.mark.parametrize("source", SOURCES)
def test_a_deeply_nested_tool_input_is_quarantined_and_the_file_loads(
    tmp_path: Path, source: str, levels: int
) -> None:
    root = tmp_path / "root"
    path = tx.write(root, source, tx.faulty(source, tx.deep_input_record(source, levels)))
    stats, rows, bad = tx.ingest(tmp_path, {source: root})
    assert tx.content(rows) == tx.content(clean_rows(tmp_path, source))
    assert [(b["reason"], b["line_no"]) for b in bad] == [(TOO_DEEP, 3)]
    assert bad[0]["source_path"].endswith(path.name) and "nested more than" in bad[0]["excerpt"]
    assert stats.quarantined == {TOO_DEEP: 1}


def test_canonical_json_refuses_depth_without_recursing() -> None:
    assert canonical_json(tx.deep(MAX_JSON_DEPTH)).startswith('{"a":')
    for levels in (MAX_JSON_DEPTH + 1, 100_000):  # 100k levels would overflow any recursive writer
        with pytest.raises(TooDeepError):
            canonical_json(tx.deep(levels))
    assert canonical_json({"n": 10**30, "b": 1}) == '{"b":1,"n":1000000000000000000000000000000}'


@pytest.mark.parametrize("value", [1e308, -1e308, 1e20, -1e20, 10**400, math.inf, math.nan, "9999999-01-01"])
def test_parse_ts_never_raises(value: object) -> None:
    assert parse_ts(value) is None


@pytest.mark.parametrize("stamp", [1e308, 1e20, -1e20])
@pytest.mark.parametrize("source", SOURCES)
def test_an_overflowing_timestamp_costs_its_time_not_the_run(
    tmp_path: Path, source: str, stamp: float
) -> None:
    root = tmp_path / "root"
    path = tx.write(root, source, tx.faulty(source, tx.timed_record(source, stamp)))
    _stats, rows, bad = tx.ingest(tmp_path, {source: root})
    assert [(b["reason"], b["line_no"]) for b in bad] == [(IMPLAUSIBLE_TIMESTAMP, 3)]
    assert bad[0]["source_path"].endswith(path.name) and "no representable time" in bad[0]["excerpt"]
    assert tx.content(clean_rows(tmp_path, source)) <= tx.content(rows)
    kept = [r for r in rows if r["line_no"] == 3]
    assert kept and all(r["ts"] is None for r in kept), "the line is kept, untimed"


def test_any_exception_in_one_record_is_quarantined_with_its_type(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bug nobody foresaw (here: the user-line handler fails on one text) costs that line."""
    real = claude_code._HANDLERS["user"]

    def fragile(obj: dict[str, Any]) -> Any:
        if obj["message"]["content"] == "boom":
            raise ZeroDivisionError("division by zero")
        return real(obj)

    monkeypatch.setitem(claude_code._HANDLERS, "user", fragile)
    root = tmp_path / "root"
    tx.write(root, "claude_code", tx.faulty("claude_code", tx.claude_user(9, "boom", 7)))
    _, rows, bad = tx.ingest(tmp_path, {"claude_code": root})
    assert [(b["reason"], b["line_no"]) for b in bad] == [(UNREADABLE_RECORD, 3)]
    assert bad[0]["excerpt"].startswith("ZeroDivisionError: division by zero")
    assert tx.content(rows) == tx.content(clean_rows(tmp_path, "claude_code"))


def test_a_parser_that_fails_outright_costs_the_rest_of_its_file_not_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = FORMATS["own_agent"].parse

    def broken(path: Path, max_line_bytes: int) -> Iterator[Any]:
        items = real(path, max_line_bytes=max_line_bytes)
        yield next(items)
        raise RuntimeError("the parser's own bug")

    monkeypatch.setitem(FORMATS, "own_agent", dataclasses.replace(FORMATS["own_agent"], parse=broken))
    root = tmp_path / "root"
    tx.write(root, "own_agent", tx.own_records())
    tx.write(root / "other", "claude_code", tx.claude_records())
    _stats, rows, bad = tx.ingest(tmp_path, [("own_agent", root), ("claude_code", root / "other")])
    assert [(b["reason"], b["line_no"]) for b in bad] == [(days.PARSER_FAILED, 0)]
    assert "RuntimeError: the parser's own bug (after line 1" in bad[0]["excerpt"]
    assert {r["source"] for r in rows} == {"own_agent", "claude_code"}
    assert sum(r["source"] == "own_agent" for r in rows) == 1


# ---------------------------------------------------------------- item 2: sniffing


ODD_FIRST_LINES = {
    "own_agent": [
        {"type": "header", "version": 2, "agent": "timmy"},  # a header line
        {"type": "plan", "steps": ["a"], "timestamp": tx.at(0)},  # an entry type added since
        {"type": "message", "role": "user", "content": "no time"},  # a missing timestamp
    ],
    "chat_jsonl": [
        {"messages": []},
        {"format": "chat", "exported": "2026-03-10"},  # a header line
    ],
}


@pytest.mark.parametrize(
    ("source", "odd"), [(source, odd) for source, odds in ODD_FIRST_LINES.items() for odd in odds]
)
def test_an_odd_first_line_costs_that_line_not_the_file(
    tmp_path: Path, source: str, odd: dict[str, Any]
) -> None:
    root = tmp_path / "root"
    path = tx.write(root, source, [odd, *tx.BUILDERS[source]()])
    assert detect_source(path) == source
    _stats, rows, bad = tx.ingest(tmp_path, {source: root})
    assert tx.content(rows) == tx.content(clean_rows(tmp_path, source))
    assert [b["line_no"] for b in bad] == [1]
    assert bad[0]["reason"] in (UNKNOWN_RECORD_TYPE, WRONG_FIELD_TYPE)


def test_a_file_of_another_format_is_still_not_taken(tmp_path: Path) -> None:
    path = tx.write(tmp_path, "claude_code", tx.claude_records(), "x.jsonl")
    assert not FORMATS["own_agent"].sniff(path, read_head(path))
    assert not FORMATS["chat_jsonl"].sniff(path, read_head(path))
    header_only = tx.write(tmp_path, "own_agent", [{"type": "header"}] * 6, "session_2026-03-10.jsonl")
    assert detect_source(header_only) is None


# ---------------------------------------------------------------- item 3: byte-order mark


@pytest.mark.parametrize("source", SOURCES)
def test_a_byte_order_mark_costs_nothing(tmp_path: Path, source: str) -> None:
    root = tmp_path / "root"
    path = tx.write(root, source, tx.BUILDERS[source](), prefix=codecs.BOM_UTF8)
    assert detect_source(path) == source
    _stats, rows, bad = tx.ingest(tmp_path, {source: root})
    assert bad == []
    assert tx.content(rows) == tx.content(clean_rows(tmp_path, source))
    assert min(r["line_no"] for r in rows) == 1


# ---------------------------------------------------------------- item 4: lone surrogates


@pytest.mark.parametrize("source", SOURCES)
def test_half_an_emoji_is_read_as_a_replacement_character_and_counted(tmp_path: Path, source: str) -> None:
    root = tmp_path / "root"
    odd = tx.encode([tx.timed_record(source, tx.at(7))]).decode().replace("also check", "also \\ud83d check")
    odd = odd.replace("what does", "what \\ude00 does")  # a chat line's text: a lone low half
    # An escaped backslash before "ud83d" is text, not an escape: it must stay as it is.
    odd = odd.replace("the docs", "the \\\\ud83d docs")
    tx.write(root, source, tx.faulty(source, odd.rstrip("\n")))
    stats, rows, bad = tx.ingest(tmp_path, {source: root})
    assert bad == []
    assert stats.repaired == {"lone_surrogate": 1}
    texts = [r["text"] for r in rows if r["line_no"] == 3 and r["text"] and "\ufffd" in r["text"]]
    assert texts, "the line is kept, with U+FFFD for the lost half"
    assert all("\\ud83d docs" in t for t in texts if "docs" in t)
    assert tx.content(clean_rows(tmp_path, source)) <= tx.content(rows)


@pytest.mark.parametrize("source", SOURCES)
def test_python_written_nan_and_infinity_are_read_as_null_and_counted(tmp_path: Path, source: str) -> None:
    """Python's json.dumps writes NaN and Infinity, which orjson (rightly) refuses: a home-made agent
    logging a float metric must not lose the line. Read as null, as orjson writes them."""
    record = tx.timed_record(source, tx.at(7))
    odd = tx.encode([record]).decode().rstrip("\n")
    odd = '{"latency": NaN, "budget": -Infinity, ' + odd.removeprefix("{")
    tx.write(tmp_path / "root", source, tx.faulty(source, odd))
    stats, rows, bad = tx.ingest(tmp_path, {source: tmp_path / "root"})
    assert bad == []
    assert stats.repaired == {NON_FINITE_NUMBER: 1}
    tx.write(tmp_path / "finite", source, tx.faulty(source, {"latency": None, "budget": None, **record}))
    (tmp_path / "finite-out").mkdir()
    _, finite_rows, _ = tx.ingest(tmp_path / "finite-out", {source: tmp_path / "finite"})
    assert tx.content(rows) == tx.content(finite_rows), "the line is read as with nulls there"
    assert any(r["line_no"] == 3 for r in rows)


# ---------------------------------------------------------------- item 5: implausible times


IMPLAUSIBLE = {
    "1970": "1970-01-01T00:00:05Z",
    "epoch 0": 0,
    "future": "2031-06-01T12:00:00Z",
}


@pytest.mark.parametrize("when", IMPLAUSIBLE)
@pytest.mark.parametrize("source", SOURCES)
def test_a_session_whose_first_time_is_implausible_starts_at_its_first_plausible_one(
    tmp_path: Path, source: str, when: str
) -> None:
    root = tmp_path / "root"
    records = tx.faulty(source, tx.timed_record(source, IMPLAUSIBLE[when]), at_line=1)
    path = tx.write(root, source, records)
    _stats, rows, bad = tx.ingest(tmp_path, {source: root})
    assert tx.content(clean_rows(tmp_path, source)) <= tx.content(rows), "no row is lost"
    assert [(b["reason"], b["line_no"]) for b in bad] == [(IMPLAUSIBLE_TIMESTAMP, 1)]
    assert bad[0]["source_path"].endswith(path.name)
    starts = {r["session_start"] for r in rows}
    assert all(s is not None and s >= dt.datetime(2026, 3, 10, tzinfo=dt.UTC) for s in starts)
    assert {r["ts"] for r in rows if r["line_no"] == 1} == {None}
    assert FORMATS[source].earliest_start(path) in (None, parse_ts(tx.at(0)))


@pytest.mark.parametrize("source", SOURCES)
def test_a_session_dated_wholly_in_the_future_is_kept_on_its_last_write_day(
    tmp_path: Path, source: str
) -> None:
    """A machine whose clock ran years ahead: every time is refused, nothing is lost."""
    root = tmp_path / "root"
    shifted = tx.encode(tx.BUILDERS[source]()).decode().replace("2026-03-10T", "2031-03-10T")
    path = tx.write(root, source, [line for line in shifted.splitlines()])
    _stats, rows, bad = tx.ingest(tmp_path, {source: root})
    assert {b["reason"] for b in bad} == {IMPLAUSIBLE_TIMESTAMP}
    assert len(rows) == len(clean_rows(tmp_path, source))
    mtime_day = dt.date(2026, 3, 10)
    assert {r["session_start"].date() for r in rows} == {mtime_day}
    assert {b["session_start"].date() for b in bad} == {mtime_day}
    assert all(r["ts"] is None for r in rows)
    assert all(b["source_path"].endswith(path.name) for b in bad)


def test_own_agent_entries_before_the_first_plausible_one_join_its_session(tmp_path: Path) -> None:
    records = [tx.own_message("user", "clock not set yet", 0) | {"timestamp": "1970-01-01T00:00:01Z"}]
    path = tx.write(tmp_path, "own_agent", records + tx.own_records())
    items = list(own_agent.parse(path))
    events = [item for item in items if not hasattr(item, "reason")]
    assert {e.session_id for e in events} == {"session_2026-03-10-090000"}
    assert events[0].text == "clock not set yet" and events[0].ts is None and events[0].seq == 0
    assert own_agent.earliest_start(path) == parse_ts(tx.at(0))


def test_the_floor_of_plausible_times() -> None:
    assert parse_ts("2015-01-01T00:00:00Z") == EARLIEST_PLAUSIBLE_TS
