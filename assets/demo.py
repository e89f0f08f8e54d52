"""`make demo`: the pipeline end to end on the bundled sample corpus, through the real Dagster instance.

The corpus is generated (deterministically) when absent, the session sources
are pointed at it and nowhere else (never at your real home folders), every
sample day is materialized in one run, so the run and its metadata show up in
`make ui` afterwards, and a summary is read back from the Parquet files.

    DAGSTER_HOME=$PWD/.dagster_home trajectory-pipeline demo
"""

from __future__ import annotations

import datetime as dt
import os
import time
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from trajectory_pipeline.dataset.mlx_data import read_manifest
from trajectory_pipeline.evaluation.report import summarize
from trajectory_pipeline.sample.corpus import SOURCE_FOLDERS, CorpusSpec, generate_corpus
from trajectory_pipeline.sample.tiny_base import BaseTraining, learn_base, pretraining_record
from trajectory_pipeline.sample.tiny_model import build_tiny_model, corpus_texts
from trajectory_pipeline.schema import SOURCES

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


def _point_sources_at(corpus: Path, data_dir: Path) -> None:
    for source in SOURCES:
        sub = SOURCE_FOLDERS.get(source)
        os.environ[f"TRAJECTORY_{source.upper()}_ROOT"] = str(corpus / sub) if sub else ""
    os.environ["TRAJECTORY_DATA_DIR"] = str(data_dir)


REPO_CONFIG = Path(__file__).resolve().parents[1] / "dagster.yaml"


def _ensure_dagster_home() -> Path:
    """DAGSTER_HOME (default ./.dagster_home), using the repository's dagster.yaml when it has none."""
    home = Path(os.environ.setdefault("DAGSTER_HOME", str(Path(".dagster_home").resolve())))
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    config = home / "dagster.yaml"
    if not config.exists() and REPO_CONFIG.exists():
        config.symlink_to(REPO_CONFIG)
    return home


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
    _point_sources_at(corpus, warehouse)
    home = _ensure_dagster_home()

    import dagster as dg  # after the environment is set: the definitions read it when they load

    from assets.definitions import defs

    mlx_dir = warehouse.parent / "mlx" / "sample-window"
    started = time.perf_counter()
    with dg.DagsterInstance.get() as instance:
        result = defs.resolve_job_def("daily_ingest_job").execute_in_process(
            instance=instance,
            run_config={
                "loggers": {"console": {"config": {"log_level": "INFO"}}},
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
    print(_summary_table(warehouse, keys))
    print(_tier_table(warehouse, keys))
    checks = sorted((e.check_name, e.passed) for e in result.get_asset_check_evaluations())
    print("\nAsset checks: " + ", ".join(f"{name} {'passed' if ok else 'FAILED'}" for name, ok in checks))
    manifest = read_manifest(mlx_dir)
    counts = ", ".join(f"{split} {manifest.counts[split]}" for split in ("train", "valid", "test"))
    print(f"\nTraining window {first} .. {last}: {counts} examples")
    trained = _train_and_evaluate(
        defs,
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
    defs: Any, warehouse: Path, data_dir: Path, model_dir: Path, artifacts: Path, end: dt.date
) -> bool:
    """Teach the tiny model the corpus's language (once), train the week's adapter on top, and replay
    the window's decisions with the base model and the adapter."""
    import dagster as dg

    from assets.lora_adapter import lora_adapter
    from assets.rendered_splits import rendered_splits
    from assets.replay_eval import replay_eval
    from resources.mlx_trainer import MLXTrainer

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
        f"Learned base: validation loss {_last(base['losses'], 'val_loss'):.3f} "
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
            resources={**defs.resources, "trainer": trainer},
            run_config={
                "loggers": {"console": {"config": {"log_level": "INFO"}}},
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
    print(_eval_table(pq.read_table(warehouse / "replay_eval" / f"{week}.parquet").to_pandas()))
    print(f"\nPromotion: {evaluation['decision'].value}: {evaluation['reason'].value}")
    print(f"Report: {evaluation['report_path'].value}")
    return result.success


def _last(rows: list[dict[str, Any]], key: str) -> float:
    return [row[key] for row in rows if row.get(key) is not None][-1]


def _eval_table(frame: Any) -> str:
    """Per lane, base model against the new adapter: answers holding a parseable call, calls of
    the right tool, pass rate and decisive-action pass rate."""
    header = (
        f"\n{'lane':<14}{'model':<11}{'cases':>7}{'valid call':>12}{'right tool':>12}"
        f"{'pass rate':>11}{'decisive pass rate':>20}"
    )
    lines = [header, "-" * (len(header) - 1)]
    for row in summarize(frame).to_dict("records"):
        decisive = row["decisive_pass_rate"]
        rate = "-" if pd.isna(decisive) else f"{decisive:.1%}"
        lines.append(
            f"{row['lane']:<14}{row['model']:<11}{row['cases']:>7}{1 - row['invalid_rate']:>12.1%}"
            f"{row['name_match_rate']:>12.1%}{row['pass_rate']:>11.1%}{rate:>20}"
        )
    return "\n".join(lines)


def _tier_table(warehouse: Path, days: list[str]) -> str:
    """Attempts by source and tier, and the decision points cut from the kept ones."""
    attempts = pa.concat_tables(
        pq.read_table(warehouse / "mined_trajectories" / f"{d}.parquet") for d in days
    )
    decisions = pa.concat_tables(pq.read_table(warehouse / "decision_points" / f"{d}.parquet") for d in days)
    tiers = ("gold", "silver", "bronze", "reject")
    header = f"\n{'source':<12}" + "".join(f"{tier:>9}" for tier in tiers) + f"{'decision points':>17}"
    lines = [header, "-" * (len(header) - 1)]
    sources = sorted(set(attempts["source"].to_pylist()))
    for source in [*sources, "total"]:
        mine = attempts if source == "total" else attempts.filter(pc.equal(attempts["source"], source))
        made = decisions if source == "total" else decisions.filter(pc.equal(decisions["source"], source))
        counts = [pc.sum(pc.equal(mine["tier"], tier)).as_py() or 0 for tier in tiers]
        lines.append(f"{source:<12}" + "".join(f"{n:>9}" for n in counts) + f"{made.num_rows:>17}")
    return "\n".join(lines)


COLUMNS = ("sessions", "events", "tool calls", "errors", "quarantined", "redactions")


def _day_figures(warehouse: Path, day: str) -> list[int]:
    events = pq.read_table(warehouse / "raw_sessions" / f"{day}.parquet")
    quarantined = pq.read_metadata(warehouse / "raw_sessions_quarantine" / f"{day}.parquet").num_rows
    return [
        len(pc.unique(events["session_id"])),
        events.num_rows,
        pc.sum(pc.equal(events["kind"], "tool_call")).as_py() or 0,
        pc.sum(pc.fill_null(events["is_error"], False)).as_py() or 0,
        quarantined,
        pc.sum(events["redactions"]).as_py() or 0,
    ]


def _summary_table(warehouse: Path, days: list[str]) -> str:
    """Per-day figures read back from the Parquet partitions, not from the run's own counters."""

    def line(label: str, cells: list[object]) -> str:
        return f"{label:<12}" + "".join(f"{cell!s:>13}" for cell in cells)

    rows = [_day_figures(warehouse, day) for day in days]
    totals = [sum(column) for column in zip(*rows, strict=True)]
    rule = "-" * (12 + 13 * len(COLUMNS))
    body = [line(day, list(row)) for day, row in zip(days, rows, strict=True)]
    return "\n".join([line("day", list(COLUMNS)), rule, *body, rule, line("total", list(totals))])
