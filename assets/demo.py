"""`make demo`: the pipeline end to end on the bundled sample corpus, through the real Dagster instance.

The corpus is generated (deterministically) when absent, the session sources
are pointed at it and nowhere else (never at your real home folders), every
sample day is materialized in one run, so the run and its metadata show up in
`make ui` afterwards, and a summary is read back from the Parquet files.

    DAGSTER_HOME=$PWD/.dagster_home trajectory-pipeline demo
"""

from __future__ import annotations

import datetime as dt
import time
from pathlib import Path
from typing import Any

import dagster as dg
import pyarrow.parquet as pq

from assets.definitions import defs
from assets.instance import dagster_home
from assets.lora_adapter import lora_adapter
from assets.rendered_splits import rendered_splits
from assets.replay_eval import replay_eval
from resources.mlx_trainer import MLXTrainer
from trajectory_pipeline.dataset.mlx_data import read_manifest
from trajectory_pipeline.ingest.formats import FORMATS
from trajectory_pipeline.sample.corpus import SOURCE_FOLDERS, CorpusSpec, generate_corpus
from trajectory_pipeline.sample.summary import eval_table, last_value, summary_table, tier_table
from trajectory_pipeline.sample.tiny_base import BaseTraining, learn_base, pretraining_record
from trajectory_pipeline.sample.tiny_model import build_tiny_model, corpus_texts

BATCH_SIZE = 4  # mlx-lm's default; the data directory must hold a batch in every split
# A short run on the CPU: enough to watch the losses fall, a few minutes on two cores.
DEMO_TRAINING: dict[str, Any] = {
    "num_layers": -1,
    "iters": 16,
    "batch_size": 2,
    "val_batches": 8,
    "steps_per_report": 4,
    "steps_per_eval": 8,
    "learning_rate": 1e-4,
    "max_seq_length": 4096,
}
# A replay eval sized for the CPU: about a minute per model.
DEMO_EVAL: dict[str, Any] = {
    "holdout_cases": 48,
    "seen_exact_cases": 16,
    "seen_variant_cases": 16,
    "max_tokens": 128,
}


def demo_resources(corpus: Path, warehouse: Path) -> dict[str, Any]:
    """The sources pointed at the sample corpus and nowhere else (never your real home folders), and
    the tables in `warehouse`, as run config of the definitions' own resources."""
    roots = {
        f"{source}_root": str(corpus / SOURCE_FOLDERS[source]) if source in SOURCE_FOLDERS else ""
        for source in FORMATS
    }
    return {
        "session_sources": {"config": roots},
        "io_manager": {"config": {"base_dir": str(warehouse)}},
    }


def run_demo(corpus_dir: str, data_dir: str) -> int:
    corpus, warehouse = Path(corpus_dir).resolve(), Path(data_dir).resolve()
    spec = CorpusSpec()
    if not corpus.exists():
        summary = generate_corpus(corpus, spec)
        print(
            f"Generated the sample corpus in {corpus}: {summary.sessions} sessions in {summary.files} files."
        )
    days = [spec.end_date - dt.timedelta(days=offset) for offset in range(spec.days - 1, -1, -1)]
    first, last = days[0].isoformat(), days[-1].isoformat()
    home = dagster_home()
    resources = demo_resources(corpus, warehouse)

    mlx_dir = warehouse.parent / "mlx" / "sample-window"
    started = time.perf_counter()
    with dg.DagsterInstance.get() as instance:
        result = defs.resolve_job_def("daily_ingest_job").execute_in_process(
            instance=instance,
            run_config={
                "loggers": {"console": {"config": {"log_level": "INFO"}}},
                "resources": resources,
                "ops": {
                    "rendered_splits": {"config": {"mlx_data_dir": str(mlx_dir), "batch_size": BATCH_SIZE}}
                },
            },
            tags={
                "dagster/asset_partition_range_start": first,
                "dagster/asset_partition_range_end": last,
            },
        )
    elapsed = time.perf_counter() - started
    materialized = (
        event.asset_key.to_user_string()
        for event in result.get_asset_materialization_events()
        if event.asset_key is not None
    )
    assets = " → ".join(dict.fromkeys(materialized))  # in the order the run produced them
    print(f"\nMaterialized {assets} for {first} .. {last} in one run ({elapsed:.1f}s), run {result.run_id}")
    keys = [day.isoformat() for day in days]
    print(summary_table(warehouse, keys))
    print(tier_table(warehouse, keys))
    checks = sorted((e.check_name, e.passed) for e in result.get_asset_check_evaluations())
    print("\nAsset checks: " + ", ".join(f"{name} {'passed' if ok else 'FAILED'}" for name, ok in checks))
    manifest = read_manifest(mlx_dir)
    counts = ", ".join(f"{split} {manifest.counts[split]}" for split in ("train", "valid", "test"))
    print(f"\nTraining window {first} .. {last}: {counts} examples")
    trained = _train_and_evaluate(
        resources,
        warehouse,
        mlx_dir,
        warehouse.parent / "tiny-model",
        warehouse.parent / "artifacts" / "adapters",
        spec.end_date,
    )
    print(f"\nTables: {warehouse}   Dagster instance: {home}   Explore: make ui (http://127.0.0.1:3000)")
    print(f"mlx-lm data: {manifest.path}   dataset {manifest.dataset_hash[:16]}")
    ok = result.success and trained and all(ok for _, ok in checks)
    return 0 if ok else 1


def _train_and_evaluate(
    resources: dict[str, Any], warehouse: Path, data_dir: Path, model_dir: Path, artifacts: Path, end: dt.date
) -> bool:
    """Teach the tiny model the corpus's language (once), train the week's adapter on top, and replay
    the window's decisions with the base model and the adapter."""
    if not model_dir.exists():
        build_tiny_model(model_dir, corpus_texts([data_dir / "train.jsonl"]))
        print(f"\nBuilt the tiny model in {model_dir}")
    if pretraining_record(model_dir) is None:
        print(f"Teaching it the corpus's language ({BaseTraining().iters} full fine-tuning steps, once) ...")
    try:
        base = learn_base(model_dir, data_dir)
    except ValueError:  # learned on another window or with other settings: start from random weights
        build_tiny_model(model_dir, corpus_texts([data_dir / "train.jsonl"]))
        base = learn_base(model_dir, data_dir)
    print(
        f"Learned base: validation loss {last_value(base['losses'], 'val_loss'):.3f} "
        f"({base['seconds']:.0f}s when it was built)"
    )
    week = (end - dt.timedelta(days=(end.weekday() + 1) % 7)).isoformat()  # the Sunday starting its week
    trainer = MLXTrainer(base_model=str(model_dir), **DEMO_TRAINING)
    started = time.perf_counter()
    with dg.DagsterInstance.get() as instance:
        result = dg.materialize(
            [rendered_splits.to_source_asset(), lora_adapter, replay_eval],
            partition_key=week,
            instance=instance,
            resources={**(defs.resources or {}), "trainer": trainer},
            run_config={
                "loggers": {"console": {"config": {"log_level": "INFO"}}},
                "resources": {"io_manager": resources["io_manager"]},
                "ops": {
                    "lora_adapter": {"config": {"artifacts_dir": str(artifacts)}},
                    "replay_eval": {"config": DEMO_EVAL},
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
    print(eval_table(pq.read_table(warehouse / "replay_eval" / f"{week}.parquet").to_pandas()))
    print(f"\nPromotion: {evaluation['decision'].value}: {evaluation['reason'].value}")
    print(f"Report: {evaluation['report_path'].value}")
    return result.success
