"""The sql_events source on SQLite: the day filter, the contract and its mapping, quarantine rows that
name the table and key, redaction before anything is written, read-only access, a hidden password,
flat memory. The same source on the suite's real PostgreSQL: tests/test_postgres.py."""

from __future__ import annotations

import datetime as dt
import sqlite3
import tracemalloc
from pathlib import Path
from typing import Any

import orjson
import pandas as pd
import pytest
import sqlalchemy as sa

from tests.ingest.event_tables import AWS_KEY, DAY, DAY_ROWS, GITHUB_TOKEN, create_events_table, insert
from trajectory_pipeline import settings
from trajectory_pipeline.ingest.days import day_bounds, ingest_day, ingest_days
from trajectory_pipeline.ingest.sql_events import (
    MISSING_SESSION_ID,
    SqlEventsConfig,
    SqlEventStore,
    parse_columns,
)
from trajectory_pipeline.ingest.stores import StoreError
from trajectory_pipeline.mining.vocabulary import canonicalize
from trajectory_pipeline.schema import BadLine, Event


@pytest.fixture
def database(tmp_path: Path) -> Path:
    path = tmp_path / "events.db"
    engine = sa.create_engine(f"sqlite:///{path}")
    table = create_events_table(engine, timestamps=False)
    insert(engine, table, DAY_ROWS)
    engine.dispose()
    return path


def _read(store: SqlEventStore, day: dt.date = DAY) -> list[Event | BadLine]:
    return list(store.read(*day_bounds(day)))


def _ingest(
    tmp_path: Path, store: SqlEventStore, day: dt.date = DAY
) -> tuple[Any, pd.DataFrame, pd.DataFrame]:
    events_path, quarantine_path = tmp_path / f"events-{day}.parquet", tmp_path / f"quarantine-{day}.parquet"
    stats = ingest_day([], day, events_path, quarantine_path, stores=[store])
    return stats, pd.read_parquet(events_path), pd.read_parquet(quarantine_path)


def test_a_day_holds_the_sessions_that_start_on_it_whole(database: Path) -> None:
    items = _read(SqlEventStore(f"sqlite:///{database}"))
    assert all(isinstance(item, Event) for item in items)
    events = [item for item in items if isinstance(item, Event)]
    assert sorted({e.session_id for e in events}) == ["s1", "s2", "s4"]  # s3 began the day before
    by_session = {sid: [e for e in events if e.session_id == sid] for sid in ("s1", "s2", "s4")}
    assert [e.text for e in by_session["s4"]] == ["late task", "done after midnight"]  # past midnight
    start = day_bounds(DAY)[0]
    assert by_session["s2"][0].session_start == start + 30 * 60 * 1_000_000  # 23:30 at -01:00
    s1 = by_session["s1"]
    assert [e.kind for e in s1] == ["message", "tool_call", "tool_result", "tool_call", "tool_result"]
    assert [e.seq for e in s1] == [0, 1, 2, 3, 4]
    assert s1[1].ts == start + (10 * 3600 + 5) * 1_000_000  # 12:00:05+02:00
    assert s1[1].tool_input == '{"path":"src/parse.py"}'  # canonical JSON
    assert s1[1].model == "gpt-x" and s1[0].repo == "ledger"  # repo named from cwd, as files do
    assert {e.source for e in events} == {"sql_events"} and {e.source_path for e in events} == {
        "agent_events"
    }
    assert s1[0].event_id == "1" and s1[0].line_no == 1  # the primary key
    assert s1[4].exit_code == 0 and s1[2].is_error is False
    # The source's tools map onto the canonical vocabulary (home-made names).
    assert canonicalize("sql_events", "bash", s1[3].tool_input).name == "run_shell"


def test_the_day_filter_runs_in_the_database(database: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    statements: list[tuple[str, Any]] = []
    real_engine = SqlEventStore.engine

    def watched(self: SqlEventStore) -> sa.Engine:
        engine = real_engine(self)
        sa.event.listen(engine, "before_cursor_execute", lambda *args: statements.append((args[2], args[3])))
        return engine

    monkeypatch.setattr(SqlEventStore, "engine", watched)
    _read(SqlEventStore(f"sqlite:///{database}"))
    (query, parameters), *_ = [(sql, params) for sql, params in statements if "day_sessions" in sql]
    assert "WHERE" in query and "HAVING min(" in query and "ORDER BY" in query
    # Text times: bounds a day wider than the day, on the ts column; the exact day is decided after.
    assert "2026-11-19" in parameters and "2026-11-22" in parameters and "2015-01-01" in parameters


def test_rows_that_cannot_be_read_are_quarantined_naming_table_and_key(
    database: Path, tmp_path: Path
) -> None:
    with sqlite3.connect(database) as connection:  # SQLite stores any type in any column
        connection.executemany(
            "INSERT INTO agent_events (session_id, ts, role, kind, text, tool_name, tool_input, exit_code, "
            "is_error) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    "s1",
                    "2026-11-20T10:00:20Z",
                    "assistant",
                    "tool_call",
                    None,
                    "bash",
                    '{"command": "ls',
                    None,
                    None,
                ),
                ("s1", "2026-11-20T10:00:21Z", "tool", "tool_result", "ok", "bash", None, "zero", None),
                ("s1", "2026-11-20T10:00:22Z", "tool", "tool_result", "ok", "bash", None, None, "maybe"),
                ("s1", "2026-11-20T10:00:23Z", "robot", "message", "beep", None, None, None, None),
                ("s1", "yesterday-ish", "user", "message", "when?", None, None, None, None),
                (
                    None,
                    "2026-11-20T11:00:00Z",
                    "user",
                    "message",
                    f"no session, key {GITHUB_TOKEN}",
                    None,
                    None,
                    None,
                    None,
                ),
                (
                    None,
                    "2026-11-21T11:00:00Z",
                    "user",
                    "message",
                    "no session, another day",
                    None,
                    None,
                    None,
                    None,
                ),
            ],
        )
    stats, events, quarantine = _ingest(tmp_path, SqlEventStore(f"sqlite:///{database}"))
    reasons = dict(
        zip(
            quarantine["excerpt"].str.extract(r"^agent_events id=(\d+)")[0], quarantine["reason"], strict=True
        )
    )
    assert reasons == {
        "13": "malformed_json",
        "14": "wrong_field_type",
        "15": "wrong_field_type",
        "16": "unknown_record_type",
        "17": "wrong_field_type",
        "18": MISSING_SESSION_ID,
    }
    assert set(quarantine["source_path"]) == {"agent_events"} and set(quarantine["source"]) == {"sql_events"}
    assert quarantine.set_index("reason").loc["malformed_json", "line_no"] == 13
    orphan = quarantine[quarantine["reason"] == MISSING_SESSION_ID].iloc[0]
    assert orphan["session_start"] == pd.Timestamp("2026-11-20T11:00:00Z")  # the day of its own time
    assert GITHUB_TOKEN not in orphan["excerpt"] and "[REDACTED:github_token]" in orphan["excerpt"]
    # The rest of the day loads: every good row of s1, s2 and s4.
    assert len(events) == 9 and stats.quarantined.total() == 6
    assert stats.database_rows == {"agent_events": 15}


def test_redaction_happens_before_anything_is_written(database: Path, tmp_path: Path) -> None:
    stats, events, _ = _ingest(tmp_path, SqlEventStore(f"sqlite:///{database}"))
    written = (tmp_path / f"events-{DAY}.parquet").read_bytes()
    assert GITHUB_TOKEN.encode() not in written and AWS_KEY.encode() not in written
    assert "/home/<user>/src/ledger" in set(events["cwd"].dropna())
    assert stats.redactions["github_token"] == 1 and stats.redactions.total() >= 3


def test_a_mapping_reads_another_schema_and_a_json_payload(tmp_path: Path) -> None:
    path = tmp_path / "platform.db"
    with sqlite3.connect(path) as connection:
        connection.execute(
            "CREATE TABLE platform_events (event_uuid TEXT PRIMARY KEY, conversation TEXT, created_at TEXT, "
            "payload TEXT)"
        )
        payloads = [
            (
                "e1",
                "c9",
                "2026-11-20T08:00:00Z",
                {"role": "user", "content": [{"type": "text", "text": "add a flag"}]},
            ),
            (
                "e2",
                "c9",
                "2026-11-20T08:00:01Z",
                {"role": "assistant", "tool": {"name": "read_file", "id": "t1", "args": {"path": "cli.py"}}},
            ),
            (
                "e3",
                "c9",
                "2026-11-20T08:00:02Z",
                {"role": "tool", "tool": {"id": "t1"}, "content": "import argparse", "exit": "0"},
            ),
        ]
        connection.executemany(
            "INSERT INTO platform_events VALUES (?, ?, ?, ?)",
            [(key, sid, ts, orjson.dumps(payload).decode()) for key, sid, ts, payload in payloads]
            + [("e4", "c9", "2026-11-20T08:00:03Z", "{not json")],
        )
    mapping = (
        "session_id=conversation,ts=created_at,event_id=event_uuid,role=payload.role,text=payload.content,"
        "tool_name=payload.tool.name,tool_call_id=payload.tool.id,tool_input=payload.tool.args,"
        "exit_code=payload.exit"
    )
    store = SqlEventsConfig(
        sql_events_url=f"sqlite:///{path}", sql_events_table="platform_events", sql_events_columns=mapping
    ).store()
    assert store is not None
    items = _read(store)
    events = [item for item in items if isinstance(item, Event)]
    assert [(e.role, e.kind, e.text, e.tool_name, e.tool_input) for e in events] == [
        ("user", "message", "add a flag", None, None),
        ("assistant", "tool_call", None, "read_file", '{"path":"cli.py"}'),
        ("tool", "tool_result", "import argparse", None, None),
    ]
    assert events[2].tool_call_id == "t1" and events[2].exit_code == 0 and events[0].event_id == "e1"
    assert events[0].cwd is None and events[0].model is None  # columns the table lacks are null
    (bad,) = [item for item in items if isinstance(item, BadLine)]
    assert bad.reason == "malformed_json" and bad.excerpt.startswith(
        "platform_events event_uuid='e4': payload:"
    )


def test_implausible_times_never_move_a_session_off_its_day(database: Path) -> None:
    with sqlite3.connect(database) as connection:
        connection.execute(
            "INSERT INTO agent_events (session_id, ts, role, text) "
            "VALUES ('s1', '1970-01-01T00:00:00Z', 'user', 'x')"
        )
    items = _read(SqlEventStore(f"sqlite:///{database}"))
    (kept,) = [i for i in items if isinstance(i, Event) and i.text == "x"]
    assert kept.ts is None and kept.session_start == day_bounds(DAY)[0] + 10 * 3600 * 1_000_000
    assert [i.reason for i in items if isinstance(i, BadLine)] == ["implausible_timestamp"]


def test_reads_are_deterministic_and_per_day_equal_to_a_range(database: Path, tmp_path: Path) -> None:
    store = SqlEventStore(f"sqlite:///{database}")
    assert _read(store) == _read(store)
    days = [DAY, DAY + dt.timedelta(days=1)]
    outputs = {day: (tmp_path / f"r-e-{day}.parquet", tmp_path / f"r-q-{day}.parquet") for day in days}
    by_day = ingest_days([], outputs, stores=[store])
    for day in days:
        alone, events, _ = _ingest(tmp_path, store, day)
        assert pd.read_parquet(outputs[day][0]).equals(events)
        assert by_day[day].sessions == alone.sessions
    assert by_day[days[1]].sessions_by_source == {"sql_events": 1}


def test_access_is_read_only_and_a_missing_file_is_never_created(database: Path, tmp_path: Path) -> None:
    engine = SqlEventStore(f"sqlite:///{database}").engine()
    with (
        engine.connect() as connection,
        pytest.raises(sa.exc.OperationalError, match=r"readonly|read-only|query_only"),
    ):
        connection.execute(sa.text("DELETE FROM agent_events"))
    engine.dispose()
    missing = tmp_path / "nope.db"
    with pytest.raises(StoreError, match="no such SQLite file"):
        SqlEventStore(f"sqlite:///{missing}").check()
    assert not missing.exists()


def test_the_password_never_shows(tmp_path: Path) -> None:
    store = SqlEventStore("postgresql+psycopg2://reader:s3cr3t-Pa55@127.0.0.1:1/agents", table="agent_events")
    assert "s3cr3t" not in store.shown() and "reader:***@" in store.shown()
    assert "s3cr3t" not in repr(store)
    with pytest.raises(StoreError) as raised:
        store.check()
    assert "s3cr3t" not in str(raised.value) and "agent_events" in str(raised.value)


def test_misconfiguration_is_one_line_naming_the_fix(database: Path) -> None:
    with pytest.raises(StoreError, match="no such table or view"):
        SqlEventStore(f"sqlite:///{database}", table="events").check()
    with pytest.raises(StoreError, match="has no column payload"):
        SqlEventStore(f"sqlite:///{database}", columns=(("text", "payload.text"),)).check()
    with pytest.raises(ValueError, match="must be a column"):
        parse_columns("ts=payload.when")
    with pytest.raises(ValueError, match="not a raw_sessions name"):
        parse_columns("colour=paint")
    assert (
        parse_columns('{"session_id": "conv"}')
        == parse_columns("session_id = conv")
        == {"session_id": "conv"}
    )


def test_the_store_comes_from_the_settings_and_is_off_by_default(
    database: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(settings.SQL_EVENTS_URL.name, raising=False)
    assert SqlEventsConfig().store() is None
    monkeypatch.setenv(settings.SQL_EVENTS_URL.name, f"sqlite:///{database}")
    monkeypatch.setenv(settings.SQL_EVENTS_COLUMNS.name, "event_id=id")
    store = SqlEventsConfig().store()
    assert store is not None and store.table == "agent_events" and store.columns == (("event_id", "id"),)
    assert SqlEventsConfig(sql_events_url="").store() is None  # the field turns it off
    monkeypatch.setenv(settings.SQL_EVENTS_TABLE.name, "other")
    assert SqlEventsConfig(sql_events_table="mine").store().table == "mine"  # type: ignore[union-attr]


def test_memory_stays_flat_however_many_rows_a_day_holds(tmp_path: Path) -> None:
    path = tmp_path / "big.db"
    engine = sa.create_engine(f"sqlite:///{path}")
    table = create_events_table(engine, timestamps=False)
    text = "x" * 6000
    rows = [
        {
            "session_id": f"s{i // 50:05d}",
            "ts": f"2026-11-20T{(i // 3600) % 24:02d}:{(i // 60) % 60:02d}:{i % 60:02d}Z",
            "role": "assistant" if i % 2 else "user",
            "text": text,
        }
        for i in range(6_000)
    ]
    insert(engine, table, rows)  # 36 MB of text in 120 sessions
    engine.dispose()
    store = SqlEventStore(f"sqlite:///{path}", batch_rows=500)
    tracemalloc.start()
    try:
        count = sum(1 for _ in store.read(*day_bounds(DAY)))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert count == 6_000
    assert peak < 8 * 1024 * 1024, f"reading held {peak / 2**20:.1f} MiB"
