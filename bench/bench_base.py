"""How many CPU minutes the bundled tiny model needs before its answer depends on the prompt.

bench_lift.py shows the demo's adapter no better than its base (0 % on the holdout). This bench
asks whether the budget or the model is the limit: it fine-tunes every weight of a fresh tiny
model (the demo's spec, from random weights) on a data directory for many steps and, at
checkpoints, replays the demo window's held-out and seen-exact decisions through `evaluate_model`
(what `replay_eval` runs), constrained. By default it trains on the demo window's own training
split: a ceiling for anything trained in the demo's budget, base and adapter together. It also
measures *prompt dependence*: over the window's `run_shell` decisions, the mean total-variation
distance between the model's next-token distributions at the first token of the command; 0 means
every prompt gets the same answer, whatever it says.

Run after `make demo` (it needs the demo's warehouse and data directory):

    python bench/bench_base.py --steps 250 500 1000 2000
    python bench/bench_base.py --data data/base/mlx --masked   # the demo base's corpus and objective
    python bench/bench_base.py --layers 2 --hidden-size 256 --heads 8 --kv-heads 4 --intermediate-size 512
                                                                # another shape, in a section of its own

`--start MODEL` fine-tunes that model instead of fresh weights: the adapter's curve on a base that
already reads its prompt, in its own section of RESULTS.md. The demo's generic corpus, learned
for 1,500 steps on every token (about 30 minutes on two cores):

    trajectory-pipeline tiny-model --out /tmp/long-base --data data/base/mlx --layers 4 --hidden-size 128 \
        --heads 4 --kv-heads 2 --intermediate-size 384 --vocab-size 4096    # the demo's spec
    trajectory-pipeline learn-base --model /tmp/long-base --data data/base/mlx --iters 1500 \
        --learning-rate 2e-3 --no-mask-prompt

    python bench/bench_base.py --start /tmp/long-base --masked --learning-rate 1e-3 --steps 250 500 750 1000
"""

from __future__ import annotations

import argparse
import datetime as dt
import itertools
import json
import math
import os
import platform
import re
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any, cast

import pandas as pd
from demo_window import window_rows  # bench/demo_window.py, beside this script
from sections import write_section  # bench/sections.py, beside this script

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from assets.demo import DEMO_BASE, DEMO_EVAL, DEMO_MODEL  # noqa: E402
from trajectory_pipeline.evaluation.replay import ReplayConfig, evaluate_model, select_cases  # noqa: E402
from trajectory_pipeline.evaluation.schema import HOLDOUT  # noqa: E402
from trajectory_pipeline.evaluation.scoring import score_call  # noqa: E402
from trajectory_pipeline.sample.tiny_base import pretraining_record  # noqa: E402
from trajectory_pipeline.sample.tiny_model import (  # noqa: E402
    add_spec_arguments,
    build_tiny_model,
    corpus_texts,
    safetensors_bytes,
    spec_from_arguments,
)
from trajectory_pipeline.training.trainer import training_sets  # noqa: E402

COMMAND_OPENING = '<tool_call>\n{"name": "run_shell", "arguments": {"command":"'


def nearest_prompt_pass(records: list[dict[str, Any]], cases: list[Any]) -> float:
    """Held-out pass rate of a lookup: each case gets the call of the training record whose user turn
    is nearest (TF-IDF cosine over whitespace- and quote-split words). No learning at all, so it
    says how much of the answer the prompts hold, against which the model's curve reads."""
    tokens = re.compile(r"[^\s`'\",:]+")

    def user_text(messages: list[dict[str, Any]]) -> list[str]:
        return tokens.findall("\n".join(m.get("content") or "" for m in messages if m["role"] == "user"))

    texts = [user_text(record["messages"][:-1]) for record in records]
    document_frequency = Counter(word for text in texts for word in set(text))

    def vector(words: list[str]) -> dict[str, float]:
        weights = {
            word: (1 + math.log(n)) * (math.log(len(texts) / (1 + document_frequency[word])) + 1)
            for word, n in Counter(words).items()
        }
        norm = math.sqrt(sum(w * w for w in weights.values())) or 1.0
        return {word: w / norm for word, w in weights.items()}

    vectors = [vector(text) for text in texts]
    holdout = [case for case in cases if case.lane == HOLDOUT]
    passed = 0
    for case in holdout:
        query = vector(user_text(case.messages))
        similarity = [sum(w * v.get(word, 0.0) for word, w in query.items()) for v in vectors]
        call = records[similarity.index(max(similarity))]["messages"][-1]["tool_calls"][0]["function"]
        answer = (call["name"], json.loads(call["arguments"]))
        passed += score_call(answer, case.target_name, case.target_arguments, source=case.source).passed
    return passed / max(1, len(holdout))


def _command_start(model: Any, tokenizer: Any, record: dict[str, Any], command: str = "") -> Any:
    """The model's next-token distribution after a record's prompt and the opening of a run_shell
    call (`COMMAND_OPENING`, the default hermes family's convention, the demo tiny model's); with
    `command`, also the id of that command's first token there (None when the tokenizer merges it
    across the opening)."""
    import mlx.core as mx

    prompt = tokenizer.apply_chat_template(
        record["messages"][:-1], tools=record.get("tools"), tokenize=False, add_generation_prompt=True
    )
    opening = tokenizer.encode(prompt + COMMAND_OPENING)
    logits = model(mx.array([opening]))[0, -1]
    whole = tokenizer.encode(prompt + COMMAND_OPENING + command) if command else opening
    first = whole[len(opening)] if len(whole) > len(opening) and whole[: len(opening)] == opening else None
    return mx.softmax(logits.astype(mx.float32)), first


def prompt_dependence(model: Any, tokenizer: Any, records: list[dict[str, Any]]) -> float:
    """Mean pairwise total-variation distance of the next-token distributions at a command's first
    token, over `records` (run_shell decisions)."""
    import mlx.core as mx

    dists = [_command_start(model, tokenizer, record)[0] for record in records]
    pairs = list(itertools.combinations(dists, 2))
    return sum(0.5 * mx.abs(a - b).sum().item() for a, b in pairs) / max(1, len(pairs))


def _decision(record: dict[str, Any]) -> dict[str, Any]:
    """A rendered record's decision: its last message's call (`name`, `arguments`)."""
    return dict(record["messages"][-1]["tool_calls"][0]["function"])


def is_shell_decision(record: dict[str, Any]) -> bool:
    return _decision(record)["name"] == "run_shell"


def shell_command(record: dict[str, Any]) -> str:
    """The command of a rendered run_shell decision."""
    arguments = _decision(record)["arguments"]
    return str((json.loads(arguments) if isinstance(arguments, str) else arguments)["command"])


def command_start_probability(model: Any, tokenizer: Any, records: list[dict[str, Any]]) -> float:
    """Mean probability the model gives each record's own command's first token, after its prompt
    and the call's opening: whether it writes this user's commands at all (`git`, `uv`, `pnpm`),
    whatever it makes of the prompt. Records whose first token straddles the opening are skipped."""
    found = []
    for record in records:
        dist, first = _command_start(model, tokenizer, record, shell_command(record))
        if first is not None:
            found.append(dist[first].item())
    return sum(found) / max(1, len(found))


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--warehouse", type=Path, default=ROOT / "data" / "warehouse")
    parser.add_argument("--data", type=Path, default=ROOT / "data" / "mlx" / "sample-window")
    parser.add_argument("--tokenizer-data", type=Path, default=ROOT / "data" / "base" / "mlx")
    parser.add_argument("--steps", type=int, nargs="+", default=[250, 500, 1000, 2000])
    parser.add_argument("--learning-rate", type=float, default=2e-3)
    parser.add_argument("--batch-size", type=int, default=DEMO_BASE.batch_size)
    parser.add_argument(
        "--masked", action="store_true", help="train on the decisions only (the demo base's objective)"
    )
    parser.add_argument(
        "--start", type=Path, default=None, help="a model directory to fine-tune instead of fresh weights"
    )
    add_spec_arguments(parser, DEMO_MODEL)  # the fresh model's shape (not with --start)
    args = parser.parse_args()
    rows = window_rows(args.warehouse)
    if rows is None or not (args.data / "train.jsonl").is_file():
        print(f"no rendered_splits under {args.warehouse} or no data in {args.data}: run `make demo` first")
        return 2
    config = ReplayConfig(
        **{**DEMO_EVAL, "holdout_cases": 48, "seen_exact_cases": 16, "seen_variant_cases": 0}
    )
    cases = select_cases(rows, config)
    records = [json.loads(line) for line in (args.data / "train.jsonl").read_text().splitlines()]
    shell = [r for r in records if is_shell_decision(r)][:24]
    args.lookup = nearest_prompt_pass(records, cases)
    base_corpus = args.tokenizer_data / "train.jsonl"
    lines = base_corpus.read_text().splitlines() if base_corpus.is_file() else []
    others = [json.loads(line) for line in lines]
    args.lookup_base = nearest_prompt_pass(others, cases) if others else float("nan")
    print(f"nearest training prompt's call: {args.lookup:.1%} of held-out decisions pass")
    print(f"the same over {base_corpus}: {args.lookup_base:.1%}")
    points: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-base-") as tmp:
        model_dir = Path(tmp) / "model"
        if args.start is not None:
            shutil.copytree(args.start, model_dir)
        else:
            texts = corpus_texts([base_corpus])
            build_tiny_model(model_dir, texts, spec_from_arguments(args))
        points = _train(model_dir, args, cases, config, shell)
    print(pd.DataFrame(points).to_string(index=False))
    return 0


def _train(
    model_dir: Path,
    args: argparse.Namespace,
    cases: list[Any],
    config: ReplayConfig,
    shell: list[dict[str, Any]],
) -> list[dict[str, Any]]:
    import mlx.core as mx
    import mlx.optimizers as optim
    import numpy as np
    from mlx.utils import tree_flatten
    from mlx_lm.tuner.datasets import CacheDataset
    from mlx_lm.tuner.trainer import TrainingArgs, train
    from mlx_lm.tuner.utils import build_schedule
    from mlx_lm.utils import load

    model, tokenizer = load(str(model_dir))[:2]
    train_set, valid_set, routines = training_sets(args.data, tokenizer, args.masked, False)
    np.random.seed(DEMO_BASE.seed)
    mx.random.seed(DEMO_BASE.seed)
    model.unfreeze()
    most, checks = max(args.steps), set(args.steps)
    points: list[dict[str, Any]] = []
    started, evaluating = time.process_time(), 0.0

    def read(iteration: int, loss: float | None) -> None:
        nonlocal evaluating
        paused = time.process_time()
        checkpoint = model_dir.parent / f"at-{iteration}"
        shutil.copytree(model_dir, checkpoint, dirs_exist_ok=True)
        weights = dict(tree_flatten(model.parameters()))
        mx.eval(weights)
        (checkpoint / "model.safetensors").write_bytes(safetensors_bytes(weights))
        frame, _ = evaluate_model(checkpoint, None, cases, config, model_name="base", adapter_id=None)
        lanes = frame.groupby("lane")["passed"].mean()
        holdout = frame[frame["lane"] == "holdout"]
        points.append(
            {
                "steps": iteration,
                "cpu_minutes": (paused - started - evaluating) / 60,
                "train_loss": loss,
                "prompt_dependence": prompt_dependence(model, tokenizer, shell),
                "holdout": float(lanes.get("holdout", 0.0)),
                "seen_exact": float(lanes.get("seen-exact", 0.0)),
                "right_tool": float(holdout["name_match"].mean()),
                "distinct_answers": int(holdout["predicted_arguments"].nunique()),
            }
        )
        print(points[-1], flush=True)
        # Written at every checkpoint: a long run stopped early still leaves its curve so far.
        section = _section(pd.DataFrame(points), args, len(shell))
        write_section(ROOT / "bench" / "RESULTS.md", _section_name(args), section)
        evaluating += time.process_time() - paused

    class Reporter:
        def on_train_loss_report(self, info: dict[str, Any]) -> None:
            if info["iteration"] in checks:
                read(info["iteration"], float(info["train_loss"]))

        def on_val_loss_report(self, info: dict[str, Any]) -> None:
            pass

    read(0, None)
    schedule = build_schedule({"name": "cosine_decay", "arguments": [args.learning_rate, most], "warmup": 20})
    train(
        model=model,
        args=TrainingArgs(
            batch_size=args.batch_size,
            iters=most,
            val_batches=1,
            steps_per_report=math.gcd(*checks),  # a report at every checkpoint
            steps_per_eval=most + 1,
            steps_per_save=most + 1,
            adapter_file=str(model_dir.parent / "scratch.safetensors"),
            max_seq_length=DEMO_BASE.max_seq_length,
        ),
        optimizer=optim.Adam(learning_rate=schedule),
        train_dataset=CacheDataset(train_set),
        val_dataset=CacheDataset(valid_set),
        training_callback=cast(Any, Reporter()),
        **routines,
    )
    return points


def _section_name(args: argparse.Namespace) -> str:
    """One section per kind of run: the demo's spec from fresh weights, another spec, a start model."""
    if args.start is not None:
        return "bench_base_start"
    spec = spec_from_arguments(args)
    return "bench_base" if spec == DEMO_MODEL else f"bench_base_{spec.layers}x{spec.hidden_size}"


def _section(frame: pd.DataFrame, args: argparse.Namespace, shell: int) -> str:
    objective = "the decisions only (masked prompts)" if args.masked else "every token (no prompt mask)"
    spec = spec_from_arguments(args)
    shape = "the demo's spec" if spec == DEMO_MODEL else f"{spec.layers} layers of {spec.hidden_size}"
    started = (
        f"A fresh tiny model ({shape})"
        if args.start is None
        else f"The model in `{args.start}` ({_learned(args.start)})"
    )
    ceiling = "The tiny model's ceiling" + ("" if spec == DEMO_MODEL else f", {shape}")
    title = ceiling if args.start is None else "Fine-tuning a learned base"
    lines = [
        f"## {title} (bench_base.py)",
        "",
        f"`python bench/bench_base.py {' '.join(sys.argv[1:])}` ({dt.date.today().isoformat()}, "
        f"{platform.machine()}, {os.cpu_count()} cores)",
        "",
        f"{started} fine-tuned in full on `{args.data.name}`, {objective}, "
        f"learning rate {args.learning_rate}, batch {args.batch_size}, read at checkpoints. Pass rates "
        "on the demo window's 48 held-out and 16 seen-exact decisions (constrained, as replay_eval); "
        f"prompt dependence over {shell} run_shell decisions (0: the same answer whatever the prompt). "
        "CPU minutes are the process's CPU time spent training (2 cores: wall is about half).",
        "",
        f"No model at all, the call of the training record whose user turn is nearest (TF-IDF) passes "
        f"{args.lookup:.1%} of the held-out decisions, and the same lookup over the base's corpus "
        f"(`{args.tokenizer_data}`) {args.lookup_base:.1%}: the lift the prompts hold for a model that "
        "learns to read them.",
        "",
        "| steps | CPU minutes | train loss | prompt dependence | holdout pass | seen-exact pass "
        "| right tool | distinct holdout answers |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in frame.to_dict("records"):
        loss = "" if pd.isna(row["train_loss"]) else f"{row['train_loss']:.3f}"
        lines.append(
            f"| {row['steps']} | {row['cpu_minutes']:.1f} | {loss} | {row['prompt_dependence']:.3f} | "
            f"{row['holdout']:.1%} | {row['seen_exact']:.1%} | {row['right_tool']:.1%} | "
            f"{row['distinct_answers']} |"
        )
    return "\n".join(lines)


def _learned(model: Path) -> str:
    """What the start model learned, from the record `learn_base` leaves beside its weights."""
    record = pretraining_record(model)
    if record is None:
        return "random weights"
    settings = record["settings"]
    objective = "the decisions" if settings["mask_prompt"] else "every token"
    rate = settings["learning_rate"]
    return f"a base learned for {settings['iters']} steps on {objective}, learning rate {rate}"


if __name__ == "__main__":
    sys.exit(main())
