"""The local instance's storage: Dagster's SQLite storage, its event log keeping its database engines.

Dagster's SQLite event log builds a new SQLAlchemy engine for every statement it stores and closes
its connection after each (`SqliteEventLogStorage._connect`), so every event pays for an engine,
statements compiled afresh (a new engine has an empty statement cache) and, on the shared index
database, a connection closed and a WAL checkpoint. A materialization or check result is written
three times (its run's database, then the index twice), and a range run of 150 days stores about
1,800 of them: 8 ms each, 15 s of the run. Before each check result it also asks, through yet another
new engine, whether the index has the check results' table, and before each materialization it
reflects the asset keys' columns. Here each database keeps its engine, the index keeps one
connection open, and a table or column found is remembered: 4.1 ms an event one by one where
Dagster's storage takes 10.2 (bench/bench_event_log.py, one run), with the same files, tables and
durability (WAL, fsync at each commit as before), so an instance written by either storage reads
with the other.

Dagster hands some events over as batches (`store_event_batch`): a run's planned materializations
when it starts, and the materializations of every day of a range step when it ends (1,200 events
for 150 days of the four assets), stored while the workers wait. Dagster's SQLite storage stores a
batch event by event; here a batch is one transaction per database: a range run's events cost 2.1
ms each instead of 4.1, the check results, which still come one by one, included
(bench/bench_event_log.py). Dagster batches only when `DAGSTER_EVENT_BATCH_SIZE` is above 0, so
importing this module sets it to `EVENT_BATCH_SIZE` unless the environment names a size (0: never);
every instance in the process then batches, and Dagster's own storages store a batch event by
event as before. Dagster holds a batch's events in memory until its last one: a run stopped in the
middle of a step's materializations loses those of its days, where one by one it kept the first.

A run's own database still closes its connection after each event (or batch): that close
checkpoints the WAL into `<run id>.db`, and the UI follows a live run by watching that file change.
The index's connection is replaced every `INDEX_CONNECTION_S` seconds, so a result that outlived
its statement cannot hold an old snapshot for long; while a process (the UI, the daemon) keeps it,
the index's recent writes may sit in `index.db-wal` beside `index.db`: copy both, or stop them
first.

    storage:
      custom:
        module: assets.instance_storage
        class: LocalSqliteStorage
        config:
          base_dir:
            env: DAGSTER_HOME
"""

from __future__ import annotations

import os
import threading
import weakref
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import sqlalchemy as sa
from dagster._core.events.log import EventLogEntry
from dagster._core.storage.event_log.sqlite.sqlite_event_log import (
    INDEX_SHARD_NAME,
    SQLITE_BUSY_TIMEOUT_SECONDS,
    SqliteEventLogStorage,
)
from dagster._core.storage.runs.sqlite.sqlite_run_storage import SqliteRunStorage
from dagster._core.storage.schedules.sqlite.sqlite_schedule_storage import SqliteScheduleStorage
from dagster._core.storage.sqlite_storage import (
    DagsterSqliteStorage,
    SqliteStorageConfig,
    _event_logs_directory,
    _runs_directory,
    _schedule_directory,
)
from dagster._serdes import ConfigurableClassData
from sqlalchemy.pool import NullPool, QueuePool

# Run databases whose engines are kept: the runs a process writes or reads now (a webserver may
# read thousands over its life; an engine holds its compiled statements).
RUN_ENGINES_KEPT = 16
INDEX_CONNECTION_S = 60
# Events Dagster gathers into one `store_event_batch` (it reads the variable as it stores): a range
# run's batches are its planned materializations (600 for 150 days of the four assets) and each
# output's materializations (150), so one batch each.
EVENT_BATCH_SIZE = 1000
os.environ.setdefault("DAGSTER_EVENT_BATCH_SIZE", str(EVENT_BATCH_SIZE))

_storages: weakref.WeakSet[EngineKeepingSqliteEventLogStorage] = weakref.WeakSet()
_inherited: list[object] = []  # in a forked child, the parent's pools: kept, so never closed here


class EngineKeepingSqliteEventLogStorage(SqliteEventLogStorage):
    """`SqliteEventLogStorage` with an engine per database, kept; the index's connection kept too."""

    def __init__(self, base_dir: str, inst_data: ConfigurableClassData | None = None) -> None:
        self._engines: OrderedDict[str, sa.Engine] = OrderedDict()  # before Dagster's init connects
        self._batch_thread: int | None = None  # the thread storing a batch, which holds the lock
        self._batch: dict[str, sa.Connection] = {}  # its open transaction on each database
        self._present: set[tuple[str, str]] = set()  # ("table", name) and ("asset_keys column", name)
        super().__init__(base_dir, inst_data)
        _storages.add(self)

    def store_event_batch(self, events: Sequence[EventLogEntry]) -> None:
        """The events stored as `store_event` stores each, in one transaction per database (the run's,
        then the index). A failure before the commits keeps none of them, and Dagster then stores
        them one by one. Between the two commits (a disk gone full) the run's database has kept
        them, so Dagster's retry logs them twice there, where storing one by one would have left
        them out of the index; the run fails on the full disk either way. Readers see the batch
        once it is whole; the run's database closes once, at the end, so the UI sees the run change
        then."""
        with self._db_lock:
            self._batch_thread = threading.get_ident()
            try:
                for event in events:
                    self.store_event(event)
                for conn in self._batch.values():
                    conn.commit()
            finally:
                self._batch_thread = None
                batch, self._batch = self._batch, {}
                for conn in batch.values():
                    conn.close()  # what was not committed is rolled back

    def has_table(self, table_name: str) -> bool:
        """Whether the index has the table, a yes remembered: Dagster asks before storing every check
        result (`supports_asset_checks`), each time through an engine of its own (1.4 ms, a sixth of
        the event). Tables are only ever added (migrations) or emptied (`wipe`), never dropped, so a
        yes stays true; a no is asked again."""
        known = ("table", table_name)
        if known not in self._present and super().has_table(table_name):
            self._present.add(known)
        return known in self._present

    def _has_asset_key_col_on_connection(self, conn: sa.Connection, column_name: str) -> bool:
        """`has_table`'s rule for the asset keys' columns, reflected before every stored
        materialization (0.4 ms)."""
        known = ("asset_keys column", column_name)
        if known not in self._present and super()._has_asset_key_col_on_connection(conn, column_name):
            self._present.add(known)
        return known in self._present

    @contextmanager
    def _connect(self, shard: str) -> Iterator[sa.Connection]:
        if self._batch_thread == threading.get_ident():  # in `store_event_batch`, under the lock
            yield self._batch_connection(shard)
            return
        # Dagster's own lock: one statement at a time per process, so one index connection suffices.
        with self._db_lock:
            engine = self._ready_engine(shard)
            with engine.connect() as conn, conn.begin():
                yield conn

    def _batch_connection(self, shard: str) -> sa.Connection:
        """The batch's connection to `shard`, in a transaction left open until the batch ends."""
        conn = self._batch.get(shard)
        if conn is None:
            conn = self._batch[shard] = self._ready_engine(shard).connect()
            conn.begin()
        return conn

    def _ready_engine(self, shard: str) -> sa.Engine:
        """The shard's engine, its tables made on first use (under the lock, as its callers are)."""
        engine = self._engine(shard)
        if shard not in self._initialized_dbs:  # emptied by `wipe` and `upgrade`
            self._initdb(engine)
            self._initialized_dbs.add(shard)
        return engine

    def _engine(self, shard: str) -> sa.Engine:
        engine = self._engines.get(shard)
        if engine is not None:
            self._engines.move_to_end(shard)
            return engine
        url = self.conn_string_for_shard(shard)
        if shard == INDEX_SHARD_NAME:
            # One connection kept, used under the lock by whichever thread holds it (creating the
            # tables, `_initdb` opens a second, closed when it returns).
            args = {"timeout": SQLITE_BUSY_TIMEOUT_SECONDS, "check_same_thread": False}
            engine = sa.create_engine(
                url, poolclass=QueuePool, pool_size=1, pool_recycle=INDEX_CONNECTION_S, connect_args=args
            )
        else:
            engine = sa.create_engine(
                url, poolclass=NullPool, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_SECONDS}
            )
            runs = [name for name in self._engines if name != INDEX_SHARD_NAME]
            if len(runs) >= RUN_ENGINES_KEPT:
                self._engines.pop(runs[0]).dispose()
        self._engines[shard] = engine
        return engine

    def _forget_connections(self) -> None:
        """In a forked child: leave the parent's pooled connection alone, neither used nor closed
        (SQLite's rule for a connection across a fork), and take a fresh lock (another thread of
        the parent may have held it)."""
        self._db_lock = threading.Lock()
        _inherited.extend(self._batch.values())  # a batch of another of the parent's threads
        self._batch_thread, self._batch = None, {}
        for engine in self._engines.values():
            _inherited.append(engine.pool)  # `dispose` would let it be freed, which closes it
            engine.dispose(close=False)

    def dispose(self) -> None:
        super().dispose()  # the file watcher first: it reads through these engines
        with self._db_lock:
            for engine in self._engines.values():
                engine.dispose()
            self._engines.clear()


def _after_fork_in_child() -> None:
    for storage in list(_storages):
        storage._forget_connections()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


class LocalSqliteStorage(DagsterSqliteStorage):
    """Dagster's `storage: sqlite` (the same folders and databases under `base_dir`) with the event
    log above."""

    def __init__(self, base_dir: str, inst_data: ConfigurableClassData | None = None) -> None:
        self.base_dir = base_dir
        self._run_storage = SqliteRunStorage.from_local(_runs_directory(base_dir))
        self._event_log_storage = EngineKeepingSqliteEventLogStorage(_event_logs_directory(base_dir))
        self._schedule_storage = SqliteScheduleStorage.from_local(_schedule_directory(base_dir))
        self._inst_data = inst_data
        super(DagsterSqliteStorage, self).__init__()  # past the parent, which builds its own storages

    @classmethod
    def from_config_value(  # type: ignore[override]
        cls, inst_data: ConfigurableClassData, config_value: SqliteStorageConfig
    ) -> LocalSqliteStorage:
        return cls.from_local(inst_data=inst_data, **config_value)
