"""Replay eval speed: one case at a time against the prompt cache and batched decoding, same cases.

Run after `make demo` (it needs the demo's warehouse, learned tiny model and adapter):

    python bench/bench_eval.py --cases 48 --max-tokens 96 --repeat 3

Every strategy answers the same holdout cases with the same model (the demo's adapter when there
is one), alternating strategies across repeats; the figures are medians. Decoding is as the
replay eval's default has it (constrained to one valid tool call; `--decoding free` for the
model's own tokens), 96 tokens an answer as the demo's eval (assets/demo.py DEMO_EVAL), and
`--batch-size` as ReplayConfig's. The answers must be identical token for token, and so the
scores: the script exits 1 when they are not. Writes its section of bench/RESULTS.md between
`<!-- bench_eval -->` markers.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import os
import platform
import statistics
import sys
from pathlib import Path

import pandas as pd
from demo_window import window_rows  # bench/demo_window.py, beside this script
from sections import write_section  # bench/sections.py, beside this script

from trajectory_pipeline.evaluation.replay import (
    DECODINGS,
    STRATEGIES,
    ReplayConfig,
    generate_answers,
    loaded_model,
    prompt_tokens,
    score_cases,
    select_cases,
)

ROOT = Path(__file__).resolve().parents[1]


def latest_adapter(artifacts: Path) -> Path | None:
    found = sorted(artifacts.glob("*/adapter/adapters.safetensors"))
    return found[-1].parent if found else None


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", type=Path, default=ROOT / "data" / "tiny-model")
    parser.add_argument("--warehouse", type=Path, default=ROOT / "data" / "warehouse")
    parser.add_argument("--artifacts", type=Path, default=ROOT / "data" / "artifacts" / "adapters")
    parser.add_argument("--cases", type=int, default=48)
    parser.add_argument("--max-tokens", type=int, default=96)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--decoding", choices=DECODINGS, default=ReplayConfig().decoding)
    parser.add_argument("--batch-size", type=int, default=ReplayConfig().batch_size)
    args = parser.parse_args()
    rows = window_rows(args.warehouse)
    if rows is None or not args.model.is_dir():
        print(f"no rendered_splits under {args.warehouse} or no model at {args.model}: run `make demo` first")
        return 2
    config = ReplayConfig(
        holdout_cases=args.cases,
        seen_exact_cases=0,
        seen_variant_cases=0,
        max_tokens=args.max_tokens,
        decoding=args.decoding,
        batch_size=args.batch_size,
    )
    cases = select_cases(rows, config)
    adapter = latest_adapter(args.artifacts)

    load_before = os.getloadavg()[0]
    seconds: dict[str, list[float]] = {strategy: [] for strategy in STRATEGIES}
    prefilled: dict[str, int] = {}
    generated = 0  # answer tokens (the same for every strategy: the bench checks the answers)
    texts: dict[str, list[str]] = {}
    scores: dict[str, pd.DataFrame] = {}
    with loaded_model(args.model, adapter) as (model, tokenizer):
        prompts = [prompt_tokens(tokenizer, case) for case in cases]
        tools = [case.tools for case in cases]  # constrained decoding allows calls of these only
        # Warm-up: first-call compilation (and the grammar's, once per tool set).
        generate_answers(model, tokenizer, prompts[:2], config, tools=tools[:2])
        for _ in range(args.repeat):
            for strategy in STRATEGIES:
                answers, timing = generate_answers(
                    model, tokenizer, prompts, dataclasses.replace(config, strategy=strategy), tools=tools
                )
                seconds[strategy].append(timing.seconds)
                prefilled[strategy] = timing.prefilled_tokens
                generated = timing.generated_tokens
                texts[strategy] = [answer.text for answer in answers]
                scores[strategy] = score_cases(cases, answers, model_name="candidate", adapter_id=None)

    reference = "one_at_a_time"
    identical = {s: texts[s] == texts[reference] and scores[s].equals(scores[reference]) for s in STRATEGIES}
    medians = {s: statistics.median(seconds[s]) for s in STRATEGIES}
    lines = [
        f"## Replay eval speed ({datetime.date.today().isoformat()})",
        "",
        f"Machine: {os.cpu_count()} cores, {platform.platform()}, Python {platform.python_version()}; "
        f"load average {load_before:.2f} before, {os.getloadavg()[0]:.2f} after (a shared machine); "
        f"model `{args.model.name}`{' with adapter ' + adapter.parent.name if adapter else ''}.",
        f"Command: `python bench/bench_eval.py --cases {args.cases} --max-tokens {args.max_tokens} "
        f"--repeat {args.repeat}"
        + (f" --decoding {args.decoding}" if args.decoding != ReplayConfig().decoding else "")
        + (f" --batch-size {args.batch_size}" if args.batch_size != ReplayConfig().batch_size else "")
        + "`",
        "",
        f"{len(cases)} holdout cases, {sum(len(p) for p in prompts):,} prompt tokens, "
        f"answers capped at {args.max_tokens} tokens, decoding {args.decoding} "
        f"({generated:,} answer tokens), batched in groups of {args.batch_size}; "
        f"medians of {args.repeat} alternating runs.",
        "",
        "| strategy | seconds | speed-up | prompt tokens computed | answers and scores identical |",
        "|---|---|---|---|---|",
    ]
    for strategy in STRATEGIES:
        lines.append(
            f"| {strategy} | {medians[strategy]:.2f} | {medians[reference] / medians[strategy]:.2f}x "
            f"| {prefilled[strategy]:,} | {'yes' if identical[strategy] else 'NO'} |"
        )
    text = "\n".join(lines)
    print(text)
    write_section(ROOT / "bench" / "RESULTS.md", "bench_eval", text)
    return 0 if all(identical.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
