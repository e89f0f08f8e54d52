"""The MLX trainer as a Dagster resource: mlx-lm fine-tuning, its reports streamed to the run's log.

Field names and defaults follow `mlx_lm.lora` so its users feel at home (mask_prompt is on:
train only on the decision). The base model is any local MLX model directory; the default,
`TRAJECTORY_BASE_MODEL` or `data/tiny-model`, is the bundled tiny model `make demo` builds. A base
model in an object store (a URL) is read from the local cache's copy, refreshed when it changed.
"""

from pathlib import Path
from typing import Any

import dagster as dg
from pydantic import Field

from resources.core_config import derive, to_core
from resources.privacy import private_failure
from trajectory_pipeline import settings
from trajectory_pipeline.storage import objects
from trajectory_pipeline.training.trainer import (
    ModelDirectoryError,
    NonFiniteLossError,
    TrainConfig,
    TrainResult,
    check_model_dir,
    train_adapter,
)

_TrainKnobs: Any = derive("TrainKnobs", TrainConfig, base=dg.ConfigurableResource)


class MLXTrainer(_TrainKnobs):
    """Fine-tunes a local MLX model on an mlx-lm data directory with mlx-lm's Python API."""

    base_model: str = Field(
        default="",
        description="MLX model directory (config.json, model*.safetensors, tokenizer files), local or "
        "an object-store URL (read from the local cache); empty: $TRAJECTORY_BASE_MODEL, else "
        "data/tiny-model.",
    )

    def train_config(self) -> TrainConfig:
        return to_core(TrainConfig, self)

    def check(self) -> Path:
        """The base model directory (the cache's copy of a URL), or a clear failure saying what one
        must contain."""
        try:
            path = objects.local_tree(self.base_model or settings.base_model())
            check_model_dir(path)
        except (ModelDirectoryError, objects.StorageError) as err:
            raise private_failure(f"MLXTrainer.base_model: {err}") from None
        return path

    def train(
        self,
        data_dir: Path,
        adapter_dir: Path,
        log: dg.DagsterLogManager,
        resume_from: Path | None = None,
    ) -> TrainResult:
        """Train, streaming each train and validation report to `log` as it happens."""
        base = self.check()
        try:
            config = self.train_config()
        except ValueError as err:
            raise dg.Failure(f"MLXTrainer config: {err}") from None

        def report(row: dict[str, Any]) -> None:
            log.info(describe_report(row))

        try:
            result = train_adapter(
                base, data_dir, adapter_dir, config, on_report=report, resume_from=resume_from
            )
        except NonFiniteLossError as err:
            raise private_failure(f"MLXTrainer: {err}") from None
        if result.stop_reason:
            log.warning(result.stop_reason)
        if result.target_logits_note:
            log.info(result.target_logits_note)
        return result


def describe_report(row: dict[str, Any]) -> str:
    parts = [f"iteration {row.get('iteration')}"]
    for key, label in (
        ("train_loss", "train loss"),
        ("val_loss", "val loss"),
        ("learning_rate", "lr"),
        ("tokens_per_second", "tokens/s"),
        ("peak_memory_gb", "peak GB"),
    ):
        value = row.get(key)
        if value is not None:
            parts.append(f"{label} {value:.4g}")
    return ", ".join(parts)
