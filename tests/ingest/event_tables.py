"""Tables of agent events for the sql_events tests, on SQLite and on the suite's PostgreSQL.

engine = sa.create_engine(f"sqlite:///{tmp_path / 'events.db'}")
create_events_table(engine, timestamps=False)    # raw_sessions' own column names, ts as text
insert(engine, "agent_events", DAY_ROWS)
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import sqlalchemy as sa

DAY = dt.date(2026, 11, 20)
GITHUB_TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"  # a planted secret (shape only)
AWS_KEY = "AKIA" + "QWERTYUIOPASDFGH"

# A day of sessions with raw_sessions' own column names; `ts` as ISO text with offsets or Z.
DAY_ROWS: list[dict[str, Any]] = [
    # s1: a task, a read, its result, an edit and a passing test run.
    {
        "session_id": "s1",
        "ts": "2026-11-20T10:00:00Z",
        "role": "user",
        "kind": "message",
        "text": f"fix the parser, the token is {GITHUB_TOKEN}",
        "cwd": "/home/alice/src/ledger",
    },
    {
        "session_id": "s1",
        "ts": "2026-11-20T12:00:05+02:00",
        "role": "assistant",
        "kind": "tool_call",
        "tool_name": "read_file",
        "tool_call_id": "c1",
        "tool_input": '{"path": "src/parse.py"}',
        "cwd": "/home/alice/src/ledger",
        "model": "gpt-x",
    },
    {
        "session_id": "s1",
        "ts": "2026-11-20T10:00:06Z",
        "role": "tool",
        "kind": "tool_result",
        "tool_name": "read_file",
        "tool_call_id": "c1",
        "text": "def parse(): ...",
        "is_error": False,
    },
    {
        "session_id": "s1",
        "ts": "2026-11-20T10:00:09Z",
        "role": "assistant",
        "kind": "tool_call",
        "tool_name": "bash",
        "tool_call_id": "c2",
        "tool_input": f'{{"command": "export K={AWS_KEY}; pytest -q"}}',
    },
    {
        "session_id": "s1",
        "ts": "2026-11-20T10:00:15Z",
        "role": "tool",
        "kind": "tool_result",
        "tool_name": "bash",
        "tool_call_id": "c2",
        "text": "3 passed in 0.1s",
        "exit_code": 0,
    },
    # s2: starts 00:30 UTC, written in local time of the day before: it is this day's.
    {"session_id": "s2", "ts": "2026-11-19T23:30:00-01:00", "role": "user", "text": "what does main do?"},
    {"session_id": "s2", "ts": "2026-11-20T00:31:00Z", "role": "assistant", "text": "It parses flags."},
    # s3: started the day before: not this day's, though it goes on past midnight.
    {"session_id": "s3", "ts": "2026-11-19T23:50:00Z", "role": "user", "text": "yesterday's task"},
    {"session_id": "s3", "ts": "2026-11-20T00:10:00Z", "role": "assistant", "text": "still on it"},
    # s4: starts late this day and runs past midnight: all of it is this day's.
    {"session_id": "s4", "ts": "2026-11-20T23:55:00Z", "role": "user", "text": "late task"},
    {"session_id": "s4", "ts": "2026-11-21T00:20:00Z", "role": "assistant", "text": "done after midnight"},
    # s5: the next day's.
    {"session_id": "s5", "ts": "2026-11-21T09:00:00Z", "role": "user", "text": "tomorrow"},
]


def create_events_table(
    engine: sa.Engine,
    name: str = "agent_events",
    *,
    timestamps: bool,
    json_input: bool = False,
    schema: str | None = None,
) -> sa.Table:
    """raw_sessions' columns with an integer key; `ts` a timezone-aware timestamp or text."""
    metadata = sa.MetaData(schema=schema)
    table = sa.Table(
        name,
        metadata,
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("session_id", sa.Text),
        sa.Column("ts", sa.DateTime(timezone=True) if timestamps else sa.Text),
        sa.Column("role", sa.Text),
        sa.Column("kind", sa.Text),
        sa.Column("text", sa.Text),
        sa.Column("tool_name", sa.Text),
        sa.Column("tool_call_id", sa.Text),
        sa.Column("tool_input", sa.JSON if json_input else sa.Text),
        sa.Column("is_error", sa.Boolean),
        sa.Column("exit_code", sa.Integer),
        sa.Column("cwd", sa.Text),
        sa.Column("repo", sa.Text),
        sa.Column("git_branch", sa.Text),
        sa.Column("model", sa.Text),
    )
    metadata.create_all(engine)
    return table


def as_timestamps(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows with `ts` as aware datetimes (for a timestamp column)."""
    return [{**row, "ts": dt.datetime.fromisoformat(row["ts"].replace("Z", "+00:00"))} for row in rows]


def insert(engine: sa.Engine, table: sa.Table, rows: list[dict[str, Any]]) -> None:
    columns = [column.name for column in table.columns if column.name != "id"]
    with engine.begin() as connection:
        connection.execute(table.insert(), [{name: row.get(name) for name in columns} for row in rows])
