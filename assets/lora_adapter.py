"""lora_adapter: a LoRA adapter trained with mlx-lm on a trailing window of rendered days.

For a weekly partition it gathers the stored `rendered_splits` days of the window
(`TRAJECTORY_WINDOW_WEEKS`, default 12, weeks up to the end of that week), writes the
mlx-lm data directory, trains with the `MLXTrainer` resource, writes a model card, and
records the adapter in the registry.
Its Parquet output is a one-row manifest; the weights live under
`<artifacts_dir>/<adapter_id>/adapter` (adapters.safetensors + adapter_config.json).

`artifacts_dir` may be an object-store URL (`s3://bucket/adapters`): the week then trains in the
local cache's copy of that prefix (`$TRAJECTORY_CACHE_DIR/mirror/s3/bucket/adapters/<adapter_id>/`),
its data directory and weights are uploaded as soon as training ends (before the registry calls it
a candidate, so an upload that fails marks the adapter failed), then the model card; the registry
and the manifest name the URL. A base model (`TRAJECTORY_BASE_MODEL`) may be a URL too: it is read
from the cache's copy (`MLXTrainer.check`).

    trajectory-pipeline materialize --select lora_adapter --partition 2026-11-15
"""

import dataclasses
import datetime as dt
from pathlib import Path
from typing import Any

import dagster as dg
import pandas as pd

from assets import OWNERS
from assets.instance import run_gone
from assets.metadata import as_table
from assets.partitions import WINDOW_WEEKS, rendered_window, weekly_partitions
from resources.adapter_registry import AdapterRegistryResource
from resources.core_config import derive, to_core
from resources.mlx_trainer import MLXTrainer
from resources.privacy import private, private_failure, private_log, private_metadata
from trajectory_pipeline.storage import objects
from trajectory_pipeline.training.adapters import ADAPTER_MANIFEST_SCHEMA, loss_chart, loss_table
from trajectory_pipeline.training.trainer import TrainResult
from trajectory_pipeline.training.week import (
    TrainedWeek,
    TrainingRefused,
    WeekRun,
    WeekTraining,
    resume_source,
    train_week,
)

_WeekKnobs: Any = derive("WeekKnobs", WeekTraining)


class LoraAdapterConfig(_WeekKnobs):
    """Where the artifacts go, and what training starts from."""


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
    run = WeekRun(
        context.partition_key, context.run.run_id, trainer.check(), trainer.train_config(), WINDOW_WEEKS
    )
    registry = adapter_registry.registry()
    options = to_core(WeekTraining, config)
    artifacts = options.artifacts_dir
    remote = objects.is_remote(artifacts)
    if remote:  # trained in the local cache's copy of the prefix, uploaded once trained
        options = dataclasses.replace(options, artifacts_dir=str(objects.mirror_path(artifacts)))

    def train(data: Path, out: Path, resume_from: Path | None) -> TrainResult:
        if resume_from is not None:  # the registry may name it by URL: its local copy
            parent = resume_source(registry, str(run.base_model))
            resume_from = objects.local_tree(parent.artifact_path) if parent else resume_from
        result = trainer.train(data, out, private_log(context.log), resume_from=resume_from)
        if remote:  # inside the registry's `registering`: a failed upload marks the adapter failed
            folder = objects.join(artifacts, out.parent.name)
            objects.publish_tree(objects.join(folder, "data"))
            objects.publish_tree(objects.join(folder, "adapter"))
            registry.update(out.parent.name, artifact_path=objects.join(folder, "adapter"))
        return result

    # A training whose run was killed never marked its row: mark it now (the sensor does too).
    for abandoned in registry.fail_abandoned(lambda run_id: run_gone(context.instance, run_id)):
        context.log.warning(
            private(f"adapter {abandoned.adapter_id} marked failed: {abandoned.failure_reason}")
        )
    try:
        trained = train_week(rows, days, run, options, registry, train)
    except TrainingRefused as err:
        raise private_failure(str(err)) from None
    row = trained.manifest_row()
    adapter_path, card_path = str(trained.adapter_path), str(trained.card_path)
    if remote:
        folder = objects.join(artifacts, trained.record.adapter_id)
        adapter_path, card_path = objects.join(folder, "adapter"), objects.join(folder, "README.md")
        objects.upload(card_path)
        row["adapter_path"] = adapter_path
    return dg.Output(
        as_table(pd.DataFrame([row]), ADAPTER_MANIFEST_SCHEMA),
        metadata=private_metadata(_metadata(trained, adapter_path, card_path)),
    )


def _metadata(trained: TrainedWeek, adapter_path: str, card_path: str) -> dict[str, Any]:
    result = trained.result
    return {
        "adapter_path": dg.MetadataValue.path(adapter_path),
        "model_card": dg.MetadataValue.path(card_path),
        "dataset_hash": trained.manifest.dataset_hash,
        "best_val_loss": result.best_val_loss,
        "last_val_loss": result.last_val_loss,
        "chosen": result.chosen,
        "stop_reason": result.stop_reason or "",
        "tokens_per_second": round(result.tokens_per_second, 1),
        "logits_at_targets_only": result.target_logits,
        "peak_memory_gb": round(result.peak_memory_gb, 3),
        "training_seconds": round(trained.seconds, 1),
        "loss_curve": dg.MetadataValue.md(loss_chart(result.losses)),
        "losses": dg.MetadataValue.md(loss_table(result.losses)),
    }
