"""The MLX trainer as a Dagster resource: mlx-lm fine-tuning, its reports streamed to the run's log.

Field names and defaults follow `mlx_lm.lora` so its users feel at home (mask_prompt is on:
train only on the decision). The base model is any local MLX model directory; the default,
`TRAJECTORY_BASE_MODEL` or `data/tiny-model`, is the bundled tiny model `make demo` builds.
"""

import dataclasses
import os
from pathlib import Path
from typing import Any

import dagster as dg
from pydantic import Field

from trajectory_pipeline.training.trainer import (
    ModelDirectoryError,
    TrainConfig,
    TrainResult,
    check_model_dir,
    train_adapter,
)

_DEFAULTS = TrainConfig()


class MLXTrainer(dg.ConfigurableResource):
    """Fine-tunes a local MLX model on an mlx-lm data directory with mlx-lm's Python API."""

    base_model: str = Field(
        default=os.environ.get("TRAJECTORY_BASE_MODEL", "data/tiny-model"),
        description="Local MLX model directory (config.json, model*.safetensors, tokenizer files).",
    )
    fine_tune_type: str = Field(default=_DEFAULTS.fine_tune_type, description="lora, dora or full.")
    num_layers: int = Field(
        default=_DEFAULTS.num_layers, description="Blocks fine-tuned, from the last; -1 all."
    )
    rank: int = Field(default=_DEFAULTS.rank, description="LoRA rank.")
    scale: float = Field(default=_DEFAULTS.scale, description="LoRA scale.")
    dropout: float = Field(default=_DEFAULTS.dropout, description="LoRA dropout.")
    iters: int = Field(default=_DEFAULTS.iters, description="Optimizer steps.")
    batch_size: int = Field(default=_DEFAULTS.batch_size, description="Minibatch size.")
    grad_accumulation_steps: int = Field(
        default=_DEFAULTS.grad_accumulation_steps, description="Minibatches per optimizer update."
    )
    learning_rate: float = Field(default=_DEFAULTS.learning_rate, description="Learning rate.")
    lr_schedule: dict[str, Any] | None = Field(
        default=None, description='mlx-lm schedule, e.g. {"name": "cosine_decay", "arguments": [1e-5, 1000]}.'
    )
    max_seq_length: int = Field(default=_DEFAULTS.max_seq_length, description="Longer sequences are cut.")
    grad_checkpoint: bool = Field(default=_DEFAULTS.grad_checkpoint, description="Trade compute for memory.")
    mask_prompt: bool = Field(default=_DEFAULTS.mask_prompt, description="Train only on the decision.")
    optimizer: str = Field(default=_DEFAULTS.optimizer, description="adam, adamw, muon, sgd or adafactor.")
    seed: int = Field(default=_DEFAULTS.seed, description="Seed of MLX and of batch shuffling.")
    steps_per_report: int = Field(
        default=_DEFAULTS.steps_per_report, description="Steps between loss reports."
    )
    steps_per_eval: int = Field(default=_DEFAULTS.steps_per_eval, description="Steps between validations.")
    val_batches: int = Field(default=_DEFAULTS.val_batches, description="Batches per validation; -1 all.")
    save_every: int = Field(default=_DEFAULTS.save_every, description="Steps between checkpoints.")
    early_stopping_patience: int | None = Field(
        default=None, description="Validations without improvement before stopping; none: never."
    )

    def train_config(self) -> TrainConfig:
        return TrainConfig(
            **{field.name: getattr(self, field.name) for field in dataclasses.fields(TrainConfig)}
        )

    def check(self) -> Path:
        """The base model directory, or a clear failure saying what one must contain."""
        path = Path(self.base_model).expanduser()
        try:
            check_model_dir(path)
        except ModelDirectoryError as err:
            raise dg.Failure(f"MLXTrainer.base_model: {err}") from None
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

        return train_adapter(base, data_dir, adapter_dir, config, on_report=report, resume_from=resume_from)


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
