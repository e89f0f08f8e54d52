"""Training throughput: our `train_adapter` against `mlx_lm.lora` run by hand, same model, data and settings.

Both sides train the demo's tiny model on the demo's data directory with the demo's settings
(`DEMO_TRAINING`), longer for a steadier figure and with two evaluations each: before the first
step, and before the last step (mlx-lm) or after it (ours scores the final weights it saves, in
place of mlx-lm's). Each run is a fresh process; the sides alternate and the medians are compared
(tokens/s, and the wall time of the whole process). Tokens/s is computed the same way on both
sides, from mlx-lm's train reports: trained (unmasked) tokens over the summed seconds of the report
windows (each window's tokens over its tokens/s), so loading, evaluation and saving are excluded.

The by-hand side is `python -m mlx_lm lora --train ...` with a `-c` YAML for the LoRA parameters,
which have no flag. It runs through a short shim that registers one more `--report-to` target,
recording each report dict, because the CLI prints tokens/s as an integer and tokens to 0.1k, too
coarse at this model's ~30 trained tokens/s. The printed lines are checked against the recorded ones.

Needs `make demo` first (it writes data/tiny-model and data/mlx/sample-window):

    python bench/bench_training.py --iters 12 --repeat 3
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import os
import platform
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from sections import write_section  # bench/sections.py, beside this script

from trajectory_pipeline import MLX_COMPILE_ENV
from trajectory_pipeline.training.trainer import TrainConfig

# Registers `--report-to bench`: each report dict mlx-lm's loop hands to its callback, one JSON line each.
TAP = """
import json, sys
from pathlib import Path
from mlx_lm import cli
from mlx_lm.tuner import callbacks

class Tap:
    def __init__(self, project_name=None, log_dir=None, config=None, wrapped_callback=None):
        self.path = Path(log_dir) / "reports.jsonl"
    def on_train_loss_report(self, info):
        self.write("train", info)
    def on_val_loss_report(self, info):
        self.write("val", info)
    def write(self, kind, info):
        with self.path.open("a") as out:
            out.write(json.dumps({"kind": kind, **info}) + "\\n")

callbacks.SUPPORT_CALLBACK["bench"] = Tap
sys.argv[0] = "mlx_lm"
cli.main()
"""
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
# mlx-lm's printed train report: iteration, train loss and arrow, tokens/s, trained tokens in thousands.
PRINTED_REPORT = re.compile(r"^\s*(\d+)\s+(\d+\.\d+) [▼▲]\s+([\d,]+)\s+([\d.]+)k\s*$")


def throughput(reports: list[dict[str, Any]]) -> tuple[int, float]:
    """Trained tokens and training seconds from train reports (cumulative trained_tokens, window tokens/s)."""
    tokens, seconds = 0, 0.0
    for report in reports:
        window = int(report["trained_tokens"]) - tokens
        tokens = int(report["trained_tokens"])
        seconds += window / report["tokens_per_second"]
    return tokens, seconds


def ours(model: str, data: str, adapter_dir: str, settings: dict[str, Any]) -> dict[str, Any]:
    """One run of train_adapter (called in a child process by `measure_ours`)."""
    from trajectory_pipeline.training.trainer import train_adapter

    result = train_adapter(Path(model), Path(data), Path(adapter_dir), TrainConfig(**settings))
    reports = [row for row in result.losses if row["kind"] == "train"]
    tokens, seconds = throughput(reports)
    return {
        "tokens": tokens,
        "train_seconds": seconds,
        "tokens_per_second": tokens / seconds,
        "result_tokens_per_second": result.tokens_per_second,
        "train_losses": [row["train_loss"] for row in reports],
        "val_losses": [row["val_loss"] for row in result.losses if row["kind"] == "val"],
    }


def cli_args(model: Path, data: Path, adapter_dir: Path, yaml_file: Path, config: TrainConfig) -> list[str]:
    """`mlx_lm lora` arguments for `config`; rank, scale and dropout go in the YAML (they have no flag)."""
    if config.lr_schedule is not None or config.grad_checkpoint:
        raise ValueError(
            "the bench passes no lr_schedule or grad_checkpoint to mlx_lm.lora; leave them unset"
        )
    flags = [
        "fine_tune_type",
        "optimizer",
        "num_layers",
        "batch_size",
        "iters",
        "val_batches",
        "learning_rate",
        "max_seq_length",
        "steps_per_report",
        "steps_per_eval",
        "save_every",
        "grad_accumulation_steps",
        "seed",
    ]
    args = ["lora", "--train", "--model", str(model), "--data", str(data), "--adapter-path", str(adapter_dir)]
    for name in flags:
        args += [f"--{name.replace('_', '-')}", str(getattr(config, name))]
    return args + ["-c", str(yaml_file)] + (["--mask-prompt"] if config.mask_prompt else [])


def by_hand(model: Path, data: Path, config: TrainConfig) -> dict[str, Any]:
    """One run of the mlx_lm.lora CLI through the tap; returns the figures and its wall time."""
    with tempfile.TemporaryDirectory(prefix="bench-mlx-lm-") as tmp:
        adapter_dir, yaml_file = Path(tmp) / "adapter", Path(tmp) / "config.yaml"
        yaml_file.write_text(json.dumps({"lora_parameters": config.lora_parameters()}))  # JSON is YAML
        args = cli_args(model, data, adapter_dir, yaml_file, config)
        started = time.perf_counter()
        out = _run([sys.executable, "-c", TAP, *args, "--report-to", "bench"])
        wall = time.perf_counter() - started
        rows = [json.loads(line) for line in (adapter_dir / "reports.jsonl").read_text().splitlines()]
    reports = [row for row in rows if row["kind"] == "train"]
    _check_printed(out, reports)
    tokens, seconds = throughput(reports)
    return {
        "tokens": tokens,
        "train_seconds": seconds,
        "tokens_per_second": tokens / seconds,
        "train_losses": [row["train_loss"] for row in reports],
        "val_losses": [row["val_loss"] for row in rows if row["kind"] == "val"],
        "wall_seconds": wall,
    }


def measure_ours(model: Path, data: Path, config: TrainConfig) -> dict[str, Any]:
    """One run of `ours` in a fresh process, as the CLI gets one; adds its wall time."""
    with tempfile.TemporaryDirectory(prefix="bench-ours-") as tmp:
        code = (
            f"import json, sys; sys.path.insert(0, {str(Path(__file__).resolve().parent)!r}); "
            "import bench_training as b; "
            f"print(json.dumps(b.ours({str(model)!r}, {str(data)!r}, {tmp + '/adapter'!r}, "
            f"{dataclasses.asdict(config)!r})))"
        )
        started = time.perf_counter()
        out = _run([sys.executable, "-c", code])
        wall = time.perf_counter() - started
    return {**json.loads(out.strip().splitlines()[-1]), "wall_seconds": wall}


def _run(command: list[str]) -> str:
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{shlex.join(command[:3])} ... exited {done.returncode}:\n{done.stderr[-3000:]}")
    return done.stdout


def _check_printed(stdout: str, reports: list[dict[str, Any]]) -> None:
    """The tap must have seen exactly the train reports mlx_lm.lora printed."""
    printed = [m.groups() for m in map(PRINTED_REPORT.match, ANSI.sub("", stdout).splitlines()) if m]
    expected = [(str(r["iteration"]), f"{r['tokens_per_second']:,.0f}") for r in reports]
    if [(it, tps) for it, _, tps, _ in printed] != expected:
        raise RuntimeError(
            f"mlx_lm.lora printed train reports (iteration, tok/s) {[(p[0], p[2]) for p in printed]}, "
            f"but the tap recorded {expected}"
        )


def machine() -> str:
    import mlx.core as mx
    import mlx_lm

    return (
        f"{os.cpu_count()} cores, {platform.platform()}, Python {platform.python_version()}, "
        f"mlx {mx.__version__}, mlx-lm {mlx_lm.__version__}, mlx compilation "
        f"{'off' if MLX_COMPILE_ENV in os.environ else 'on'} on both sides"
    )


def main() -> int:
    # Imported here, not at the top: the child processes of `measure_ours` import this module too,
    # and should load no more than the trainer (as the by-hand side loads only mlx-lm).
    from assets.demo import DEMO_TRAINING

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, default=Path("data/tiny-model"))
    parser.add_argument("--data", type=Path, default=Path("data/mlx/sample-window"))
    parser.add_argument("--iters", type=int, default=12)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--val-batches", type=int, default=2, help="validation batches (the figure excludes validation)"
    )
    parser.add_argument("--results", type=Path, default=Path("bench/RESULTS.md"))
    args = parser.parse_args()

    missing = [str(p) for p in (args.model, args.data) if not p.is_dir()]
    if missing:
        print(f"missing {', '.join(missing)}: run `make demo` first (it builds the tiny model and data)")
        return 2
    # The demo's settings; steps_per_eval past iters leaves only mlx-lm's first and last evaluations,
    # and fewer validation batches shorten them (tokens/s counts training steps only).
    overrides = {"iters": args.iters, "steps_per_eval": 1000, "val_batches": args.val_batches, "seed": 0}
    config = TrainConfig(**{**DEMO_TRAINING, **overrides})
    load_before = os.getloadavg()[0]
    runs: dict[str, list[dict[str, Any]]] = {"ours": [], "mlx_lm.lora": []}
    with tempfile.TemporaryDirectory(prefix="bench-training-") as tmp:
        # Private copies: a `make demo` running meanwhile may rewrite the model or the data.
        model, data = Path(tmp) / "model", Path(tmp) / "data"
        shutil.copytree(args.model, model)
        shutil.copytree(args.data, data)
        for index in range(args.repeat):  # interleaved, so both sides see the same machine load
            for side, run in (("ours", measure_ours), ("mlx_lm.lora", by_hand)):
                runs[side].append(run(model, data, config))
                r = runs[side][-1]
                print(
                    f"run {index + 1} {side:<11} {r['tokens']} tokens in {r['train_seconds']:.2f} s: "
                    f"{r['tokens_per_second']:.2f} tokens/s, wall {r['wall_seconds']:.1f} s",
                    flush=True,
                )
    text = report(args, config, runs, load_before, DEMO_TRAINING)
    print(text)
    write_section(args.results, "bench_training", text)
    return 0


def report(
    args: argparse.Namespace,
    config: TrainConfig,
    runs: dict[str, list[dict[str, Any]]],
    load_before: float,
    demo_training: dict[str, Any],
) -> str:
    median = {
        side: {key: statistics.median(r[key] for r in rs) for key in ("tokens_per_second", "wall_seconds")}
        for side, rs in runs.items()
    }
    ratio = median["ours"]["tokens_per_second"] / median["mlx_lm.lora"]["tokens_per_second"]
    pairs = [
        o["tokens_per_second"] / h["tokens_per_second"]
        for o, h in zip(runs["ours"], runs["mlx_lm.lora"], strict=True)
    ]
    tokens = {r["tokens"] for rs in runs.values() for r in rs}
    wall_ratio = median["ours"]["wall_seconds"] / median["mlx_lm.lora"]["wall_seconds"]
    # Validation losses differ by design (ours scores a fixed sample, mlx-lm a redrawn subset, and
    # ours last scores the final weights); the train losses come from the same steps on both sides.
    loss_gap = max(
        abs(a - b)
        for o, h in zip(runs["ours"], runs["mlx_lm.lora"], strict=True)
        for a, b in zip(o["train_losses"], h["train_losses"], strict=True)
    )
    own_figure_gap = max(
        abs(r["result_tokens_per_second"] / r["tokens_per_second"] - 1) for r in runs["ours"]
    )
    changed = {k: v for k, v in dataclasses.asdict(config).items() if demo_training.get(k, v) != v}
    demo = {k: getattr(config, k) for k in demo_training if k not in changed}
    hand = cli_args(args.model, args.data, Path("TMP/adapter"), Path("TMP/config.yaml"), config)
    lines = [
        f"## Training throughput: train_adapter against mlx_lm.lora ({dt.date.today()})",
        "",
        f"`python bench/bench_training.py --iters {args.iters} --repeat {args.repeat}`",
        "",
        f"Machine: {machine()}; load average {load_before:.2f} before, {os.getloadavg()[0]:.2f} after "
        "(a shared machine: other jobs ran alongside).",
        "",
        f"Model `{args.model}`, data `{args.data}` (both sides read one private copy); "
        f"the demo's settings {demo}, with {changed} "
        "(two evaluations per run: before the first step, and before the last step by hand or after it "
        "in ours), mask_prompt on, "
        f"LoRA {config.lora_parameters()}. Runs alternate, {args.repeat} per side, each in a fresh process.",
        "",
        f"- ours: `train_adapter(model, data, TMP/adapter, TrainConfig(**{dataclasses.asdict(config)}))`",
        f"- by hand: `python -m mlx_lm {shlex.join(hand)}` with `TMP/config.yaml` = "
        f"`{json.dumps({'lora_parameters': config.lora_parameters()})}`, run through the bench's "
        "`--report-to bench` tap to read un-rounded reports (the printed ones are checked against them)",
        "",
        "Tokens/s: trained (unmasked) tokens over the summed training seconds of the report windows "
        "(window tokens / window tokens/s), the same formula on both sides, the figure `mlx_lm.lora` "
        "prints per window; loading, evaluation and saving are excluded. Wall: the whole process.",
        "",
        "| run | side | trained tokens | train s | tokens/s | wall s |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for index in range(args.repeat):
        for side, rs in runs.items():
            r = rs[index]
            lines.append(
                f"| {index + 1} | {side} | {r['tokens']} | {r['train_seconds']:.2f} | "
                f"{r['tokens_per_second']:.2f} | {r['wall_seconds']:.1f} |"
            )
    for side, m in median.items():
        lines.append(f"| median | {side} | | | {m['tokens_per_second']:.2f} | {m['wall_seconds']:.1f} |")
    lines += [
        "",
        f"**Ours / mlx_lm.lora tokens/s (medians): {ratio:.3f}** (target ≥ 0.95); per pair "
        f"{', '.join(f'{o:.3f}' for o in pairs)}. Wall time: ours "
        f"{median['ours']['wall_seconds']:.1f} s, by hand {median['mlx_lm.lora']['wall_seconds']:.1f} s: "
        f"**{wall_ratio:.2f}×** (target ≤ 1.10; ours also keeps best/last copies and a manifest check).",
        "",
        f"Same work: trained tokens per run {sorted(tokens)} on both sides; train losses of paired runs "
        f"differ by at most {loss_gap:.2g} (validation losses differ by design: ours scores a fixed "
        f"sample). TrainResult.tokens_per_second agrees with the formula above to {own_figure_gap:.1e} "
        "(relative).",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
