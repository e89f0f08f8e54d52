"""lora_adapter: a LoRA adapter trained with mlx-lm on a trailing window of rendered days.

For a weekly partition it gathers the stored `rendered_splits` days of the window
(`TRAJECTORY_WINDOW_WEEKS`, default 12, weeks up to the end of that week), writes the
mlx-lm data directory, trains with the `MLXTrainer` resource, writes a model card, and
records the adapter in the registry.
Its Parquet output is a one-row manifest; the weights live under
`<artifacts_dir>/<adapter_id>/adapter` (adapters.safetensors + adapter_config.json).

    dagster asset materialize -m assets.definitions --select lora_adapter --partition 2026-11-15
"""

import datetime as dt
import time
from pathlib import Path
from typing import Any

import dagster as dg
import pandas as pd
from pydantic import Field

from assets import OWNERS
from assets.metadata import as_table
from assets.partitions import WINDOW_WEEKS, rendered_window, weekly_partitions
from resources.adapter_registry import AdapterRegistryResource
from resources.mlx_trainer import MLXTrainer
from trajectory_pipeline.dataset.mlx_data import SplitTooSmallError
from trajectory_pipeline.dataset.training_data import LeakageError, write_window
from trajectory_pipeline.training.adapters import (
    ADAPTER_MANIFEST_SCHEMA,
    adapter_id,
    loss_chart,
    loss_table,
    model_card,
)
from trajectory_pipeline.training.registry import AdapterRecord


class LoraAdapterConfig(dg.Config):
    """Where the artifacts go, and what training starts from."""

    artifacts_dir: str = Field(default="data/artifacts/adapters", description="Folder of adapter artifacts.")
    pad_small_splits: bool = Field(
        default=False, description="Fill a valid/test split smaller than the batch by repeating its rows."
    )
    resume: bool = Field(
        default=False, description="Start from the promoted (else latest candidate) adapter of the registry."
    )
    retrain_on_failures: bool = Field(
        default=False,
        description="Add the training decisions the last evaluated adapter failed (seen-exact lane) again.",
    )
    failure_repeats: int = Field(default=2, description="Times each failed training decision is added.")


@dg.asset(
    partitions_def=weekly_partitions,
    group_name="training",
    compute_kind="mlx",
    pool="mlx_training",
    ins={"rendered_splits": rendered_window()},
    owners=OWNERS,
    tags={"stage": "training"},
    # Sunday 03:00 schedule plus training time: late after a week and a half-day, failing after 8 days.
    freshness_policy=dg.FreshnessPolicy.time_window(
        fail_window=dt.timedelta(days=8), warn_window=dt.timedelta(days=7, hours=12)
    ),
)
def lora_adapter(
    context: dg.AssetExecutionContext,
    config: LoraAdapterConfig,
    trainer: MLXTrainer,
    adapter_registry: AdapterRegistryResource,
    rendered_splits: dict[str, pd.DataFrame],
) -> dg.Output[Any]:
    """A LoRA adapter trained with mlx-lm on the trailing window of rendered decision points."""
    days = sorted(rendered_splits)
    rows = pd.concat([rendered_splits[day] for day in days], ignore_index=True) if days else pd.DataFrame()
    if rows.empty:
        raise dg.Failure(
            f"no rendered_splits rows in the {WINDOW_WEEKS} weeks up to the end of week "
            f"{context.partition_key}: materialize rendered_splits for those days first."
        )
    registry = adapter_registry.registry()
    base = trainer.check()
    identifier = adapter_id(context.partition_key, context.run.run_id)
    folder = Path(config.artifacts_dir).expanduser() / identifier
    failures = _last_failures(registry, str(base)) if config.retrain_on_failures else ()
    try:
        manifest = write_window(
            rows,
            folder / "data",
            batch_size=trainer.batch_size,
            pad_small_splits=config.pad_small_splits,
            config={"window_weeks": WINDOW_WEEKS},
            partitions=days,
            failures=failures,
            failure_repeats=config.failure_repeats,
        )
    except (LeakageError, SplitTooSmallError, ValueError) as err:
        raise dg.Failure(f"training refused: {err}") from None
    parent = _resume_source(registry, str(base)) if config.resume else None
    record = AdapterRecord(
        adapter_id=identifier,
        created_at=dt.datetime.now(dt.UTC),
        base_model=str(base),
        partition=context.partition_key,
        data_window=tuple(days),
        dataset_hash=manifest.dataset_hash,
        hyperparameters=trainer.train_config().__dict__,
        best_val_loss=None,
        last_val_loss=None,
        best_iteration=None,
        artifact_path=str(folder / "adapter"),
        status="training",
        eval_summary=None,
        parent_adapter_id=parent.adapter_id if parent else None,
    )
    started = time.perf_counter()
    with registry.registering(record):
        resume_from = Path(parent.artifact_path) if parent else None
        result = trainer.train(folder / "data", folder / "adapter", context.log, resume_from=resume_from)
        registry.update(
            identifier,
            best_val_loss=result.best_val_loss,
            last_val_loss=result.last_val_loss,
            best_iteration=result.best_iteration,
        )
    (folder / "README.md").write_text(model_card(record, manifest, result))
    row = {
        "adapter_id": identifier,
        "partition": context.partition_key,
        "adapter_path": str(folder / "adapter"),
        "base_model": str(base),
        "data_window_start": days[0],
        "data_window_end": days[-1],
        "dataset_hash": manifest.dataset_hash,
        "train_examples": manifest.counts["train"],
        "valid_examples": manifest.counts["valid"],
        "chosen": result.chosen,
        "best_val_loss": result.best_val_loss,
        "best_iteration": result.best_iteration,
        "last_val_loss": result.last_val_loss,
        "iterations": result.iterations,
        "tokens": result.tokens,
        "hyperparameters": str(record.hyperparameters),
    }
    return dg.Output(
        as_table(pd.DataFrame([row]), ADAPTER_MANIFEST_SCHEMA),
        metadata=_metadata(result, manifest.dataset_hash, folder, time.perf_counter() - started),
    )


def _resume_source(registry: Any, base_model: str) -> AdapterRecord | None:
    return registry.promoted(base_model) or registry.latest(status="candidate", base_model=base_model)


def _last_failures(registry: Any, base_model: str) -> tuple[str, ...]:
    """The seen-exact failures of the most recently evaluated adapter of this base model."""
    for record in registry.list():
        if record.base_model == base_model and record.eval_summary is not None:
            return tuple(record.eval_summary.get("failing_seen_exact", ()))
    return ()


def _metadata(result: Any, dataset_hash: str, folder: Path, seconds: float) -> dict[str, Any]:
    return {
        "adapter_path": dg.MetadataValue.path(str(folder / "adapter")),
        "model_card": dg.MetadataValue.path(str(folder / "README.md")),
        "dataset_hash": dataset_hash,
        "best_val_loss": result.best_val_loss,
        "last_val_loss": result.last_val_loss,
        "chosen": result.chosen,
        "tokens_per_second": round(result.tokens_per_second, 1),
        "peak_memory_gb": round(result.peak_memory_gb, 3),
        "training_seconds": round(seconds, 1),
        "loss_curve": dg.MetadataValue.md(loss_chart(result.losses)),
        "losses": dg.MetadataValue.md(loss_table(result.losses)),
    }
