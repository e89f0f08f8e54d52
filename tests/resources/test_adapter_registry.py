"""The registry resource defaults to a SQLite file in the Dagster home and takes any SQLAlchemy URL."""

import datetime as dt
from pathlib import Path

import pytest

from resources.adapter_registry import AdapterRegistryResource
from trajectory_pipeline.training.registry import AdapterRecord


def test_default_is_a_sqlite_file_in_the_dagster_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    resource = AdapterRegistryResource()
    assert resource.resolved_url() == f"sqlite:///{tmp_path}/adapters.sqlite"
    record = AdapterRecord(
        adapter_id="a1",
        created_at=dt.datetime(2026, 11, 22, tzinfo=dt.UTC),
        base_model="tiny",
        partition="2026-11-15",
        data_window=("2026-11-15",),
        dataset_hash="h",
        hyperparameters={"rank": 8},
        best_val_loss=None,
        last_val_loss=None,
        best_iteration=None,
        artifact_path=str(tmp_path / "a1"),
        status="candidate",
        eval_summary=None,
        parent_adapter_id=None,
    )
    resource.registry().register(record)
    assert AdapterRegistryResource(url=resource.resolved_url()).registry().get("a1").base_model == "tiny"
    assert (tmp_path / "adapters.sqlite").exists()
