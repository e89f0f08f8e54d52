"""LoRA / DoRA / full fine-tuning with mlx-lm's Python API, with best-checkpoint and early stopping.

The training core behind the `lora_adapter` asset (no dagster here). It builds everything the way
`mlx_lm.lora --train` does (load, `linear_to_lora_layers`, `load_dataset` with `mask_prompt`,
`CacheDataset`, `TrainingArgs`, the optimizer, `mlx_lm.tuner.train`) and adds what that CLI lacks:
a report stream, the adapter with the best validation loss, early stopping and a result record.

    result = train_adapter(Path("models/tiny"), Path("data/mlx/2024-W18"), Path("adapters/a1"),
                           TrainConfig(iters=200, batch_size=4, steps_per_eval=20),
                           on_report=print)
    # mlx_lm.generate --model models/tiny --adapter-path adapters/a1 --prompt ...
    # mlx_lm.fuse --model models/tiny --adapter-path adapters/a1

What `adapter_dir` holds afterwards:
- `adapter_config.json`: the keys `mlx_lm.lora` dumps (model, fine_tune_type, num_layers,
  lora_parameters, ...), so `mlx_lm.load(adapter_path=...)`, `generate` and `fuse` accept the
  directory unchanged; written before training starts, as the CLI does;
- `adapters.safetensors`: the result's weights, a copy of the chosen adapter (`TrainResult.chosen`:
  "best" when validation ran, else "last"); this is the file mlx-lm loads;
- `adapters.best.safetensors`: the weights with the lowest validation loss, rewritten at each
  improvement (absent when no validation ran);
- `adapters.last.safetensors`: the weights when training ended (after `iters` steps, or at the
  evaluation that stopped it early);
- `NNNNNNN_adapters.safetensors`: mlx-lm's own checkpoints every `save_every` iterations.
Every file is 0600 and the folder 0700, whatever the umask.

Validation scores the same examples every time: `val_batches` batches' worth of a fixed sample
(every k-th example of valid.jsonl), not mlx-lm's subset redrawn at each evaluation, so the best
checkpoint is chosen on comparable losses. Validation timing follows mlx-lm: it evaluates before
step 1 (iteration 0: the base or resumed weights) and before every `steps_per_eval`-th step (so at
iterations `steps_per_eval - 1`, `2 * steps_per_eval - 1`, ...). mlx-lm also evaluates before the
last step; here that evaluation is skipped and the final weights are evaluated instead (iteration
`iters`), so `last_val_loss` describes `adapters.last.safetensors` exactly at no more evaluations
than `mlx_lm.lora` runs. An evaluation of the final weights stops nothing: with exhausted patience
training still ends as finished, not stopped early.

Early stopping: mlx-lm's loop has no stop hook, so the callback raises a private exception after
`early_stopping_patience` evaluations without improvement and `train_adapter` catches it; the loop
then never saves, so the last weights are saved here (on a normal finish mlx-lm saves them itself).

A loss that is not a finite number stops training the same way, at the report that shows it: a NaN
step has already poisoned the weights, and every later step would stay NaN. `adapters.safetensors`
is then the best finite checkpoint, `TrainResult.stop_reason` says what happened and its likely cause
(most often, with `batch_size` 1, an example whose prompt fills `max_seq_length`: truncation leaves
it no target token, and its loss is 0/0), and `adapters.last.safetensors` holds the weights at the
stop. With no finite checkpoint yet (the first validation failed) it raises `NonFiniteLossError`.

Throughput: `tokens_per_second` is trained tokens over the time mlx-lm measured for training steps
(evaluations excluded), the same figure `mlx_lm.lora` prints; `seconds` is the wall time of the
whole call (loading included). Tokens are counted at train reports, so on an early stop the steps
after the last report are not counted (choose `steps_per_eval` a multiple of `steps_per_report`).
"""

from __future__ import annotations

import contextlib
import json
import math
import shutil
import time
import types
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, cast

from trajectory_pipeline.config import knob
from trajectory_pipeline.dataset.mlx_data import MANIFEST_NAME, read_manifest
from trajectory_pipeline.parquet_io import ensure_private_dir, make_private_tree
from trajectory_pipeline.training.target_logits import target_loss, with_target_logits
from trajectory_pipeline.training.turns import (
    AssistantTurns,
    decision_key,
    turn_batches,
    turn_loss,
    uncovered,
)

FINE_TUNE_TYPES = ("lora", "dora", "full")
OPTIMIZERS = ("adam", "adamw", "muon", "sgd", "adafactor")
ADAPTER_FILE = "adapters.safetensors"
BEST_FILE = "adapters.best.safetensors"
LAST_FILE = "adapters.last.safetensors"
CONFIG_FILE = "adapter_config.json"
TOKENIZER_FILES = ("tokenizer.json", "tokenizer.model", "tokenizer_config.json", "vocab.json")


@dataclass(frozen=True)
class TrainConfig:
    """Fine-tuning settings; names and defaults follow `mlx_lm.lora` (mask_prompt defaults on)."""

    fine_tune_type: str = knob(
        "lora", 'Type of fine-tuning: "lora", "dora" or "full" (the last num_layers blocks, unfrozen).'
    )
    num_layers: int = knob(
        16, "Number of transformer blocks to fine-tune, counted from the last; -1 for all."
    )
    rank: int = knob(8, "LoRA rank.")
    scale: float = knob(
        20.0, "LoRA scale (mlx-lm's name for what other frameworks derive from alpha / rank)."
    )
    dropout: float = knob(0.0, "Dropout on the LoRA input.")
    iters: int = knob(1000, "Optimizer steps to train for.")
    batch_size: int = knob(4, "Minibatch size; every split must hold at least this many examples.")
    grad_accumulation_steps: int = knob(
        1, "Minibatches whose gradients are summed before each optimizer update."
    )
    learning_rate: float = knob(1e-5, "Learning rate (ignored when lr_schedule is set).")
    lr_schedule: dict[str, Any] | None = knob(
        None,
        'mlx-lm schedule config, e.g. {"name": "cosine_decay", "arguments": [1e-5, 1000], "warmup": 100}.',
    )
    max_seq_length: int = knob(2048, "Longer sequences are truncated to this many tokens.")
    grad_checkpoint: bool = knob(False, "Recompute activations in the backward pass to save memory.")
    mask_prompt: bool = knob(True, "Train only on the completion (the decision), not on the prompt.")
    history_calls: bool = knob(
        False,
        "With mask_prompt, also train on the calls in each record's history (every assistant turn), "
        "from the records no other one contains: several times the decisions per token; validation "
        "still scores the decisions alone.",
    )
    target_logits: bool = knob(
        True,
        "With mask_prompt, compute the output layer's logits at the target tokens only, not at every "
        "position (training/target_logits.py): the same loss, less time and memory; off: mlx-lm's loss.",
    )
    optimizer: str = knob("adam", "Optimizer: adam, adamw, muon, sgd or adafactor.")
    seed: int = knob(0, "Seed for MLX and for NumPy's batch shuffling.")
    steps_per_report: int = knob(10, "Training steps between train-loss reports.")
    steps_per_eval: int = knob(200, "Training steps between validations.")
    val_batches: int = knob(25, "Validation batches per evaluation; -1 uses the whole validation split.")
    save_every: int = knob(100, "Save a numbered checkpoint every this many steps.")
    early_stopping_patience: int | None = knob(
        None, "Evaluations without improvement of the validation loss before stopping; None never stops."
    )

    def __post_init__(self) -> None:
        if self.fine_tune_type not in FINE_TUNE_TYPES:
            raise ValueError(f"fine_tune_type must be one of {FINE_TUNE_TYPES}, got {self.fine_tune_type!r}")
        if self.optimizer.lower() not in OPTIMIZERS:
            raise ValueError(f"optimizer must be one of {OPTIMIZERS}, got {self.optimizer!r}")
        positive = ["rank", "iters", "batch_size", "grad_accumulation_steps", "max_seq_length"]
        positive += ["steps_per_report", "steps_per_eval", "save_every"]
        for name in positive:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if self.num_layers != -1 and self.num_layers < 1:
            raise ValueError(f"num_layers must be -1 (all) or a positive integer, got {self.num_layers}")
        if self.val_batches != -1 and self.val_batches < 1:
            raise ValueError(f"val_batches must be -1 (all) or a positive integer, got {self.val_batches}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")
        if self.history_calls and not self.mask_prompt:
            raise ValueError("history_calls trains on the assistant turns: it needs mask_prompt on")
        if self.learning_rate < 0:
            raise ValueError(f"learning_rate must not be negative, got {self.learning_rate}")
        if self.early_stopping_patience is not None and self.early_stopping_patience < 1:
            raise ValueError(
                f"early_stopping_patience must be None or at least 1, got {self.early_stopping_patience}"
            )
        if self.lr_schedule is not None and not {"name", "arguments"} <= set(self.lr_schedule):
            raise ValueError(
                f"lr_schedule needs 'name' and 'arguments' (mlx-lm's format), got {sorted(self.lr_schedule)}"
            )

    def lora_parameters(self) -> dict[str, Any]:
        """The `lora_parameters` block of adapter_config.json."""
        return {"rank": self.rank, "scale": self.scale, "dropout": self.dropout}


@dataclass(frozen=True)
class TrainResult:
    """What one training run produced; `losses` holds one row per train report and per evaluation."""

    adapter_dir: Path
    best_adapter: Path
    last_adapter: Path
    chosen: str  # "best" or "last": which one adapters.safetensors is a copy of
    best_val_loss: float | None
    best_iteration: int | None
    last_val_loss: float | None
    iterations: int
    tokens: int
    seconds: float
    tokens_per_second: float
    peak_memory_gb: float
    stopped_early: bool
    losses: list[dict[str, Any]]
    # Why training stopped before `iters` other than early stopping: a loss that is not a finite
    # number; `adapters.safetensors` is then the best finite checkpoint.
    stop_reason: str | None = None
    # Whether the output layer ran at the target tokens only (TrainConfig.target_logits), and why
    # not when it was asked to and the model could not (target_logits.with_target_logits).
    target_logits: bool = False
    target_logits_note: str | None = None


class ModelDirectoryError(ValueError):
    """The base model is not a local MLX model directory that mlx_lm.load can read."""


class _StopTraining(Exception):
    """Raised from the callback to leave mlx-lm's training loop (early stopping, a non-finite loss)."""


class NonFiniteLossError(ValueError):
    """A loss became NaN or infinite before any finite checkpoint was kept; says why and what to do."""


def check_model_dir(path: Path) -> None:
    """Raise ModelDirectoryError unless `path` holds config.json, model*.safetensors and a tokenizer."""
    needs = (
        "a model directory must contain config.json, model weights as model*.safetensors and "
        f"tokenizer files (one of {', '.join(TOKENIZER_FILES)})"
    )
    path = Path(path)
    if not path.is_dir():
        raise ModelDirectoryError(f"base model {path} is not a directory: {needs}")
    config = path / "config.json"
    if not config.is_file():
        raise ModelDirectoryError(f"base model {path} has no config.json: {needs}")
    try:
        parsed = json.loads(config.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ModelDirectoryError(f"base model {config} is unreadable ({err}): {needs}") from err
    if not isinstance(parsed, dict) or "model_type" not in parsed:
        raise ModelDirectoryError(f"base model {config} has no model_type: {needs}")
    if not any(path.glob("model*.safetensors")):
        found = sorted(p.name for p in path.iterdir())[:10]
        raise ModelDirectoryError(f"base model {path} has no model*.safetensors (found {found}): {needs}")
    if not any((path / name).is_file() for name in TOKENIZER_FILES):
        raise ModelDirectoryError(f"base model {path} has no tokenizer files: {needs}")


def train_adapter(
    base_model: Path,
    data_dir: Path,
    adapter_dir: Path,
    config: TrainConfig,
    *,
    on_report: Callable[[dict[str, Any]], None] | None = None,
    resume_from: Path | None = None,
) -> TrainResult:
    """Fine-tune `base_model` on the mlx-lm data directory `data_dir`; write the adapter to `adapter_dir`.

    mlx-lm writes its files with the umask's modes: the folder is made private before it writes and
    every file in it 0600 afterwards, whether training finished or raised (the weights were learned
    from people's transcripts)."""
    try:
        return _train_adapter(
            base_model, data_dir, adapter_dir, config, on_report=on_report, resume_from=resume_from
        )
    finally:
        make_private_tree(Path(adapter_dir))


def _train_adapter(
    base_model: Path,
    data_dir: Path,
    adapter_dir: Path,
    config: TrainConfig,
    *,
    on_report: Callable[[dict[str, Any]], None] | None,
    resume_from: Path | None,
) -> TrainResult:
    import mlx.core as mx
    import numpy as np
    from mlx.utils import tree_flatten
    from mlx_lm.tuner.datasets import CacheDataset
    from mlx_lm.tuner.trainer import TrainingArgs, evaluate, iterate_batches, train
    from mlx_lm.utils import load

    started = time.perf_counter()
    base_model, data_dir, adapter_dir = Path(base_model), Path(data_dir), Path(adapter_dir)
    check_model_dir(base_model)
    resume_file = _resume_file(resume_from) if resume_from is not None else None
    if (data_dir / MANIFEST_NAME).is_file():
        read_manifest(data_dir)  # the files must still be the ones the manifest hashed

    model, tokenizer = load(str(base_model))[:2]
    train_set, valid_set, routines = training_sets(
        data_dir, tokenizer, config.mask_prompt, config.history_calls
    )
    _check_split_sizes(data_dir, len(train_set), len(valid_set), config.batch_size)
    target_note = None
    if config.target_logits and config.mask_prompt:  # before LoRA dropout could tell the split apart
        routines, target_note = with_target_logits(routines, model)

    np.random.seed(config.seed)
    mx.random.seed(config.seed)
    _prepare_model(model, config)
    if resume_file is not None:
        _check_resume_weights(model, resume_file)
        model.load_weights(str(resume_file), strict=False)

    ensure_private_dir(adapter_dir)  # before mlx-lm writes into it
    _write_adapter_config(adapter_dir / CONFIG_FILE, base_model, data_dir, config, resume_file)
    for stale in (ADAPTER_FILE, BEST_FILE, LAST_FILE):
        (adapter_dir / stale).unlink(missing_ok=True)

    def save(path: Path) -> None:
        mx.save_safetensors(str(path), dict(tree_flatten(model.trainable_parameters())))

    valid_data, val_batches = _fixed_validation(valid_set, config)
    callback = _Recorder(config.early_stopping_patience, lambda: save(adapter_dir / BEST_FILE), on_report)
    training_args = TrainingArgs(
        batch_size=config.batch_size,
        iters=config.iters,
        val_batches=val_batches,
        steps_per_report=config.steps_per_report,
        steps_per_eval=config.steps_per_eval,
        steps_per_save=config.save_every,
        adapter_file=str(adapter_dir / LAST_FILE),
        max_seq_length=config.max_seq_length,
        grad_checkpoint=config.grad_checkpoint,
        grad_accumulation_steps=config.grad_accumulation_steps,
    )
    steps = _Steps(routines.get("iterate_batches", iterate_batches))
    valid = _validation_dataset(valid_data, steps, config.iters)
    mx.reset_peak_memory()
    stopped_early = False
    try:
        train(
            model=model,
            args=training_args,
            optimizer=_optimizer(config),
            train_dataset=CacheDataset(train_set),
            val_dataset=valid,
            training_callback=cast(Any, callback),  # duck-typed TrainingCallback
            **{**routines, "iterate_batches": steps.iterate_batches},
        )
    except _StopTraining:
        stopped_early = True
    if stopped_early or not (adapter_dir / LAST_FILE).is_file():
        # A finished loop has just saved the final weights there (its adapter_file) itself.
        save(adapter_dir / LAST_FILE)

    iterations = callback.stopped_at if stopped_early else config.iters
    if not stopped_early and len(valid) > 0:
        # In place of mlx-lm's evaluation before the last step (skipped): the weights actually saved.
        val_loss = evaluate(
            model=model,
            dataset=valid,
            batch_size=config.batch_size,
            num_batches=val_batches,
            max_seq_length=config.max_seq_length,
            **routines,
        )
        # Training has ended: exhausted patience stops nothing; a non-finite loss is still recorded.
        with contextlib.suppress(_StopTraining):
            callback.on_val_loss_report({"iteration": iterations, "val_loss": val_loss, "final": True})
    stop_reason = None
    if callback.non_finite is not None:
        stop_reason = _non_finite_message(callback, train_set, valid_set, config)
        if callback.best_iteration is None:
            raise NonFiniteLossError(stop_reason)

    chosen = "best" if callback.best_iteration is not None else "last"
    shutil.copyfile(adapter_dir / (BEST_FILE if chosen == "best" else LAST_FILE), adapter_dir / ADAPTER_FILE)
    train_seconds = callback.train_seconds
    return TrainResult(
        adapter_dir=adapter_dir,
        best_adapter=adapter_dir / BEST_FILE,
        last_adapter=adapter_dir / LAST_FILE,
        chosen=chosen,
        best_val_loss=callback.best_val_loss,
        best_iteration=callback.best_iteration,
        last_val_loss=callback.last_val_loss,
        iterations=iterations,
        tokens=callback.tokens,
        seconds=time.perf_counter() - started,
        tokens_per_second=callback.tokens / train_seconds if train_seconds > 0 else 0.0,
        peak_memory_gb=max([mx.get_peak_memory() / 1e9, *(r["peak_memory_gb"] for r in callback.rows)]),
        stopped_early=stopped_early,
        losses=callback.rows,
        stop_reason=stop_reason,
        target_logits=routines.get("loss") is target_loss,
        target_logits_note=target_note,
    )


def _non_finite_message(callback: _Recorder, train_set: Any, valid_set: Any, config: TrainConfig) -> str:
    """What stopped training, what was kept, and the likely cause with its fix."""
    kind, iteration, value = callback.non_finite or ("train", 0, math.nan)
    if callback.best_iteration is None:
        kept = "No finite checkpoint was kept (the first validation already failed)"
    else:
        kept = (
            f"Kept the best finite checkpoint, iteration {callback.best_iteration} "
            f"(validation loss {callback.best_val_loss:.4g}), as {ADAPTER_FILE}"
        )
    split, data = ("valid", valid_set) if kind == "validation" else ("train", train_set)
    cut = _cut_off_examples(data, config.max_seq_length)
    if cut:
        cause = (
            f"{cut} of the first {min(len(data), _DIAGNOSE_EXAMPLES)} {split} examples have a prompt of "
            f"max_seq_length ({config.max_seq_length}) tokens or more, so truncation leaves no target "
            "token to learn and their loss is 0/0"
            + (" (with batch_size 1, a batch of one such example)" if config.batch_size == 1 else "")
            + ": raise max_seq_length, or lower rendered_splits' max_length (measured with "
            "tokenizer_path) so records fit"
        )
    else:
        cause = "the weights diverged: lower learning_rate, or raise batch_size"
    return (
        f"training stopped at iteration {iteration}: the {kind} loss is {value} (not a finite number). "
        f"{kept}. Likely cause: {cause}."
    )


_DIAGNOSE_EXAMPLES = 10_000


def _cut_off_examples(data: Any, max_seq_length: int) -> int:
    """How many examples' targets start at or after `max_seq_length` tokens (mask_prompt's offset, or
    the first target span of history_calls' examples)."""
    count = 0
    for index in range(min(len(data), _DIAGNOSE_EXAMPLES)):
        processed = data.process(data[index])
        if not (isinstance(processed, tuple) and len(processed) == 2):
            continue
        offset = processed[1]
        if isinstance(offset, list):  # target spans
            offset = min((start for start, _ in offset), default=max_seq_length)
        if offset >= max_seq_length - 1:
            count += 1
    return count


class _Recorder:
    """mlx-lm's TrainingCallback interface (duck-typed, so importing this module stays light):
    normalizes train/val reports into rows, tracks the best validation loss, stops early."""

    def __init__(
        self,
        patience: int | None,
        save_best: Callable[[], None],
        on_report: Callable[[dict[str, Any]], None] | None,
    ) -> None:
        self.patience = patience
        self.save_best = save_best
        self.on_report = on_report
        self.rows: list[dict[str, Any]] = []
        self.best_val_loss: float | None = None
        self.best_iteration: int | None = None
        self.last_val_loss: float | None = None
        self.evals_without_improvement = 0
        self.stopped_at = 0
        self.non_finite: tuple[str, int, float] | None = None  # (train or validation, iteration, loss)
        self.tokens = 0
        self.train_seconds = 0.0
        self.peak_memory_gb = 0.0

    def on_train_loss_report(self, train_info: dict[str, Any]) -> None:
        window_tokens = int(train_info["trained_tokens"]) - self.tokens
        self.tokens = int(train_info["trained_tokens"])
        if train_info["tokens_per_second"] > 0:
            self.train_seconds += window_tokens / train_info["tokens_per_second"]
        self.peak_memory_gb = float(train_info["peak_memory"])
        self._emit(
            kind="train",
            iteration=int(train_info["iteration"]),
            train_loss=float(train_info["train_loss"]),
            learning_rate=float(train_info["learning_rate"]),
            tokens_per_second=float(train_info["tokens_per_second"]),
            tokens=window_tokens,
        )
        self._stop_unless_finite("train", int(train_info["iteration"]), float(train_info["train_loss"]))

    def on_val_loss_report(self, val_info: dict[str, Any]) -> None:
        import mlx.core as mx

        iteration, val_loss = int(val_info["iteration"]), float(val_info["val_loss"])
        self.peak_memory_gb = max(self.peak_memory_gb, mx.get_peak_memory() / 1e9)
        if not math.isfinite(val_loss):
            self._emit(kind="val", iteration=iteration, val_loss=val_loss, improved=False)
            self._stop_unless_finite("validation", iteration, val_loss)
        improved = math.isfinite(val_loss) and (self.best_val_loss is None or val_loss < self.best_val_loss)
        if improved:
            self.best_val_loss, self.best_iteration = val_loss, iteration
            self.evals_without_improvement = 0
            self.save_best()
        else:
            self.evals_without_improvement += 1
        self.last_val_loss = val_loss
        self._emit(kind="val", iteration=iteration, val_loss=val_loss, improved=improved)
        if self.patience is not None and self.evals_without_improvement >= self.patience:
            self.stopped_at = iteration
            raise _StopTraining

    def _stop_unless_finite(self, kind: str, iteration: int, loss: float) -> None:
        """A NaN or infinite loss poisons every later step (and, from a train step, the weights):
        stop, keeping the best finite checkpoint saved so far."""
        if math.isfinite(loss):
            return
        self.non_finite = (kind, iteration, loss)
        self.stopped_at = iteration
        raise _StopTraining

    def _emit(self, **fields: Any) -> None:
        row: dict[str, Any] = {
            "kind": fields["kind"],
            "iteration": fields["iteration"],
            "train_loss": fields.get("train_loss"),
            "val_loss": fields.get("val_loss"),
            "learning_rate": fields.get("learning_rate"),
            "tokens_per_second": fields.get("tokens_per_second"),
            "tokens": fields.get("tokens", 0),
            "trained_tokens": self.tokens,
            "peak_memory_gb": self.peak_memory_gb,
            "improved": fields.get("improved"),
        }
        self.rows.append(row)
        if self.on_report is not None:
            self.on_report(dict(row))


def _resume_file(resume_from: Path) -> Path:
    """An adapter file, or an adapter directory's adapters.safetensors."""
    path = Path(resume_from)
    if path.is_dir():
        path = path / ADAPTER_FILE
    if not path.is_file():
        raise FileNotFoundError(
            f"cannot resume from {resume_from}: expected an adapter .safetensors file or a directory "
            f"holding {ADAPTER_FILE}"
        )
    return path


def training_sets(
    data_dir: Path, tokenizer: Any, mask_prompt: bool, history_calls: bool
) -> tuple[Any, Any, dict[str, Any]]:
    """The train and valid datasets of an mlx-lm data directory, and the loss and batching that go
    with them (mlx-lm's own, or those of `turns` for history_calls), as keyword arguments of
    mlx-lm's `train` and `evaluate`."""
    if history_calls:
        records = _records(data_dir / "train.jsonl")
        decisions = frozenset(decision_key(r["messages"], r.get("tools")) for r in records)
        train_set = AssistantTurns(uncovered(records), tokenizer, decisions=decisions)
        valid_set = AssistantTurns(_records(data_dir / "valid.jsonl"), tokenizer, last_only=True)
        return train_set, valid_set, {"loss": turn_loss, "iterate_batches": turn_batches}
    from mlx_lm.tuner.datasets import load_dataset

    data_args = types.SimpleNamespace(
        data=str(data_dir), train=True, test=False, mask_prompt=mask_prompt, hf_dataset=None
    )
    train_set, valid_set, _ = load_dataset(data_args, cast(Any, tokenizer))
    return train_set, valid_set, {}


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _check_split_sizes(data_dir: Path, train_size: int, valid_size: int, batch_size: int) -> None:
    small = [
        (name, size) for name, size in (("train", train_size), ("valid", valid_size)) if size < batch_size
    ]
    if small:
        listing = ", ".join(f"{name} has {size}" for name, size in small)
        raise ValueError(
            f"{data_dir}: every split must hold at least batch_size={batch_size} examples, but {listing}; "
            "lower batch_size or widen the data window"
        )


class _FixedSample:
    """Every k-th example of a dataset (mlx-lm's dataset interface), the same at every evaluation."""

    def __init__(self, data: Any, size: int) -> None:
        self._data = data
        self._indices = [index * len(data) // size for index in range(size)]

    def __len__(self) -> int:
        return len(self._indices)

    def __getitem__(self, index: int) -> Any:
        return self._data[self._indices[index]]

    def process(self, item: Any) -> Any:
        return self._data.process(item)


def _fixed_validation(valid_set: Any, config: TrainConfig) -> tuple[Any, int]:
    """The validation data and batch count to give mlx-lm. Its `val_batches` subset is drawn anew at
    each evaluation (the global NumPy state), so two validation losses would score different
    examples; a fixed sample of the same size, evaluated whole, makes them comparable."""
    size = config.val_batches * config.batch_size
    if config.val_batches == -1 or size >= len(valid_set):
        return valid_set, config.val_batches
    return _FixedSample(valid_set, size), -1


class _Steps:
    """Counts the training batches mlx-lm's loop has drawn. The loop draws batch `it` before it
    decides whether to evaluate at iteration `it`, so at that decision the count is `it`.

    It also keeps validation from moving the training order: mlx-lm's `iterate_batches` shuffles
    with NumPy's global RNG, evaluation passes included, and training draws each epoch's order from
    it too, so without this a run validated more often would train on other batches."""

    def __init__(self, iterate_batches: Callable[..., Iterator[Any]]) -> None:
        self._iterate_batches = iterate_batches
        self.drawn = 0

    def iterate_batches(self, *args: Any, **kwargs: Any) -> Iterator[Any]:
        """The wrapped `iterate_batches`; counts what it yields for training (`loop=True`); for
        evaluation (one pass, no loop) it puts the RNG back as it was once the pass has shuffled."""
        if kwargs.get("loop", False):
            for batch in self._iterate_batches(*args, **kwargs):
                self.drawn += 1
                yield batch
            return
        import numpy as np

        state = np.random.get_state()
        batches = self._iterate_batches(*args, **kwargs)
        try:
            first = next(batches)  # a pass shuffles once, before its first batch
        except StopIteration:
            return
        finally:
            np.random.set_state(state)
        yield first
        yield from batches


def _validation_dataset(valid_data: Any, steps: _Steps, iters: int) -> Any:
    """mlx-lm's CacheDataset of the validation data, false while mlx-lm decides about iteration
    `iters`. mlx-lm evaluates when `val_dataset and (it == 1 or it % steps_per_eval == 0 or it == iters)`,
    before step `it`: at `it == iters` it would score the weights one step before the end.
    `train_adapter` scores the final weights, the ones it saves, instead; skipping mlx-lm's saves a
    whole validation and leaves as many as `mlx_lm.lora` runs. With `iters` 1 that evaluation is the
    one of iteration 0 (the base weights), and stays."""
    from mlx_lm.tuner.datasets import CacheDataset

    class Validation(CacheDataset):
        def __bool__(self) -> bool:
            return len(self) > 0 and not (iters > 1 and steps.drawn == iters)

    return Validation(valid_data)


def _prepare_model(model: Any, config: TrainConfig) -> None:
    """Freeze the model and make the trainable part, as mlx_lm.lora's train_model does."""
    from mlx_lm.tuner.utils import linear_to_lora_layers

    model.freeze()
    if config.num_layers > len(model.layers):
        raise ValueError(
            f"Requested to train {config.num_layers} layers "
            f"but the model only has {len(model.layers)} layers."
        )
    if config.fine_tune_type == "full":
        for layer in model.layers[-max(config.num_layers, 0) :]:
            layer.unfreeze()
    else:
        linear_to_lora_layers(
            model, config.num_layers, config.lora_parameters(), use_dora=config.fine_tune_type == "dora"
        )


def _check_resume_weights(model: Any, path: Path) -> None:
    """load_weights(strict=False) ignores what does not fit; a resumed adapter must fit exactly."""
    import mlx.core as mx
    from mlx.utils import tree_flatten

    trainable = dict(tree_flatten(model.trainable_parameters()))
    weights = cast(dict[str, Any], mx.load(str(path)))
    errors = [
        f"{name}: not a trainable parameter"
        if name not in trainable
        else f"{name}: shape {tuple(w.shape)}, the model expects {tuple(trainable[name].shape)}"
        for name, w in weights.items()
        if name not in trainable or w.shape != trainable[name].shape
    ]
    if errors or not weights:
        shown = "; ".join(errors[:5]) or "the file holds no tensors"
        raise ValueError(f"cannot resume from {path}: it does not match this config's adapter ({shown})")


def _optimizer(config: TrainConfig) -> Any:
    import mlx.optimizers as optim
    from mlx_lm.tuner.utils import build_schedule

    classes = {
        "adam": optim.Adam,
        "adamw": optim.AdamW,
        "muon": optim.Muon,
        "sgd": optim.SGD,
        "adafactor": optim.Adafactor,
    }
    lr = build_schedule(config.lr_schedule) if config.lr_schedule else config.learning_rate
    return classes[config.optimizer.lower()](learning_rate=lr)


def _write_adapter_config(
    path: Path, base_model: Path, data_dir: Path, config: TrainConfig, resume_file: Path | None
) -> None:
    """adapter_config.json with the keys mlx_lm.lora dumps (vars(args)), so mlx-lm tools accept it."""
    from mlx_lm.utils import save_config

    settings = asdict(config)
    for name in ("rank", "scale", "dropout", "early_stopping_patience"):
        settings.pop(name)
    settings.update(
        model=str(base_model),
        data=str(data_dir),
        adapter_path=str(path.parent),
        train=True,
        test=False,
        test_batches=500,
        config=None,
        resume_adapter_file=str(resume_file) if resume_file is not None else None,
        optimizer_config={name: {} for name in OPTIMIZERS},
        clear_cache_threshold=0,
        # The CLI sets lora_parameters to None for a full fine-tune before dumping the args.
        lora_parameters=None if config.fine_tune_type == "full" else config.lora_parameters(),
        report_to=None,
        project_name=None,
        trust_remote_code=False,
        # Ours, ignored by mlx-lm: how this adapter was selected.
        early_stopping_patience=config.early_stopping_patience,
    )
    save_config(settings, path)
