"""`make demo`: the pipeline end to end on the bundled sample corpus, through the real Dagster instance.

What it proves is the project's point: the adapter trained on a user's sessions makes their
decisions better than the model it started from. So:

1. The demo user's sample corpus (their repositories and habits, `CorpusSpec(profile="demo")`) is
   generated when absent (or into an empty folder), the session sources are pointed at it and
   nowhere else (never at your real home folders, nor an event database), and every sample day
   is materialized in one run through the instance, so the run and its metadata show up in
   `make ui`.
2. The learned base, once: other people's sessions (`profile="generic"`: other repositories,
   generic habits, disjoint sessions) go through the same daily stages in a private, ephemeral
   instance; the tiny model's tokenizer and a full fine-tune of every weight learn from them
   alone. Nothing of the demo user's reaches the base, held-out sessions least of all.
3. `lora_adapter` and `replay_eval` run for the last week through the instance: the adapter learns
   this user's habits from the window's training split, and base and adapter answer the held-out
   decisions under constrained decoding. The closing table holds the demo's targets, read from
   replay_eval's own rows. `promoted_model` runs after them: a promoted adapter is fused for `make
   serve`; a rejected one makes no model, and the demo says so.

Both models see the same records, rendered for a small model (`rendered_splits` run config,
`history: state_summary`): the task and a compact state (the last call, the files read and edited,
the last command and its outcome) in place of the raw history, so a step costs a few hundred tokens
and the whole demo fits in minutes on two CPU cores.

    DAGSTER_HOME=$PWD/.dagster_home trajectory-pipeline demo
"""

from __future__ import annotations

import datetime as dt
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import dagster as dg
import pyarrow.parquet as pq

from assets.action_memory import action_memory
from assets.decision_points import decision_points
from assets.definitions import defs
from assets.instance import dagster_home
from assets.lora_adapter import lora_adapter
from assets.promoted_model import promoted_model
from assets.rendered_splits import rendered_splits
from assets.replay_eval import replay_eval
from resources.mlx_trainer import MLXTrainer
from trajectory_pipeline.dataset.mlx_data import read_manifest
from trajectory_pipeline.evaluation.promotion import PROMOTED_STATUS
from trajectory_pipeline.ingest.formats import FORMATS
from trajectory_pipeline.sample.corpus import MARKER, SOURCE_FOLDERS, CorpusSpec, generate_corpus
from trajectory_pipeline.sample.summary import (
    eval_table,
    last_value,
    lift_targets,
    summary_table,
    targets_table,
    tier_table,
)
from trajectory_pipeline.sample.tiny_base import (
    BaseTraining,
    learn_base,
    learned_on,
    pretraining_record,
)
from trajectory_pipeline.sample.tiny_model import (
    TinyModelSpec,
    build_tiny_model,
    built_from,
    corpus_texts,
)

# One record per optimizer step, for the base and the LoRA alike. On a CPU a tiny model learns far
# more per second from many small steps than from mlx-lm's default of 4 records a step: the same 800
# records halve the base's validation loss in two thirds of the time (no padding either), and the
# LoRA learns the demo user's commands at all (bench/bench_batch.py). The data directory must hold a
# batch in every split.
BATCH_SIZE = 1
# Records for a small model, for both models alike: the task and a compact state before each
# decision (`dataset/state.py`), tool results capped where the state quotes them.
DEMO_DECISIONS: dict[str, Any] = {"max_result_chars": 200, "agent_text": False}
DEMO_RENDER: dict[str, Any] = {"history": "state_summary", "batch_size": BATCH_SIZE}
# The bundled tiny model as the demo builds it: four blocks of 128, with a vocabulary that writes
# paths and commands in few tokens. Depth, not width, is what lets it tie a command to the repository
# its prompt names: at the same cost per step as two blocks of 256 (two thirds of the parameters), its
# LoRA passes about twice the held-out decisions (bench/bench_base.py, README "The tiny model's
# ceiling").
DEMO_MODEL = TinyModelSpec(
    layers=4, hidden_size=128, heads=4, kv_heads=2, intermediate_size=384, vocab_size=4096
)
# The base learns every token of the other people's records, as pretraining does: a model taught the
# decisions alone keeps answering the same whatever its prompt says, one taught every token starts
# reading the prompt (bench/bench_base.py: prompt dependence and pass rate against CPU minutes).
DEMO_BASE = BaseTraining(
    iters=800, learning_rate=1e-3, batch_size=BATCH_SIZE, mask_prompt=False, history_calls=False
)
# The week's LoRA: about three minutes on two cores, close to two passes over the window's training
# split. mlx-lm scales a LoRA's update by `scale` (20): from about 1e-3 up the tiny model's LoRA barely
# learns or unlearns (its validation loss rises), 1e-4 to 3e-4 learn steadily (bench/bench_batch.py).
DEMO_TRAINING: dict[str, Any] = {
    "num_layers": -1,
    "rank": 16,
    "iters": 2000,
    "batch_size": BATCH_SIZE,
    "learning_rate": 2e-4,
    "val_batches": 40,
    "steps_per_report": 100,
    "steps_per_eval": 1000,
    "save_every": 500,  # a checkpoint to resume from every 45 s or so, not 20 of them per adapter
    "max_seq_length": 2048,
}
# A replay eval sized for the CPU: well under a minute per model.
DEMO_EVAL: dict[str, Any] = {
    "holdout_cases": 48,
    "seen_exact_cases": 16,
    "seen_variant_cases": 16,
    "max_tokens": 96,
    "decoding": "constrained",
}


def demo_resources(corpus: Path, warehouse: Path) -> dict[str, Any]:
    """The sources pointed at the sample corpus and nowhere else (never your real home folders), and
    the tables in `warehouse`, as run config of the definitions' own resources."""
    roots = {
        f"{source}_root": str(corpus / SOURCE_FOLDERS[source]) if source in SOURCE_FOLDERS else ""
        for source in FORMATS
    }
    # "" turns the event database off whatever TRAJECTORY_SQL_EVENTS_URL says: never your real events.
    return {
        "session_sources": {"config": {**roots, "sql_events_url": ""}},
        "io_manager": {"config": {"base_dir": str(warehouse)}},
    }


def _run_daily(
    instance: dg.DagsterInstance,
    corpus: Path,
    warehouse: Path,
    spec: CorpusSpec,
    mlx_dir: Path,
    log_level: str = "INFO",
) -> dg.ExecuteInProcessResult:
    """Every day of `spec` through the daily stages, in one run, rendered for a small model."""
    dates = spec.dates
    return defs.resolve_job_def("daily_ingest_job").execute_in_process(
        instance=instance,
        raise_on_error=False,
        run_config={
            "loggers": {"console": {"config": {"log_level": log_level}}},
            "resources": demo_resources(corpus, warehouse),
            "ops": {
                "decision_points": {"config": DEMO_DECISIONS},
                "rendered_splits": {"config": {**DEMO_RENDER, "mlx_data_dir": str(mlx_dir)}},
            },
        },
        tags={
            "dagster/asset_partition_range_start": dates[0].isoformat(),
            "dagster/asset_partition_range_end": dates[-1].isoformat(),
        },
    )


def check_results(evaluations: Iterable[Any]) -> dict[str, tuple[int, int]]:
    """Per check, how many of its evaluations passed (a per-day check has one per day), by name."""
    found: dict[str, tuple[int, int]] = {}
    for evaluation in evaluations:
        passed, total = found.get(evaluation.check_name, (0, 0))
        found[evaluation.check_name] = (passed + bool(evaluation.passed), total + 1)
    return dict(sorted(found.items()))


def run_demo(corpus_dir: str, data_dir: str) -> int:
    corpus, warehouse = Path(corpus_dir).resolve(), Path(data_dir).resolve()
    root = warehouse.parent
    spec = CorpusSpec(profile="demo")
    if not (corpus / MARKER).is_file():  # new or empty (a folder of anything else is refused)
        try:
            summary = generate_corpus(corpus, spec)
        except OSError as err:
            print(f"trajectory-pipeline demo: --corpus: {err}", file=sys.stderr)
            return 2
        print(
            f"Generated the sample corpus in {corpus}: {summary.sessions} sessions in {summary.files} files."
        )
    first, last = spec.dates[0].isoformat(), spec.dates[-1].isoformat()
    home = dagster_home()
    mlx_dir = root / "mlx" / "sample-window"
    started = time.perf_counter()
    with dg.DagsterInstance.get() as instance:
        result = _run_daily(instance, corpus, warehouse, spec, mlx_dir)
    elapsed = time.perf_counter() - started
    if not result.success:
        print(
            f"trajectory-pipeline demo: the daily run {result.run_id} failed: its log above says why",
            file=sys.stderr,
        )
        return 1
    materialized = (
        event.asset_key.to_user_string()
        for event in result.get_asset_materialization_events()
        if event.asset_key is not None
    )
    assets = " → ".join(dict.fromkeys(materialized))  # in the order the run produced them
    print(f"\nMaterialized {assets} for {first} .. {last} in one run ({elapsed:.1f}s), run {result.run_id}")
    keys = [day.isoformat() for day in spec.dates]
    print(summary_table(warehouse, keys))
    print(tier_table(warehouse, keys))
    checks = check_results(result.get_asset_check_evaluations())
    print(
        "\nAsset checks: " + ", ".join(f"{name} {passed}/{total}" for name, (passed, total) in checks.items())
    )
    manifest = read_manifest(mlx_dir)
    counts = ", ".join(f"{split} {manifest.counts[split]}" for split in ("train", "valid", "test"))
    print(f"\nTraining window {first} .. {last}: {counts} examples")
    model_dir = root / "tiny-model"
    learned_base(root / "base", model_dir)
    trained = _train_and_evaluate(warehouse, model_dir, root / "artifacts" / "adapters", spec.end_date)
    print(f"\nTables: {warehouse}   Dagster instance: {home}   Explore: make ui (http://127.0.0.1:3000)")
    print(f"mlx-lm data: {manifest.path}   dataset {manifest.dataset_hash[:16]}")
    ok = result.success and trained and all(passed == total for passed, total in checks.values())
    return 0 if ok else 1


def learned_base(root: Path, model_dir: Path) -> dict[str, Any]:
    """The tiny model, taught the language of tasks and tool calls on other people's sessions, once.

    The generic sample corpus goes through the project's own daily stages in an ephemeral instance
    (not yours: these are not your sessions) into `root`; the tokenizer and every weight learn
    from its training split.
    A model directory already holding that base, built from that corpus by today's builder and
    spec, is kept as it is. The corpus goes through the stages on every run (seconds), so "that
    corpus" means the records today's code makes of it: after a change to mining or rendering, the
    window is rendered the new way, and a base kept from the old records would read other prompts
    than the adapter and replay give it.
    """
    data = root / "mlx"
    spec = CorpusSpec(profile="generic")
    started = time.perf_counter()
    corpus = root / "corpus"
    if not corpus.exists():
        generate_corpus(corpus, spec)
    with dg.DagsterInstance.ephemeral() as instance:
        daily = _run_daily(instance, corpus, root / "warehouse", spec, data, log_level="WARNING")
    if not daily.success:
        raise dg.Failure("the learned base's corpus did not go through the daily stages")
    done = pretraining_record(model_dir)
    if (
        done is not None
        and learned_on(done, data, DEMO_BASE)
        and built_from(model_dir, corpus_texts([data / "train.jsonl"]), DEMO_MODEL)
    ):
        print(f"\nLearned base: {model_dir} (built once, in {done['seconds']:.0f}s)")
        return done
    print(f"\nLearning the base model on other people's sessions ({DEMO_BASE.iters} steps, once) ...")
    build_tiny_model(model_dir, corpus_texts([data / "train.jsonl"]), DEMO_MODEL)
    record = learn_base(model_dir, data, DEMO_BASE)
    print(
        f"Learned base: validation loss {last_value(record['losses'], 'val_loss'):.3f} "
        f"in {time.perf_counter() - started:.0f}s ({model_dir})"
    )
    return record


def _train_and_evaluate(warehouse: Path, model_dir: Path, artifacts: Path, end: dt.date) -> bool:
    """Train the week's adapter on the learned base and replay the window's decisions with both."""
    week = (end - dt.timedelta(days=(end.weekday() + 1) % 7)).isoformat()  # the Sunday starting its week
    trainer = MLXTrainer(base_model=str(model_dir), **DEMO_TRAINING)
    started = time.perf_counter()
    with dg.DagsterInstance.get() as instance:
        result = dg.materialize(
            [
                decision_points.to_source_asset(),
                rendered_splits.to_source_asset(),
                lora_adapter,
                action_memory,
                replay_eval,
                promoted_model,
            ],
            partition_key=week,
            instance=instance,
            resources={**(defs.resources or {}), "trainer": trainer},
            run_config={
                "loggers": {"console": {"config": {"log_level": "INFO"}}},
                "resources": {"io_manager": {"config": {"base_dir": str(warehouse)}}},
                "ops": {
                    "lora_adapter": {"config": {"artifacts_dir": str(artifacts)}},
                    "replay_eval": {"config": DEMO_EVAL},
                    "promoted_model": {"config": {"models_dir": str(artifacts.parent / "models")}},
                },
            },
        )
    metadata = result.asset_materializations_for_node("lora_adapter")[0].metadata
    print(
        f"\nTrained lora_adapter and ran replay_eval for the week of {week} "
        f"in {time.perf_counter() - started:.0f}s:"
    )
    print(metadata["loss_curve"].value)
    print(
        f"best val loss {metadata['best_val_loss'].value:.3f}, last {metadata['last_val_loss'].value:.3f}, "
        f"{metadata['tokens_per_second'].value} tokens/s; adapter {metadata['adapter_path'].value}"
    )
    evaluation = result.asset_materializations_for_node("replay_eval")[0].metadata
    answers = pq.read_table(warehouse / "replay_eval" / f"{week}.parquet").to_pandas()
    print(eval_table(answers))
    promoted = evaluation["decision"].value == PROMOTED_STATUS
    print(f"\nPromotion: {evaluation['decision'].value}: {evaluation['reason'].value}")
    fused = result.asset_materializations_for_node("promoted_model")
    if fused:
        print(f"Fused model: {fused[0].metadata['model_path'].value} (make serve starts it)")
    else:
        print("No new model: the adapter was not promoted, so promoted_model did not materialize")
    print("\nWhat the demo promises, measured on held-out sessions the adapter never trained on:")
    print(targets_table(lift_targets(answers, promoted)))
    print(f"Report: {evaluation['report_path'].value}")
    return result.success
