"""The one `Definitions` object: assets, jobs and resources assembled, nothing else.

This is the only module of the package that imports dagster; the domain core
beside it stays importable and testable without it. `dagster dev` loads it
through workspace.yaml (`make ui`).

Storage location: TRAJECTORY_DATA_DIR (default ./data/warehouse).
"""

from __future__ import annotations

import os

import dagster as dg

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

DATA_DIR = os.environ.get("TRAJECTORY_DATA_DIR", "data/warehouse")

daily_ingest_job = dg.define_asset_job(
    "daily_ingest_job",
    selection=dg.AssetSelection.groups("ingest"),
    description="Ingest a day (or a range, in one run): raw_sessions → ... → rendered_splits.",
)

defs = dg.Definitions(
    assets=[raw_sessions, mined_trajectories, decision_points, rendered_splits, lora_adapter, replay_eval],
    jobs=[daily_ingest_job],
    resources={
        "io_manager": ParquetIOManager(base_dir=DATA_DIR),
        "session_sources": SessionSources(),
        "trainer": MLXTrainer(),
        "adapter_registry": AdapterRegistryResource(),
    },
)
