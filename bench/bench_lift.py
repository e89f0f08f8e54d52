"""The learning curve: holdout pass rate of base and adapter against LoRA steps and training examples.

Run after `make demo` (it needs the demo's learned base, its training window and its warehouse):

    python bench/bench_lift.py   # steps 0, 250, 500, 1000 and the demo's; 25, 50, 100 % of the examples
    python bench/bench_lift.py --steps 0 32 128 --fractions 1.0

Every point is the real code path: `train_adapter` (what `lora_adapter` runs) with the demo's LoRA
settings on the demo's training window, then `evaluate_model` (what `replay_eval` runs) on the same
held-out cases, constrained and free. The step curve is one training run read at its checkpoints
(mlx-lm saves one every `save_every` steps), so it costs one run; each smaller share of the training
examples is a run of its own at the demo's step count. Each point also says why its pass rate is
what it is, with bench_base.py's probes on held-out run_shell decisions: how much the answer depends
on the prompt, and how likely the target command's own first token is. Writes bench/lift.png and its
section of bench/RESULTS.md: what more CPU minutes buy.

    python bench/bench_lift.py --steps 0 250 500 1000 --fractions 0.25 0.5 1.0   # RESULTS.md's (10 min)
    python bench/bench_lift.py --every-token --steps 0 150 300 600 --fractions 1.0   # mask_prompt off
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pandas as pd
from bench_base import (  # bench/bench_base.py
    command_start_probability,
    is_shell_decision,
    prompt_dependence,
)
from demo_window import window_rows  # bench/demo_window.py, beside this script
from sections import write_section  # bench/sections.py, beside this script

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from assets.demo import DEMO_EVAL, DEMO_TRAINING  # noqa: E402
from trajectory_pipeline.dataset.training_data import write_window  # noqa: E402
from trajectory_pipeline.evaluation.replay import ReplayConfig, evaluate_model, select_cases  # noqa: E402
from trajectory_pipeline.evaluation.schema import HOLDOUT, SEEN_EXACT  # noqa: E402
from trajectory_pipeline.training.trainer import CONFIG_FILE, TrainConfig, train_adapter  # noqa: E402

DECODINGS = ("constrained", "free")


def _subset(rows: pd.DataFrame, fraction: float, out: Path, seed: int = 0) -> Path:
    """The window's data directory with a seeded `fraction` of its training rows (valid and test
    whole), written as the trainer's window is."""
    train = rows[rows["split"] == "train"]
    kept = train.sample(frac=fraction, random_state=seed) if fraction < 1.0 else train
    write_window(
        pd.concat([kept, rows[rows["split"] != "train"]]), out, batch_size=DEMO_TRAINING["batch_size"]
    )
    return out


def _rates(model: Path, adapter: Path | None, cases: list[Any]) -> dict[str, float]:
    rates = {}
    for decoding in DECODINGS:
        config = ReplayConfig(**{**DEMO_EVAL, "decoding": decoding})
        frame, _ = evaluate_model(
            model, adapter, cases, config, model_name="candidate", adapter_id=None if adapter is None else "x"
        )
        held_out = frame[frame["lane"] == HOLDOUT]
        rates[decoding] = float(held_out["passed"].mean())
        rates[f"{decoding} right tool"] = float(held_out["name_match"].mean())
        rates[f"{decoding} seen-exact"] = float(frame.loc[frame["lane"] == SEEN_EXACT, "passed"].mean())
    return rates


def _reading(model: Path, adapter: Path | None, shell: list[dict[str, Any]]) -> dict[str, float]:
    """Why the pass rate is what it is (bench_base.py's probes, on held-out run_shell decisions):
    whether the answer depends on the prompt at all, and whether the model writes this user's
    commands (the probability of each target command's first token), prompt or not."""
    from mlx_lm import load

    loaded, tokenizer = load(str(model), adapter_path=None if adapter is None else str(adapter))[:2]
    return {
        "prompt dependence": prompt_dependence(loaded, tokenizer, shell),
        "command start": command_start_probability(loaded, tokenizer, shell),
    }


def _held_out_shell(rows: pd.DataFrame, most: int = 24) -> list[dict[str, Any]]:
    """The first `most` held-out (test split) run_shell decisions, as rendered records."""
    records = (json.loads(record) for record in rows.loc[rows["split"] == "test", "record"])
    shell = (record for record in records if is_shell_decision(record))
    return [record for _, record in zip(range(most), shell, strict=False)]


def _checkpoint(run: Path, step: int, out: Path) -> Path:
    """An adapter folder holding the run's weights at `step` (mlx-lm's numbered checkpoint)."""
    out.mkdir(parents=True)
    shutil.copy(run / f"{step:07d}_adapters.safetensors", out / "adapters.safetensors")
    shutil.copy(run / CONFIG_FILE, out / CONFIG_FILE)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", type=Path, default=ROOT / "data" / "tiny-model")
    parser.add_argument("--warehouse", type=Path, default=ROOT / "data" / "warehouse")
    parser.add_argument("--steps", type=int, nargs="+", default=[0, 250, 500, 1000])
    parser.add_argument("--fractions", type=float, nargs="+", default=[0.25, 0.5, 1.0])
    parser.add_argument("--cases", type=int, default=DEMO_EVAL["holdout_cases"])
    parser.add_argument(
        "--every-token",
        action="store_true",
        help="train the LoRA on every token (mask_prompt off), in a section and plot of its own",
    )
    args = parser.parse_args()
    rows = window_rows(args.warehouse)
    if rows is None or not args.model.is_dir():
        print(f"no rendered_splits under {args.warehouse} or no model at {args.model}: run `make demo` first")
        return 2
    cases = select_cases(
        rows,
        ReplayConfig(
            holdout_cases=args.cases, seen_exact_cases=DEMO_EVAL["seen_exact_cases"], seen_variant_cases=0
        ),
    )
    held_out = sum(case.lane == HOLDOUT for case in cases)
    shell = _held_out_shell(rows)
    demo_steps = int(DEMO_TRAINING["iters"])
    steps = sorted(set(args.steps) | {demo_steps})
    most = max(steps)
    interval = _gcd([s for s in steps if s > 0])
    base_config = TrainConfig(
        **{**DEMO_TRAINING, "iters": most, "save_every": interval, "steps_per_eval": most},
        mask_prompt=not args.every_token,
    )
    name = "bench_lift_every_token" if args.every_token else "bench_lift"
    plot = ROOT / "bench" / ("lift-every-token.png" if args.every_token else "lift.png")
    points: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-lift-") as tmp:
        scratch = Path(tmp)
        data = _subset(rows, 1.0, scratch / "data")
        started = time.perf_counter()
        train_adapter(args.model, data, scratch / "run", base_config)
        seconds = time.perf_counter() - started
        for step in steps:
            adapter = None if step == 0 else _checkpoint(scratch / "run", step, scratch / f"at-{step}")
            points.append(
                {"curve": "steps", "steps": step, "examples": 1.0, "minutes": seconds * step / most / 60}
                | _rates(args.model, adapter, cases)
                | _reading(args.model, adapter, shell)
            )
            print(points[-1], flush=True)
        for fraction in sorted(f for f in args.fractions if f < 1.0):
            subset = _subset(rows, fraction, scratch / f"data-{fraction}")
            config = dataclasses.replace(base_config, iters=demo_steps, save_every=demo_steps)
            started = time.perf_counter()
            train_adapter(args.model, subset, scratch / f"run-{fraction}", config)
            minutes = (time.perf_counter() - started) / 60
            points.append(
                {"curve": "examples", "steps": demo_steps, "examples": fraction, "minutes": minutes}
                | _rates(args.model, scratch / f"run-{fraction}", cases)
                | _reading(args.model, scratch / f"run-{fraction}", shell)
            )
            print(points[-1], flush=True)
    frame = pd.DataFrame(points)
    _plot(frame, demo_steps, plot)
    command = " ".join(["python bench/bench_lift.py", *sys.argv[1:]])
    section = _section(frame, held_out, len(shell), demo_steps, command, plot.name, args.every_token)
    write_section(ROOT / "bench" / "RESULTS.md", name, section)
    return 0


def _gcd(values: list[int]) -> int:
    import math

    return math.gcd(*values) if values else 1


def _plot(frame: pd.DataFrame, demo_steps: int, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (left, middle, right) = plt.subplots(1, 3, figsize=(15, 4))
    by_steps = frame[frame["curve"] == "steps"]
    for decoding in DECODINGS:
        left.plot(by_steps["steps"], by_steps[decoding] * 100, marker="o", label=decoding)
    left.set(xlabel="LoRA steps (0: the base)", ylabel="holdout pass rate (%)", title="against steps")
    for probe in ("prompt dependence", "command start"):
        middle.plot(by_steps["steps"], by_steps[probe], marker="o", label=probe)
    middle.set(xlabel="LoRA steps (0: the base)", title="why: held-out run_shell decisions")
    by_examples = frame[frame["steps"] == demo_steps].sort_values("examples")
    by_examples = by_examples[by_examples["curve"].isin(["examples"]) | (by_examples["examples"] == 1.0)]
    for decoding in DECODINGS:
        right.plot(by_examples["examples"] * 100, by_examples[decoding] * 100, marker="o", label=decoding)
    right.set(xlabel="share of training examples (%)", title=f"against examples, {demo_steps} steps")
    for axis in (left, middle, right):
        axis.grid(alpha=0.3)
        axis.legend()
    figure.tight_layout()
    figure.savefig(out, dpi=100)


def _section(
    frame: pd.DataFrame, cases: int, shell: int, demo_steps: int, command: str, plot: str, every_token: bool
) -> str:
    objective = (
        ", the LoRA on every token (`mask_prompt` off): prompts and tool results too" if every_token else ""
    )
    lines = [
        f"## Learning curve (bench_lift.py){objective}",
        "",
        f"`{command}` ({dt.date.today().isoformat()}, {platform.machine()}, {os.cpu_count()} cores)",
        "",
        f"Holdout pass rate on {cases} held-out decisions of the demo window, base (0 steps) and the "
        f"demo's LoRA settings; the demo trains {demo_steps} steps. Plot: bench/{plot}. Pass rate, "
        "then (right tool) the share of answers that name the target's tool. Why: over "
        f"{shell} held-out run_shell decisions, *prompt dependence* (bench_base.py: the mean "
        "total-variation distance between the next-token distributions at the command's first token; "
        "0: every prompt gets the same answer) and *command start* (the mean probability of the "
        "target command's own first token there, e.g. `git` for `git status -sb`). Seen-exact: the "
        f"pass rate on the demo's {DEMO_EVAL['seen_exact_cases']} decisions of the training split itself "
        "(constrained), which the demo asks to reach 80 %.",
        "",
        "| curve | steps | training examples | training minutes (wall) | constrained | free "
        "| right tool, constrained | right tool, free | prompt dependence | command start | seen-exact |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in frame.to_dict("records"):
        lines.append(
            f"| {row['curve']} | {row['steps']} | {row['examples']:.0%} | {row['minutes']:.1f} | "
            f"{row['constrained']:.1%} | {row['free']:.1%} | {row['constrained right tool']:.1%} | "
            f"{row['free right tool']:.1%} | {row['prompt dependence']:.3f} | {row['command start']:.3f} | "
            f"{row['constrained seen-exact']:.1%} |"
        )
    by_steps = frame[frame["curve"] == "steps"].sort_values("steps")
    base, last = by_steps.iloc[0], by_steps.iloc[-1]
    if last["steps"] > 0:
        reading = (
            "it learns which commands this user runs, not when"
            if last["prompt dependence"] < base["prompt dependence"] / 2
            else "it still reads its prompt, but does not yet write the command each prompt calls for"
        )
        lines += [
            "",
            f"After {last['steps']} steps the target command's first token has probability "
            f"{last['command start']:.3f} (the base: {base['command start']:.3f}) and prompt dependence is "
            f"{last['prompt dependence']:.3f} (the base: {base['prompt dependence']:.3f}): {reading} "
            f"({last['constrained']:.1%} of held-out decisions pass, constrained).",
        ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
