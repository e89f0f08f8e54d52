"""The adapter registry: one row per trained LoRA adapter, in SQLite by default or any SQLAlchemy URL.

The `lora_adapter` asset registers each adapter while it trains, `replay_eval`
fills in the eval summary and decides on promotion, and the next training run
resumes from (and the next eval compares against) the promoted adapter.

    registry = AdapterRegistry(sqlite_url(dagster_home / "adapter_registry.db"))
    with registry.registering(record) as started:   # status "training"
        train(...)                                   # -> "candidate", or "failed" if this raises
    registry.update(record.adapter_id, eval_summary=summary)
    registry.promote(record.adapter_id)
    registry.promoted(base_model=record.base_model)
    registry.record_model(record.adapter_id, "data/artifacts/models/<adapter_id>")  # promoted_model
    registry.served()                                # what `trajectory-pipeline serve` starts

Statuses: "training" while weights are being written; "candidate" once training
finished; "promoted" for the adapter in use; "rejected" when the eval said no;
"failed" when training raised, or when its run was found gone while the row still said
"training" (`fail_abandoned`); `failure_reason` says which. Promotion keeps one "promoted" adapter per base
model: promoting another sends the previous one back to "candidate" (its weights
are still good and it remains a rollback target; promoting it again rolls back).
Each adapter keeps `promoted_at`, the last time it was promoted, so the order of
promotions can be read back. "promoted" is only reachable through `promote()`.

The served model: `promoted_model` fuses a promoted adapter into its base and records the fused
folder in `model_path` (with `fused_at`); `served()` is the promoted adapter of the most recent
promotion, whose `model_path` `trajectory-pipeline serve` starts. Rolling back is promoting another
adapter: the next start serves its fused model. Columns on `adapters`, not a table of their own,
because a fused model is one per adapter and lives and dies with it (the folder is keyed by its id).

Schema versioning: a one-row `registry_schema_version` table and an ordered list
of upgrade steps (`_UPGRADES`), applied on first use inside one transaction.
Each step is idempotent (it checks the table before adding a column), so a
crashed or concurrent upgrade is safe to repeat. We chose this over Alembic
because the registry is one table that grows by nullable columns: a list of
small functions is easier to read and test than a script directory, which would
also have to be shipped as package data and whose `alembic_version` table would
collide with Dagster's own Alembic-managed tables when a team points both at
the same database. To add a column: append a step, bump nothing else.

SQLite specifics: the file (and its missing parent folders) are created 0600/0700,
since rows hold paths to people's data; SQLite gives its journal the same mode.
Every transaction starts with BEGIN IMMEDIATE, so writers from separate engines
or processes serialize (with a busy timeout) instead of failing on upgrade.
"""

from __future__ import annotations

import builtins
import contextlib
import dataclasses
import math
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event, inspect
from sqlalchemy.engine import URL, Connection, Dialect, Engine, make_url
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column
from sqlalchemy.pool import StaticPool

from trajectory_pipeline import settings
from trajectory_pipeline.parquet_io import ensure_private_dir

ADAPTER_STATUSES = ("training", "candidate", "promoted", "rejected", "failed")
# Fields `update()` may change; identity (id, creation, base model, training data) is fixed at register.
UPDATABLE_FIELDS = frozenset(
    {
        "status",
        "best_val_loss",
        "last_val_loss",
        "best_iteration",
        "eval_summary",
        "artifact_path",
        "hyperparameters",
        "failure_reason",
    }
)
FAILURE_REASON_CHARS = 2_000
SQLITE_FILE_MODE = 0o600
SQLITE_BUSY_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class AdapterRecord:
    """One trained (or training) adapter as the registry stores it."""

    adapter_id: str
    created_at: datetime  # timezone-aware; normalized to UTC
    base_model: str
    partition: str  # the weekly partition key the adapter was trained for
    data_window: tuple[str, ...]  # the daily partition keys of its training data
    dataset_hash: str
    hyperparameters: dict[str, Any]
    best_val_loss: float | None
    last_val_loss: float | None
    best_iteration: int | None
    artifact_path: str
    status: str
    eval_summary: dict[str, Any] | None = None
    parent_adapter_id: str | None = None  # the adapter this one resumed from
    promoted_at: datetime | None = None  # the last time it was promoted; set by the registry
    run_id: str | None = None  # the Dagster run that trains it
    failure_reason: str | None = None  # why it is "failed"
    model_path: str | None = None  # the fused model (promoted_model); set by record_model()
    fused_at: datetime | None = None  # when it was fused; set by the registry

    def __post_init__(self) -> None:
        if not self.adapter_id:
            raise ValueError("adapter_id must be a non-empty string, got ''")
        if self.status not in ADAPTER_STATUSES:
            raise ValueError(f"status must be one of {ADAPTER_STATUSES}, got {self.status!r}")
        object.__setattr__(self, "created_at", _utc("created_at", self.created_at))
        for name in ("promoted_at", "fused_at"):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, _utc(name, value))
        object.__setattr__(self, "data_window", tuple(self.data_window))
        for name in ("best_val_loss", "last_val_loss"):
            value = getattr(self, name)
            if value is not None and not math.isfinite(value):
                raise ValueError(f"{name} must be a finite number or None, got {value!r}")
        if self.best_iteration is not None and self.best_iteration < 0:
            raise ValueError(f"best_iteration must be >= 0 or None, got {self.best_iteration}")


def _utc(name: str, value: datetime) -> datetime:
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(f"{name} must be timezone-aware (e.g. datetime.now(UTC)), got naive {value!r}")
    return value.astimezone(UTC)


def sqlite_url(path: Path) -> str:
    """The SQLAlchemy URL of a SQLite file at `path` (made absolute, so a later chdir does not move it)."""
    return URL.create("sqlite", database=str(path.expanduser().resolve())).render_as_string()


def default_url() -> str:
    """TRAJECTORY_REGISTRY_URL, else a SQLite file beside Dagster's own storage ($DAGSTER_HOME, else
    .dagster_home), so one folder holds a laptop's whole state. Here in the core, not in the resource,
    because `trajectory-pipeline serve` reads the registry without loading Dagster."""
    configured = settings.registry_url()
    if configured:
        return configured
    home = Path(os.environ.get("DAGSTER_HOME", ".dagster_home")).expanduser()
    return sqlite_url(home / "adapters.sqlite")


class UTCDateTime(sa.TypeDecorator[datetime]):
    """Aware UTC datetimes in and out; SQLite (no time zones) stores them as naive UTC."""

    impl = sa.DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        value = _utc("datetime", value)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class _Base(DeclarativeBase):
    pass


class AdapterRow(_Base):
    """The current shape of the `adapters` table; older databases reach it through `_UPGRADES`."""

    __tablename__ = "adapters"

    adapter_id: Mapped[str] = mapped_column(sa.String(255), primary_key=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)
    base_model: Mapped[str] = mapped_column(sa.Text, nullable=False)
    partition: Mapped[str] = mapped_column(sa.String(64), nullable=False)
    data_window: Mapped[list[str]] = mapped_column(sa.JSON, nullable=False)
    dataset_hash: Mapped[str] = mapped_column(sa.String(128), nullable=False)
    hyperparameters: Mapped[dict[str, Any]] = mapped_column(sa.JSON, nullable=False)
    best_val_loss: Mapped[float | None] = mapped_column(sa.Float)
    last_val_loss: Mapped[float | None] = mapped_column(sa.Float)
    artifact_path: Mapped[str] = mapped_column(sa.Text, nullable=False)
    status: Mapped[str] = mapped_column(sa.String(32), nullable=False)
    eval_summary: Mapped[dict[str, Any] | None] = mapped_column(sa.JSON)
    # Version 2.
    best_iteration: Mapped[int | None] = mapped_column(sa.Integer)
    parent_adapter_id: Mapped[str | None] = mapped_column(sa.String(255))
    promoted_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # Version 3.
    run_id: Mapped[str | None] = mapped_column(sa.String(64))
    failure_reason: Mapped[str | None] = mapped_column(sa.Text)
    # Version 4.
    model_path: Mapped[str | None] = mapped_column(sa.Text)
    fused_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


_SCHEMA_VERSION_TABLE = sa.Table(
    "registry_schema_version",
    sa.MetaData(),
    sa.Column("id", sa.Integer, primary_key=True),  # always 1: a one-row table
    sa.Column("version", sa.Integer, nullable=False),
    sa.Column("upgraded_at", UTCDateTime, nullable=False),
)


# --- Upgrade steps. Never edit a released step; append a new one. ---


def _upgrade_1_create_adapters(conn: Connection) -> None:
    """Version 1: the table as issue 5 first described it, frozen here as it was released."""
    v1 = sa.Table(
        "adapters",
        sa.MetaData(),
        sa.Column("adapter_id", sa.String(255), primary_key=True),
        sa.Column("created_at", UTCDateTime, nullable=False),
        sa.Column("base_model", sa.Text, nullable=False),
        sa.Column("partition", sa.String(64), nullable=False),
        sa.Column("data_window", sa.JSON, nullable=False),
        sa.Column("dataset_hash", sa.String(128), nullable=False),
        sa.Column("hyperparameters", sa.JSON, nullable=False),
        sa.Column("best_val_loss", sa.Float),
        sa.Column("last_val_loss", sa.Float),
        sa.Column("artifact_path", sa.Text, nullable=False),
        sa.Column("status", sa.String(32), nullable=False),
        sa.Column("eval_summary", sa.JSON),
    )
    v1.create(conn, checkfirst=True)
    sa.Index("ix_adapters_created_at", v1.c.created_at).create(conn, checkfirst=True)


def _upgrade_2_resume_and_promotion(conn: Connection) -> None:
    """Version 2: the best checkpoint's iteration, the adapter resumed from, and promotion history."""
    _add_column(conn, "adapters", sa.Column("best_iteration", sa.Integer))
    _add_column(conn, "adapters", sa.Column("parent_adapter_id", sa.String(255)))
    _add_column(conn, "adapters", sa.Column("promoted_at", UTCDateTime))
    table = sa.Table("adapters", sa.MetaData(), autoload_with=conn)
    sa.Index("ix_adapters_base_model_status", table.c.base_model, table.c.status).create(
        conn, checkfirst=True
    )


def _upgrade_3_run_and_failure(conn: Connection) -> None:
    """Version 3: the run that trains an adapter, and why a failed one failed (a training whose run
    was killed is marked failed by whoever sees its run gone: `fail_abandoned`)."""
    _add_column(conn, "adapters", sa.Column("run_id", sa.String(64)))
    _add_column(conn, "adapters", sa.Column("failure_reason", sa.Text))


def _upgrade_4_fused_model(conn: Connection) -> None:
    """Version 4: the fused model a promoted adapter became (`promoted_model`), and when, so
    `trajectory-pipeline serve` finds what to start in the registry."""
    _add_column(conn, "adapters", sa.Column("model_path", sa.Text))
    _add_column(conn, "adapters", sa.Column("fused_at", UTCDateTime))


_UPGRADES: tuple[Callable[[Connection], None], ...] = (
    _upgrade_1_create_adapters,
    _upgrade_2_resume_and_promotion,
    _upgrade_3_run_and_failure,
    _upgrade_4_fused_model,
)
SCHEMA_VERSION = len(_UPGRADES)


def _add_column(conn: Connection, table: str, column: sa.Column[Any]) -> None:
    """ALTER TABLE ... ADD COLUMN, skipped when the column is already there (so steps can repeat)."""
    if column.name in {c["name"] for c in inspect(conn).get_columns(table)}:
        return
    preparer = conn.dialect.identifier_preparer
    ddl = column.type.compile(dialect=conn.dialect)
    conn.execute(
        sa.text(f"ALTER TABLE {preparer.quote(table)} ADD COLUMN {preparer.quote(column.name)} {ddl}")
    )


# Keys of PostgreSQL advisory locks: upgrades, and promotions (rare, so one key for all).
_UPGRADE_LOCK, _PROMOTE_LOCK = 7_301_001, 7_301_002


def _serialize(conn: Connection | Session, key: int) -> None:
    """Make concurrent transactions of this kind take turns until commit. SQLite already does
    (BEGIN IMMEDIATE); on PostgreSQL, row locks miss rows and tables another transaction is still
    creating, so two first opens could both create the schema, or two promotions both promote."""
    bind = conn.get_bind() if isinstance(conn, Session) else conn
    if bind.dialect.name == "postgresql":
        conn.execute(sa.text("SELECT pg_advisory_xact_lock(:key)"), {"key": key})


def _upgrade(conn: Connection) -> None:
    """Bring the schema to SCHEMA_VERSION; the caller holds one transaction around it."""
    _serialize(conn, _UPGRADE_LOCK)
    table = _SCHEMA_VERSION_TABLE
    table.create(conn, checkfirst=True)
    current = conn.execute(
        sa.select(table.c.version).where(table.c.id == 1).with_for_update()
    ).scalar_one_or_none()
    version = 0 if current is None else current
    if version > SCHEMA_VERSION:
        raise RuntimeError(
            f"the adapter registry's schema is version {version}, newer than this code understands "
            f"(version {SCHEMA_VERSION}); upgrade trajectory-pipeline to open it"
        )
    if version == SCHEMA_VERSION:
        return
    for step in _UPGRADES[version:]:
        step(conn)
    values = {"version": SCHEMA_VERSION, "upgraded_at": datetime.now(UTC)}
    if current is None:
        conn.execute(sa.insert(table).values(id=1, **values))
    else:
        conn.execute(sa.update(table).where(table.c.id == 1).values(**values))


# --- Engines. ---


def sqlite_file(url: str) -> Path | None:
    """The file a SQLite registry URL names: None for another database, an in-memory one or a
    `file:` URI (whose path SQLite itself reads)."""
    parsed = make_url(url)
    database = parsed.database or ""
    if parsed.get_backend_name() != "sqlite" or database in ("", ":memory:") or database.startswith("file:"):
        return None
    return Path(database)


def _make_engine(url: str) -> Engine:
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite":
        return sa.create_engine(parsed, pool_pre_ping=True)
    if (parsed.database or "") in ("", ":memory:"):
        # One shared connection, or each connection would see its own empty database.
        engine = sa.create_engine(parsed, poolclass=StaticPool, connect_args={"check_same_thread": False})
    else:
        path = sqlite_file(url)
        if path is not None:
            _create_private_sqlite_file(path)
        engine = sa.create_engine(parsed, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_S})

    # pysqlite would otherwise defer BEGIN until the first write and commit before DDL; take the
    # write lock up front so concurrent upgrades and promotions serialize (SQLAlchemy's documented recipe).
    @event.listens_for(engine, "connect")
    def _autocommit_driver(dbapi_connection: Any, connection_record: Any) -> None:
        dbapi_connection.isolation_level = None

    @event.listens_for(engine, "begin")
    def _begin_immediate(conn: Connection) -> None:
        conn.exec_driver_sql("BEGIN IMMEDIATE")

    return engine


def make_engine(url: str) -> Engine:
    """An engine on the registry's database as the registry makes it (a private SQLite file, writers
    serialized): for other tables kept beside the registry, such as the action memory."""
    return _make_engine(url)


def _create_private_sqlite_file(path: Path) -> None:
    """Create an empty SQLite file 0600 (and missing folders 0700) before SQLite creates it 0644."""
    if path.exists():
        return
    if not path.parent.exists():
        ensure_private_dir(path.parent)
    with contextlib.suppress(FileExistsError):  # another process created it first: its mode stands
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, SQLITE_FILE_MODE)
        os.fchmod(fd, SQLITE_FILE_MODE)  # the umask may only remove bits; set exactly 0600
        os.close(fd)


# --- The registry. ---


class AdapterRegistry:
    """Adapters and their status, in any database SQLAlchemy reaches; the schema is upgraded on first use."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._engine: Engine | None = None

    def close(self) -> None:
        """Release the database connections (the registry reopens on next use)."""
        if self._engine is not None:
            self._engine.dispose()
            self._engine = None

    def _session(self) -> Session:
        if self._engine is None:
            engine = _make_engine(self.url)
            try:
                with engine.begin() as conn:
                    _upgrade(conn)
            except BaseException:
                engine.dispose()
                raise
            self._engine = engine
        return Session(self._engine, expire_on_commit=False)

    def register(self, record: AdapterRecord) -> None:
        """Insert a new adapter; an id that is already registered is a ValueError."""
        if record.status == "promoted":
            raise ValueError(
                f"adapter {record.adapter_id!r}: register it as a candidate and call promote(), "
                "so the previously promoted adapter is demoted"
            )
        with self._session() as session, session.begin():
            existing = session.get(AdapterRow, record.adapter_id)
            if existing is not None:
                raise ValueError(
                    f"adapter {record.adapter_id!r} is already registered "
                    f"(status {existing.status!r}, created {existing.created_at.isoformat()})"
                )
            session.add(_to_row(record))

    def update(self, adapter_id: str, **changes: Any) -> AdapterRecord:
        """Change an adapter's status, losses, eval summary, artifact path or hyperparameters."""
        unknown = sorted(set(changes) - UPDATABLE_FIELDS)
        if unknown:
            raise TypeError(f"cannot update {unknown}; updatable fields are {sorted(UPDATABLE_FIELDS)}")
        if changes.get("status") == "promoted":
            raise ValueError(f"adapter {adapter_id!r}: use promote() to promote an adapter, not update()")
        with self._session() as session, session.begin():
            row = self._row(session, adapter_id, lock=True)
            record = dataclasses.replace(_to_record(row), **changes)  # validates the new values
            _copy_into(row, record)
            return record

    def get(self, adapter_id: str) -> AdapterRecord:
        """The adapter with this id; KeyError if there is none."""
        with self._session() as session, session.begin():
            return _to_record(self._row(session, adapter_id))

    def latest(self, *, status: str | None = None, base_model: str | None = None) -> AdapterRecord | None:
        """The newest adapter (by created_at, then id) matching the filters, or None."""
        query = sa.select(AdapterRow)
        if status is not None:
            _check_status(status)
            query = query.where(AdapterRow.status == status)
        if base_model is not None:
            query = query.where(AdapterRow.base_model == base_model)
        query = query.order_by(AdapterRow.created_at.desc(), AdapterRow.adapter_id.desc()).limit(1)
        with self._session() as session, session.begin():
            row = session.scalars(query).first()
            return None if row is None else _to_record(row)

    def promoted(self, base_model: str | None = None) -> AdapterRecord | None:
        """The adapter in use for `base_model` (or the most recently promoted of any), or None."""
        query = sa.select(AdapterRow).where(AdapterRow.status == "promoted")
        if base_model is not None:
            query = query.where(AdapterRow.base_model == base_model)
        query = query.order_by(AdapterRow.promoted_at.desc(), AdapterRow.adapter_id.desc()).limit(1)
        with self._session() as session, session.begin():
            row = session.scalars(query).first()
            return None if row is None else _to_record(row)

    def promote(self, adapter_id: str, eval_summary: dict[str, Any] | None = None) -> AdapterRecord:
        """Make this adapter the promoted one for its base model; the previous one returns to candidate.

        `eval_summary`, when given, is stored in the same transaction: a promotion never lacks the
        evaluation it rests on."""
        with self._session() as session, session.begin():
            _serialize(session, _PROMOTE_LOCK)
            row = self._row(session, adapter_id, lock=True)
            if row.status in ("training", "failed"):
                raise ValueError(
                    f"adapter {adapter_id!r} is {row.status!r}; only a finished adapter "
                    "(candidate or rejected) can be promoted"
                )
            if row.status == "promoted":
                if eval_summary is not None:
                    _copy_into(row, dataclasses.replace(_to_record(row), eval_summary=eval_summary))
                return _to_record(row)
            previous = session.scalars(
                sa.select(AdapterRow)
                .where(AdapterRow.status == "promoted", AdapterRow.base_model == row.base_model)
                .with_for_update()
            ).all()
            for other in previous:
                other.status = "candidate"
            row.status = "promoted"
            row.promoted_at = datetime.now(UTC)
            if eval_summary is not None:
                _copy_into(row, dataclasses.replace(_to_record(row), eval_summary=eval_summary))
            return _to_record(row)

    def record_model(self, adapter_id: str, model_path: str) -> AdapterRecord:
        """Record the fused model of a promoted adapter (its folder, or URL) and the time it was fused.

        Only a promoted adapter is fused: a model written for a candidate would be served by nobody."""
        with self._session() as session, session.begin():
            row = self._row(session, adapter_id, lock=True)
            if row.status != "promoted":
                raise ValueError(
                    f"adapter {adapter_id!r} is {row.status!r}; only the promoted adapter gets a fused model"
                )
            row.model_path = model_path
            row.fused_at = datetime.now(UTC)
            return _to_record(row)

    def served(self) -> AdapterRecord | None:
        """The adapter `trajectory-pipeline serve` starts: the one of the most recent promotion (of any
        base model), or None when nothing was ever promoted. Its `model_path` may still be None (promoted
        before `promoted_model` existed, or not fused yet)."""
        return self.promoted()

    def list(self, limit: int = 100) -> list[AdapterRecord]:
        """Up to `limit` adapters, newest first."""
        if limit < 1:
            raise ValueError(f"limit must be >= 1, got {limit}")
        query = (
            sa.select(AdapterRow)
            .order_by(AdapterRow.created_at.desc(), AdapterRow.adapter_id.desc())
            .limit(limit)
        )
        with self._session() as session, session.begin():
            return [_to_record(row) for row in session.scalars(query)]

    @contextlib.contextmanager
    def registering(self, record: AdapterRecord) -> Iterator[AdapterRecord]:
        """Register `record` as "training"; on exit mark it "candidate", or "failed" if the block raised.

        Each status change is its own committed transaction, so the row is visible while training runs,
        and an interrupted run (including KeyboardInterrupt) is never left looking like a candidate.
        """
        started = dataclasses.replace(record, status="training")
        self.register(started)
        try:
            yield started
        except BaseException as exc:
            try:
                reason = f"{type(exc).__name__}: {exc}"[:FAILURE_REASON_CHARS]
                self.update(record.adapter_id, status="failed", failure_reason=reason)
            except Exception as mark_error:
                exc.add_note(f"and marking adapter {record.adapter_id!r} as failed also failed: {mark_error}")
            raise
        # The block may already have set a final status (e.g. rejected); only finish a "training" one.
        if self.get(record.adapter_id).status == "training":
            self.update(record.adapter_id, status="candidate")

    def fail_abandoned(self, run_gone: Callable[[str], str | None]) -> builtins.list[AdapterRecord]:
        """Mark "failed" every "training" adapter whose run is gone; returns them, failed.

        A run killed with SIGKILL (the OOM killer, a reboot, `kill -9`) never reaches `registering`'s
        handler, so its row would say "training" forever. `run_gone(run_id)` says why the run that
        trains an adapter is no longer running (ended, or its worker is dead), or None while it runs or
        when it cannot tell; that reason is stored. Rows without a run id (written before version 3)
        are left alone. Each row is re-read under a lock, so a training that just finished stays.
        """
        with self._session() as session, session.begin():
            candidates = session.execute(
                sa.select(AdapterRow.adapter_id, AdapterRow.run_id).where(
                    AdapterRow.status == "training", AdapterRow.run_id.is_not(None)
                )
            )
            training = [(str(adapter_id), str(run_id)) for adapter_id, run_id in candidates.all()]
        failed: builtins.list[AdapterRecord] = []
        for adapter_id, run_id in training:
            reason = run_gone(run_id)
            if reason is None:
                continue
            with self._session() as session, session.begin():
                row = self._row(session, adapter_id, lock=True)
                if row.status != "training":
                    continue
                row.status = "failed"
                row.failure_reason = reason[:FAILURE_REASON_CHARS]
                failed.append(_to_record(row))
        return failed

    def _row(self, session: Session, adapter_id: str, *, lock: bool = False) -> AdapterRow:
        query = sa.select(AdapterRow).where(AdapterRow.adapter_id == adapter_id)
        row = session.scalars(query.with_for_update() if lock else query).first()
        if row is None:
            raise KeyError(f"no adapter {adapter_id!r} in the registry at {_safe_url(self.url)}")
        return row


def _check_status(status: str) -> None:
    if status not in ADAPTER_STATUSES:
        raise ValueError(f"status must be one of {ADAPTER_STATUSES}, got {status!r}")


def _safe_url(url: str) -> str:
    return make_url(url).render_as_string(hide_password=True)


def _to_row(record: AdapterRecord) -> AdapterRow:
    row = AdapterRow(adapter_id=record.adapter_id, created_at=record.created_at)
    _copy_into(row, record)
    row.promoted_at = record.promoted_at
    row.model_path = record.model_path
    row.fused_at = record.fused_at
    return row


def _copy_into(row: AdapterRow, record: AdapterRecord) -> None:
    row.base_model = record.base_model
    row.partition = record.partition
    row.data_window = list(record.data_window)
    row.dataset_hash = record.dataset_hash
    row.hyperparameters = dict(record.hyperparameters)
    row.best_val_loss = record.best_val_loss
    row.last_val_loss = record.last_val_loss
    row.best_iteration = record.best_iteration
    row.artifact_path = record.artifact_path
    row.status = record.status
    row.eval_summary = None if record.eval_summary is None else dict(record.eval_summary)
    row.parent_adapter_id = record.parent_adapter_id
    row.run_id = record.run_id
    row.failure_reason = record.failure_reason


def _to_record(row: AdapterRow) -> AdapterRecord:
    return AdapterRecord(
        adapter_id=row.adapter_id,
        created_at=row.created_at,
        base_model=row.base_model,
        partition=row.partition,
        data_window=tuple(row.data_window),
        dataset_hash=row.dataset_hash,
        hyperparameters=dict(row.hyperparameters),
        best_val_loss=row.best_val_loss,
        last_val_loss=row.last_val_loss,
        best_iteration=row.best_iteration,
        artifact_path=row.artifact_path,
        status=row.status,
        eval_summary=None if row.eval_summary is None else dict(row.eval_summary),
        parent_adapter_id=row.parent_adapter_id,
        promoted_at=row.promoted_at,
        run_id=row.run_id,
        failure_reason=row.failure_reason,
        model_path=row.model_path,
        fused_at=row.fused_at,
    )
