"""A learned base for the bundled tiny model: a short full fine-tune on the rendered texts, done once.

The tiny model's weights are random, so on its own it answers with noise and any adapter on top
looks like a miracle or a wash. Before the demo trains a LoRA, this teaches the whole model
(embeddings included) the corpus's language for a few minutes on the CPU: the demo's settings train
on every token of the training split's records (`mask_prompt` off), which teaches a model from
nothing to read its prompt sooner than the decisions alone do (bench/bench_base.py). The result
replaces the directory's weights and is recorded in `pretraining.json`, so the next `make demo`
finds it learned and skips the work:

    trajectory-pipeline learn-base --model data/tiny-model --data data/mlx/sample-window

The same random model, data and settings give the same weights (seeded MLX and NumPy).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, cast

from trajectory_pipeline.config import knob
from trajectory_pipeline.dataset.mlx_data import read_manifest
from trajectory_pipeline.parquet_io import write_bytes_atomic
from trajectory_pipeline.sample.tiny_model import PRETRAINING_RECORD, safetensors_bytes
from trajectory_pipeline.training.trainer import training_sets

RECORD = PRETRAINING_RECORD


@dataclass(frozen=True)
class BaseTraining:
    """Settings of the learned base's full fine-tune (mlx-lm's names)."""

    iters: int = knob(60, "Optimizer steps of the full fine-tune.")
    batch_size: int = knob(4, "Records per step.")
    learning_rate: float = knob(3e-3, "Peak learning rate of the cosine schedule (after a short warmup).")
    max_seq_length: int = knob(4096, "Longer records are cut; the demo's records are far shorter.")
    mask_prompt: bool = knob(
        True, "Train on the decisions (off: on every token, prompts and tool results included)."
    )
    history_calls: bool = knob(
        True,
        "Also train on the calls in each record's history, from the records no other one contains "
        "(training/turns.py): the base sees every call of the corpus once per epoch.",
    )
    seed: int = knob(0, "Seed of MLX and of batch shuffling.")

    def __post_init__(self) -> None:
        for name in ("iters", "batch_size", "max_seq_length"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"BaseTraining.{name} must be a positive integer, got {value!r}")
        if not self.learning_rate > 0:
            raise ValueError(f"BaseTraining.learning_rate must be positive, got {self.learning_rate}")
        if self.history_calls and not self.mask_prompt:
            raise ValueError("BaseTraining.history_calls trains on the assistant turns: it needs mask_prompt")


def learned_on(record: dict[str, Any], data_dir: Path, settings: BaseTraining) -> bool:
    """Whether a pretraining record describes a base learned on `data_dir` with `settings`."""
    try:
        dataset_hash = read_manifest(data_dir).dataset_hash
    except (OSError, ValueError):
        return False
    return record.get("dataset_hash") == dataset_hash and record.get("settings") == asdict(settings)


def pretraining_record(model_dir: Path) -> dict[str, Any] | None:
    """What the learned base was trained on, or None when the directory still holds random weights."""
    path = Path(model_dir) / RECORD
    return json.loads(path.read_text()) if path.is_file() else None


def learn_base(
    model_dir: Path,
    data_dir: Path,
    settings: BaseTraining = BaseTraining(),
    on_report: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Fine-tune every weight of `model_dir` on `data_dir`'s records and write the weights back.

    Returns the record written to `pretraining.json` (settings, dataset hash, losses, seconds).
    Skips the work when the directory already holds a base learned on the same data and settings.
    """
    import mlx.core as mx
    import mlx.optimizers as optim
    import numpy as np
    from mlx.utils import tree_flatten
    from mlx_lm.tuner.datasets import CacheDataset
    from mlx_lm.tuner.trainer import TrainingArgs, train
    from mlx_lm.tuner.utils import build_schedule
    from mlx_lm.utils import load

    model_dir, data_dir = Path(model_dir), Path(data_dir)
    dataset_hash = read_manifest(data_dir).dataset_hash
    wanted = {"settings": asdict(settings), "dataset_hash": dataset_hash}
    done = pretraining_record(model_dir)
    if done is not None and learned_on(done, data_dir, settings):
        return done
    if done is not None:
        # Learning again would start from learned weights, not the random ones: not reproducible.
        raise ValueError(
            f"{model_dir} already holds a base learned on other data or settings (dataset "
            f"{str(done.get('dataset_hash'))[:16]}); rebuild it with `trajectory-pipeline tiny-model` first"
        )

    started = time.perf_counter()
    model, tokenizer = load(str(model_dir))[:2]
    train_set, valid_set, routines = training_sets(
        data_dir, tokenizer, settings.mask_prompt, settings.history_calls
    )
    np.random.seed(settings.seed)
    mx.random.seed(settings.seed)
    model.unfreeze()
    losses: list[dict[str, Any]] = []

    class Reporter:
        def on_train_loss_report(self, info: dict[str, Any]) -> None:
            row = {"iteration": info["iteration"], "train_loss": info["train_loss"]}
            losses.append(row)
            if on_report is not None:
                on_report(row)

        def on_val_loss_report(self, info: dict[str, Any]) -> None:
            row = {"iteration": info["iteration"], "val_loss": info["val_loss"]}
            losses.append(row)
            if on_report is not None:
                on_report(row)

    schedule = build_schedule(
        {"name": "cosine_decay", "arguments": [settings.learning_rate, settings.iters], "warmup": 4}
    )
    scratch = model_dir / ".pretraining.safetensors"
    try:
        train(
            model=model,
            args=TrainingArgs(
                batch_size=settings.batch_size,
                iters=settings.iters,
                val_batches=2,
                steps_per_report=max(1, settings.iters // 8),
                steps_per_eval=settings.iters,
                steps_per_save=settings.iters + 1,
                adapter_file=str(scratch),
                max_seq_length=settings.max_seq_length,
            ),
            optimizer=optim.Adam(learning_rate=schedule),
            train_dataset=CacheDataset(train_set),
            val_dataset=CacheDataset(valid_set),
            training_callback=cast(Any, Reporter()),
            **routines,
        )
    finally:
        scratch.unlink(missing_ok=True)
    weights = dict(tree_flatten(model.parameters()))
    mx.eval(weights)
    write_bytes_atomic(model_dir / "model.safetensors", safetensors_bytes(weights))
    record = {**wanted, "losses": losses, "seconds": round(time.perf_counter() - started, 1)}
    write_bytes_atomic(model_dir / RECORD, (json.dumps(record, indent=2, sort_keys=True) + "\n").encode())
    return record


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", type=Path, required=True, help="the tiny model directory to teach")
    parser.add_argument("--data", type=Path, required=True, help="an mlx-lm data directory with a manifest")
    defaults = BaseTraining()
    parser.add_argument(
        "--iters", type=int, default=defaults.iters, help="optimizer steps (default %(default)s)"
    )
    parser.add_argument(
        "--batch-size", type=int, default=defaults.batch_size, help="records per step (default %(default)s)"
    )
    parser.add_argument(
        "--learning-rate",
        type=float,
        default=defaults.learning_rate,
        help="peak learning rate (default %(default)s)",
    )
    parser.add_argument(
        "--mask-prompt",
        action=argparse.BooleanOptionalAction,
        default=defaults.mask_prompt,
        help="train on the decisions only; --no-mask-prompt: on every token (default %(default)s)",
    )


def run(args: argparse.Namespace) -> int:
    """The `learn-base` command; a setting out of range, a model already learned otherwise, a data
    folder without an mlx-lm dataset or data smaller than a batch is one line (exit 2), not a
    traceback."""
    try:
        settings = BaseTraining(
            iters=args.iters,
            batch_size=args.batch_size,
            learning_rate=args.learning_rate,
            mask_prompt=args.mask_prompt,
            history_calls=args.mask_prompt,  # the history's calls are decisions too: masked training only
        )
        record = learn_base(args.model, args.data, settings, on_report=print)
    except (ValueError, FileNotFoundError) as err:  # FileNotFoundError: a data folder without records
        print(f"trajectory-pipeline learn-base: {err}", file=sys.stderr)
        return 2
    print(f"learned base in {args.model}: {record['seconds']}s, dataset {record['dataset_hash'][:16]}")
    return 0
