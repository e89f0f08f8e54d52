"""Records per optimizer step for the bundled tiny model on a CPU: why the demo trains one at a time.

mlx-lm's default batch is 4 records a step. For a model of a few million weights learning from
scratch, what limits learning in a few CPU minutes is the number of updates, not the noise of each
one, so the same records teach more as four times as many steps of one record (and a batch of one
is never padded). This bench learns the demo's base both ways on the same number of records, then
trains the week's LoRA on the demo window with the old and the new settings, and reads each result
the way the demo does:

- the base: wall seconds, and the mean loss per token on the generic corpus's validation split,
  over every token and over the decisions alone;
- the LoRA: wall seconds, the mean loss on the window's validation decisions, and the held-out
  pass rate (48 decisions, constrained, through `evaluate_model`, what `replay_eval` runs).

Run after `make demo` (it reads the demo's generic corpus, window and warehouse):

    python bench/bench_batch.py
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from demo_window import window_rows  # bench/demo_window.py, beside this script
from sections import markdown_table, write_section  # bench/sections.py, beside this script

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from assets.demo import DEMO_BASE, DEMO_EVAL, DEMO_MODEL, DEMO_TRAINING  # noqa: E402
from trajectory_pipeline.evaluation.replay import ReplayConfig, evaluate_model, select_cases  # noqa: E402
from trajectory_pipeline.sample.tiny_base import learn_base  # noqa: E402
from trajectory_pipeline.sample.tiny_model import build_tiny_model, corpus_texts  # noqa: E402
from trajectory_pipeline.training.trainer import TrainConfig, train_adapter, training_sets  # noqa: E402

# (label, records per step, steps, learning rate): the same 800 records either way.
BASES = [("4 records a step (before)", 4, 200, 3e-3), ("1 record a step (the demo)", 1, 800, 1e-3)]
# The LoRA on the demo's base: the settings the demo had, the same records one at a time, and today's.
LORAS = [
    ("4 a step, lr 5e-4, 150 steps (before)", 4, 150, 5e-4),
    ("1 a step, lr 5e-4, 600 steps", 1, 600, 5e-4),
    ("1 a step, lr 2e-4, 2000 steps (the demo)", 1, 2000, 2e-4),
]


def mean_losses(model_dir: Path, data_dir: Path, adapter: Path | None = None) -> tuple[float, float]:
    """Mean loss per token over a data directory's validation split, as training computes it (mlx-lm's
    `evaluate` over `training_sets`, the whole split): every token, and the decisions' tokens alone."""
    from mlx_lm import load
    from mlx_lm.tuner.datasets import CacheDataset
    from mlx_lm.tuner.trainer import evaluate

    model, tokenizer = load(str(model_dir), adapter_path=None if adapter is None else str(adapter))[:2]

    def mean(mask_prompt: bool) -> float:
        _, valid, routines = training_sets(data_dir, tokenizer, mask_prompt, False)
        return float(evaluate(model, CacheDataset(valid), batch_size=1, num_batches=-1, **routines))

    return mean(False), mean(True)


def main() -> int:
    base_data = ROOT / "data" / "base" / "mlx"
    window = ROOT / "data" / "mlx" / "sample-window"
    rows = window_rows(ROOT / "data" / "warehouse")
    if rows is None or not (base_data / "train.jsonl").is_file() or not (window / "train.jsonl").is_file():
        print("no demo data under data/: run `make demo` first")
        return 2
    config = ReplayConfig(**{**DEMO_EVAL, "seen_exact_cases": 0, "seen_variant_cases": 0})
    cases = select_cases(rows, config)
    bases: list[dict[str, Any]] = []
    loras: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-batch-") as tmp:
        texts = list(corpus_texts([base_data / "train.jsonl"]))  # read once, for both bases
        for label, batch, iters, learning_rate in BASES:
            model = Path(tmp) / f"base-{batch}"
            build_tiny_model(model, texts, DEMO_MODEL)
            settings = dataclasses.replace(
                DEMO_BASE, batch_size=batch, iters=iters, learning_rate=learning_rate
            )
            started = time.perf_counter()
            learn_base(model, base_data, settings)
            seconds = time.perf_counter() - started
            every, decisions = mean_losses(model, base_data)
            bases.append(
                {
                    "base": label,
                    "records": batch * iters,
                    "seconds": seconds,
                    "every": every,
                    "decisions": decisions,
                }
            )
            print(bases[-1], flush=True)
        base = Path(tmp) / "base-1"
        frame, _ = evaluate_model(base, None, cases, config, model_name="base", adapter_id=None)
        base_pass = float(frame["passed"].mean())
        for label, batch, iters, learning_rate in LORAS:
            run = Path(tmp) / f"lora-{batch}-{iters}"
            settings = {**DEMO_TRAINING, "batch_size": batch, "iters": iters, "learning_rate": learning_rate}
            started = time.perf_counter()
            train_adapter(base, window, run, TrainConfig(**settings))
            seconds = time.perf_counter() - started
            frame, _ = evaluate_model(base, run, cases, config, model_name="candidate", adapter_id="x")
            loras.append(
                {
                    "LoRA": label,
                    "records": batch * iters,
                    "seconds": seconds,
                    "decisions": mean_losses(base, window, run)[1],
                    "pass": float(frame["passed"].mean()),
                }
            )
            print(loras[-1], flush=True)
    write_section(ROOT / "bench" / "RESULTS.md", "bench_batch", _section(bases, loras, base_pass, len(cases)))
    return 0


def _section(bases: list[dict[str, Any]], loras: list[dict[str, Any]], base_pass: float, cases: int) -> str:
    base_rows = [("base", "records", "seconds", "loss, every token", "loss, decisions")] + [
        (b["base"], str(b["records"]), f"{b['seconds']:.1f}", f"{b['every']:.3f}", f"{b['decisions']:.3f}")
        for b in bases
    ]
    lora_rows = [("LoRA", "records", "seconds", "loss, window decisions", "holdout pass")] + [
        (x["LoRA"], str(x["records"]), f"{x['seconds']:.1f}", f"{x['decisions']:.3f}", f"{x['pass']:.1%}")
        for x in loras
    ]
    return "\n".join(
        [
            "## Batch size: records per step for the tiny model (bench_batch.py)",
            "",
            f"`python bench/bench_batch.py` ({dt.date.today()}, {platform.machine()}, 2 cores)",
            "",
            "The demo's base learned from a fresh tiny model (the demo's spec) on the generic corpus, "
            "every token, the same 800 records either way; losses are the mean per token over the "
            "generic corpus's validation split.",
            "",
            *markdown_table(base_rows),
            "",
            f"The week's LoRA on the one-record-a-step base (which alone passes {base_pass:.1%} of the "
            f"{cases} held-out decisions): its loss on the window's validation decisions and its "
            "held-out pass rate (constrained, `evaluate_model`).",
            "",
            *markdown_table(lora_rows),
        ]
    )


if __name__ == "__main__":
    raise SystemExit(main())
