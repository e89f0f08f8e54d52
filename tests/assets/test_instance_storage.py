"""The instance's storage (assets/instance_storage.py): Dagster's SQLite storage whose event log keeps
its engines. Same files, same rows: what it writes, Dagster's own storage reads, and back; the UI
still follows a live run; the index keeps one connection, never shared with a forked child."""

import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pytest
from dagster._core.events.log import EventLogEntry

from assets import instance_storage
from assets.instance_storage import (
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


def _instance(home: Path, config: str | None = None) -> dg.DagsterInstance:
    home.mkdir(exist_ok=True)
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
