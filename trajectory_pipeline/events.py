"""Putting one session's raw_sessions rows in the order things happened.

Mining and decision-point extraction both walk a session event by event and
refer to positions in it (an attempt is the ordinals `first_ordinal..last_ordinal`),
so they must agree on one order: this module is that order.

Rule: events sort by time; an event without a time takes the time of the event
before it in the same file (or the session start), so file order decides ties and
untimed sources (SWE-agent) keep their file order. Sub-agent (sidechain) files
interleave with the main file by time. Ties break on (source_path, seq).

    from trajectory_pipeline.events import order_session_events, session_event_order
    ordered = order_session_events(events)  # the rows in order, with `ordinal`
    rows, ordinals = session_event_order(events)  # just the permutation, for callers that take columns

Speed: the order is computed on NumPy sort keys (what pandas' multi-column `sort_values` sorts
on), with the forward fill done on row positions, and the frame is taken once: a day's 32k events
order in about 7 ms instead of 16.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Collection, Iterator, Sequence
from typing import Any, TypeVar

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

_V = TypeVar("_V")

ORDER_COLUMNS = ("session_id", "source_path", "seq", "ts", "session_start")


def order_session_events(events: pd.DataFrame) -> pd.DataFrame:
    """The events of one or more sessions, sorted as described above, with a 0-based `ordinal`
    per session and a fresh RangeIndex."""
    if events.empty:
        return events.assign(ordinal=pd.Series(dtype="int64"))
    rows, ordinals = session_event_order(events)
    frame = events.take(rows).reset_index(drop=True)
    frame["ordinal"] = ordinals
    return frame


def session_event_order(events: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Row positions of `events` in `order_session_events` order, and each of those rows' ordinal.

    Reads only the `ORDER_COLUMNS`, so a caller can order a frame of just those and take the
    columns it needs from the full frame once.
    """
    missing = [name for name in ORDER_COLUMNS if name not in events.columns]
    if missing:
        raise ValueError(f"ordering events needs the columns {missing}; got {list(events.columns)}")
    unnamed = int(events["session_id"].isna().sum())
    if unnamed:
        raise ValueError(f"every event needs a session_id; {unnamed} of {len(events)} lack one")
    session, path = _sort_key(events["session_id"]), _sort_key(events["source_path"])
    by_file = np.lexsort((_sort_key(events["seq"]), path, session))
    session, path = session[by_file], path[by_file]
    has_path = events["source_path"].notna().to_numpy()[by_file]
    when = _sort_key(_file_times(events, by_file, _runs(session) | _runs(path), has_path))
    # Stable, and by_file is already in (source_path, seq) order within a session: sorting on
    # (session, when) alone gives the (session, when, source_path, seq) order.
    by_time = np.lexsort((when, session))
    session = session[by_time]
    position = np.arange(len(session))
    ordinals = position - np.maximum.accumulate(np.where(_runs(session), position, 0))
    return by_file[by_time], ordinals


def _sort_key(column: pd.Series) -> np.ndarray:
    """What pandas' multi-column `sort_values` sorts a column by: NumPy numbers as they are
    (NaN sorts last), anything else as ordered category codes with missing values last."""
    if isinstance(column.dtype, np.dtype) and column.dtype.kind in "fiub":
        return column.to_numpy()
    categories = pd.Categorical(column, ordered=True)
    codes = categories.codes
    return np.where(codes == -1, len(categories.categories), codes)


def _runs(keys: np.ndarray) -> np.ndarray:
    """Where a new run of equal keys starts."""
    starts = np.ones(len(keys), dtype=bool)
    starts[1:] = keys[1:] != keys[:-1]
    return starts


def _file_times(
    events: pd.DataFrame, by_file: np.ndarray, new_file: np.ndarray, has_path: np.ndarray
) -> pd.Series:
    """Each event's time, rows in `by_file` order: its own `ts`, else that of the latest earlier
    timed event of the same file, else the session start. `new_file` marks where a file starts."""
    times = events["ts"].take(by_file).reset_index(drop=True)
    position = np.arange(len(times))
    file_start = np.maximum.accumulate(np.where(new_file, position, 0))
    latest_timed = np.maximum.accumulate(np.where(times.notna().to_numpy(), position, -1))
    # an event without a source_path is in no file, so it inherits no time (nor keeps its own)
    inherits = (latest_timed >= file_start) & has_path
    inherited = times.take(np.where(inherits, latest_timed, position)).reset_index(drop=True)
    starts = events["session_start"].take(by_file).reset_index(drop=True)
    return inherited.where(inherits, starts)


# ---------------------------------------------------------------- columns as plain lists


def rows_table(rows: Sequence[dict[str, Any]], schema: pa.Schema) -> pa.Table:
    """The rows (dicts with at least the schema's names as keys) as a table of that schema.

    Each row's values are taken in one C call and transposed by `zip`: half the time of a list
    per column, for the thousands of rows a day gives.
    """
    names = schema.names
    if not rows or len(names) == 1:  # itemgetter of one key gives the value, not a 1-tuple
        return pa.table({name: [row[name] for row in rows] for name in names}, schema=schema)
    return tuples_table(list(map(operator.itemgetter(*names), rows)), schema)


def tuples_table(rows: Sequence[Sequence[Any]], schema: pa.Schema) -> pa.Table:
    """Rows given as tuples in the schema's column order, as a table: transposed by `zip`, a list
    per column."""
    if not rows:
        return schema.empty_table()
    columns = map(list, zip(*rows, strict=True))
    return pa.table(dict(zip(schema.names, columns, strict=True)), schema=schema)


REQUIRED_COLUMNS = ("session_id", "source", "source_path", "seq", "role", "kind")
_OPTIONAL_TEXT = (
    "text",
    "tool_name",
    "tool_call_id",
    "tool_input",
    "cwd",
    "repo",
    "git_branch",
    "model",
    "agent_id",
)


_NUMERIC_OPTIONAL = ("is_error", "exit_code", "confidence", "is_sidechain", "interrupted")
# Every column mining reads: ordering drags each column of the frame along, so it gets only these.
READ_COLUMNS = (*REQUIRED_COLUMNS, *_OPTIONAL_TEXT, *_NUMERIC_OPTIONAL, "ts", "session_start")
# The columns annotating calls reads (`annotate_calls`, `annotate_attempts`).
CALL_COLUMNS = (
    *REQUIRED_COLUMNS,
    "text",
    "tool_name",
    "tool_call_id",
    "tool_input",
    "agent_id",
    "is_error",
    "exit_code",
    "is_sidechain",
)


def ordered_columns(
    events: pd.DataFrame, names: Sequence[str] | None = None, sessions: Collection[str] | None = None
) -> pd.DataFrame:
    """`order_session_events(events)`, with only the columns `names` (those present; all by
    default) and only the rows of `sessions` (all by default).

    The order depends on the sort keys alone, so it is computed on them and the wanted rows and
    columns are taken once: sorting the whole frame, twice, moves every column it holds.
    """
    wanted = events.columns if names is None else dict.fromkeys(names)
    keep = [name for name in wanted if name in events.columns]
    keys = events[[name for name in ORDER_COLUMNS if name in events.columns]]
    if sessions is None:
        rows = np.arange(len(events))
    else:  # ordinals count within a session, so the other sessions change nothing
        rows = _rows_of_sessions(events["session_id"], sessions)
        keys = keys.take(rows)
    order, ordinals = session_event_order(keys)
    frame = events[keep].take(rows[order]).reset_index(drop=True)
    frame["ordinal"] = ordinals
    return frame


def ordered_table(
    events: pa.Table, names: Sequence[str], sessions: Collection[str] | None = None
) -> pa.Table:
    """`ordered_columns` of a raw_sessions Arrow table, as an Arrow table (with `ordinal`).

    The day stages read Parquet into Arrow: ordering there, and taking the columns with Arrow's
    `take`, skips pandas' `take` of Arrow-backed columns, which costs twice as much. The order is
    the same: it is computed by `session_event_order` on the sort keys as pandas gives them.
    """
    present = set(events.column_names)
    keep = [name for name in dict.fromkeys(names) if name in present]
    rows, ordinals = event_rows(events, sessions)
    return events.select(keep).take(rows).append_column("ordinal", pa.array(ordinals, pa.int64()))


def event_rows(keys: pa.Table, sessions: Collection[str] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The rows of a raw_sessions Arrow table in `ordered_table`'s order (only those of `sessions`,
    when given), and each one's ordinal. Reads only the `ORDER_COLUMNS` of `keys`, so a caller
    reading a day from Parquet can order its sort keys first and then take every other column as
    it reads it (`day_stages`)."""
    frame = keys.select([name for name in ORDER_COLUMNS if name in keys.column_names]).to_pandas()
    if sessions is None:
        rows = np.arange(len(frame))
    else:  # ordinals count within a session, so the other sessions change nothing
        rows = _rows_of_sessions(frame["session_id"], sessions)
        frame = frame.take(rows)
    order, ordinals = session_event_order(frame)
    return rows[order], ordinals


def session_starts(ordered: pa.Table) -> np.ndarray:
    """The row of each session's first event (ordinal 0) in `ordered` (an `ordered_table`), in order."""
    return pc.indices_nonzero(pc.equal(ordered.column("ordinal"), 0)).to_numpy().astype(np.int64)


def session_runs(ordered: pa.Table, events_at_most: int) -> Iterator[pa.Table]:
    """`ordered` (an `ordered_table`) in consecutive runs of whole sessions, each of at most
    `events_at_most` events unless one session alone holds more: slices, no copies. A day's events
    as Python lists were most of a mining worker's memory; a run's lists are a few MiB."""
    starts = session_starts(ordered).tolist()
    begin = 0
    for start, stop in zip(starts, [*starts[1:], ordered.num_rows], strict=True):
        if start > begin and stop - begin > events_at_most:
            yield ordered.slice(begin, start - begin)
            begin = start
    if ordered.num_rows > begin:
        yield ordered.slice(begin)


def _rows_of_sessions(session_ids: pd.Series, sessions: Collection[str]) -> np.ndarray:
    """Positions of the rows whose session is one of `sessions`, as `session_ids.isin(sessions)`.

    Decided once per distinct session: `isin` on Arrow strings makes a pyarrow scalar of every
    value asked about, 4 ms for a day's thousand sessions.
    """
    codes, uniques = pd.factorize(session_ids)
    wanted = set(sessions)
    # one more slot, False, for code -1: a missing session_id is in no session
    keep = np.array([value in wanted for value in uniques] + [False], dtype=bool)
    return np.flatnonzero(keep[codes])


def _objects(series: pd.Series) -> list[Any]:
    """Values as Python objects with every missing value (NaN, NA, NaT) as None."""
    if isinstance(series.dtype, pd.StringDtype):
        # pyarrow hands out None for missing strings itself, without an object array in between.
        return pa.array(series).to_pylist()
    values = series.astype(object)
    return values.where(series.notna(), None).tolist()


def _is_numpy(series: pd.Series, kind: str) -> bool:
    return isinstance(series.dtype, np.dtype) and series.dtype.kind == kind


def _numbers(series: pd.Series) -> list[Any]:
    """`_objects` of a numeric column; a NumPy float column's only missing value is NaN."""
    if _is_numpy(series, "f"):
        return [None if v != v else v for v in series.tolist()]
    return _objects(series)


def _ints(series: pd.Series) -> list[int]:
    if _is_numpy(series, "i"):  # already Python ints
        return series.tolist()
    return [int(v) for v in series.tolist()]


def _micros(series: pd.Series) -> list[int | None]:
    if pd.api.types.is_integer_dtype(series.dtype):
        return [int(v) for v in series.tolist()]
    stamps = pd.to_datetime(series, utc=True).dt.as_unit("us")
    raw = stamps.to_numpy(dtype="datetime64[us]", na_value=np.datetime64("NaT")).view("int64")
    missing = stamps.isna().to_numpy()
    return [None if gone else int(v) for v, gone in zip(raw.tolist(), missing.tolist(), strict=True)]


def _flag_values(series: pd.Series) -> list[bool]:
    if _is_numpy(series, "b"):
        return series.tolist()
    return [v is True or v == 1 for v in _objects(series)]


class EventLists:
    """An events frame's columns as plain Python lists, each kind of column converted its own way:
    what mining and decision-point extraction read, row by row."""

    def __init__(self, frame: pd.DataFrame) -> None:
        self.frame = frame
        self.n = len(frame)

    def has(self, name: str) -> bool:
        return name in self.frame.columns

    def names(self) -> list[str]:
        return list(self.frame.columns)

    def _series(self, name: str) -> pd.Series:
        return self.frame[name]

    def values(self, name: str) -> list[Any]:
        """The column's values as Python objects, None for every kind of missing value."""
        return _objects(self._series(name))

    def strings(self, name: str) -> list[str]:
        """A required text column, every value a str."""
        return self._series(name).astype(str).tolist()

    def ints(self, name: str) -> list[int]:
        """A required integer column."""
        return _ints(self._series(name))

    def texts(self, name: str) -> list[Any]:
        """`values` of an optional column; all None where the frame lacks it."""
        return self.values(name) if self.has(name) else [None] * self.n

    def optional_ints(self, name: str) -> list[int | None]:
        return self._optional(name, int)

    def optional_bools(self, name: str) -> list[bool | None]:
        return self._optional(name, bool)

    def optional_floats(self, name: str) -> list[float | None]:
        return self._optional(name, float)

    def _optional(self, name: str, kind: Callable[[Any], _V]) -> list[_V | None]:
        """An optional numeric column as `kind`, None where missing (and where the frame lacks it)."""
        if not self.has(name):
            return [None] * self.n
        return [None if v is None else kind(v) for v in _numbers(self._series(name))]

    def flags(self, name: str) -> list[bool]:
        """True where the value is True (or 1); False where missing, and where the frame lacks it."""
        return _flag_values(self._series(name)) if self.has(name) else [False] * self.n

    def micros(self, name: str) -> list[int | None]:
        """Timestamps as integer microseconds since the epoch, None where missing."""
        return _micros(self._series(name)) if self.has(name) else [None] * self.n


class ArrowEventLists(EventLists):
    """`EventLists` of an Arrow table (`ordered_table`), giving the same lists: `to_pylist` of the
    Arrow column where its type gives the values pandas would (strings, integers, booleans, floats
    with NaN as None, microsecond times), else the pandas conversion of that one column. A day's
    lists take a third less time, and a column read by two passes is converted once."""

    def __init__(self, table: pa.Table) -> None:
        self.table = table
        self.n = table.num_rows
        self._names = set(table.column_names)
        self._plain_lists: dict[str, list[Any]] = {}

    def has(self, name: str) -> bool:
        return name in self._names

    def names(self) -> list[str]:
        return self.table.column_names

    def _series(self, name: str) -> pd.Series:
        return self.table.select([name]).to_pandas()[name]

    def _plain(self, name: str) -> list[Any] | None:
        """`values` straight from Arrow, when the column's type allows (kept for reuse)."""
        known = self._plain_lists.get(name)
        if known is None:
            column = self.table.column(name)
            kind = column.type
            # pandas turns integers with gaps into floats
            if name in _FEW_DISTINCT and _is_text(kind):
                known = _repeated_strings(column)
            elif (
                _is_text(kind)
                or pa.types.is_boolean(kind)
                or (pa.types.is_integer(kind) and not column.null_count)
            ):
                known = column.to_pylist()
            elif pa.types.is_floating(kind):
                known = [None if v != v else v for v in column.to_pylist()]  # NaN is missing
            else:
                return None
            self._plain_lists[name] = known
        return known

    def _kind(self, name: str) -> pa.DataType | None:
        return self.table.schema.field(name).type if self.has(name) else None

    def values(self, name: str) -> list[Any]:
        plain = self._plain(name)
        return super().values(name) if plain is None else plain

    def strings(self, name: str) -> list[str]:
        kind = self._kind(name)
        if kind is not None and _is_text(kind) and not self.table.column(name).null_count:
            return self.values(name)
        return super().strings(name)

    def ints(self, name: str) -> list[int]:
        kind = self._kind(name)
        if kind is not None and pa.types.is_integer(kind) and not self.table.column(name).null_count:
            return self.values(name)
        return super().ints(name)

    def optional_ints(self, name: str) -> list[int | None]:
        kind = self._kind(name)
        if kind is not None and pa.types.is_integer(kind):
            return self.table.column(name).to_pylist()
        return super().optional_ints(name)

    def optional_bools(self, name: str) -> list[bool | None]:
        kind = self._kind(name)
        if kind is not None and pa.types.is_boolean(kind):
            return self.values(name)
        return super().optional_bools(name)

    def optional_floats(self, name: str) -> list[float | None]:
        kind = self._kind(name)
        if kind is not None and pa.types.is_floating(kind):
            return self.values(name)
        return super().optional_floats(name)

    def flags(self, name: str) -> list[bool]:
        kind = self._kind(name)
        if kind is not None and pa.types.is_boolean(kind):
            return pc.fill_null(self.table.column(name), False).to_pylist()
        return super().flags(name)

    def micros(self, name: str) -> list[int | None]:
        kind = self._kind(name)
        if isinstance(kind, pa.TimestampType) and kind.unit == "us":
            return self.table.column(name).cast(pa.int64()).to_pylist()  # the instant, whatever the zone
        return super().micros(name)


# Text columns that repeat a few values all day (a session's id and file on each of its events).
_FEW_DISTINCT = frozenset({"session_id", "source", "source_path", "role", "kind", "cwd"})


def _repeated_strings(column: pa.ChunkedArray) -> list[str | None]:
    """`column.to_pylist()` of a text column of few distinct values, each made into a Python string
    once: a third less time for these columns, and equal values share one object (whose hash is
    then computed once)."""
    encoded = pc.dictionary_encode(column.combine_chunks())
    values = [*encoded.dictionary.to_pylist(), None]  # the last for missing values
    indices = encoded.indices.fill_null(len(values) - 1).to_numpy(zero_copy_only=False)
    return list(map(values.__getitem__, indices.tolist()))


def _is_text(kind: pa.DataType) -> bool:
    return pa.types.is_string(kind) or pa.types.is_large_string(kind)
