"""The PostgreSQL path, for real: a team's Dagster storage and adapter registry on one PostgreSQL server.

The defaults are SQLite on one machine; a team runs deploy/dagster.postgres.yaml. A config that is
never loaded rots silently, so this module starts a throwaway server (tests/postgres_server.py),
loads that very file as $DAGSTER_HOME/dagster.yaml with its DAGSTER_PG_* variables pointing at the
server, materializes one day of the ingest assets through the instance, and reads the run and its
materializations back from a fresh instance and from the tables themselves. Then the adapter
registry works in the same database, beside Dagster's tables, through a postgresql+psycopg2 URL.

Skipped, saying why, only where PostgreSQL cannot be installed (`make test` installs Debian's
`postgresql` package as root when it is missing; the fixture tries the same).

    .venv/bin/python -m pytest tests/test_postgres.py
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import shutil
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
import pandas as pd
import pytest
import sqlalchemy as sa

from assets.decision_points import decision_points
from assets.mined_trajectories import mined_trajectories
from assets.raw_sessions import raw_sessions
from assets.rendered_splits import rendered_splits
from resources.adapter_registry import AdapterRegistryResource
from resources.parquet_io_manager import ParquetIOManager
from resources.session_sources import SessionSources
from tests.conftest import REPO_ROOT
from tests.postgres_server import PostgresServer, PostgresUnavailable, install_from_debian, running_postgres
from trajectory_pipeline.ingest.formats import FORMATS
from trajectory_pipeline.sample.corpus import SOURCE_FOLDERS, CorpusSpec, generate_corpus
from trajectory_pipeline.training.registry import SCHEMA_VERSION, AdapterRecord, AdapterRow

DEPLOY_CONFIG = REPO_ROOT / "deploy" / "dagster.postgres.yaml"
DAY = "2026-11-22"
SPEC = CorpusSpec(days=1, end_date=dt.date(2026, 11, 22), sessions_per_day=3, seed=5)
INGEST_ASSETS = [
    "raw_sessions",
    "raw_sessions_quarantine",
    "mined_trajectories",
    "decision_points",
    "rendered_splits",
]


@pytest.fixture(scope="module")
def server() -> Iterator[PostgresServer]:
    with contextlib.ExitStack() as stack:
        try:
            running = stack.enter_context(running_postgres(install_from_debian()))
        except PostgresUnavailable as exc:
            pytest.skip(f"PostgreSQL is not installed and could not be installed: {exc}")
        yield running


@pytest.fixture(scope="module")
def dagster_home(server: PostgresServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A DAGSTER_HOME whose dagster.yaml is the shipped deploy config, its variables set to the server."""
    home = tmp_path_factory.mktemp("dagster_home")
    shutil.copyfile(DEPLOY_CONFIG, home / "dagster.yaml")
    with pytest.MonkeyPatch.context() as env:
        env.setenv("DAGSTER_HOME", str(home))
        env.setenv("DAGSTER_PG_HOST", server.host)
        env.setenv("DAGSTER_PG_PORT", str(server.port))
        env.setenv("DAGSTER_PG_DB", server.database)
        env.setenv("DAGSTER_PG_USERNAME", server.user)
        env.setenv("DAGSTER_PG_PASSWORD", server.password)
        yield home


@pytest.fixture(scope="module")
def engine(server: PostgresServer) -> Iterator[sa.Engine]:
    engine = sa.create_engine(server.url())
    yield engine
    engine.dispose()


def _ingest_one_day(instance: dg.DagsterInstance, root: Path) -> dg.ExecuteInProcessResult:
    generate_corpus(root / "corpus", SPEC)
    roots = {f"{source}_root": str(root / "corpus" / sub) for source, sub in SOURCE_FOLDERS.items()}
    off = {f"{source}_root": "" for source in FORMATS if source not in SOURCE_FOLDERS}
    return dg.materialize(
        [raw_sessions, mined_trajectories, decision_points, rendered_splits],
        partition_key=DAY,
        instance=instance,
        resources={
            "io_manager": ParquetIOManager(base_dir=str(root / "warehouse")),
            "session_sources": SessionSources(**roots, **off),
        },
    )


def test_a_day_materialized_through_the_deploy_config_is_read_back_from_postgres(
    dagster_home: Path, engine: sa.Engine, tmp_path: Path
) -> None:
    with dg.DagsterInstance.from_config(str(dagster_home)) as instance:
        assert type(instance.run_storage).__module__.startswith("dagster_postgres")
        assert type(instance.event_log_storage).__module__.startswith("dagster_postgres")
        assert type(instance.schedule_storage).__module__.startswith("dagster_postgres")
        assert instance.run_retries_max_retries == 2  # the rest of the file is read too
        result = _ingest_one_day(instance, tmp_path)
        assert result.success

    # A fresh instance, as the webserver or daemon on another machine would open it.
    with dg.DagsterInstance.from_config(str(dagster_home)) as reopened:
        run = reopened.get_run_by_id(result.run_id)
        assert run is not None
        assert run.status == dg.DagsterRunStatus.SUCCESS
        assert run.tags["dagster/partition"] == DAY
        for name in INGEST_ASSETS:
            key = dg.AssetKey(name)
            records = reopened.fetch_materializations(
                dg.AssetRecordsFilter(asset_key=key, asset_partitions=[DAY]), limit=10
            ).records
            assert [r.run_id for r in records] == [result.run_id], name
            materialization = records[0].asset_materialization
            assert materialization is not None
            rows = pd.read_parquet(tmp_path / "warehouse" / name / f"{DAY}.parquet").shape[0]
            assert materialization.metadata["row_count"].value == rows, name
            assert reopened.get_materialized_partitions(key) == {DAY}, name

    # And they are PostgreSQL rows, not a SQLite file that happened to be beside the config.
    with engine.connect() as conn:
        runs = conn.execute(sa.text("SELECT count(*) FROM runs WHERE run_id = :id"), {"id": result.run_id})
        materialized = conn.execute(
            sa.text(
                "SELECT asset_key FROM event_logs WHERE run_id = :id AND partition = :day "
                "AND dagster_event_type = 'ASSET_MATERIALIZATION'"
            ),
            {"id": result.run_id, "day": DAY},
        )
        assert runs.scalar_one() == 1
        assert sorted(materialized.scalars()) == sorted(
            dg.AssetKey(name).to_string() for name in INGEST_ASSETS
        )
    assert list(dagster_home.rglob("*.db")) == []  # SQLite storage would have put runs.db here


def _record(adapter_id: str, minutes: int) -> AdapterRecord:
    return AdapterRecord(
        adapter_id=adapter_id,
        created_at=datetime(2026, 11, 22, 3, minutes, tzinfo=UTC),
        base_model="data/tiny-model",
        partition="2026-11-22",
        data_window=("2026-11-21", "2026-11-22"),
        dataset_hash="sha256:" + "cd" * 32,
        hyperparameters={"rank": 8, "learning_rate": 1e-4},
        best_val_loss=1.25,
        last_val_loss=1.5,
        best_iteration=12,
        artifact_path=f"data/artifacts/adapters/{adapter_id}",
        status="candidate",
    )


def test_the_adapter_registry_shares_the_database_with_dagster(
    dagster_home: Path, server: PostgresServer, engine: sa.Engine
) -> None:
    with dg.DagsterInstance.from_config(str(dagster_home)):
        pass  # Dagster's tables are there first, as in a team's shared database
    resource = AdapterRegistryResource(url=server.url())
    registry = resource.registry()
    registry.register(_record("week-1", minutes=0))
    registry.register(_record("week-2", minutes=5))
    registry.promote("week-1")
    promoted = registry.promote("week-2", eval_summary={"holdout_pass_rate": 0.5})
    registry.close()

    reopened = AdapterRegistryResource(url=server.url()).registry()
    assert reopened.promoted("data/tiny-model") == promoted
    assert promoted.promoted_at is not None and promoted.promoted_at.tzinfo is UTC
    assert reopened.get("week-1").status == "candidate"
    assert reopened.get("week-2").eval_summary == {"holdout_pass_rate": 0.5}
    assert [r.adapter_id for r in reopened.list()] == ["week-2", "week-1"]
    demoted = reopened.get("week-1")  # back to candidate, everything else as registered
    assert demoted == dataclasses.replace(_record("week-1", minutes=0), promoted_at=demoted.promoted_at)
    assert demoted.promoted_at is not None and demoted.promoted_at < promoted.promoted_at
    reopened.close()

    with engine.connect() as conn:
        tables = set(sa.inspect(conn).get_table_names())
        version = conn.execute(sa.text("SELECT version FROM registry_schema_version")).scalar_one()
        columns = {c["name"] for c in sa.inspect(conn).get_columns("adapters")}
    assert {"adapters", "registry_schema_version", "runs", "event_logs", "alembic_version"} <= tables
    assert version == SCHEMA_VERSION
    assert columns == {c.name for c in AdapterRow.__table__.columns}
