"""mlx's `exp` on a Linux CPU, and what a faster one would give training (README, "Where a training
step goes on a Linux CPU").

mlx's Linux wheel is built for baseline x86-64: its `exp` evaluates a polynomial whose every term is a
call to libm's `fmaf`, one float at a time. In one process this times `mx.exp`, numpy's `exp` and the
same polynomial written as mlx operations (compiled), on 388 x 4,096 floats (a demo record's
positions by the tiny model's vocabulary). Then `train_adapter` (what `lora_adapter` runs) on the
demo's data with the demo's LoRA settings, each run a fresh process, alternating: mlx as it is,
and with attention's softmax and the loss's logsumexp through that polynomial (measured, not kept:
the project does not replace mlx-lm's attention). Tokens/s of the training steps, and the losses,
which must agree.

Needs `make demo` first (it writes data/tiny-model and data/mlx/sample-window):

    python bench/bench_mlx_exp.py --iters 40 --repeat 3
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
from collections.abc import Callable
from pathlib import Path
from typing import Any

# Compiled on both sides, as measured for the README: the polynomial is many small operations that
# only compilation fuses (the package turns compilation off on a Linux CPU unless told otherwise).
os.environ.setdefault("TRAJECTORY_MLX_COMPILE", "on")

from bench_blas import demo_training_args, demo_training_parser, median_ms  # beside this script
from sections import write_section  # bench/sections.py, beside this script

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from assets.demo import DEMO_TRAINING  # noqa: E402

SHAPE = (388, 4096)
TIMES = 20  # timed runs of each exp
SIDES = ("mlx", "polynomial")
LOG2E = 1.4426950408889634
ROUND = 12582912.0  # 1.5 * 2**23: y + ROUND holds round(y) in its low mantissa bits
# mlx's own coefficients (mlx/backend/cpu/simd/math.h) for 2**f, f in [-0.5, 0.5], highest first.
TERMS = (
    1.535336188319500e-4,
    1.339887440266574e-3,
    9.618437357674640e-3,
    5.550332471162809e-2,
    2.402264791363012e-1,
    6.931472028550421e-1,
    1.0,
)


def polynomial_exp() -> Callable[[Any], Any]:
    """mlx's exp, term for term, as mlx operations (multiplies and adds, no libm call): 2**n by a
    shift into the exponent bits, 2**f by the polynomial; its gradient is its output."""
    import mlx.core as mx

    @mx.custom_function
    def exp(x: Any) -> Any:
        y = mx.clip(x, -87.0, 88.0) * LOG2E
        shifted = y + ROUND
        fraction = y - (shifted - ROUND)
        power = TERMS[0]
        for term in TERMS[1:]:
            power = power * fraction + term
        whole = (shifted.view(mx.int32) - 0x4B400000 + 127) << 23
        return mx.where(x < -87.0, 0.0, power * whole.view(mx.float32))

    @exp.vjp
    def exp_vjp(primals: Any, cotangent: Any, output: Any) -> Any:
        return cotangent * output

    return exp


def use_polynomial() -> None:
    """Attention's softmax and logsumexp through the polynomial, for this process."""
    import mlx.core as mx

    exp = polynomial_exp()

    def attention(
        queries: Any, keys: Any, values: Any, *, scale: float, mask: Any = None, sinks: Any = None
    ) -> Any:
        assert sinks is None, "attention sinks: not measured here"
        batch, heads, length, width = queries.shape
        kv_heads, span = keys.shape[1], keys.shape[2]
        grouped = (queries * scale).reshape(batch, kv_heads, heads // kv_heads, length, width)
        scores = grouped @ keys[:, :, None].swapaxes(-1, -2)
        if isinstance(mask, str):  # "causal"
            mask = mx.arange(span - length, span)[:, None] >= mx.arange(span)[None]
        if mask is not None:
            scores = mx.where(mask, scores, -mx.inf) if mask.dtype == mx.bool_ else scores + mask
        weights = exp(scores - mx.stop_gradient(scores.max(axis=-1, keepdims=True)))
        weights = weights / weights.sum(axis=-1, keepdims=True)
        return (weights @ values[:, :, None]).reshape(batch, heads, length, width)

    def logsumexp(x: Any, axis: int = -1, keepdims: bool = False) -> Any:
        top = mx.stop_gradient(x.max(axis=axis, keepdims=True))
        out = mx.log(exp(x - top).sum(axis=axis, keepdims=True)) + top
        return out if keepdims else out.squeeze(axis)

    mx.fast.scaled_dot_product_attention = attention
    mx.logsumexp = logsumexp


def exp_timings() -> dict[str, float]:
    """Milliseconds for SHAPE floats, and each mlx version's worst error against float64."""
    import mlx.core as mx
    import numpy as np

    values = np.random.default_rng(0).normal(0, 10, SHAPE).astype(np.float32)
    x = mx.array(values)
    compiled = mx.compile(polynomial_exp())
    exact = np.exp(values.astype(np.float64))

    def error(y: Any) -> float:
        return float(np.max(np.abs(np.asarray(y, np.float64) - exact) / exact))

    return {
        "mx.exp": median_ms(lambda: mx.eval(mx.exp(x)), TIMES),
        "numpy exp": median_ms(lambda: np.exp(values), TIMES),
        "polynomial": median_ms(lambda: mx.eval(compiled(x)), TIMES),
        "mx.exp error": error(mx.exp(x)),
        "polynomial error": error(compiled(x)),
    }


def child(side: str, model: str, data: str, iters: int) -> dict[str, Any]:
    if side == "polynomial":
        use_polynomial()
    from trajectory_pipeline.training.trainer import TrainConfig, train_adapter

    settings = {**DEMO_TRAINING, "iters": iters, "steps_per_report": 1, "steps_per_eval": 1000}
    settings.update(val_batches=2, save_every=1000)
    with tempfile.TemporaryDirectory() as adapter:
        result = train_adapter(Path(model), Path(data), Path(adapter), TrainConfig(**settings))
    return {
        "tokens_per_second": result.tokens_per_second,
        "train_losses": [row["train_loss"] for row in result.losses if row["kind"] == "train"],
        "val_losses": [row["val_loss"] for row in result.losses if row["kind"] == "val"],
    }


def measure(side: str, model: Path, data: Path, iters: int) -> dict[str, Any]:
    command = [sys.executable, __file__, "--child", side, "--model", str(model), "--data", str(data)]
    command += ["--iters", str(iters)]
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr[-3000:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def report(args: argparse.Namespace, timings: dict[str, float], runs: dict[str, list[dict[str, Any]]]) -> str:
    speed = {side: statistics.median(run["tokens_per_second"] for run in runs[side]) for side in SIDES}

    def each(side: str) -> str:
        return ", ".join(f"{run['tokens_per_second']:.0f}" for run in runs[side])

    def losses(run: dict[str, Any]) -> list[float]:
        return [*run["train_losses"], *run["val_losses"]]

    gap = max(
        abs(a - b)
        for plain, poly in zip(runs["mlx"], runs["polynomial"], strict=True)
        for a, b in zip(losses(plain), losses(poly), strict=True)
    )
    return "\n".join(
        [
            f"## mlx's exp on this CPU ({dt.date.today().isoformat()})",
            "",
            f"`python bench/bench_mlx_exp.py --iters {args.iters} --repeat {args.repeat}`",
            "",
            f"Machine: {platform.platform()}, Python {platform.python_version()}. "
            f"exp of {SHAPE[0]} x {SHAPE[1]} float32, medians of {TIMES} in one process:",
            "",
            "| exp | ms | worst relative error |",
            "| --- | --- | --- |",
            f"| `mx.exp` | {timings['mx.exp']:.2f} | {timings['mx.exp error']:.1e} |",
            f"| numpy | {timings['numpy exp']:.2f} | |",
            f"| the same polynomial as mlx operations, compiled | {timings['polynomial']:.2f} | "
            f"{timings['polynomial error']:.1e} |",
            "",
            f"`train_adapter`, the demo's LoRA settings, {args.iters} steps, each run a fresh process, "
            "alternating; medians of the training steps' tokens/s:",
            "",
            "| attention's softmax and the loss's logsumexp | tokens/s | runs |",
            "| --- | --- | --- |",
            f"| mlx's exp | {speed['mlx']:.1f} | {each('mlx')} |",
            f"| the polynomial (not kept) | {speed['polynomial']:.1f} | {each('polynomial')} |",
            "",
            f"- **{speed['polynomial'] / speed['mlx']:.2f}× the tokens/s** through the polynomial; "
            f"losses of paired runs differ by at most {gap:.1g}.",
            "",
        ]
    )


def main() -> int:
    args = demo_training_args(demo_training_parser(__doc__, iters=40, repeat=3, children=SIDES))
    if args.child:
        print(json.dumps(child(args.child, str(args.model), str(args.data), args.iters)))
        return 0
    timings = exp_timings()
    print(timings, flush=True)
    runs: dict[str, list[dict[str, Any]]] = {side: [] for side in SIDES}
    for _ in range(args.repeat):
        for side in SIDES:
            runs[side].append(measure(side, args.model, args.data, args.iters))
            print(side, runs[side][-1]["tokens_per_second"], flush=True)
    text = report(args, timings, runs)
    write_section(args.results, "bench_mlx_exp", text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
