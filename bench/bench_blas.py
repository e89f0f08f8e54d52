"""mlx on its bundled reference BLAS against the optimized one preloaded (trajectory_pipeline/blas.py).

    python bench/bench_blas.py --repeat 2 --lora-iters 8

Each measurement runs in a fresh process, the sides alternating: `reference` without LD_PRELOAD,
`optimized` with the library `blas.find_optimized_blas()` finds in LD_PRELOAD (and, with
`--threads N`, a third side with OPENBLAS_NUM_THREADS=N). In each process, medians of a few runs of:
- matmul: a 3600x64 @ 64x2048 float32 product (4 x 900 tokens through the tiny model's output layer);
- forward: a random model of the bundled tiny model's shape (TinyModelSpec's defaults: Qwen2, 2
  layers, width 64, vocabulary 2048) on a 4 x 900-token batch;
- train step: one LoRA step on that model and batch with mlx-lm's tuner (`linear_to_lora_layers`,
  `default_loss`, `nn.value_and_grad`, Adam), evaluated.
Then, where `make demo` has written data/tiny-model and data/mlx/sample-window, `python -m mlx_lm lora
--train` on them for `--lora-iters` steps per side, one process each: tokens/s of its training steps
and its losses, read from its report callback (a `--report-to` tap), side by side. Writes the section
`bench_blas` of bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sections import markdown_table, write_section  # bench/sections.py, beside this script

from trajectory_pipeline import blas

ROOT = Path(__file__).resolve().parents[1]
MODEL, DATA = ROOT / "data" / "tiny-model", ROOT / "data" / "mlx" / "sample-window"


def demo_training_parser(
    doc: str | None, iters: int, repeat: int, children: tuple[str, ...] | None = None
) -> argparse.ArgumentParser:
    """The options of a bench that trains on the demo's model and data, each run in a child process
    (`--child` names the side it runs); `demo_training_args` reads them."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", type=Path, default=MODEL)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--iters", type=int, default=iters)
    parser.add_argument("--repeat", type=int, default=repeat)
    parser.add_argument("--results", type=Path, default=ROOT / "bench" / "RESULTS.md")
    parser.add_argument("--child", choices=children, help=argparse.SUPPRESS)
    return parser


def demo_training_args(parser: argparse.ArgumentParser) -> argparse.Namespace:
    """The parsed options, paths made absolute (the children run in the repository's root); outside a
    child, the demo's model and data must be there."""
    args = parser.parse_args()
    args.model, args.data = args.model.resolve(), args.data.resolve()
    demo_written = (args.model / "config.json").is_file() and (args.data / "train.jsonl").is_file()
    if not args.child and not demo_written:
        raise SystemExit(f"needs {args.model} and {args.data}: run `make demo` first")
    return args


BATCH, TOKENS = 4, 900


def median_ms(run: Callable[[], Any], times: int) -> float:
    run()  # warm-up: compilation, allocation
    samples = []
    for _ in range(times):
        started = time.perf_counter()
        run()
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


def worker(times: int) -> dict[str, Any]:
    """The in-process measurements, for one side (this process's environment)."""
    import mlx.core as mx
    import mlx.nn as nn
    import mlx.optimizers as optim
    import numpy as np
    from mlx_lm.models import qwen2
    from mlx_lm.tuner.trainer import default_loss
    from mlx_lm.tuner.utils import linear_to_lora_layers

    from trajectory_pipeline.sample.tiny_model import ENDOFTEXT, IM_END, TinyModelSpec, model_config

    rng = np.random.default_rng(0)
    a = mx.array(rng.standard_normal((BATCH * TOKENS, 64), dtype=np.float32))
    b = mx.array(rng.standard_normal((64, 2048), dtype=np.float32))
    matmul = median_ms(lambda: mx.eval(a @ b), times)

    spec = TinyModelSpec()
    mx.random.seed(spec.seed)
    config = model_config(spec, spec.vocab_size, {ENDOFTEXT: 0, IM_END: 1})
    model = qwen2.Model(qwen2.ModelArgs.from_dict(config))
    batch = mx.array(rng.integers(0, spec.vocab_size, (BATCH, TOKENS + 1)))
    forward = median_ms(lambda: mx.eval(model(batch[:, :-1])), times)

    model.freeze()
    linear_to_lora_layers(model, spec.layers, {"rank": 8, "scale": 20.0, "dropout": 0.0})
    optimizer = optim.Adam(learning_rate=1e-4)
    loss_and_grad = nn.value_and_grad(model, default_loss)
    lengths = mx.array([[0, TOKENS]] * BATCH)
    losses: list[float] = []

    def step() -> None:
        (loss, _), grads = loss_and_grad(model, batch, lengths)
        optimizer.update(model, grads)
        mx.eval(loss, model.parameters(), optimizer.state)
        losses.append(loss.item())

    train = median_ms(step, max(3, times // 2))
    info = blas.blas_in_use()
    return {
        "blas": info.name,
        "kind": info.kind,
        "matmul_ms": matmul,
        "forward_ms": forward,
        "train_step_ms": train,
        "first_loss": losses[0],
    }


def side_env(preload: Path | None, threads: int | None) -> dict[str, str]:
    """This environment with only `preload` in LD_PRELOAD (none: the reference BLAS)."""
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", blas.CHOICE_ENV, blas.REEXEC_ENV)}
    if preload is not None:
        env["LD_PRELOAD"] = str(preload)
    if threads is not None:
        env["OPENBLAS_NUM_THREADS"] = str(threads)
    return env


def run_worker(env: dict[str, str], times: int) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, __file__, "--worker", "--times", str(times)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode:
        raise SystemExit(f"worker failed:\n{done.stderr[-3000:]}")
    return dict(json.loads(done.stdout.splitlines()[-1]))


# `python -m mlx_lm lora` with one more `--report-to` target, `tap`: each report dict of its training
# loop as a JSON line in the adapter folder (what it prints is rounded, and drawn as a table).
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

callbacks.SUPPORT_CALLBACK["tap"] = Tap
sys.argv[0] = "mlx_lm"
cli.main()
"""


def run_lora(env: dict[str, str], iters: int) -> dict[str, Any]:
    """`mlx_lm lora --train` on the demo's model and data: tokens/s of its training steps (their
    reports' windows: loading and evaluation excluded) and its losses."""
    with tempfile.TemporaryDirectory(prefix="bench-blas-") as tmp:
        command = [
            sys.executable, "-c", TAP, "lora", "--train", "--model", str(MODEL), "--data", str(DATA),
            "--adapter-path", tmp, "--iters", str(iters), "--batch-size", "2", "--num-layers", "-1",
            "--steps-per-report", "1", "--steps-per-eval", "1000", "--val-batches", "2",
            "--max-seq-length", "4096", "--seed", "0", "--report-to", "tap",
        ]  # fmt: skip
        started = time.perf_counter()
        done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
        wall = time.perf_counter() - started
        if done.returncode:
            raise SystemExit(f"mlx_lm lora failed:\n{done.stderr[-3000:]}")
        reports = [json.loads(line) for line in (Path(tmp) / "reports.jsonl").read_text().splitlines()]
    train = [r for r in reports if r["kind"] == "train"]
    seconds, tokens = 0.0, 0
    for report in train:  # one step a report: its tokens over its tokens/s is its time
        window = int(report["trained_tokens"]) - tokens
        tokens = int(report["trained_tokens"])
        seconds += window / report["tokens_per_second"]
    return {
        "tokens_per_second": tokens / seconds,
        "trained_tokens": tokens,
        "train_losses": [r["train_loss"] for r in train],
        "val_losses": [r["val_loss"] for r in reports if r["kind"] == "val"],
        "wall_s": wall,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=2, help="processes per side")
    parser.add_argument("--times", type=int, default=5, help="timed runs per measurement in a process")
    parser.add_argument("--threads", type=int, help="also an optimized side with OPENBLAS_NUM_THREADS=N")
    parser.add_argument("--lora-iters", type=int, default=8, help="mlx_lm lora steps per side; 0: none")
    parser.add_argument("--results", type=Path, default=ROOT / "bench" / "RESULTS.md")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.times)))
        return 0

    library = blas.find_optimized_blas({})
    if library is None:
        print(f"No optimized BLAS here ({blas.blas_in_use().describe()}): nothing to compare.")
        return 0
    sides: dict[str, dict[str, str]] = {
        "reference": side_env(None, None),
        "optimized": side_env(library, None),
    }
    if args.threads:
        sides[f"optimized, {args.threads} thread(s)"] = side_env(library, args.threads)
    load_before = os.getloadavg()[0]
    runs: dict[str, list[dict[str, Any]]] = {side: [] for side in sides}
    for _ in range(args.repeat):
        for side in sides:
            runs[side].append(run_worker(sides[side], args.times))
            print(side, json.dumps(runs[side][-1]), flush=True)
    lora: dict[str, dict[str, Any]] = {}
    if args.lora_iters and (MODEL / "config.json").exists() and (DATA / "train.jsonl").exists():
        for side in sides:
            lora[side] = run_lora(sides[side], args.lora_iters)
            print(side, "mlx_lm lora", json.dumps(lora[side]), flush=True)
    load_after = os.getloadavg()[0]

    def med(side: str, key: str) -> float:
        return statistics.median(run[key] for run in runs[side])

    rows = [("side", "BLAS", "matmul ms", "forward ms", "train step ms")]
    for side in sides:
        rows.append(
            (
                side,
                runs[side][0]["blas"],
                f"{med(side, 'matmul_ms'):.1f}",
                f"{med(side, 'forward_ms'):.0f}",
                f"{med(side, 'train_step_ms'):.0f}",
            )
        )
    speedup = {
        key: med("reference", key) / med("optimized", key)
        for key in ("matmul_ms", "forward_ms", "train_step_ms")
    }
    first_losses = {side: runs[side][0]["first_loss"] for side in sides}
    command = f"python bench/bench_blas.py --repeat {args.repeat} --times {args.times}" + (
        f" --threads {args.threads}" if args.threads else ""
    )
    lines = [
        f"## mlx on an optimized BLAS against its bundled reference BLAS ({dt.date.today()})",
        "",
        f"`{command} --lora-iters {args.lora_iters}`",
        "",
        f"Machine: {os.cpu_count()} cores, {platform.platform()}, Python {platform.python_version()}; "
        f"load average {load_before:.2f} before, {load_after:.2f} after (a shared machine). Optimized: "
        f"`LD_PRELOAD={library}`; OPENBLAS_* as the environment has them "
        f"({ {k: v for k, v in os.environ.items() if k.startswith('OPENBLAS_')} or 'none' }). "
        f"Medians of {args.times} timed runs in each of {args.repeat} fresh processes per side "
        f"(sides alternating; train step: {max(3, args.times // 2)} runs). Matmul: 3600x64 @ 64x2048 "
        f"float32; forward and train step: a random model of the tiny model's shape (Qwen2, 2 layers, "
        f"width 64, vocabulary 2048) on {BATCH} x {TOKENS} tokens, the step a LoRA step through "
        "mlx-lm's tuner (`linear_to_lora_layers`, `default_loss`, Adam).",
        "",
        *markdown_table(rows),
        "",
        f"**Speed-up (reference / optimized): matmul {speedup['matmul_ms']:.1f}x, forward "
        f"{speedup['forward_ms']:.1f}x, train step {speedup['train_step_ms']:.1f}x.** First step's loss: "
        + ", ".join(f"{side} {loss:.6f}" for side, loss in first_losses.items())
        + " (tests/test_blas.py checks outputs and gradients within float32 tolerance).",
    ]
    if lora:
        ratio = lora["optimized"]["tokens_per_second"] / lora["reference"]["tokens_per_second"]
        lora_rows = [("side", "trained tokens", "tokens/s", "wall s", "train losses", "val losses")]
        for side, result in lora.items():
            lora_rows.append(
                (
                    side,
                    str(result["trained_tokens"]),
                    f"{result['tokens_per_second']:.1f}",
                    f"{result['wall_s']:.1f}",
                    ", ".join(f"{x:.3f}" for x in result["train_losses"]),
                    ", ".join(f"{x:.3f}" for x in result["val_losses"]),
                )
            )
        lines += [
            "",
            f"`python -m mlx_lm lora --train` on the demo's model and data (`{MODEL.relative_to(ROOT)}`, "
            f"`{DATA.relative_to(ROOT)}`), {args.lora_iters} steps, batch 2, all layers, one process "
            "per side; tokens/s: trained tokens over the seconds of the training steps (from its reports, "
            "one a step; loading and evaluation excluded). Losses: per step, then validation.",
            "",
            *markdown_table(lora_rows),
            "",
            f"**mlx_lm lora tokens/s, optimized / reference: {ratio:.1f}x.**",
        ]
    text = "\n".join(lines)
    print(text)
    write_section(args.results, "bench_blas", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
