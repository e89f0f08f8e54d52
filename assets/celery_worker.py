"""The Celery app a worker runs to execute the steps of runs on the celery executor (assets/executors.py):

    TRAJECTORY_CELERY_BROKER=redis://broker:6379/0 celery -A assets.celery_worker worker \
        -Q dagster -P solo -n worker1@%h

Its broker, backend and settings are the executor's (`celery_config`), read from the same variables,
so a worker and the runs that feed it cannot disagree. `-P solo` runs one step at a time in the worker
process itself (a step forks its own workers for the days of a range: `trajectory_pipeline/parallel.py`);
start one worker per core, or per machine. A worker needs the project installed, the `TRAJECTORY_*`
variables of the code location (the data directory above all), and `DAGSTER_HOME` (the instance config:
steps write their events to the instance).
"""

from __future__ import annotations

from dagster_celery.executor import CeleryExecutor
from dagster_celery.make_app import make_app
from dagster_celery.tasks import create_task

from assets.executors import celery_config

_config = celery_config()
app = make_app(
    CeleryExecutor.for_cli(
        broker=_config["broker"], backend=_config["backend"], config_source=_config["config_source"]
    ).app_args()
)
execute_plan = create_task(app)
