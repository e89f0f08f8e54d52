"""The instance's storage (assets/instance_storage.py): Dagster's SQLite storage whose event log keeps
its engines. Same files, same rows: what it writes, Dagster's own storage reads, and back; the UI
still follows a live run; the index keeps one connection, never shared with a forked child."""

import os
import shutil
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import dagster as dg
import pytest
from dagster._core.events.log import EventLogEntry
from dagster._core.storage.event_log.sql_event_log import SqlEventLogStorage
from dagster._core.storage.event_log.sqlite.sqlite_event_log import SqliteEventLogStorage

from assets import instance_storage
from assets.instance_storage import (
    EVENT_BATCH_SIZE,
    RUN_ENGINES_KEPT,
    EngineKeepingSqliteEventLogStorage,
    LocalSqliteStorage,
)
from tests.conftest import REPO_ROOT

DAYS = dg.DailyPartitionsDefinition(start_date="2026-11-01", end_date="2026-11-05")
SQLITE_CONFIG = "storage:\n  sqlite:\n    base_dir:\n      env: DAGSTER_HOME\n"


@dg.asset(partitions_def=DAYS, check_specs=[dg.AssetCheckSpec("has_rows", asset="day_rows")])
def day_rows(context: dg.AssetExecutionContext) -> Iterator[dg.Output[int] | dg.AssetCheckResult]:
    yield dg.Output(len(context.partition_key), metadata={"day": context.partition_key})
    yield dg.AssetCheckResult(passed=True, metadata={"rows": 10})


@dg.asset(partitions_def=DAYS, backfill_policy=dg.BackfillPolicy.single_run())
def range_rows(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
    return dg.MaterializeResult(metadata={"days": len(context.partition_keys)})


def _instance(home: Path, config: str | None = None) -> dg.DagsterInstance:
    home.mkdir(parents=True, exist_ok=True)
    if config is None:
        shutil.copyfile(REPO_ROOT / "dagster.yaml", home / "dagster.yaml")
    else:
        (home / "dagster.yaml").write_text(config)
    return dg.DagsterInstance.from_config(str(home))


def _materialize(instance: dg.DagsterInstance, keys: list[str]) -> None:
    for key in keys:
        assert dg.materialize([day_rows], instance=instance, partition_key=key).success


def _what_is_stored(instance: dg.DagsterInstance) -> tuple[object, ...]:
    records = instance.fetch_materializations(dg.AssetKey("day_rows"), limit=100).records
    checks = instance.event_log_storage.get_asset_check_execution_history(
        dg.AssetCheckKey(dg.AssetKey("day_rows"), "has_rows"), limit=100
    )
    runs = instance.get_runs()
    return (
        sorted((r.partition_key, r.asset_materialization.metadata["day"].value) for r in records),  # type: ignore[union-attr]
        sorted((c.run_id, c.status.value) for c in checks),
        sorted((run.run_id, run.status.value, len(instance.all_logs(run.run_id))) for run in runs),
    )


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    return home


@pytest.fixture(scope="module")
def events() -> list[EventLogEntry]:
    """The events of one real run of `day_rows`, to store again into the storages under test."""
    with dg.DagsterInstance.ephemeral() as scratch:
        dg.materialize([day_rows], instance=scratch, partition_key="2026-11-01")
        return list(scratch.all_logs(scratch.get_runs()[0].run_id))


def test_the_repositorys_instance_keeps_dagsters_sqlite_layout(home: Path) -> None:
    with _instance(home) as instance:
        assert isinstance(instance.event_log_storage, EngineKeepingSqliteEventLogStorage)
        _materialize(instance, ["2026-11-01"])
    for path in ("history/runs.db", "history/runs/index.db", "schedules/schedules.db"):
        assert (home / path).is_file(), path


def test_what_either_storage_writes_the_other_reads(home: Path) -> None:
    with _instance(home) as ours:
        _materialize(ours, ["2026-11-01", "2026-11-02"])
        written_by_ours = _what_is_stored(ours)
    with _instance(home, SQLITE_CONFIG) as dagsters:
        assert type(dagsters.event_log_storage).__name__ == "SqliteEventLogStorage"
        assert _what_is_stored(dagsters) == written_by_ours
        _materialize(dagsters, ["2026-11-03"])
        written_by_both = _what_is_stored(dagsters)
    with _instance(home) as ours:
        assert _what_is_stored(ours) == written_by_both
    partitions, checks, runs = written_by_both
    assert [key for key, _ in partitions] == ["2026-11-01", "2026-11-02", "2026-11-03"]
    assert len(runs) == 3
    assert sum(status == "SUCCEEDED" for _, status in checks) == 3  # type: ignore[attr-defined]


def test_a_live_run_is_still_followed_by_watching_its_database(
    tmp_path: Path, events: list[EventLogEntry]
) -> None:
    """The UI follows a run by watching `<run id>.db` change: the run's database must still be written
    through, not held in a kept connection's WAL."""
    run_id = events[0].run_id
    writer = EngineKeepingSqliteEventLogStorage(str(tmp_path))
    watcher = EngineKeepingSqliteEventLogStorage(str(tmp_path))
    writer.store_event(events[0])
    seen: list[str] = []

    def follow(entry: EventLogEntry, cursor: str) -> None:
        seen.append(entry.message)

    watcher.watch(run_id, None, follow)
    try:
        for event in events[1:]:
            writer.store_event(event)
        deadline = time.monotonic() + 20
        while len(seen) < len(events) and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        watcher.end_watch(run_id, follow)
        watcher.dispose()
        writer.dispose()
    assert seen == [event.message for event in events]  # the first stored before the watch began


def test_the_index_keeps_one_connection_and_few_run_engines(
    tmp_path: Path, events: list[EventLogEntry]
) -> None:
    storage = EngineKeepingSqliteEventLogStorage(str(tmp_path))
    for n in range(RUN_ENGINES_KEPT + 4):
        for event in events:
            storage.store_event(event._replace(run_id=f"run-{n}"))
    assert len(storage._engines) == RUN_ENGINES_KEPT + 1  # the runs' and the index's
    index = storage._engines["index"]
    assert index.pool.checkedin() == 1  # type: ignore[attr-defined]
    assert len(storage.get_records_for_run("run-0").records) == len(events)  # evicted, reopened

    inherited = index.pool
    child = os.fork()
    if child == 0:  # the parent's connection left alone (kept, not closed); the child's own stores
        code = 1
        try:
            kept = any(pool is inherited for pool in instance_storage._inherited)
            left_alone = kept and index.pool is not inherited
            for event in events:
                storage.store_event(event._replace(run_id="child"))
            stored = len(storage.get_records_for_run("child").records) == len(events)
            code = 0 if left_alone and stored else 1
        finally:
            os._exit(code)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert index.pool is inherited and index.pool.checkedin() == 1  # type: ignore[attr-defined]
    for event in events:  # the parent's kept connection still writes, and sees the child's rows
        storage.store_event(event._replace(run_id="parent"))
    reader = EngineKeepingSqliteEventLogStorage(str(tmp_path))
    for log in (storage, reader):
        for run in ("child", "parent"):
            assert len(log.get_records_for_run(run).records) == len(events)
        index_runs = {
            r.run_id for r in log.fetch_materializations(dg.AssetKey("day_rows"), limit=100).records
        }
        assert {"child", "parent"} <= index_runs  # the index too
    reader.dispose()
    storage.dispose()
    assert storage._engines == {}


def test_wiped_storage_stores_again(tmp_path: Path, events: list[EventLogEntry]) -> None:
    storage = LocalSqliteStorage.from_local(str(tmp_path))
    log = storage.event_log_storage
    for event in events:
        log.store_event(event)
    log.wipe()
    assert log.get_records_for_run(events[0].run_id).records == []
    for event in events:
        log.store_event(event)
    assert len(log.get_records_for_run(events[0].run_id).records) == len(events)
    storage.dispose()


def test_the_index_is_asked_for_a_table_or_column_until_it_has_it(
    tmp_path: Path, events: list[EventLogEntry], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Dagster asks whether the index has the check results' table before storing each check
    result, and reflects the asset keys' columns before each materialization: once present they
    stay (tables are added or emptied, never dropped), so a yes is remembered and a no asked again."""
    asked: list[str] = []
    has_table, has_column = (
        SqliteEventLogStorage.has_table,
        SqlEventLogStorage._has_asset_key_col_on_connection,
    )

    def asking_for_table(storage: SqliteEventLogStorage, name: str) -> bool:
        asked.append(name)
        return has_table(storage, name)

    def asking_for_column(storage: SqlEventLogStorage, conn: object, name: str) -> bool:
        asked.append(f"asset_keys.{name}")
        return has_column(storage, conn, name)  # type: ignore[arg-type]

    monkeypatch.setattr(SqliteEventLogStorage, "has_table", asking_for_table)
    monkeypatch.setattr(SqlEventLogStorage, "_has_asset_key_col_on_connection", asking_for_column)
    storage = EngineKeepingSqliteEventLogStorage(str(tmp_path / "ours"))
    for n in range(3):
        for event in events:
            storage.store_event(event._replace(run_id=f"run-{n}"))
    assert len(asked) == len(set(asked))  # each once, in three runs
    assert {"asset_check_executions", "asset_keys.last_materialization_timestamp"} <= set(asked)

    dagsters = SqliteEventLogStorage(str(tmp_path / "dagsters"))
    for n in range(3):
        for event in events:
            dagsters.store_event(event._replace(run_id=f"run-{n}"))
    assert _stored(storage, "run-2") == _stored(dagsters, "run-2")
    assert len(_stored(storage, "run-2")[1]) == 3  # the three runs' materializations
    for name in ("asset_check_executions", "asset_event_tags", "no_such_table"):
        assert storage.has_table(name) == dagsters.has_table(name)
    asked.clear()
    assert storage.has_table("asset_check_executions") and storage.has_table("asset_event_tags")
    assert not storage.has_table("no_such_table")
    assert asked == ["no_such_table"]
    dagsters.dispose()
    storage.dispose()


def _stored(storage: SqliteEventLogStorage, run_id: str) -> tuple[object, ...]:
    """What a run left in its database and in the index: events, materializations, check results."""
    events = [
        (r.event_log_entry.dagster_event_type, r.event_log_entry.message)
        for r in storage.get_records_for_run(run_id).records
    ]
    days = sorted(
        (r.partition_key, r.run_id)
        for r in storage.fetch_materializations(dg.AssetKey("day_rows"), limit=100).records
    )
    checks = storage.get_asset_check_execution_history(
        dg.AssetCheckKey(dg.AssetKey("day_rows"), "has_rows"), limit=100
    )
    return events, days, sorted((c.run_id, c.status.value) for c in checks)


def test_a_batch_is_stored_as_its_events_one_by_one(tmp_path: Path, events: list[EventLogEntry]) -> None:
    one_by_one = EngineKeepingSqliteEventLogStorage(str(tmp_path / "one"))
    for event in events:
        one_by_one.store_event(event)
    batched = EngineKeepingSqliteEventLogStorage(str(tmp_path / "batch"))
    batched.store_event_batch(events)
    assert _stored(batched, events[0].run_id) == _stored(one_by_one, events[0].run_id)
    assert len(_stored(batched, events[0].run_id)[0]) == len(events)
    assert batched._batch == {} and batched._batch_thread is None
    batched.store_event(events[-1]._replace(run_id="next"))  # the lock was released
    for storage in (one_by_one, batched):
        storage.dispose()


def _before_each_event(
    storage: EngineKeepingSqliteEventLogStorage,
    monkeypatch: pytest.MonkeyPatch,
    hook: Callable[[EventLogEntry], None],
) -> None:
    """`hook` runs before each event a batch stores (`store_event_batch` stores them with `store_event`)."""
    store = storage.store_event

    def hooked(event: EventLogEntry) -> None:
        hook(event)
        store(event)

    monkeypatch.setattr(storage, "store_event", hooked)


def test_a_failed_batch_leaves_nothing_and_the_storage_goes_on(
    tmp_path: Path, events: list[EventLogEntry], monkeypatch: pytest.MonkeyPatch
) -> None:
    storage = EngineKeepingSqliteEventLogStorage(str(tmp_path))

    def failing_last(event: EventLogEntry) -> None:
        if event is events[-1]:
            raise OSError("disk full")

    _before_each_event(storage, monkeypatch, failing_last)
    with pytest.raises(OSError, match="disk full"):
        storage.store_event_batch(events)
    assert _stored(storage, events[0].run_id) == ([], [], [])  # neither the run's database nor the index
    monkeypatch.undo()
    storage.store_event_batch(events)  # what Dagster does next: the events again (one by one, there)
    assert len(_stored(storage, events[0].run_id)[0]) == len(events)
    storage.dispose()


def test_another_thread_waits_for_a_batch_to_end(
    tmp_path: Path, events: list[EventLogEntry], monkeypatch: pytest.MonkeyPatch
) -> None:
    storage = EngineKeepingSqliteEventLogStorage(str(tmp_path))
    storage.store_event(events[0]._replace(run_id="other"))  # its database made before the batch
    other = threading.Thread(target=storage.store_event, args=(events[1]._replace(run_id="other"),))
    waited: list[tuple[bool, int]] = []

    def starting_the_other(event: EventLogEntry) -> None:
        if not waited:
            other.start()
            other.join(0.5)
            with sqlite3.connect(tmp_path / "other.db") as db:  # past the storage and its lock
                (rows,) = db.execute("select count(*) from event_logs").fetchone()
            waited.append((other.is_alive(), rows))  # still waiting for the lock the batch holds

    _before_each_event(storage, monkeypatch, starting_the_other)
    storage.store_event_batch(events)
    other.join(20)
    assert waited == [(True, 1)] and not other.is_alive()
    assert len(storage.get_records_for_run("other").records) == 2
    assert len(storage.get_records_for_run(events[0].run_id).records) == len(events)
    storage.dispose()


def test_a_range_run_stores_its_planned_and_materialized_days_as_batches(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    batches: list[list[str]] = []
    store_batch = EngineKeepingSqliteEventLogStorage.store_event_batch

    def recording(storage: EngineKeepingSqliteEventLogStorage, batch: Sequence[EventLogEntry]) -> None:
        batches.append([event.dagster_event_type.value for event in batch])  # type: ignore[union-attr]
        store_batch(storage, batch)

    monkeypatch.setattr(EngineKeepingSqliteEventLogStorage, "store_event_batch", recording)
    days = {
        "dagster/asset_partition_range_start": "2026-11-01",
        "dagster/asset_partition_range_end": "2026-11-04",
    }
    stored = {}
    for size in (str(EVENT_BATCH_SIZE), "0"):  # 0: Dagster stores every event on its own
        monkeypatch.setenv("DAGSTER_EVENT_BATCH_SIZE", size)
        monkeypatch.setenv("DAGSTER_HOME", str(home / size))  # where the repository's dagster.yaml stores
        with _instance(home / size) as instance:
            assert dg.materialize([range_rows], instance=instance, tags=days).success
            run_id = instance.get_runs()[0].run_id
            records = instance.fetch_materializations(dg.AssetKey("range_rows"), limit=100).records
            stored[size] = (
                [e.dagster_event_type for e in instance.all_logs(run_id) if e.is_dagster_event],
                sorted((r.partition_key, r.asset_materialization.metadata["days"].value) for r in records),  # type: ignore[union-attr]
            )
    assert batches == [["ASSET_MATERIALIZATION_PLANNED"] * 4, ["ASSET_MATERIALIZATION"] * 4]
    assert stored[str(EVENT_BATCH_SIZE)] == stored["0"]
    assert [day for day, _ in stored["0"][1]] == ["2026-11-01", "2026-11-02", "2026-11-03", "2026-11-04"]


@pytest.mark.parametrize(("given", "seen"), [(None, str(EVENT_BATCH_SIZE)), ("0", "0"), ("50", "50")])
def test_the_storage_asks_dagster_for_batches_unless_a_size_is_given(given: str | None, seen: str) -> None:
    env = {key: value for key, value in os.environ.items() if key != "DAGSTER_EVENT_BATCH_SIZE"}
    if given is not None:
        env["DAGSTER_EVENT_BATCH_SIZE"] = given
    code = "import os, assets.instance_storage; print(os.environ['DAGSTER_EVENT_BATCH_SIZE'])"
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=REPO_ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [seen]
