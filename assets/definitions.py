"""The one `Definitions` object: assets, jobs, schedules, sensors and resources assembled, nothing else.

This is the only module of the package that imports dagster; the domain core
beside it stays importable and testable without it. `dagster dev` loads it
through workspace.yaml (`make ui`).

Settings (`TRAJECTORY_*` variables) are read by `trajectory_pipeline/settings.py`, at run time where
they can be: a launchpad run may override any resource field.
"""

from __future__ import annotations

import dagster as dg

from assets.action_memory import action_memory
from assets.automation import (
    abandoned_trainings_sensor,
    daily_ingest_job,
    daily_ingest_schedule,
    new_sessions_sensor,
    weekly_retrain_job,
    weekly_retrain_schedule,
)
from assets.decision_points import decision_points
from assets.executors import executor
from assets.instance import keep_instance_private
from assets.lora_adapter import lora_adapter
from assets.mined_trajectories import mined_trajectories
from assets.promoted_model import promoted_model
from assets.raw_sessions import raw_sessions
from assets.rendered_splits import rendered_splits
from assets.replay_eval import replay_eval
from resources.adapter_registry import AdapterRegistryResource
from resources.mlx_trainer import MLXTrainer
from resources.parquet_io_manager import ParquetIOManager
from resources.session_sources import SessionSources
from trajectory_pipeline import blas, settings

# The instance folder holds transcript previews: 0700 however the process was started (`dagster dev`
# by hand makes it 0755).
keep_instance_private()

# One line at load: which BLAS mlx runs on in this code server, and how to get the fast one where it
# is the slow reference BLAS (`make ui` preloads it for the code server, run workers and daemon).
blas.log_blas_in_use(dg.get_dagster_logger("blas"))
# Applied on importing the package (trajectory_pipeline/__init__.py), which cannot fail on a bad value:
# the code location does, saying what to write instead.
settings.mlx_compile()

defs = dg.Definitions(
    assets=[
        raw_sessions,
        mined_trajectories,
        decision_points,
        rendered_splits,
        lora_adapter,
        action_memory,
        replay_eval,
        promoted_model,
    ],
    jobs=[daily_ingest_job, weekly_retrain_job],
    schedules=[daily_ingest_schedule, weekly_retrain_schedule],
    sensors=[new_sessions_sensor, abandoned_trainings_sensor],
    # multiprocess on the launching machine, or Celery workers, or Kubernetes Jobs (TRAJECTORY_EXECUTOR)
    executor=executor(),
    resources={
        "io_manager": ParquetIOManager(),
        "session_sources": SessionSources(),
        "trainer": MLXTrainer(),
        "adapter_registry": AdapterRegistryResource(),
    },
)
