"""The weekly assets' shared starting point: a small sample corpus ingested through every daily asset
into `root/warehouse`, and a tiny model whose tokenizer was trained on its rendered records."""

import datetime as dt
from collections.abc import Callable
from pathlib import Path
from typing import Any

import dagster as dg
import pandas as pd

from assets.action_memory import action_memory
from assets.decision_points import decision_points
from assets.lora_adapter import lora_adapter
from assets.mined_trajectories import mined_trajectories
from assets.raw_sessions import raw_sessions
from assets.rendered_splits import rendered_splits
from assets.replay_eval import replay_eval
from resources.adapter_registry import AdapterRegistryResource
from resources.mlx_trainer import MLXTrainer
from resources.parquet_io_manager import ParquetIOManager
from resources.session_sources import SessionSources
from trajectory_pipeline.ingest.formats import FORMATS
from trajectory_pipeline.sample.corpus import SOURCE_FOLDERS, CorpusSpec, generate_corpus
from trajectory_pipeline.sample.tiny_model import TinyModelSpec, build_tiny_model

WEEK = "2026-11-22"  # the week starting Sunday 2026-11-22; its window holds both sample days
RANGE = {
    "dagster/asset_partition_range_start": "2026-11-21",
    "dagster/asset_partition_range_end": "2026-11-22",
}


def ingest_sample_window(
    root: Path,
    sessions_per_day: int,
    seed: int,
    before: Callable[[Path], None] | None = None,
    decisions: dict[str, Any] | None = None,
) -> Path:
    """Two sample days (2026-11-21 and 22) ingested through rendered_splits; returns the tiny model.
    `before`, when given, may rewrite the generated corpus (its folder) before ingestion;
    `decisions` is decision_points run config (shorter histories, say)."""
    spec = CorpusSpec(days=2, end_date=dt.date(2026, 11, 22), sessions_per_day=sessions_per_day, seed=seed)
    generate_corpus(root / "corpus", spec)
    if before is not None:
        before(root / "corpus")
    roots = {f"{source}_root": str(root / "corpus" / sub) for source, sub in SOURCE_FOLDERS.items()}
    off = {f"{source}_root": "" for source in FORMATS if source not in SOURCE_FOLDERS}
    ingest = dg.materialize(
        [raw_sessions, mined_trajectories, decision_points, rendered_splits],
        tags=RANGE,
        # Short records: seconds to train.
        run_config={
            "ops": {
                "decision_points": {"config": decisions or {}},
                "rendered_splits": {"config": {"max_length": 6000}},
            }
        },
        resources={
            "io_manager": ParquetIOManager(base_dir=str(root / "warehouse")),
            "session_sources": SessionSources(**roots, **off),
        },
    )
    assert ingest.success
    texts = [
        record
        for path in sorted((root / "warehouse" / "rendered_splits").glob("*.parquet"))
        for record in pd.read_parquet(path)["record"]
    ]
    return build_tiny_model(root / "model", texts, TinyModelSpec(vocab_size=512))


def weekly_resources(root: Path) -> dict[str, Any]:
    """The weekly assets' resources over `root`: its warehouse, a SQLite registry, and a trainer of
    two steps on the tiny model (seconds on the CPU), at a rate whose two steps lower the validation
    loss, so the best checkpoint kept is the trained one, not iteration 0's untouched adapter."""
    return {
        "io_manager": ParquetIOManager(base_dir=str(root / "warehouse")),
        "adapter_registry": AdapterRegistryResource(url=f"sqlite:///{root / 'adapters.sqlite'}"),
        "trainer": MLXTrainer(
            base_model=str(root / "model"),
            num_layers=-1,
            iters=2,
            batch_size=1,
            val_batches=1,
            steps_per_report=1,
            steps_per_eval=2,
            learning_rate=1e-3,
            max_seq_length=4096,
        ),
    }


def train_and_evaluate(
    root: Path, eval_config: dict[str, Any], instance: dg.DagsterInstance | None = None
) -> dg.ExecuteInProcessResult:
    """lora_adapter, action_memory, then replay_eval for WEEK over `root` (see weekly_resources)."""
    return dg.materialize(
        [
            decision_points.to_source_asset(),
            rendered_splits.to_source_asset(),
            lora_adapter,
            action_memory,
            replay_eval,
        ],
        partition_key=WEEK,
        instance=instance,
        resources=weekly_resources(root),
        run_config={
            "ops": {
                "lora_adapter": {
                    "config": {"artifacts_dir": str(root / "artifacts"), "pad_small_splits": True}
                },
                "replay_eval": {"config": eval_config},
            }
        },
    )
