"""The PostgreSQL path, for real: a team's Dagster storage and adapter registry on one PostgreSQL server.

The defaults are SQLite on one machine; a team runs deploy/dagster.postgres.yaml. A config that is
never loaded rots silently, so this module starts a throwaway server (tests/postgres_server.py),
loads that very file as $DAGSTER_HOME/dagster.yaml with its DAGSTER_PG_* variables pointing at the
server, materializes one day of the ingest assets through the instance, and reads the run and its
materializations back from a fresh instance and from the tables themselves. Then the adapter
registry works in the same database, beside Dagster's tables, through a postgresql+psycopg2 URL.
And the `sql_events` source reads agent events from it: a timestamp column and JSON through a
server-side cursor, the README's example view over a JSON-payload table, read-only, its password
in no byte of the instance.

Skipped, saying why, only where PostgreSQL cannot be installed (`make test` installs Debian's
`postgresql` package as root when it is missing; the fixture tries the same).

    .venv/bin/python -m pytest tests/test_postgres.py
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import re
import shutil
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
import orjson
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
from tests.ingest.event_tables import DAY_ROWS, GITHUB_TOKEN, as_timestamps, create_events_table, insert
from tests.postgres_server import PostgresServer, PostgresUnavailable, install_from_debian, running_postgres
from trajectory_pipeline import settings
from trajectory_pipeline.ingest import sql_events
from trajectory_pipeline.ingest.days import day_bounds
from trajectory_pipeline.ingest.formats import FORMATS
from trajectory_pipeline.ingest.sql_events import SqlEventStore
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


# --- the sql_events source -------------------------------------------------------------------

EVENTS_DAY = dt.date(2026, 11, 20)
READER_PASSWORD = "rd-Pw9-unmistakable-x7Q"


@pytest.fixture(scope="module")
def agent_events(engine: sa.Engine) -> sa.Table:
    """agents.agent_events: a timestamptz `ts`, a JSON `tool_input`, the advised indexes, and a
    thousand rows of other days around the day's."""
    with engine.begin() as conn:
        conn.execute(sa.text("CREATE SCHEMA IF NOT EXISTS agents"))
    table = create_events_table(engine, timestamps=True, json_input=True, schema="agents")
    rows = [{**row, "tool_input": sa_json(row.get("tool_input"))} for row in as_timestamps(DAY_ROWS)]
    noise = [
        {
            "session_id": f"other-{i}",
            "ts": datetime(2026, 11, 1 + i % 18, 8, tzinfo=UTC),
            "role": "user",
            "text": "another day",
        }
        for i in range(1000)
    ]
    insert(engine, table, rows + noise)
    with engine.begin() as conn:
        conn.execute(sa.text("CREATE INDEX ON agents.agent_events (ts)"))
        conn.execute(sa.text("CREATE INDEX ON agents.agent_events (session_id, ts)"))
    return table


def sa_json(text: str | None) -> object:
    return None if text is None else orjson.loads(text)


def test_sql_events_streams_only_the_days_sessions_from_postgres(
    server: PostgresServer, engine: sa.Engine, agent_events: sa.Table, monkeypatch: pytest.MonkeyPatch
) -> None:
    handed: list[int] = []
    real_session = sql_events._Reader.session

    def counted(self: sql_events._Reader, rows: list[object]) -> object:
        handed.append(len(rows))
        return real_session(self, rows)  # type: ignore[arg-type]

    monkeypatch.setattr(sql_events._Reader, "session", counted)
    store = SqlEventStore(server.url(), table="agents.agent_events", batch_rows=2)
    assert "ts as timestamp" in store.check()
    items = store.read(*day_bounds(EVENTS_DAY))
    first = next(items)
    # Mid-read: the rows come through a server-side cursor, two at a time.
    with engine.connect() as conn:
        queries = conn.execute(
            sa.text("SELECT query FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND datname = :db"),
            {"db": server.database},
        ).scalars()
        assert any(re.match(r"FETCH FORWARD 2 FROM", query or "") for query in queries)
    events = [first, *items]
    # The database gave only the day's sessions (a timestamp column filters exactly): s1, s2, s4.
    assert sorted(handed) == [2, 2, 5]
    assert sorted({e.session_id for e in events}) == ["s1", "s2", "s4"]
    (call,) = [e for e in events if e.tool_call_id == "c1" and e.kind == "tool_call"]
    assert call.tool_input == '{"path":"src/parse.py"}'  # a JSON column, canonical
    assert call.ts == day_bounds(EVENTS_DAY)[0] + (10 * 3600 + 5) * 1_000_000


def test_sql_events_connections_are_read_only(server: PostgresServer, agent_events: sa.Table) -> None:
    engine = SqlEventStore(server.url(), table="agents.agent_events").engine()
    try:
        with engine.connect() as conn, pytest.raises(sa.exc.InternalError, match="read-only transaction"):
            conn.execute(sa.text("DELETE FROM agents.agent_events"))
    finally:
        engine.dispose()


def _readme_view() -> str:
    readme = (REPO_ROOT / "README.md").read_text()
    (view,) = [
        block for block in re.findall(r"```sql\n(.*?)```", readme, re.DOTALL) if "CREATE VIEW" in block
    ]
    return view


def test_the_readme_view_reads_a_json_payload_table_into_raw_sessions(
    server: PostgresServer, engine: sa.Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The README's example view, run as written, over a table whose events are one JSON payload;
    a day materialized from it through the `reader` role, whose password no stored byte holds."""
    with engine.begin() as conn:
        conn.execute(sa.text(f"CREATE ROLE reader LOGIN PASSWORD '{READER_PASSWORD}'"))
        conn.execute(
            sa.text(
                "CREATE TABLE platform_events (id bigserial PRIMARY KEY, conversation_id text, "
                "created_at timestamptz, payload jsonb)"
            )
        )
        payloads = [
            (
                "conv-1",
                "2026-11-20T09:00:00Z",
                {"type": "user_message", "content": f"fix it {GITHUB_TOKEN}", "workdir": "/srv/app"},
            ),
            (
                "conv-1",
                "2026-11-20T09:00:01Z",
                {
                    "type": "tool_call",
                    "tool": {"name": "bash", "call_id": "k1", "args": {"command": "pytest -q"}},
                },
            ),
            (
                "conv-1",
                "2026-11-20T09:00:04Z",
                {
                    "type": "tool_result",
                    "tool": {"name": "bash", "call_id": "k1"},
                    "content": "1 passed",
                    "exit_code": "0",
                },
            ),
            (
                "conv-1",
                "2026-11-20T09:00:05Z",
                {"type": "tool_result", "content": "odd", "exit_code": "zero"},
            ),
            (None, "2026-11-20T09:30:00Z", {"type": "user_message", "content": "lost"}),
        ]
        for conversation, created, payload in payloads:
            conn.execute(
                sa.text(
                    "INSERT INTO platform_events (conversation_id, created_at, payload) "
                    "VALUES (:c, :t, CAST(:p AS jsonb))"
                ),
                {"c": conversation, "t": created, "p": sa_json_text(payload)},
            )
        conn.execute(sa.text(_readme_view()))

    reader_url = sa.engine.URL.create(
        "postgresql+psycopg2",
        username="reader",
        password=READER_PASSWORD,
        host=server.host,
        port=server.port,
        database=server.database,
    ).render_as_string(hide_password=False)
    monkeypatch.setenv(settings.SQL_EVENTS_URL.name, reader_url)
    monkeypatch.setenv(settings.SQL_EVENTS_TABLE.name, "agent_events")
    monkeypatch.delenv(settings.SQL_EVENTS_COLUMNS.name, raising=False)
    off = {f"{source}_root": "" for source in FORMATS}
    day = EVENTS_DAY.isoformat()
    with dg.DagsterInstance.ephemeral() as instance:
        result = dg.materialize(
            [raw_sessions],
            partition_key=day,
            instance=instance,
            resources={
                "io_manager": ParquetIOManager(base_dir=str(tmp_path / "warehouse")),
                "session_sources": SessionSources(**off),
            },
        )
        assert result.success
        stored = "\n".join(dg.serialize_value(record) for record in instance.all_logs(result.run_id))
        failed = dg.materialize(
            [raw_sessions],
            partition_key=day,
            instance=instance,
            resources={
                "io_manager": ParquetIOManager(base_dir=str(tmp_path / "warehouse2")),
                "session_sources": SessionSources(**off, sql_events_table="no_such_view"),
            },
            raise_on_error=False,
        )
        assert not failed.success
        stored += "\n".join(dg.serialize_value(record) for record in instance.all_logs(failed.run_id))
    assert READER_PASSWORD not in stored and "reader:***@" in stored and "no such table or view" in stored

    events = pd.read_parquet(tmp_path / "warehouse" / "raw_sessions" / f"{day}.parquet")
    assert list(events["kind"]) == ["message", "tool_call", "tool_result"]
    assert list(events["role"]) == ["user", "assistant", "tool"]
    assert events["tool_input"].iloc[1] == '{"command":"pytest -q"}' and events["exit_code"].iloc[2] == 0
    assert events["cwd"].iloc[0] == "/srv/app" and events["repo"].iloc[0] == "app"
    assert GITHUB_TOKEN not in events["text"].iloc[0]
    quarantine = pd.read_parquet(tmp_path / "warehouse" / "raw_sessions_quarantine" / f"{day}.parquet")
    assert sorted(quarantine["reason"]) == ["missing_session_id", "wrong_field_type"]
    assert all(excerpt.startswith("agent_events event_id=") for excerpt in quarantine["excerpt"])
    metadata = {
        m.asset_key.to_user_string(): m.metadata
        for m in result.asset_materializations_for_node("raw_sessions")
    }
    assert metadata["raw_sessions"]["database_rows_read"].value == 5
    assert metadata["raw_sessions"]["sessions"].value == 1


def sa_json_text(value: object) -> str:
    return orjson.dumps(value).decode()
