"""The `sql_events` source: agent events kept in a database table or view, read with SQLAlchemy.

Orchestrators and agent platforms keep their agents' events in a database. This event store
(`stores.py`) reads one table or view through any SQLAlchemy URL (`TRAJECTORY_SQL_EVENTS_URL`,
empty: off; `TRAJECTORY_SQL_EVENTS_TABLE`, default `agent_events`; both also fields of the
`session_sources` resource) into `raw_sessions`, with the file sources' guarantees.

Contract. By default the columns carry raw_sessions' own names: `session_id`, `ts` (a timestamp
column, or ISO-8601 text with an offset or `Z`; text without one is read as UTC), `role` (`user`,
`assistant`, `tool`, `system`), `kind` (raw_sessions' kinds; when null: `tool_call` for an
assistant row with a tool name, `tool_result` for a tool row, else `message`), `text` (a string,
or a list of content parts), `tool_name`, `tool_call_id`, `tool_input` (JSON text or a JSON
column), `is_error`, `exit_code`, `cwd`, `repo` (when null, named from `cwd` as the file sources
do), `git_branch`, `model`; and, when present, `event_id`, `parent_id`, `agent_id`,
`is_sidechain`, `interrupted`, `confidence`. `session_id`, `ts` and `role` are required; every
other column may be missing (null). A column mapping (`sql_events_columns`, text
`name=expression,...`, or a JSON object) maps another schema onto these names: an expression is a
column (`session_id=conversation_id`) or a path into a JSON column (`text=payload.content`,
`tool_name=payload.tool.name`, a number indexing a list), so a table whose payload is one JSON
column needs no view. `session_id` and `ts` must be columns (the day filter runs on them in the
database): where they live inside JSON, create a view (README, "A database of agent events").
The row's key is `event_id` when mapped, else the table's primary key; it orders a session's rows
of equal time, is each event's `event_id` (one column), and names a row in the quarantine.

A daily partition reads only the sessions that start that day, and the filter runs in the
database:

    SELECT e.* FROM agent_events e JOIN (
        SELECT s.session_id FROM agent_events s
        WHERE s.session_id IN (SELECT session_id FROM agent_events WHERE ts >= :lo AND ts < :hi)
          AND s.ts >= :floor
        GROUP BY s.session_id HAVING min(s.ts) >= :lo
    ) d ON e.session_id = d.session_id
    ORDER BY e.session_id, <key>

so `CREATE INDEX ON agent_events (ts)` and `CREATE INDEX ON agent_events (session_id, ts)` make a
day cost its own rows (without them, a few scans of the table per pass of days). `:floor` is
2015-01-01: a 1970 or epoch-0 time does not move a session to a day no run ingests (the row is
kept untimed and quarantined as `implausible_timestamp`, as the file sources do). On a text `ts`
(and on SQLite, which stores times as text) the bounds are dates a day wider than the span, since
text with offsets does not sort as time, and the exact day of each session is decided here from
the parsed times (a text that is no time but sorts like an earlier date, `2020-junk`, makes its
session look started then, and no day reads it: use a timestamp column where that can happen).
Rows stream in batches of `batch_rows` through a server-side cursor where the
driver has one (`stream_results`, `yield_per`); a session's rows are held until the next session
starts, so memory holds one batch and one session, whatever the day.

Nothing is dropped silently: a row that cannot be read (a value of the wrong type, malformed JSON,
an unknown role or kind, no session id) becomes a quarantine row of its day, whose `source_path`
is the table and whose excerpt names the key (`agent_events id=42: tool_input: malformed JSON
...`), and the rest of the day loads. Rows without a session go to the day of their own time
(`missing_session_id`). Texts are redacted by ingestion before anything is written, as every
source's are.

Access is read-only: the connection is put in read-only mode where the database has one
(PostgreSQL `default_transaction_read_only`, MySQL `TRANSACTION READ ONLY`, SQLite
`query_only`), a SQLite file that does not exist is an error (never created), and only SELECTs
are sent; elsewhere grant the user SELECT only. The URL's password never reaches a log, metadata
or error: the store is shown with `***` in its place, and driver errors are scrubbed of it.

    store = SqlEventStore("postgresql+psycopg2://reader@db/agents", table="agent_events")
    store.check()                       # "sql_events: postgresql+psycopg2://reader@db/agents, ..."
    for item in store.read(lo_us, hi_us):   # Event | BadLine, sessions starting in [lo, hi)
        ...
"""

from __future__ import annotations

import datetime as dt
import decimal
import os
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson
import sqlalchemy as sa

from trajectory_pipeline import settings
from trajectory_pipeline.config import knob
from trajectory_pipeline.ingest.parsers.common import WrongFieldType, content_text
from trajectory_pipeline.ingest.stores import StoreError
from trajectory_pipeline.schema import (
    DAY_US,
    EARLIEST_PLAUSIBLE_TS,
    IMPLAUSIBLE_TIMESTAMP,
    INVALID_UTF8,
    KINDS,
    MALFORMED_JSON,
    ROLES,
    UNKNOWN_RECORD_TYPE,
    WRONG_FIELD_TYPE,
    BadLine,
    Event,
    TooDeepError,
    canonical_json,
    parse_ts,
    repo_name,
)

SOURCE = "sql_events"
DEFAULT_TABLE = "agent_events"
DEFAULT_BATCH_ROWS = 2000

# A row without a session id: quarantined on the day of its own time.
MISSING_SESSION_ID = "missing_session_id"

# raw_sessions' names a row can carry, in the contract's order, then the optional extras.
FIELDS = (
    "session_id",
    "ts",
    "role",
    "kind",
    "text",
    "tool_name",
    "tool_call_id",
    "tool_input",
    "is_error",
    "exit_code",
    "cwd",
    "repo",
    "git_branch",
    "model",
)
EXTRA_FIELDS = ("event_id", "parent_id", "agent_id", "is_sidechain", "interrupted", "confidence")
ALL_FIELDS = FIELDS + EXTRA_FIELDS
REQUIRED = ("session_id", "ts", "role")
COLUMN_ONLY = ("session_id", "ts", "event_id")  # filtered or ordered on in the database

_TEXT_FIELDS = ("tool_name", "tool_call_id", "cwd", "repo", "git_branch", "model", "parent_id", "agent_id")
_BOOL_FIELDS = ("is_error", "is_sidechain", "interrupted")
_TRUE = frozenset({"true", "t", "yes", "y", "1"})
_FALSE = frozenset({"false", "f", "no", "n", "0"})

_FLOOR_DAY = dt.date(2015, 1, 1)  # EARLIEST_PLAUSIBLE_TS as a date
_EXCERPT_ROW_CHARS = 1_500


# --- configuration ---------------------------------------------------------------------------


def parse_columns(text: str) -> dict[str, str]:
    """A column mapping from `name=expression,...` text or a JSON object: raw_sessions name ->
    a column, or `column.json.path`. Raises ValueError naming the bad entry."""
    text = text.strip()
    if not text:
        return {}
    if text.startswith("{"):
        try:
            loaded = orjson.loads(text)
        except orjson.JSONDecodeError as err:
            raise ValueError(f"the column mapping is not a JSON object: {err}") from None
        if not isinstance(loaded, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in loaded.items()
        ):
            raise ValueError("the column mapping must map names to strings")
        pairs = list(loaded.items())
    else:
        pairs = []
        for item in text.split(","):
            name, sep, expression = item.partition("=")
            if not sep:
                raise ValueError(f"expected name=expression, got {item.strip()!r}")
            pairs.append((name, expression))
    mapping: dict[str, str] = {}
    for raw_name, raw_expression in pairs:
        name, expression = raw_name.strip(), raw_expression.strip()
        if name not in ALL_FIELDS:
            raise ValueError(f"{name!r} is not a raw_sessions name the source reads; use one of {ALL_FIELDS}")
        if not expression or any(not part for part in expression.split(".")):
            raise ValueError(f"{name}: {raw_expression!r} is not a column or column.json.path")
        if name in COLUMN_ONLY and "." in expression:
            raise ValueError(
                f"{name} must be a column, not a path into JSON ({expression}): the day filter and the "
                "order run on it in the database. Create a view that extracts it (README)."
            )
        if name in mapping:
            raise ValueError(f"{name} is mapped twice")
        mapping[name] = expression
    return mapping


@dataclass(frozen=True)
class SqlEventsConfig:
    """Where the sql_events source reads (the `session_sources` resource's fields)."""

    sql_events_url: str | None = knob(
        None,
        "SQL event store: the SQLAlchemy URL of the database holding agent events. Empty turns the source "
        "off. Unset: $TRAJECTORY_SQL_EVENTS_URL (off when unset). Run config is stored as typed: keep a "
        "password in the variable (or the driver's own password file), not here.",
    )
    sql_events_table: str | None = knob(
        None,
        "SQL event store: the table or view to read (schema.table allowed). Unset: "
        "$TRAJECTORY_SQL_EVENTS_TABLE, else agent_events.",
    )
    sql_events_columns: str | None = knob(
        None,
        "SQL event store: column mapping, name=expression pairs (or a JSON object), where the expression "
        "is a column or a path into a JSON column: session_id=conversation_id,ts=created_at,"
        "text=payload.content. Unmapped names are read from columns of the same name. Unset: "
        "$TRAJECTORY_SQL_EVENTS_COLUMNS.",
    )
    sql_events_batch_rows: int = knob(
        DEFAULT_BATCH_ROWS,
        "SQL event store: rows fetched per round trip through a server-side cursor; memory holds a batch "
        "and one session.",
    )

    def __post_init__(self) -> None:
        if isinstance(self.sql_events_batch_rows, bool) or self.sql_events_batch_rows < 1:
            raise ValueError(f"sql_events_batch_rows must be at least 1, got {self.sql_events_batch_rows!r}")
        if self.sql_events_columns:
            try:
                parse_columns(self.sql_events_columns)
            except ValueError as err:
                raise ValueError(f"sql_events_columns: {err}") from None

    def store(self) -> SqlEventStore | None:
        """The configured store (fields first, then the variables), or None when the source is off."""
        url = settings.sql_events_url() if self.sql_events_url is None else self.sql_events_url.strip()
        if not url:
            return None
        table = settings.sql_events_table() if self.sql_events_table is None else self.sql_events_table
        text = settings.sql_events_columns() if self.sql_events_columns is None else self.sql_events_columns
        try:
            columns = parse_columns(text)
        except ValueError as err:
            raise StoreError(f"{SOURCE}: the column mapping: {err}") from None
        return SqlEventStore(
            url,
            table.strip() or DEFAULT_TABLE,
            tuple(sorted(columns.items())),
            self.sql_events_batch_rows,
        )


# --- reading ---------------------------------------------------------------------------------


class _RowError(Exception):
    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True)
class _Plan:
    """What one read selects and how a row becomes an event: made from the reflected table."""

    schema: str | None
    table: str
    selected: tuple[str, ...]  # physical columns, in select order
    sources: dict[str, tuple[int, tuple[str, ...]]]  # field -> (selected index, JSON path)
    key: tuple[str, ...]  # the columns naming a row (may be empty)
    ts_mode: str  # "timestamp" or "text"
    naive_timestamps: bool  # a timestamp column without a time zone: bind naive UTC bounds

    def clause(self, alias: str) -> Any:
        return sa.table(self.table, *(sa.column(name) for name in self.selected), schema=self.schema).alias(
            alias
        )


@dataclass(frozen=True)
class SqlEventStore:
    """A table or view of agent events behind a SQLAlchemy URL (see the module docstring)."""

    url: str = field(repr=False)
    table: str = DEFAULT_TABLE
    columns: tuple[tuple[str, str], ...] = ()  # the column mapping, as sorted pairs
    batch_rows: int = DEFAULT_BATCH_ROWS
    name: str = SOURCE

    @property
    def label(self) -> str:
        return self.table

    def shown(self) -> str:
        """The store for logs and metadata: the URL with its password replaced by ***."""
        return f"{self.name}: {_hidden_url(self.url)}, table or view {self.table}"

    # -- connection -------------------------------------------------------------------------

    def engine(self) -> sa.Engine:
        """An engine whose connections are read-only where the database can say so."""
        try:
            url = sa.engine.make_url(self.url)
        except Exception:
            raise StoreError(
                f"{self.name}: the URL is not a SQLAlchemy URL (dialect+driver://user@host/database); "
                "check TRAJECTORY_SQL_EVENTS_URL or sql_events_url"
            ) from None
        if url.get_backend_name() == "sqlite":
            database = url.database or ""
            if database in ("", ":memory:") or database.startswith("file:"):
                pass
            elif not os.path.isfile(database):
                raise StoreError(f"{self.shown()}: no such SQLite file (it is never created)")
        try:
            engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
        except Exception as err:
            raise self._error("cannot open", err) from None
        _make_read_only(engine)
        return engine

    def _error(self, doing: str, err: BaseException) -> StoreError:
        message = str(err).strip().splitlines()[0] if str(err).strip() else ""
        if isinstance(err, ModuleNotFoundError):
            message += " (install the database's driver in this environment)"
        return StoreError(f"{self.shown()}: {doing}: {type(err).__name__}: {_scrubbed(message, self.url)}")

    def plan(self, engine: sa.Engine) -> _Plan:
        """Reflect the table's columns and resolve the mapping; a misconfiguration is a StoreError."""
        schema, _, name = self.table.rpartition(".")
        try:
            inspector = sa.inspect(engine)
            reflected = inspector.get_columns(name, schema=schema or None)
            try:
                primary = tuple(
                    inspector.get_pk_constraint(name, schema=schema or None)["constrained_columns"]
                )
            except (NotImplementedError, sa.exc.NoSuchTableError):
                primary = ()
        except sa.exc.NoSuchTableError:
            raise StoreError(
                f"{self.shown()}: no such table or view; set TRAJECTORY_SQL_EVENTS_TABLE or sql_events_table"
            ) from None
        except Exception as err:
            raise self._error("cannot read the table's columns", err) from None
        types = {column["name"]: column["type"] for column in reflected}
        mapping = dict(self.columns)
        expressions: dict[str, str] = {}
        for name_ in ALL_FIELDS:
            expression = mapping.get(name_)
            if expression is None:
                if name_ in types:
                    expressions[name_] = name_
                continue
            head = expression.split(".", 1)[0]
            if head not in types:
                raise StoreError(
                    f"{self.shown()}: the column mapping reads {name_} from {expression}, but the table "
                    f"has no column {head} (it has {', '.join(sorted(types))})"
                )
            expressions[name_] = expression
        missing = [name_ for name_ in REQUIRED if name_ not in expressions]
        if missing:
            raise StoreError(
                f"{self.shown()}: no column for {', '.join(missing)}; name them in the column mapping "
                "(sql_events_columns, e.g. session_id=conversation_id,ts=created_at)"
            )
        key = (expressions["event_id"],) if "event_id" in expressions else primary
        selected: list[str] = []
        sources: dict[str, tuple[int, tuple[str, ...]]] = {}
        for name_, expression in expressions.items():
            head, *path = expression.split(".")
            if head not in selected:
                selected.append(head)
            sources[name_] = (selected.index(head), tuple(path))
        for column in key:
            if column not in selected:
                selected.append(column)
        if "event_id" not in sources and len(key) == 1:
            sources["event_id"] = (selected.index(key[0]), ())
        ts_type = types[expressions["ts"]]
        if isinstance(ts_type, sa.Integer | sa.Float | sa.Numeric):
            raise StoreError(
                f"{self.shown()}: {expressions['ts']} holds numbers; ts must be a timestamp or ISO-8601 text "
                "column (create a view that converts it, such as to_timestamp(epoch) AS ts)"
            )
        timestamp = isinstance(ts_type, sa.DateTime) and engine.dialect.name != "sqlite"
        return _Plan(
            schema=schema or None,
            table=name,
            selected=tuple(selected),
            sources=sources,
            key=tuple(key),
            ts_mode="timestamp" if timestamp else "text",
            naive_timestamps=timestamp and not getattr(ts_type, "timezone", False),
        )

    def check(self) -> str:
        """Connect, reflect and validate; return a one-line description for the run's log."""
        engine = self.engine()
        try:
            plan = self.plan(engine)
            try:
                with engine.connect() as connection:
                    connection.execute(sa.select(*plan.clause("e").c).limit(0)).close()
            except Exception as err:
                raise self._error("cannot read", err) from None
        finally:
            engine.dispose()
        key = ", ".join(plan.key) if plan.key else "none (give one: event_id=<column>)"
        return (
            f"{self.shown()}: {len(plan.sources)} fields from {len(plan.selected)} columns, key {key}, "
            f"ts as {plan.ts_mode}"
        )

    # -- the day's rows ---------------------------------------------------------------------

    def _bounds(self, plan: _Plan, lo_us: int, hi_us: int) -> tuple[Any, Any, Any]:
        lo_day = _day_of(lo_us)
        hi_day = _day_of(hi_us - 1) + dt.timedelta(days=1)
        if plan.ts_mode == "timestamp":
            lo = dt.datetime.combine(lo_day, dt.time(), tzinfo=dt.UTC)
            hi = dt.datetime.combine(hi_day, dt.time(), tzinfo=dt.UTC)
            floor = dt.datetime.combine(_FLOOR_DAY, dt.time(), tzinfo=dt.UTC)
            if plan.naive_timestamps:
                lo, hi, floor = (value.replace(tzinfo=None) for value in (lo, hi, floor))
            return lo, hi, floor
        # ISO text: times with offsets do not sort as time, so a day wider on each side (offsets
        # run from -12:00 to +14:00); whether a session starts in the span is decided in Python.
        wide_lo = max(lo_day - dt.timedelta(days=1), _FLOOR_DAY)
        return wide_lo.isoformat(), (hi_day + dt.timedelta(days=1)).isoformat(), _FLOOR_DAY.isoformat()

    def _queries(self, plan: _Plan, lo_us: int, hi_us: int) -> tuple[sa.Select[Any], sa.Select[Any]]:
        lo, hi, floor = self._bounds(plan, lo_us, hi_us)
        session_column, ts_column = (
            plan.selected[plan.sources["session_id"][0]],
            plan.selected[plan.sources["ts"][0]],
        )
        touched, starts, events = plan.clause("touched"), plan.clause("starts"), plan.clause("e")
        # Sessions with a row in the span whose first row (from 2015 on) is not before it: the IN
        # list is the span's rows (an index on ts), the grouping probes only their sessions (an index
        # on session_id, ts); without indexes both are one scan each, never a scan per row.
        in_span = sa.select(touched.c[session_column]).where(
            touched.c[ts_column] >= lo, touched.c[ts_column] < hi, touched.c[session_column].is_not(None)
        )
        day_sessions = (
            sa.select(starts.c[session_column])
            .where(starts.c[session_column].in_(in_span), starts.c[ts_column] >= floor)
            .group_by(starts.c[session_column])
            .having(sa.func.min(starts.c[ts_column]) >= lo)
            .subquery("day_sessions")
        )
        order = [events.c[column] for column in plan.key] or [events.c[ts_column]]
        sessions = (
            sa.select(*events.c)
            .join_from(events, day_sessions, events.c[session_column] == day_sessions.c[session_column])
            .order_by(events.c[session_column], *order)
        )
        orphans = (
            sa.select(*events.c)
            .where(events.c[session_column].is_(None), events.c[ts_column] >= lo, events.c[ts_column] < hi)
            .order_by(*order)
        )
        return sessions, orphans

    def read(self, lo_us: int, hi_us: int) -> Iterator[Event | BadLine]:
        """Every event of each session whose first plausible event is in [lo_us, hi_us), and the
        quarantine rows of the span (see the module docstring)."""
        engine = self.engine()
        try:
            plan = self.plan(engine)
            sessions, orphans = self._queries(plan, lo_us, hi_us)
            reader = _Reader(self, plan, lo_us, hi_us)
            try:
                with engine.connect() as connection:
                    streaming = connection.execution_options(stream_results=True, yield_per=self.batch_rows)
                    current: Any = _NOTHING
                    rows: list[Sequence[Any]] = []
                    session_index = plan.sources["session_id"][0]
                    for row in streaming.execute(sessions):
                        if row[session_index] != current:
                            if rows:
                                yield from reader.session(rows)
                            current, rows = row[session_index], []
                        rows.append(tuple(row))
                    if rows:
                        yield from reader.session(rows)
                    for row in streaming.execute(orphans):
                        yield from reader.orphan(tuple(row))
            except StoreError:
                raise
            except sa.exc.SQLAlchemyError as err:
                raise self._error("reading failed", err) from None
        finally:
            engine.dispose()


_NOTHING = object()


class _Reader:
    """Turns a session's rows (or a row without a session) into events and quarantine rows."""

    def __init__(self, store: SqlEventStore, plan: _Plan, lo_us: int, hi_us: int) -> None:
        self.store = store
        self.plan = plan
        self.lo_us, self.hi_us = lo_us, hi_us
        self.key_index = tuple(plan.selected.index(column) for column in plan.key)

    # -- values -----------------------------------------------------------------------------

    def _raw(self, row: Sequence[Any], name: str, parsed: dict[int, Any]) -> Any:
        source = self.plan.sources.get(name)
        if source is None:
            return None
        index, path = source
        value = row[index]
        if not path:
            return value
        if index not in parsed:
            parsed[index] = _json_value(value, self.plan.selected[index])
        value = parsed[index]
        for step in path:
            if isinstance(value, dict):
                value = value.get(step)
            elif isinstance(value, list) and step.lstrip("-").isdigit():
                position = int(step)
                value = value[position] if -len(value) <= position < len(value) else None
            else:
                return None
        return value

    def _fields(self, row: Sequence[Any]) -> dict[str, Any]:
        """The row's values as raw_sessions fields (the time apart); raises _RowError."""
        parsed: dict[int, Any] = {}
        raw = {name: self._raw(row, name, parsed) for name in self.plan.sources if name != "ts"}
        out: dict[str, Any] = {}
        role = _text("role", raw.get("role"))
        if role not in ROLES:
            if role is None:
                raise _RowError(WRONG_FIELD_TYPE, f"role: expected one of {', '.join(ROLES)}, got null")
            raise _RowError(UNKNOWN_RECORD_TYPE, f"role: {role!r} is not one of {', '.join(ROLES)}")
        out["role"] = role
        for name in _TEXT_FIELDS:
            out[name] = _text(name, raw.get(name))
        out["event_id"] = _text("event_id", raw.get("event_id"))
        text = raw.get("text")
        try:
            out["text"] = content_text(_decoded("text", text) if isinstance(text, bytes) else text, "text")
        except WrongFieldType as err:
            if isinstance(text, int | float | decimal.Decimal) and not isinstance(text, bool):
                out["text"] = str(text)
            else:
                raise _RowError(WRONG_FIELD_TYPE, str(err)) from None
        out["tool_input"] = _tool_input(raw.get("tool_input"))
        for name in _BOOL_FIELDS:
            out[name] = _boolean(name, raw.get(name))
        out["is_sidechain"] = bool(out["is_sidechain"])  # flags, never null
        out["interrupted"] = bool(out["interrupted"])
        out["exit_code"] = _integer("exit_code", raw.get("exit_code"))
        out["confidence"] = _number("confidence", raw.get("confidence"))
        kind = _text("kind", raw.get("kind"))
        if kind is None:
            if role == "assistant" and out["tool_name"]:
                kind = "tool_call"
            elif role == "tool":
                kind = "tool_result"
            else:
                kind = "message"
        elif kind not in KINDS:
            raise _RowError(UNKNOWN_RECORD_TYPE, f"kind: {kind!r} is not one of {', '.join(KINDS)}")
        out["kind"] = kind
        if out["repo"] is None and out["cwd"]:
            out["repo"] = repo_name(out["cwd"], None, out["git_branch"])
        return out

    def _time(self, row: Sequence[Any]) -> int | None:
        """The row's time in µs UTC, None when null; raises _RowError when unreadable."""
        value = self._raw(row, "ts", {})
        if value is None:
            return None
        if isinstance(value, dt.datetime):
            if value.tzinfo is None:
                value = value.replace(tzinfo=dt.UTC)
            return parse_ts(value.isoformat())
        if isinstance(value, bytes):
            value = _decoded("ts", value)
        if isinstance(value, str) and value.strip():
            text = value.strip()
            micros = parse_ts(text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text)
            if micros is not None:
                return micros
        raise _RowError(WRONG_FIELD_TYPE, f"ts: expected a timestamp or ISO-8601 text, got {_shown(value)}")

    # -- rows -------------------------------------------------------------------------------

    def _where(self, row: Sequence[Any], position: int | None, session_id: str | None) -> tuple[str, int]:
        """How a row is named (its key, else its place in its session) and its line number."""
        if self.key_index:
            values = [row[i] for i in self.key_index]
            named = ", ".join(
                f"{column}={_shown(value)}" for column, value in zip(self.plan.key, values, strict=True)
            )
            line = values[0] if len(values) == 1 and type(values[0]) is int else None
            if line is None or not -(2**63) <= line < 2**63:
                line = position + 1 if position is not None else 0
            return f"{self.store.table} {named}", line
        if position is not None:
            return f"{self.store.table} row {position + 1} of session {session_id}", position + 1
        return f"{self.store.table} row", 0

    def _bad(
        self,
        row: Sequence[Any],
        reason: str,
        message: str,
        position: int | None,
        session_id: str | None,
        start: int | None,
    ) -> BadLine:
        named, line = self._where(row, position, session_id)
        shown = _row_text(self.plan.selected, row)
        return BadLine(
            SOURCE,
            self.store.table,
            line,
            reason,
            f"{named}: {message}; row {shown}",
            len(shown),
            session_id,
            start,
        )

    def session(self, rows: list[Sequence[Any]]) -> Iterator[Event | BadLine]:
        """A session's rows, in key order: its events and bad rows if it starts in the span."""
        session_id = _session_text(rows[0][self.plan.sources["session_id"][0]])
        if not session_id:
            for row in rows:
                yield from self.orphan(row)
            return
        times: list[int | None] = []
        problems: list[_RowError | None] = []
        for row in rows:
            try:
                times.append(self._time(row))
                problems.append(None)
            except _RowError as err:
                times.append(None)
                problems.append(err)
        plausible = [t for t in times if t is not None and t >= EARLIEST_PLAUSIBLE_TS]
        if not plausible:
            yield from self._undated(rows, session_id)
            return
        start = min(plausible)
        if not self.lo_us <= start < self.hi_us:
            return  # another day's session (the text bounds are a day wider)
        # Time order; an untimed row keeps its place after the row before it (events.py does the same).
        effective: list[int] = []
        last = start
        for stamp in times:
            if stamp is not None and stamp >= EARLIEST_PLAUSIBLE_TS:
                last = stamp
            effective.append(last)
        order = sorted(range(len(rows)), key=lambda i: (effective[i], i))
        for position, i in enumerate(order):
            row, stamp, problem = rows[i], times[i], problems[i]
            if problem is not None:
                yield self._bad(row, problem.reason, str(problem), position, session_id, start)
                continue
            try:
                fields = self._fields(row)
            except _RowError as err:
                yield self._bad(row, err.reason, str(err), position, session_id, start)
                continue
            except TooDeepError as err:
                yield self._bad(row, err.reason, f"tool_input: {err}", position, session_id, start)
                continue
            if stamp is not None and stamp < EARLIEST_PLAUSIBLE_TS:
                note = f"ts {_shown(self._raw(row, 'ts', {}))} is before 2015: the event is kept untimed"
                yield self._bad(row, IMPLAUSIBLE_TIMESTAMP, note, position, session_id, start)
                stamp = None
            _, line = self._where(row, position, session_id)
            yield Event(
                source=SOURCE,
                session_id=session_id,
                session_start=start,
                source_path=self.store.table,
                line_no=line,
                seq=position,
                ts=stamp,
                **fields,
            )

    def orphan(self, row: Sequence[Any]) -> Iterator[BadLine]:
        """A row without a session id, on the day of its own time."""
        try:
            stamp = self._time(row)
        except _RowError:
            stamp = None
        if stamp is None or not self.lo_us <= stamp < self.hi_us:
            return
        yield self._bad(row, MISSING_SESSION_ID, "session_id: null or empty", None, None, stamp)

    def _undated(self, rows: list[Sequence[Any]], session_id: str) -> Iterator[BadLine]:
        """A session none of whose rows has a readable time after 2015: it starts on no day, so each
        row is quarantined, on the day its time's text names (when that day is in the span)."""
        for position, row in enumerate(rows):
            value = self._raw(row, "ts", {})
            text = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value or "")
            try:
                day = dt.date.fromisoformat(text.strip()[:10])
            except ValueError:
                continue
            at = (day - dt.date(1970, 1, 1)).days * DAY_US
            if self.lo_us <= at < self.hi_us:
                message = f"ts: no row of session {session_id} has a readable time after 2015"
                yield self._bad(row, WRONG_FIELD_TYPE, message, position, session_id, at)


# --- value conversion ------------------------------------------------------------------------


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _decoded(name: str, value: bytes) -> str:
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        raise _RowError(INVALID_UTF8, f"{name}: bytes that are not UTF-8") from None


def _text(name: str, value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return _decoded(name, value)
    if isinstance(value, bool):
        raise _RowError(WRONG_FIELD_TYPE, f"{name}: expected text, got a boolean")
    if isinstance(value, int | decimal.Decimal | uuid.UUID):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    kind = type(value).__name__
    raise _RowError(
        WRONG_FIELD_TYPE, f"{name}: expected text, got {'JSON ' if kind in ('dict', 'list') else ''}{kind}"
    )


def _session_text(value: Any) -> str:
    try:
        text = _text("session_id", value)
    except _RowError:
        return ""
    return (text or "").strip()


def _boolean(name: str, value: Any) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE
    raise _RowError(WRONG_FIELD_TYPE, f"{name}: expected a boolean, got {_shown(value)}")


def _integer(name: str, value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, float | decimal.Decimal) and value == int(value):
        return int(value)
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            pass
    raise _RowError(WRONG_FIELD_TYPE, f"{name}: expected an integer, got {_shown(value)}")


def _number(name: str, value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, int | float | decimal.Decimal) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            pass
    raise _RowError(WRONG_FIELD_TYPE, f"{name}: expected a number, got {_shown(value)}")


def _json_value(value: Any, column: str) -> Any:
    """A JSON column's value: what the driver parsed (json, jsonb), or JSON text parsed here."""
    if isinstance(value, bytes):
        value = _decoded(column, value)
    if isinstance(value, str):
        if not value.strip():
            return None
        try:
            return orjson.loads(value)
        except orjson.JSONDecodeError as err:
            raise _RowError(MALFORMED_JSON, f"{column}: malformed JSON ({err})") from None
    return value


def _tool_input(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bytes):
        value = _decoded("tool_input", value)
    if isinstance(value, str):
        if not value.strip():
            return None
        try:
            value = orjson.loads(value)
        except orjson.JSONDecodeError as err:
            raise _RowError(MALFORMED_JSON, f"tool_input: malformed JSON ({err})") from None
    return canonical_json(value)


def _row_text(columns: Sequence[str], row: Sequence[Any]) -> str:
    """The row as JSON text for a quarantine excerpt (redacted by ingestion, then cut)."""
    values = {}
    for column, value in zip(columns, row, strict=True):
        if isinstance(value, bytes):
            value = value[:_EXCERPT_ROW_CHARS].decode("utf-8", "replace")
        elif isinstance(value, str):
            value = value[:_EXCERPT_ROW_CHARS]
        values[column] = value
    try:  # in select order (the contract's), so the excerpt's 200 characters show what matters first
        text = orjson.dumps(values, default=str).decode()
    except Exception:
        text = repr(values)
    return text[: _EXCERPT_ROW_CHARS * 2]


def _day_of(micros: int) -> dt.date:
    return dt.date(1970, 1, 1) + dt.timedelta(days=micros // DAY_US)


def _hidden_url(url: str) -> str:
    try:
        return sa.engine.make_url(url).render_as_string(hide_password=True)
    except Exception:
        return "(an unreadable URL)"


def _scrubbed(message: str, url: str) -> str:
    """A driver's message without the URL's password, in any spelling it may take."""
    try:
        password = sa.engine.make_url(url).password
    except Exception:
        password = None
    if password:
        for spelling in {str(password), _quoted(str(password))}:
            if spelling:
                message = message.replace(spelling, "***")
    return message


def _quoted(text: str) -> str:
    from urllib.parse import quote

    return quote(text, safe="")


def _make_read_only(engine: sa.Engine) -> None:
    """Put every connection in read-only mode where the database has one."""
    statement = {
        "postgresql": "SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY",
        "sqlite": "PRAGMA query_only = ON",
        "mysql": "SET SESSION TRANSACTION READ ONLY",
        "mariadb": "SET SESSION TRANSACTION READ ONLY",
    }.get(engine.dialect.name)
    if statement is None:
        return

    @sa.event.listens_for(engine, "connect")
    def _read_only(dbapi_connection: Any, _record: Any) -> None:
        autocommit = getattr(dbapi_connection, "autocommit", None)
        if isinstance(autocommit, bool) and engine.dialect.name != "sqlite":
            dbapi_connection.autocommit = True  # a SET outside any transaction, then as it was
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute(statement)
        finally:
            cursor.close()
            if isinstance(autocommit, bool) and engine.dialect.name != "sqlite":
                dbapi_connection.autocommit = autocommit
