"""lora_adapter materialized for real: a weekly partition trained with mlx-lm on the tiny model."""

import json
import re
import shutil
from pathlib import Path
from typing import Any

import dagster as dg
import pandas as pd
import pytest

from assets.lora_adapter import lora_adapter
from assets.rendered_splits import rendered_splits
from resources.adapter_registry import AdapterRegistryResource
from resources.mlx_trainer import MLXTrainer
from resources.parquet_io_manager import ParquetIOManager
from tests.assets.sample_window import WEEK, ingest_sample_window
from trajectory_pipeline.training.week import resume_source


@pytest.fixture(scope="module")
def trained(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, dg.ExecuteInProcessResult, dg.DagsterInstance]:
    base = tmp_path_factory.mktemp("lora")
    ingest_sample_window(base, sessions_per_day=3, seed=4)
    instance = dg.DagsterInstance.ephemeral()
    return base, train_week(base, base / "model", instance), instance


def train_week(
    root: Path, model: Path, instance: dg.DagsterInstance, **config: Any
) -> dg.ExecuteInProcessResult:
    """Materialize lora_adapter for WEEK from root/warehouse; its registry and artifacts live under root."""
    trainer = MLXTrainer(
        base_model=str(model),
        num_layers=-1,
        iters=3,
        batch_size=1,
        val_batches=1,
        steps_per_report=1,
        steps_per_eval=2,
        learning_rate=1e-3,
        max_seq_length=4096,
    )
    return dg.materialize(
        [rendered_splits.to_source_asset(), lora_adapter],
        partition_key=WEEK,
        instance=instance,
        run_config={
            "ops": {
                "lora_adapter": {
                    "config": {"artifacts_dir": str(root / "artifacts"), "pad_small_splits": True, **config}
                }
            }
        },
        resources={
            "io_manager": ParquetIOManager(base_dir=str(root / "warehouse")),
            "trainer": trainer,
            "adapter_registry": AdapterRegistryResource(url=f"sqlite:///{root / 'adapters.sqlite'}"),
        },
    )


@pytest.mark.slow
def test_the_adapter_is_trained_recorded_and_loadable(
    trained: tuple[Path, dg.ExecuteInProcessResult, dg.DagsterInstance],
) -> None:
    import mlx_lm

    base, result, _ = trained
    assert result.success
    manifest = pd.read_parquet(base / "warehouse" / "lora_adapter" / f"{WEEK}.parquet")
    row = manifest.iloc[0]
    assert row["data_window_start"] == "2026-11-21" and row["data_window_end"] == "2026-11-22"
    assert row["iterations"] == 3 and row["chosen"] == "best"
    adapter = Path(row["adapter_path"])
    assert (adapter / "adapters.safetensors").exists() and (adapter / "adapter_config.json").exists()
    mlx_lm.load(str(base / "model"), adapter_path=str(adapter))
    assert "mlx_lm generate" in (adapter.parent / "README.md").read_text()
    registry = AdapterRegistryResource(url=f"sqlite:///{base / 'adapters.sqlite'}").registry()
    record = registry.get(row["adapter_id"])
    assert record.status == "candidate" and record.dataset_hash == row["dataset_hash"]
    assert record.best_val_loss == pytest.approx(row["best_val_loss"])


@pytest.mark.slow
def test_losses_reach_the_log_and_the_metadata(
    trained: tuple[Path, dg.ExecuteInProcessResult, dg.DagsterInstance],
) -> None:
    _, result, instance = trained
    messages = [entry.user_message for entry in instance.all_logs(result.run_id)]
    assert any("train loss" in message for message in messages)
    assert any("val loss" in message for message in messages)
    metadata = result.asset_materializations_for_node("lora_adapter")[0].metadata
    assert "train_loss" in metadata["losses"].value and "validation loss" in metadata["loss_curve"].value
    assert metadata["tokens_per_second"].value > 0


def keep_one_valid_row(warehouse: Path) -> None:
    """Cut the stored valid split to its shortest row, so every evaluation scores the same example
    (mlx-lm draws other batches of a larger split at each evaluation) and scores it quickly."""
    days = {path: pd.read_parquet(path) for path in (warehouse / "rendered_splits").glob("*.parquet")}
    valid = pd.concat(days.values()).query("split == 'valid'")
    keep = valid.sort_values("chars")["decision_id"].iloc[0]
    for path, rows in days.items():
        rows[(rows["split"] != "valid") | (rows["decision_id"] == keep)].to_parquet(path, index=False)


@pytest.mark.slow
def test_resume_starts_from_the_latest_candidate_unless_one_is_promoted(
    trained: tuple[Path, dg.ExecuteInProcessResult, dg.DagsterInstance], tmp_path: Path
) -> None:
    base, _, _ = trained
    shutil.copytree(base / "warehouse", tmp_path / "warehouse")
    keep_one_valid_row(tmp_path / "warehouse")
    instance = dg.DagsterInstance.ephemeral()

    fresh = train_week(tmp_path, base / "model", instance)
    resumed = train_week(tmp_path, base / "model", instance, resume=True)

    assert fresh.success and resumed.success
    registry = AdapterRegistryResource(url=f"sqlite:///{tmp_path / 'adapters.sqlite'}").registry()
    second, first = registry.list()  # newest first
    assert second.parent_adapter_id == first.adapter_id  # the latest candidate: none is promoted
    settings = json.loads((Path(second.artifact_path) / "adapter_config.json").read_text())
    assert settings["resume_adapter_file"] == str(Path(first.artifact_path) / "adapters.safetensors")
    # It starts where the first ended: its iteration 0 scores the first run's chosen (best) weights.
    assert fresh.asset_materializations_for_node("lora_adapter")[0].metadata["chosen"].value == "best"
    logged = "\n".join(entry.user_message for entry in instance.all_logs(resumed.run_id))
    start = re.search(r"iteration 0, val loss ([\d.]+)", logged)
    assert start is not None and float(start[1]) == pytest.approx(first.best_val_loss, abs=1e-3)
    # A promoted adapter is resumed before a newer candidate.
    assert resume_source(registry, first.base_model).adapter_id == second.adapter_id
    registry.promote(first.adapter_id)
    assert resume_source(registry, first.base_model).adapter_id == first.adapter_id


def test_a_bad_base_model_is_a_clear_failure(tmp_path: Path) -> None:
    with pytest.raises(dg.Failure, match=r"config\.json"):
        MLXTrainer(base_model=str(tmp_path / "nowhere")).check()


def test_training_runs_in_its_own_concurrency_pool() -> None:
    # dagster.yaml gives every pool one slot: two trainings never share the CPU (or a Mac's GPU).
    assert lora_adapter.op.pool == "mlx_training"
