"""promoted_model materialized through Dagster: a week whose adapter was not promoted produces no new
model (and says why), a promoted one is fused, recorded in the registry and served next.

The week's `lora_adapter` manifest is written as that asset stores it (its Parquet, its schema) for
the fixture's real adapter, so no training or replay runs here; the registry holds the decision
replay_eval would have written. The full weekly job (training, replay, this asset) runs in
tests/test_weekly_job.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dagster as dg
import pandas as pd
import pyarrow.parquet as pq
import pytest

from assets.lora_adapter import lora_adapter
from assets.metadata import as_table
from assets.promoted_model import promoted_model
from resources.adapter_registry import AdapterRegistryResource
from resources.parquet_io_manager import ParquetIOManager
from tests.serving.conftest import EVAL_SUMMARY, WEEK, Served, adapter_record
from trajectory_pipeline.serving.server import served_model
from trajectory_pipeline.training.adapters import ADAPTER_MANIFEST_SCHEMA
from trajectory_pipeline.training.registry import AdapterRegistry, sqlite_url


def _manifest(root: Path, adapter_id: str, served: Served) -> None:
    row: dict[str, Any] = {name: None for name in ADAPTER_MANIFEST_SCHEMA.names}
    row |= {"adapter_id": adapter_id, "partition": WEEK, "adapter_path": str(served.adapter)}
    row |= {
        "base_model": str(served.base),
        "data_window_start": "2026-11-21",
        "data_window_end": "2026-11-22",
    }
    folder = root / "warehouse" / "lora_adapter"
    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(as_table(pd.DataFrame([row]), ADAPTER_MANIFEST_SCHEMA), folder / f"{WEEK}.parquet")


def _materialize(root: Path, instance: dg.DagsterInstance) -> dg.ExecuteInProcessResult:
    return dg.materialize(
        [lora_adapter.to_source_asset(), promoted_model],
        partition_key=WEEK,
        instance=instance,
        resources={
            "io_manager": ParquetIOManager(base_dir=str(root / "warehouse")),
            "adapter_registry": AdapterRegistryResource(url=sqlite_url(root / "adapters.sqlite")),
        },
        run_config={"ops": {"promoted_model": {"config": {"models_dir": str(root / "models")}}}},
    )


def _observations(instance: dg.DagsterInstance) -> list[dict[str, Any]]:
    records = instance.fetch_observations(dg.AssetKey("promoted_model"), limit=10).records
    return [
        {key: value.value for key, value in record.asset_observation.metadata.items()}
        for record in records
        if record.asset_observation is not None
    ]


@pytest.mark.serving
def test_a_week_not_promoted_makes_no_model_and_a_promoted_one_is_fused_and_served(
    served: Served, tmp_path: Path
) -> None:
    registry = AdapterRegistry(sqlite_url(tmp_path / "adapters.sqlite"))
    rejected = {**EVAL_SUMMARY, "status": "rejected", "reason": "too few holdout cases: 4 < 20"}
    registry.register(adapter_record("week-a", served.base, served.adapter))
    registry.update("week-a", status="rejected", eval_summary=rejected)
    _manifest(tmp_path, "week-a", served)
    with dg.instance_for_test() as instance:
        result = _materialize(tmp_path, instance)
        assert result.success  # a normal week, not a failure
        assert result.asset_materializations_for_node("promoted_model") == []
        assert instance.get_materialized_partitions(dg.AssetKey("promoted_model")) == set()
        [observed] = _observations(instance)
        assert observed["status"] == "rejected" and observed["adapter_id"] == "week-a"
        assert "adapter week-a is rejected (too few holdout cases: 4 < 20)" in observed["skipped"]
        assert "no model is served yet" in observed["skipped"]
        assert not (tmp_path / "models" / "week-a").exists()
        assert registry.get("week-a").model_path is None

        registry.promote("week-a", eval_summary=EVAL_SUMMARY)  # what replay_eval does on a win
        result = _materialize(tmp_path, instance)
        [materialization] = result.asset_materializations_for_node("promoted_model")
        assert instance.get_materialized_partitions(dg.AssetKey("promoted_model")) == {WEEK}

    folder = tmp_path / "models" / "week-a"
    assert materialization.metadata["model_path"].value == str(folder)
    assert materialization.metadata["architecture"].value == "qwen2"
    assert (folder / "model.safetensors").is_file() and (folder / "README.md").is_file()
    assert registry.get("week-a").model_path == str(folder)
    assert served_model(registry).path == folder.resolve()
    manifest = pd.read_parquet(tmp_path / "warehouse" / "promoted_model" / f"{WEEK}.parquet").iloc[0]
    assert (manifest["adapter_id"], manifest["model_path"]) == ("week-a", str(folder))


@pytest.mark.serving
def test_a_later_week_not_promoted_keeps_the_model_in_use(served: Served, tmp_path: Path) -> None:
    registry = AdapterRegistry(sqlite_url(tmp_path / "adapters.sqlite"))
    registry.register(adapter_record("week-in-use", served.base, served.adapter))
    registry.promote("week-in-use")
    registry.record_model("week-in-use", str(served.fused.path))
    registry.register(adapter_record("week-b", served.base, served.adapter))
    registry.update("week-b", status="rejected", eval_summary={**EVAL_SUMMARY, "reason": "no lead"})
    _manifest(tmp_path, "week-b", served)
    with dg.instance_for_test() as instance:
        assert _materialize(tmp_path, instance).success
        [observed] = _observations(instance)
    assert "adapter week-in-use's model stays in use" in observed["skipped"]
    assert observed["served_adapter"] == "week-in-use"
    assert served_model(registry).adapter_id == "week-in-use"
    assert not (tmp_path / "models").exists()
