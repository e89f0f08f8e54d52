"""lora_adapter materialized for real: a weekly partition trained with mlx-lm on the tiny model."""

import datetime as dt
from pathlib import Path

import dagster as dg
import pandas as pd
import pytest

from assets.decision_points import decision_points
from assets.lora_adapter import lora_adapter
from assets.mined_trajectories import mined_trajectories
from assets.raw_sessions import raw_sessions
from assets.rendered_splits import rendered_splits
from resources.adapter_registry import AdapterRegistryResource
from resources.mlx_trainer import MLXTrainer
from resources.parquet_io_manager import ParquetIOManager
from resources.session_sources import DEFAULT_ROOTS, SessionSources
from trajectory_pipeline.sample_corpus import SOURCE_FOLDERS, CorpusSpec, generate_corpus
from trajectory_pipeline.tiny_model import TinyModelSpec, build_tiny_model

SPEC = CorpusSpec(days=2, end_date=dt.date(2026, 11, 22), sessions_per_day=3, seed=5)
WEEK = "2026-11-22"  # the week starting Sunday 2026-11-22; its window holds both sample days
RANGE = {
    "dagster/asset_partition_range_start": "2026-11-21",
    "dagster/asset_partition_range_end": "2026-11-22",
}


@pytest.fixture(scope="module")
def trained(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, dg.ExecuteInProcessResult, dg.DagsterInstance]:
    base = tmp_path_factory.mktemp("lora")
    generate_corpus(base / "corpus", SPEC)
    roots = {f"{source}_root": str(base / "corpus" / sub) for source, sub in SOURCE_FOLDERS.items()}
    off = {f"{source}_root": "" for source in DEFAULT_ROOTS if source not in SOURCE_FOLDERS}
    io_manager = ParquetIOManager(base_dir=str(base / "warehouse"))
    daily = [raw_sessions, mined_trajectories, decision_points, rendered_splits]
    short = {"ops": {"rendered_splits": {"config": {"max_length": 6000}}}}  # short records: seconds to train
    ingest = dg.materialize(
        daily,
        tags=RANGE,
        run_config=short,
        resources={"io_manager": io_manager, "session_sources": SessionSources(**roots, **off)},
    )
    assert ingest.success
    texts = [
        record
        for path in sorted((base / "warehouse" / "rendered_splits").glob("*.parquet"))
        for record in pd.read_parquet(path)["record"]
    ]
    build_tiny_model(base / "model", texts, TinyModelSpec(vocab_size=512))
    trainer = MLXTrainer(
        base_model=str(base / "model"),
        num_layers=-1,
        iters=3,
        batch_size=1,
        val_batches=1,
        steps_per_report=1,
        steps_per_eval=2,
        learning_rate=1e-3,
        max_seq_length=4096,
    )
    instance = dg.DagsterInstance.ephemeral()
    result = dg.materialize(
        [rendered_splits.to_source_asset(), lora_adapter],
        partition_key=WEEK,
        instance=instance,
        run_config={
            "ops": {
                "lora_adapter": {
                    "config": {"artifacts_dir": str(base / "artifacts"), "pad_small_splits": True}
                }
            }
        },
        resources={
            "io_manager": io_manager,
            "trainer": trainer,
            "adapter_registry": AdapterRegistryResource(url=f"sqlite:///{base / 'adapters.sqlite'}"),
        },
    )
    return base, result, instance


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


def test_a_bad_base_model_is_a_clear_failure(tmp_path: Path) -> None:
    with pytest.raises(dg.Failure, match=r"config\.json"):
        MLXTrainer(base_model=str(tmp_path / "nowhere")).check()


def test_training_runs_in_its_own_concurrency_pool() -> None:
    # dagster.yaml gives every pool one slot: two trainings never share the CPU (or a Mac's GPU).
    assert lora_adapter.op.pool == "mlx_training"
