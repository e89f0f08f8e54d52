"""The daily chain on a distributed executor, for real: dagster-celery with a Redis broker.

Debian's redis-server runs on 127.0.0.1 (tests/redis_server.py), two Celery worker processes
(`celery -A assets.celery_worker worker -P solo`) take steps from it, and the Dagster daemon runs the
instance with `TRAJECTORY_EXECUTOR=celery` and `TRAJECTORY_BACKFILL_DAYS_PER_RUN=2`. An asset backfill
of four days, submitted as the UI submits one, becomes two runs of two days; their steps run on both
workers, and every stored row equals what the same days store in one in-process run.

    .venv/bin/python -m pytest -m distributed -s     # -s prints the backfill's wall time
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

import dagster as dg
import pyarrow.parquet as pq
import pytest

from assets.decision_points import decision_points
from assets.mined_trajectories import mined_trajectories
from assets.raw_sessions import raw_sessions
from assets.rendered_splits import rendered_splits
from resources.parquet_io_manager import ParquetIOManager
from resources.session_sources import SessionSources
from tests.dagster_processes import BIN, daemon, make_instance, started, wait_for
from tests.services import require_service, unavailable
from trajectory_pipeline.ingest.formats import FORMATS
from trajectory_pipeline.sample.corpus import SOURCE_FOLDERS, CorpusSpec, generate_corpus

pytestmark = [pytest.mark.distributed, pytest.mark.slow]

DAILY = [raw_sessions, mined_trajectories, decision_points, rendered_splits]
DAYS = ("2026-11-19", "2026-11-20", "2026-11-21", "2026-11-22")
DAYS_PER_RUN = 2
WORKERS = 2
DEADLINE_S = 300  # the whole backfill on two busy cores takes about a minute
CELERY_MARKER = "in celery worker"


def source_env(corpus: Path) -> dict[str, str]:
    """TRAJECTORY_<SOURCE>_ROOT for every format: the corpus's folders, the others off."""
    return {
        f"TRAJECTORY_{source.upper()}_ROOT": str(corpus / SOURCE_FOLDERS[source])
        if source in SOURCE_FOLDERS
        else ""
        for source in FORMATS
    }


def daily_keys() -> list[dg.AssetKey]:
    return [key for assets in DAILY for key in assets.keys]


def in_process(corpus: Path, warehouse: Path, days: tuple[str, ...]) -> None:
    """The same days in one run of this process: the rows to compare with."""
    roots = {f"{source}_root": str(corpus / sub) for source, sub in SOURCE_FOLDERS.items()}
    off = {f"{source}_root": "" for source in FORMATS if source not in SOURCE_FOLDERS}
    result = dg.materialize(
        DAILY,
        tags={"dagster/asset_partition_range_start": days[0], "dagster/asset_partition_range_end": days[-1]},
        resources={
            "io_manager": ParquetIOManager(base_dir=str(warehouse)),
            "session_sources": SessionSources(**roots, **off),
        },
    )
    assert result.success


def submit_backfill(instance: dg.DagsterInstance, days: tuple[str, ...]) -> str:
    """An asset backfill of `days` over the daily assets, made as the UI's Launch backfill makes one
    (the GraphQL mutation builds the same PartitionBackfill); the daemon splits it into runs."""
    from dagster._core.execution.backfill import PartitionBackfill
    from dagster._core.utils import make_new_backfill_id

    from assets.definitions import defs

    backfill = PartitionBackfill.from_asset_partitions(
        backfill_id=make_new_backfill_id(),
        asset_graph=defs.resolve_asset_graph(),
        partition_names=list(days),
        asset_selection=daily_keys(),
        backfill_timestamp=time.time(),
        tags={},
        dynamic_partitions_store=instance,
        all_partitions=False,
        title=None,
        description=None,
        run_config=None,
    )
    instance.add_backfill(backfill)
    return backfill.backfill_id


def step_hosts(instance: dg.DagsterInstance, run_id: str) -> dict[str, str]:
    """Each step of the run and the Celery worker that executed it (from the run's engine events)."""
    hosts = {}
    for record in instance.all_logs(run_id, of_type=dg.DagsterEventType.ENGINE_EVENT):
        event = record.dagster_event
        if event is None or CELERY_MARKER not in (event.message or ""):
            continue
        metadata = event.event_specific_data.metadata  # type: ignore[union-attr]
        hosts[str(event.step_key)] = str(metadata["Celery worker"].value)
    return hosts


@contextlib.contextmanager
def celery_cluster(
    root: Path, env: Mapping[str, str], workers: int, days: tuple[str, ...]
) -> Iterator[tuple[dg.DagsterInstance, str, float]]:
    """Redis, `workers` Celery workers and the daemon, with a backfill of `days` submitted; yields the
    instance, the backfill id and the time it was submitted (monotonic), once every run is done."""
    from tests.redis_server import RedisUnavailable, running_redis

    with contextlib.ExitStack() as stack:
        try:
            broker = stack.enter_context(running_redis(root / "redis"))
        except RedisUnavailable as err:
            unavailable(f"redis-server does not start here: {err}")
        env = {**env, "TRAJECTORY_CELERY_BROKER": broker}
        logs = [root / f"worker{n}.log" for n in range(1, workers + 1)] + [root / "daemon.log"]
        for n in range(1, workers + 1):
            stack.enter_context(
                started(
                    [
                        str(BIN / "celery"),
                        "-A",
                        "assets.celery_worker",
                        "worker",
                        "-Q",
                        "dagster",
                        "-P",
                        "solo",
                        "-n",
                        f"worker{n}@%h",
                        "--without-gossip",
                        "--without-mingle",
                        "--without-heartbeat",
                        "--loglevel",
                        "INFO",
                    ],
                    root,
                    env,
                    root / f"worker{n}.log",
                )
            )
        instance = stack.enter_context(dg.DagsterInstance.from_config(env["DAGSTER_HOME"]))
        backfill_id = submit_backfill(instance, days)
        submitted = time.monotonic()
        stack.enter_context(daemon(root, env))

        def done() -> bool:
            runs = instance.get_runs(filters=dg.RunsFilter(tags={"dagster/backfill": backfill_id}))
            expected = -(-len(days) // int(env["TRAJECTORY_BACKFILL_DAYS_PER_RUN"]))
            return len(runs) == expected and all(run.is_finished for run in runs)

        wait_for("the backfill's runs to finish", done, DEADLINE_S, *logs)
        yield instance, backfill_id, submitted


def test_a_backfill_in_runs_of_two_days_spreads_over_two_celery_workers_and_stores_the_same_rows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    require_service("Celery executor", "dagster_celery", "celery", "redis")
    from tests.redis_server import find_binary

    if find_binary() is None:
        unavailable("no redis-server (`make test` installs Debian's redis-server as root)")

    spec = CorpusSpec(days=len(DAYS), end_date=dt.date.fromisoformat(DAYS[-1]), sessions_per_day=3, seed=11)
    generate_corpus(tmp_path / "corpus", spec)
    in_process(tmp_path / "corpus", tmp_path / "reference", DAYS)
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))  # the instance config reads it
    env = {
        **os.environ,
        **source_env(tmp_path / "corpus"),
        "DAGSTER_HOME": str(make_instance(tmp_path / "home")),
        "TRAJECTORY_DATA_DIR": str(tmp_path / "warehouse"),
        "TRAJECTORY_EXECUTOR": "celery",
        "TRAJECTORY_BACKFILL_DAYS_PER_RUN": str(DAYS_PER_RUN),
    }
    with celery_cluster(tmp_path, env, WORKERS, DAYS) as (instance, backfill_id, submitted):
        wall = time.monotonic() - submitted
        runs = instance.get_runs(filters=dg.RunsFilter(tags={"dagster/backfill": backfill_id}))
        assert [run.status for run in runs] == [dg.DagsterRunStatus.SUCCESS] * 2, (
            tmp_path / "daemon.log"
        ).read_text()[-4000:]
        # Runs of two days each, together the four.
        spans = sorted(
            (run.tags["dagster/asset_partition_range_start"], run.tags["dagster/asset_partition_range_end"])
            for run in runs
        )
        assert spans == [(DAYS[0], DAYS[1]), (DAYS[2], DAYS[3])]
        # Every step ran on a Celery worker, and both workers ran steps.
        hosts = {run.run_id: step_hosts(instance, run.run_id) for run in runs}
        for run_hosts in hosts.values():
            assert set(run_hosts) == {
                "raw_sessions",
                "mined_trajectories",
                "decision_points",
                "rendered_splits",
            }
        used = {host.split("@")[0] for run_hosts in hosts.values() for host in run_hosts.values()}
        assert used == {f"worker{n}" for n in range(1, WORKERS + 1)}, hosts
        materialized = instance.get_materialized_partitions(dg.AssetKey("rendered_splits"))
        assert set(DAYS) <= materialized

    # Every row the workers stored equals the in-process run's.
    stored = sorted(
        p.relative_to(tmp_path / "warehouse") for p in (tmp_path / "warehouse").rglob("*.parquet")
    )
    expected = sorted(
        p.relative_to(tmp_path / "reference") for p in (tmp_path / "reference").rglob("*.parquet")
    )
    assert stored == expected and len(stored) == 5 * len(DAYS)
    for name in stored:
        assert pq.read_table(tmp_path / "warehouse" / name).equals(
            pq.read_table(tmp_path / "reference" / name)
        ), name
    with capsys.disabled():
        print(
            f"\ncelery backfill of {len(DAYS)} days, {DAYS_PER_RUN} per run, {WORKERS} workers: {wall:.1f} s"
        )
