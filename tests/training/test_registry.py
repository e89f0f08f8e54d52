"""The adapter registry decides which adapter the next eval compares against and training resumes from.

So a lost row, a half-registered adapter, an old database that no longer opens, or a world-readable
file would each quietly break the weekly loop. Everything runs against real SQLite files in tmp_path.
The error cases (unknown ids, bad updates) are parametrized tables: each row is one way a caller can
get it wrong, and all of them must fail loudly with a message that names what was wrong.
"""

from __future__ import annotations

import os
import sqlite3
import stat
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from trajectory_pipeline.training.registry import (
    SCHEMA_VERSION,
    AdapterRecord,
    AdapterRegistry,
    AdapterRow,
    sqlite_url,
)

T0 = datetime(2025, 3, 3, 9, 0, tzinfo=UTC)


def _record(adapter_id: str, *, minutes: int = 0, **overrides: Any) -> AdapterRecord:
    fields: dict[str, Any] = {
        "adapter_id": adapter_id,
        "created_at": T0 + timedelta(minutes=minutes),
        "base_model": "models/tiny",
        "partition": "2025-03-03",
        "data_window": ("2025-02-28", "2025-03-01", "2025-03-02"),
        "dataset_hash": "sha256:" + "ab" * 32,
        "hyperparameters": {
            "rank": 8,
            "learning_rate": 1e-4,
            "lr_schedule": {"name": "cosine", "arguments": [1]},
        },
        "best_val_loss": 1.25,
        "last_val_loss": 1.5,
        "best_iteration": 40,
        "artifact_path": f"artifacts/adapters/{adapter_id}",
        "status": "candidate",
    }
    fields.update(overrides)
    return AdapterRecord(**fields)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "registry.db"


@pytest.fixture
def registry(db_path: Path) -> AdapterRegistry:
    return AdapterRegistry(sqlite_url(db_path))


@pytest.mark.parametrize(
    "record",
    [
        _record("a1"),
        _record(
            "a2",
            best_val_loss=None,
            last_val_loss=None,
            best_iteration=None,
            eval_summary={"pass_rate": 0.5, "by_tool": {"read_file": 0.75}},
            parent_adapter_id="a1",
            data_window=(),
        ),
    ],
    ids=["losses", "no-losses-with-eval-and-parent"],
)
def test_register_then_get_returns_the_same_record(registry: AdapterRegistry, record: AdapterRecord) -> None:
    registry.register(record)
    assert registry.get(record.adapter_id) == record
    assert registry.get(record.adapter_id).created_at.tzinfo is UTC


def test_created_at_in_another_time_zone_comes_back_as_the_same_instant_in_utc(
    registry: AdapterRegistry,
) -> None:
    berlin = timezone(timedelta(hours=1))
    registry.register(_record("a1", created_at=datetime(2025, 3, 3, 10, 0, tzinfo=berlin)))
    assert registry.get("a1").created_at == datetime(2025, 3, 3, 9, 0, tzinfo=UTC)
    assert registry.get("a1").created_at.tzinfo is UTC


def test_naive_datetimes_and_unknown_statuses_are_refused_at_the_record() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        _record("a1", created_at=datetime(2025, 3, 3, 9, 0))
    with pytest.raises(ValueError, match="status must be one of"):
        _record("a1", status="done")


def test_registering_an_id_twice_is_a_clear_error(registry: AdapterRegistry) -> None:
    registry.register(_record("a1"))
    with pytest.raises(ValueError, match="'a1' is already registered"):
        registry.register(_record("a1", minutes=5))
    assert registry.get("a1") == _record("a1")


@pytest.mark.parametrize(
    "call",
    [
        lambda r: r.get("missing"),
        lambda r: r.update("missing", status="rejected"),
        lambda r: r.promote("missing"),
    ],
    ids=["get", "update", "promote"],
)
def test_unknown_ids_raise_key_error_naming_the_id(registry: AdapterRegistry, call: Any) -> None:
    registry.register(_record("a1"))
    with pytest.raises(KeyError, match="no adapter 'missing' in the registry"):
        call(registry)


def test_update_changes_only_what_was_asked(registry: AdapterRegistry) -> None:
    registry.register(_record("a1", status="training", best_val_loss=None))
    updated = registry.update("a1", status="rejected", best_val_loss=0.9, eval_summary={"pass_rate": 0.1})
    assert updated == _record("a1", status="rejected", best_val_loss=0.9, eval_summary={"pass_rate": 0.1})
    assert registry.get("a1") == updated


@pytest.mark.parametrize(
    ("changes", "error", "message"),
    [
        ({"status": "done"}, ValueError, "status must be one of"),
        ({"status": "promoted"}, ValueError, "use promote"),
        ({"best_val_loss": float("nan")}, ValueError, "finite"),
        ({"best_iteration": -1}, ValueError, "best_iteration"),
        ({"dataset_hash": "sha256:ff"}, TypeError, "cannot update"),
        ({"base_model": "other"}, TypeError, "cannot update"),
        ({"created_at": T0}, TypeError, "cannot update"),
    ],
)
def test_bad_updates_are_refused_and_change_nothing(
    registry: AdapterRegistry, changes: dict[str, Any], error: type[Exception], message: str
) -> None:
    registry.register(_record("a1"))
    with pytest.raises(error, match=message):
        registry.update("a1", **changes)
    assert registry.get("a1") == _record("a1")


def test_latest_is_newest_by_created_at_then_id_and_filters(registry: AdapterRegistry) -> None:
    assert registry.latest() is None
    registry.register(_record("b", minutes=10))
    registry.register(_record("a", minutes=10))
    registry.register(_record("c", minutes=5, status="rejected"))
    registry.register(_record("d", minutes=1, base_model="models/other"))
    assert registry.latest() == _record("b", minutes=10)
    assert registry.latest(status="rejected") == _record("c", minutes=5, status="rejected")
    assert registry.latest(base_model="models/other") == _record("d", minutes=1, base_model="models/other")
    assert registry.latest(status="failed") is None
    with pytest.raises(ValueError, match="status must be one of"):
        registry.latest(status="done")


def test_list_is_newest_first_and_limited(registry: AdapterRegistry) -> None:
    for minutes, adapter_id in enumerate(["a", "b", "c"]):
        registry.register(_record(adapter_id, minutes=minutes))
    assert [r.adapter_id for r in registry.list()] == ["c", "b", "a"]
    assert [r.adapter_id for r in registry.list(limit=2)] == ["c", "b"]
    with pytest.raises(ValueError, match="limit must be >= 1"):
        registry.list(limit=0)


def test_promote_keeps_one_promoted_adapter_per_base_model(registry: AdapterRegistry) -> None:
    registry.register(_record("old"))
    registry.register(_record("new", minutes=1))
    registry.register(_record("other", minutes=2, base_model="models/other"))
    assert registry.promoted() is None

    first = registry.promote("old")
    assert first.status == "promoted"
    assert first.promoted_at is not None and first.promoted_at.tzinfo is UTC
    registry.promote("other")
    second = registry.promote("new")

    assert registry.promoted("models/tiny") == second
    assert registry.get("old").status == "candidate"
    assert registry.get("old").promoted_at == first.promoted_at  # when it was last promoted stays
    assert registry.get("other").status == "promoted"  # another base model is untouched
    assert registry.promoted() == second  # most recently promoted of any base model


def test_promoting_an_older_adapter_again_rolls_back(registry: AdapterRegistry) -> None:
    registry.register(_record("old"))
    registry.register(_record("new", minutes=1))
    registry.promote("old")
    registry.promote("new")
    rolled_back = registry.promote("old")
    assert registry.promoted("models/tiny") == rolled_back
    assert registry.get("new").status == "candidate"
    assert registry.promote("old") == rolled_back  # promoting the promoted one changes nothing


@pytest.mark.parametrize("status", ["training", "failed"])
def test_unfinished_adapters_cannot_be_promoted(registry: AdapterRegistry, status: str) -> None:
    registry.register(_record("a1", status=status))
    with pytest.raises(ValueError, match=f"'a1' is '{status}'"):
        registry.promote("a1")


def test_registering_marks_candidate_on_success_and_is_visible_while_training(
    registry: AdapterRegistry, db_path: Path
) -> None:
    observer = AdapterRegistry(sqlite_url(db_path))
    with registry.registering(_record("a1", best_val_loss=None)) as started:
        assert started.status == "training"
        assert observer.get("a1").status == "training"
        registry.update("a1", best_val_loss=0.75)
    assert observer.get("a1") == _record("a1", best_val_loss=0.75, status="candidate")


def test_registering_marks_failed_and_reraises_when_training_raises(registry: AdapterRegistry) -> None:
    with pytest.raises(RuntimeError, match="out of memory"), registry.registering(_record("a1")):
        raise RuntimeError("out of memory")
    assert registry.get("a1").status == "failed"
    assert registry.get("a1").failure_reason == "RuntimeError: out of memory"
    with pytest.raises(KeyboardInterrupt), registry.registering(_record("a2")):
        raise KeyboardInterrupt
    assert registry.get("a2").status == "failed"


def test_registering_keeps_a_final_status_set_inside_the_block(registry: AdapterRegistry) -> None:
    with registry.registering(_record("a1")):
        registry.update("a1", status="rejected")
    assert registry.get("a1").status == "rejected"


def test_registering_a_duplicate_id_leaves_the_existing_adapter_alone(registry: AdapterRegistry) -> None:
    registry.register(_record("a1"))
    with pytest.raises(ValueError, match="already registered"), registry.registering(_record("a1")):
        pytest.fail("the block must not run")
    assert registry.get("a1").status == "candidate"


def test_two_registries_on_one_file_see_each_others_rows(db_path: Path) -> None:
    left, right = AdapterRegistry(sqlite_url(db_path)), AdapterRegistry(sqlite_url(db_path))
    left.register(_record("a1"))
    right.register(_record("a2", minutes=1))
    right.promote("a1")
    assert [r.adapter_id for r in left.list()] == ["a2", "a1"]
    assert left.promoted() == right.get("a1")
    left.close()
    right.close()


def test_sqlite_file_is_0600_and_new_folders_0700_whatever_the_umask(tmp_path: Path) -> None:
    path = tmp_path / "home" / "registry" / "adapters.db"
    old = os.umask(0o022)
    try:
        registry = AdapterRegistry(sqlite_url(path))
        registry.register(_record("a1"))
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert registry.get("a1") == _record("a1")


def test_sqlite_url_is_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert sqlite_url(Path("r.db")) == f"sqlite:///{tmp_path.resolve() / 'r.db'}"


def test_in_memory_sqlite_works_for_throwaway_use() -> None:
    registry = AdapterRegistry("sqlite://")
    registry.register(_record("a1"))
    assert registry.get("a1") == _record("a1")


# Version 1 of the schema, exactly as its databases exist on disk; never change this.
_V1_DDL = """
CREATE TABLE registry_schema_version (
    id INTEGER NOT NULL PRIMARY KEY, version INTEGER NOT NULL, upgraded_at DATETIME NOT NULL);
INSERT INTO registry_schema_version VALUES (1, 1, '2025-01-06 08:00:00.000000');
CREATE TABLE adapters (
    adapter_id VARCHAR(255) NOT NULL PRIMARY KEY, created_at DATETIME NOT NULL, base_model TEXT NOT NULL,
    partition VARCHAR(64) NOT NULL, data_window JSON NOT NULL, dataset_hash VARCHAR(128) NOT NULL,
    hyperparameters JSON NOT NULL, best_val_loss FLOAT, last_val_loss FLOAT, artifact_path TEXT NOT NULL,
    status VARCHAR(32) NOT NULL, eval_summary JSON);
CREATE INDEX ix_adapters_created_at ON adapters (created_at);
INSERT INTO adapters VALUES ('v1-adapter', '2025-01-06 09:00:00.000000', 'models/tiny', '2025-01-06',
    '["2025-01-05"]', 'sha256:00', '{"rank": 4}', 1.5, 1.75, 'artifacts/adapters/v1-adapter', 'promoted',
    '{"pass_rate": 0.4}');
"""


def test_a_version_1_database_is_upgraded_in_place_and_keeps_its_rows(db_path: Path) -> None:
    with sqlite3.connect(db_path) as conn:
        conn.executescript(_V1_DDL)
    registry = AdapterRegistry(sqlite_url(db_path))

    old = registry.get("v1-adapter")
    assert old == AdapterRecord(
        adapter_id="v1-adapter",
        created_at=datetime(2025, 1, 6, 9, 0, tzinfo=UTC),
        base_model="models/tiny",
        partition="2025-01-06",
        data_window=("2025-01-05",),
        dataset_hash="sha256:00",
        hyperparameters={"rank": 4},
        best_val_loss=1.5,
        last_val_loss=1.75,
        best_iteration=None,
        artifact_path="artifacts/adapters/v1-adapter",
        status="promoted",
        eval_summary={"pass_rate": 0.4},
    )
    assert registry.promoted("models/tiny") == old  # promoted before promoted_at existed: still found

    engine = sa.create_engine(sqlite_url(db_path))
    with engine.connect() as conn:
        columns = {c["name"] for c in sa.inspect(conn).get_columns("adapters")}
        version = conn.execute(sa.text("SELECT version FROM registry_schema_version")).scalar_one()
    engine.dispose()
    upgraded = {"best_iteration", "parent_adapter_id", "promoted_at", "run_id", "failure_reason"}
    assert upgraded | {"model_path", "fused_at"} <= columns
    assert version == SCHEMA_VERSION

    registry.register(_record("v2-adapter", parent_adapter_id="v1-adapter"))
    registry.promote("v2-adapter")
    assert registry.get("v1-adapter").status == "candidate"
    assert registry.get("v2-adapter").parent_adapter_id == "v1-adapter"


def test_a_fresh_database_has_exactly_the_models_columns(registry: AdapterRegistry, db_path: Path) -> None:
    registry.list()  # first use creates the schema through the upgrade steps
    engine = sa.create_engine(sqlite_url(db_path))
    with engine.connect() as conn:
        columns = {c["name"] for c in sa.inspect(conn).get_columns("adapters")}
    engine.dispose()
    assert columns == {c.name for c in AdapterRow.__table__.columns}


def test_reopening_an_upgraded_database_is_a_no_op(db_path: Path) -> None:
    AdapterRegistry(sqlite_url(db_path)).register(_record("a1"))
    reopened = AdapterRegistry(sqlite_url(db_path))
    assert reopened.list() == [_record("a1")]


def test_a_database_from_newer_code_is_refused_with_a_clear_error(db_path: Path) -> None:
    AdapterRegistry(sqlite_url(db_path)).list()
    with sqlite3.connect(db_path) as conn:
        conn.execute("UPDATE registry_schema_version SET version = ?", (SCHEMA_VERSION + 1,))
    with pytest.raises(RuntimeError, match=f"version {SCHEMA_VERSION + 1}, newer than this code"):
        AdapterRegistry(sqlite_url(db_path)).list()


def test_concurrent_first_opens_and_writes_from_separate_engines_all_land(db_path: Path) -> None:
    # Two engines upgrading an empty file and writing at once must serialize, not fail with "locked".
    registries = [AdapterRegistry(sqlite_url(db_path)) for _ in range(2)]

    def write(index: int) -> None:
        for n in range(10):
            registries[index].register(_record(f"r{index}-{n:02d}", minutes=n))

    with ThreadPoolExecutor(max_workers=2) as pool:
        list(pool.map(write, range(2)))
    assert len(registries[0].list()) == 20
    for registry in registries:
        registry.close()


def test_the_fused_model_of_the_promoted_adapter_is_what_is_served(registry: AdapterRegistry) -> None:
    """`promoted_model` records the fused folder; `served()` follows promotions, so promoting an older
    adapter again (a rollback) makes its fused model the one the next `serve` starts."""
    assert registry.served() is None
    for minutes, adapter_id in enumerate(("week-1", "week-2")):
        registry.register(_record(adapter_id, minutes=minutes))
        registry.promote(adapter_id)
        fused = registry.record_model(adapter_id, f"artifacts/models/{adapter_id}")
        assert fused.model_path == f"artifacts/models/{adapter_id}" and fused.fused_at is not None
    served = registry.served()
    assert served is not None and served.adapter_id == "week-2"
    registry.promote("week-1")  # roll back
    served = registry.served()
    assert served is not None and served.adapter_id == "week-1"
    assert served.model_path == "artifacts/models/week-1"
    assert registry.get("week-2").model_path == "artifacts/models/week-2"  # kept: a roll-forward target


def test_only_the_promoted_adapter_gets_a_fused_model(registry: AdapterRegistry) -> None:
    registry.register(_record("candidate-1"))
    with pytest.raises(ValueError, match="'candidate'; only the promoted adapter gets a fused model"):
        registry.record_model("candidate-1", "artifacts/models/candidate-1")
    assert registry.get("candidate-1").model_path is None
