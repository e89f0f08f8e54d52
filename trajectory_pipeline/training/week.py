"""One week's adapter, end to end: the window's data directory, training, the registry, the model card.

The `lora_adapter` asset's body in plain Python (no dagster), as `evaluation.evaluate` is
`replay_eval`'s: the asset hands over the window's rendered rows and a `train` callable (the
`MLXTrainer` resource, which streams mlx-lm's reports to the run's log) and gets back what to store.

    trained = train_week(rows, days, WeekRun("2026-11-15", run_id, base), WeekTraining(), registry,
                         train=lambda data, out, resume: train_adapter(base, data, out, config,
                                                                       resume_from=resume))
    trained.manifest_row()   # the asset's one-row Parquet manifest

What `<artifacts_dir>/<adapter_id>/` holds afterwards: `data/` (the mlx-lm data directory the
adapter trained on, with its manifest), `adapter/` (the weights; see `trainer.train_adapter`) and
`README.md` (the model card), every file 0600 in 0700 folders. The registry row is written before
training starts and marked `failed` if training raises, so no adapter is ever half-registered.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from trajectory_pipeline.config import knob
from trajectory_pipeline.dataset.mlx_data import DatasetManifest, SplitTooSmallError
from trajectory_pipeline.dataset.training_data import LeakageError, write_window
from trajectory_pipeline.parquet_io import ensure_private_dir, make_private_tree, write_bytes_atomic
from trajectory_pipeline.training.adapters import adapter_id, model_card
from trajectory_pipeline.training.registry import AdapterRecord, AdapterRegistry
from trajectory_pipeline.training.trainer import TrainConfig, TrainResult

Train = Callable[[Path, Path, Path | None], TrainResult]


class TrainingRefused(ValueError):
    """The window cannot be trained on (it leaks, or a split is smaller than a batch); says why."""


@dataclass(frozen=True)
class WeekTraining:
    """Where a week's artifacts go, and what its training starts from."""

    artifacts_dir: str = knob("data/artifacts/adapters", "Folder of adapter artifacts.")
    pad_small_splits: bool = knob(
        False, "Fill a valid/test split smaller than the batch by repeating its rows."
    )
    resume: bool = knob(False, "Start from the promoted (else latest candidate) adapter of the registry.")
    retrain_on_failures: bool = knob(
        False, "Add the training decisions the last evaluated adapter failed (seen-exact lane) again."
    )
    failure_repeats: int = knob(2, "Times each failed training decision is added.")

    def __post_init__(self) -> None:
        if isinstance(self.failure_repeats, bool) or self.failure_repeats < 1:
            raise ValueError(f"failure_repeats must be 1 or more, got {self.failure_repeats!r}")


@dataclass(frozen=True)
class WeekRun:
    """Which week is trained, by which run, on which base model with which settings."""

    partition: str
    run_id: str
    base_model: Path
    config: TrainConfig
    window_weeks: int


@dataclass(frozen=True)
class TrainedWeek:
    record: AdapterRecord
    manifest: DatasetManifest
    result: TrainResult
    folder: Path
    seconds: float

    @property
    def adapter_path(self) -> Path:
        return self.folder / "adapter"

    @property
    def card_path(self) -> Path:
        return self.folder / "README.md"

    def manifest_row(self) -> dict[str, Any]:
        """The asset's one-row manifest (columns of `adapters.ADAPTER_MANIFEST_SCHEMA`)."""
        window = self.record.data_window
        return {
            "adapter_id": self.record.adapter_id,
            "partition": self.record.partition,
            "adapter_path": str(self.adapter_path),
            "base_model": self.record.base_model,
            "data_window_start": window[0],
            "data_window_end": window[-1],
            "dataset_hash": self.manifest.dataset_hash,
            "train_examples": self.manifest.counts["train"],
            "valid_examples": self.manifest.counts["valid"],
            "chosen": self.result.chosen,
            "best_val_loss": self.result.best_val_loss,
            "best_iteration": self.result.best_iteration,
            "last_val_loss": self.result.last_val_loss,
            "iterations": self.result.iterations,
            "tokens": self.result.tokens,
            "hyperparameters": str(self.record.hyperparameters),
        }


def train_week(
    rows: pd.DataFrame,
    days: list[str],
    run: WeekRun,
    options: WeekTraining,
    registry: AdapterRegistry,
    train: Train,
) -> TrainedWeek:
    """Write the window's data directory, train on it with `train`, register and describe the adapter."""
    if rows.empty:
        raise TrainingRefused(
            f"no rendered_splits rows in the {run.window_weeks} weeks up to the end of week "
            f"{run.partition}: materialize rendered_splits for those days first."
        )
    base = str(run.base_model)
    identifier = adapter_id(run.partition, run.run_id)
    artifacts = ensure_private_dir(Path(options.artifacts_dir).expanduser())  # tightened if it was open
    folder = artifacts / identifier
    try:
        manifest = write_window(
            rows,
            folder / "data",
            batch_size=run.config.batch_size,
            pad_small_splits=options.pad_small_splits,
            config={"window_weeks": run.window_weeks},
            partitions=days,
            failures=last_failures(registry, base) if options.retrain_on_failures else (),
            failure_repeats=options.failure_repeats,
        )
    except (LeakageError, SplitTooSmallError, ValueError) as err:
        raise TrainingRefused(f"training refused: {err}") from None
    parent = resume_source(registry, base) if options.resume else None
    record = AdapterRecord(
        adapter_id=identifier,
        created_at=dt.datetime.now(dt.UTC),
        base_model=base,
        partition=run.partition,
        data_window=tuple(days),
        dataset_hash=manifest.dataset_hash,
        hyperparameters=asdict(run.config),
        best_val_loss=None,
        last_val_loss=None,
        best_iteration=None,
        artifact_path=str(folder / "adapter"),
        status="training",
        eval_summary=None,
        parent_adapter_id=parent.adapter_id if parent else None,
        run_id=run.run_id,
    )
    started = time.perf_counter()
    with registry.registering(record):
        result = train(folder / "data", folder / "adapter", Path(parent.artifact_path) if parent else None)
        registry.update(
            identifier,
            best_val_loss=result.best_val_loss,
            last_val_loss=result.last_val_loss,
            best_iteration=result.best_iteration,
        )
    write_bytes_atomic(folder / "README.md", model_card(record, manifest, result).encode())
    make_private_tree(folder)
    return TrainedWeek(record, manifest, result, folder, time.perf_counter() - started)


def resume_source(registry: AdapterRegistry, base_model: str) -> AdapterRecord | None:
    """What `resume` starts from: the promoted adapter of this base model, else its latest candidate."""
    return registry.promoted(base_model) or registry.latest(status="candidate", base_model=base_model)


def last_failures(registry: AdapterRegistry, base_model: str) -> tuple[str, ...]:
    """The seen-exact failures of the most recently evaluated adapter of this base model."""
    for record in registry.list():
        if record.base_model == base_model and record.eval_summary is not None:
            return tuple(record.eval_summary.get("failing_seen_exact", ()))
    return ()
