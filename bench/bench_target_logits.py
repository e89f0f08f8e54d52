"""Training with the output layer at the target tokens only (`target_logits`) against mlx-lm's loss.

Each run is `train_adapter` (what `lora_adapter` runs) in a fresh process, on the demo's data
directory with the demo's LoRA settings, once with `target_logits` on and once off, alternating:
tokens/s (TrainResult.tokens_per_second), MLX's peak memory (TrainResult.peak_memory_gb), the
whole process's wall time, and the losses, which must agree.

Two models: the demo's tiny model (a 3k-token vocabulary, where the output layer is a small share
of a step), and the same body with Qwen2.5's 151,936-token vocabulary and random weights (the
demo's tokenizer, whose ids all fall inside it): the share of a step, and of its memory, that a
real model's output layer takes.

Needs `make demo` first (it writes data/tiny-model and data/mlx/sample-window):

    python bench/bench_target_logits.py --iters 6 --repeat 1
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_blas import demo_training_args, demo_training_parser  # beside this script
from sections import write_section  # bench/sections.py, beside this script

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from assets.demo import DEMO_TRAINING  # noqa: E402

QWEN_VOCAB = 151_936  # Qwen2.5's (and Qwen3's) vocabulary size


def large_vocab_model(tiny: Path, out: Path) -> Path:
    """The tiny model's body and tokenizer with a 151,936-token vocabulary, random weights."""
    import mlx.core as mx
    from mlx.utils import tree_flatten
    from mlx_lm.models import qwen2

    config = json.loads((tiny / "config.json").read_text())
    config["vocab_size"] = QWEN_VOCAB
    out.mkdir(parents=True)
    for path in tiny.iterdir():
        if path.name not in ("config.json", "model.safetensors", "pretraining.json"):
            shutil.copy(path, out / path.name)
    (out / "config.json").write_text(json.dumps(config, indent=2))
    mx.random.seed(0)
    model = qwen2.Model(qwen2.ModelArgs.from_dict(config))
    mx.save_safetensors(str(out / "model.safetensors"), dict(tree_flatten(model.parameters())))
    return out


def child(model: str, data: str, iters: int, target_logits: bool) -> dict[str, Any]:
    from trajectory_pipeline.training.trainer import TrainConfig, train_adapter

    settings = {**DEMO_TRAINING, "iters": iters, "steps_per_report": 1, "steps_per_eval": 1000}
    settings.update(val_batches=2, save_every=1000, target_logits=target_logits)
    with tempfile.TemporaryDirectory() as adapter:
        result = train_adapter(Path(model), Path(data), Path(adapter), TrainConfig(**settings))
    return {
        "tokens_per_second": result.tokens_per_second,
        "peak_memory_gb": result.peak_memory_gb,
        "train_losses": [row["train_loss"] for row in result.losses if row["kind"] == "train"],
        "val_losses": [row["val_loss"] for row in result.losses if row["kind"] == "val"],
        "target_logits": result.target_logits,
    }


def measure(model: Path, data: Path, iters: int, target_logits: bool) -> dict[str, Any]:
    command = [sys.executable, __file__, "--child", str(model), "--data", str(data), "--iters", str(iters)]
    command += ["--target-logits"] if target_logits else []
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr[-3000:]}")
    return {**json.loads(done.stdout.strip().splitlines()[-1]), "wall": time.perf_counter() - started}


def _shown(path: Path) -> Path:
    """A path as the report names it: from the repository's root when it lies inside."""
    path = path.resolve()
    return path.relative_to(ROOT) if path.is_relative_to(ROOT) else path


def report(args: argparse.Namespace, rows: dict[str, dict[bool, list[dict[str, Any]]]]) -> str:
    lines = [
        f"## Training with logits at the targets only (`target_logits`) ({dt.date.today().isoformat()})",
        "",
        f"`python bench/bench_target_logits.py --iters {args.iters} --repeat {args.repeat}`",
        "",
        f"Machine: {platform.platform()}, Python {platform.python_version()}. `train_adapter` on "
        f"`{_shown(args.data)}` with the demo's LoRA settings, {args.iters} steps, each run a "
        "fresh process, on and off alternating; medians. Peak memory is MLX's "
        "(`TrainResult.peak_memory_gb`); wall is the whole process.",
        "",
        "| model | target_logits | tokens/s | peak memory, GB | wall s | first train loss | first val loss |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    notes = []
    for name, by_mode in rows.items():
        medians = {}
        for mode in (True, False):
            runs = by_mode[mode]
            medians[mode] = {
                key: statistics.median(run[key] for run in runs)
                for key in ("tokens_per_second", "peak_memory_gb", "wall")
            }
            first = runs[0]
            lines.append(
                f"| {name} | {'on' if mode else 'off'} | {medians[mode]['tokens_per_second']:.1f} | "
                f"{medians[mode]['peak_memory_gb']:.2f} | {medians[mode]['wall']:.1f} | "
                f"{first['train_losses'][0]:.6f} | {first['val_losses'][0]:.6f} |"
            )

        def losses(run: dict[str, Any]) -> list[float]:
            return [*run["train_losses"], *run["val_losses"]]

        gap = max(
            abs(a - b)
            for on, off in zip(by_mode[True], by_mode[False], strict=True)
            for a, b in zip(losses(on), losses(off), strict=True)
        )
        on, off = medians[True], medians[False]
        notes.append(
            f"- {name}: **{on['tokens_per_second'] / off['tokens_per_second']:.2f}× the tokens/s, "
            f"{on['peak_memory_gb'] / off['peak_memory_gb']:.2f}× the peak memory**, "
            f"{on['wall'] / off['wall']:.2f}× the wall time; train and validation losses of paired runs "
            f"differ by at most {gap:.1g}."
        )
    return "\n".join([*lines, "", *notes]) + "\n"


def main() -> int:
    parser = demo_training_parser(__doc__, iters=6, repeat=1)
    parser.add_argument("--target-logits", action="store_true", help=argparse.SUPPRESS)
    args = demo_training_args(parser)
    if args.child:
        print(json.dumps(child(args.child, str(args.data), args.iters, args.target_logits)))
        return 0
    with tempfile.TemporaryDirectory() as scratch:
        models = {
            "demo's tiny model (3k vocabulary)": args.model,
            f"its body, Qwen2.5's {QWEN_VOCAB:,}-token vocabulary": large_vocab_model(
                args.model, Path(scratch) / "large-vocab"
            ),
        }
        rows: dict[str, dict[bool, list[dict[str, Any]]]] = {}
        for name, model in models.items():
            rows[name] = {True: [], False: []}
            for _ in range(args.repeat):
                for mode in (True, False):
                    rows[name][mode].append(measure(model, args.data, args.iters, mode))
                    print(name, mode, rows[name][mode][-1], flush=True)
    text = report(args, rows)
    write_section(args.results, "bench_target_logits", text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
