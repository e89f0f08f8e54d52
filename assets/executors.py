"""Where a run's steps execute, chosen by `TRAJECTORY_EXECUTOR` when the definitions load.

- `in_process` (default): Dagster's in-process executor, the run's steps one after another in the
  run's own process (the `dagster asset materialize` process, or the run worker the daemon or the
  UI launches). With one machine, a range of days is one run (the daily assets' single-run backfill
  policy), and each step already spreads its days over the machine's cores in processes of its own
  (`TRAJECTORY_WORKERS`, trajectory_pipeline/parallel.py); the daily chain is a line, so no two of
  its steps could run at once anyway. A process per step would only import the code location
  (pandas, pyarrow, the stages) once more for each. Measured with `dagster asset materialize` over
  150 days of own-agent logs (bench/bench_backfill_cli.py, one run each, same machine): 87.7 s and a
  peak of 919 MiB (all processes, PSS) with `multiprocess`, 80.7 s and 755 MiB in process; over 12
  days, 17.1 s and 760 MiB against 10.6 s and 621 MiB.
- `multiprocess`: Dagster's multiprocess executor, each step a process on the machine that launched
  the run, for graphs whose independent steps should run side by side. Steps are forked from a fork
  server that has imported Dagster's executor (and so Dagster) once (`MULTIPROCESS_CONFIG`), not
  spawned: Dagster's default spawns a fresh interpreter per step that imports all of it again,
  seconds per step on a busy machine. Each step still imports the code location itself. Preloading
  it too (`preload_modules: [assets.definitions]`) was measured and not kept: the fork server then
  holds about 144 MiB for the whole run, while the daily chain runs one step at a time, each only
  about 30 MiB smaller.
- `celery`: dagster-celery. The run's process hands each step to a Celery queue (`dagster`) on the
  Redis broker `TRAJECTORY_CELERY_BROKER` (also the result backend); any number of worker processes,
  on any machines that share the data directory (an object store, `TRAJECTORY_DATA_DIR=s3://...`)
  and the Dagster instance (PostgreSQL), run them:

      celery -A assets.celery_worker worker -Q dagster -P solo -n worker1@%h

  With `TRAJECTORY_BACKFILL_DAYS_PER_RUN=k` a backfill becomes runs of k days, whose steps spread
  over the workers.
- `k8s`: dagster-k8s's `k8s_job_executor`, a Kubernetes Job per step, with the K8sRunLauncher of
  the Helm chart (`deploy/k8s/`).

The executor serves every job (`Definitions(executor=...)`): daily ingestion, weekly retraining and
the UI's asset materializations. `lora_adapter`'s `mlx_training` pool keeps one training at a time
whatever runs the steps.
"""

from __future__ import annotations

from typing import Any

import dagster as dg

from trajectory_pipeline import settings

# An empty forkserver config: the fork server preloads `dagster._core.executor.multiprocess` only.
MULTIPROCESS_CONFIG: dict[str, Any] = {"start_method": {"forkserver": {}}}
CELERY_QUEUE = "dagster"  # dagster-celery's queue: its app routes every step task there
# Added to dagster-celery's own Celery settings (prefetch of one task, its transport options): a
# worker acknowledges a step once it ran, so a step whose worker died goes to another one.
CELERY_SETTINGS = {"task_acks_late": True, "broker_connection_retry_on_startup": True}


def celery_config() -> dict[str, Any]:
    """The celery executor's config, which the workers' app shares (assets/celery_worker.py)."""
    broker = settings.celery_broker()
    return {"broker": broker, "backend": broker, "config_source": dict(CELERY_SETTINGS)}


def executor() -> dg.ExecutorDefinition:
    """The executor `TRAJECTORY_EXECUTOR` names; celery and k8s need their extras installed."""
    chosen = settings.executor()
    if chosen == "celery":
        try:
            from dagster_celery import celery_executor
        except ImportError:
            raise settings.EXECUTOR.fail(
                chosen, "dagster-celery is not installed: pip install 'trajectory-pipeline[celery]'."
            ) from None
        return celery_executor.configured(celery_config(), name="celery")
    if chosen == "k8s":
        try:
            from dagster_k8s import k8s_job_executor
        except ImportError:
            raise settings.EXECUTOR.fail(
                chosen, "dagster-k8s is not installed: pip install 'trajectory-pipeline[k8s]'."
            ) from None
        return k8s_job_executor
    if chosen == "multiprocess":
        return dg.multiprocess_executor.configured(MULTIPROCESS_CONFIG, name="multiprocess")
    return dg.in_process_executor
