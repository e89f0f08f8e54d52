"""The Dagster instance folder the project's commands run against: found or made, and kept private.

Dagster stores run logs, asset metadata (previews of transcript rows), check results and run config
in `DAGSTER_HOME`, and writes its own files there 0644 in 0755 folders. So the folder itself is
made 0700, or tightened if it is not, at every entry point that opens the instance: `make` (every
target that installs, `make ui` included), `trajectory-pipeline demo` and `materialize`
(`dagster_home`), and the definitions when they load (`keep_instance_private`), which covers
`dagster dev` or `dagster-daemon` started by hand, and the temporary home `dagster dev` makes when
DAGSTER_HOME is unset.
"""

from __future__ import annotations

import os
from pathlib import Path

import psutil
from dagster import DagsterEventType, DagsterInstance, DagsterRunStatus, RunsFilter
from dagster._core.launcher import DefaultRunLauncher
from dagster._core.launcher.base import CheckRunHealthResult, WorkerStatus
from dagster._core.storage.dagster_run import DagsterRun

from trajectory_pipeline.parquet_io import ensure_private_dir

REPO_CONFIG = Path(__file__).resolve().parents[1] / "dagster.yaml"


def keep_instance_private() -> Path | None:
    """Tighten the instance folder of this process (DAGSTER_HOME) to 0700, when there is one."""
    configured = os.environ.get("DAGSTER_HOME")
    if not configured:
        return None
    home = Path(configured).expanduser()
    return ensure_private_dir(home) if home.is_dir() else None


def dagster_home() -> Path:
    """DAGSTER_HOME (default ./.dagster_home), private, using the repository's dagster.yaml when it
    has none."""
    home = Path(os.environ.setdefault("DAGSTER_HOME", str(Path(".dagster_home").resolve())))
    ensure_private_dir(home)
    config = home / "dagster.yaml"
    if not config.exists() and not config.is_symlink() and REPO_CONFIG.exists():
        config.symlink_to(REPO_CONFIG)
    return home


# --- Runs whose process is gone -----------------------------------------------------------------
#
# A run killed with SIGKILL (`kill -9`, the OOM killer, a laptop's reboot) cannot report its end:
# it stays STARTED, keeps its concurrency slots (lora_adapter's `mlx_training` pool) and a place
# in the run queue, and its adapter's registry row says "training" forever. Dagster's run
# monitoring (dagster.yaml) fails such runs when the run launcher can tell their worker is gone;
# the default launcher cannot, so the local instance uses `LocalRunLauncher`, which looks up the
# worker's process id in the run's own event log. Then the monitoring daemon frees the dead run's
# slots (`free_slots_after_run_end_seconds`), `trajectory-pipeline materialize` does the same
# before it runs (`reap_dead_runs`: no daemon needed), and the registry rows of runs that are gone
# are marked failed (`run_gone`, by lora_adapter and `abandoned_trainings_sensor`).

PID_TOLERANCE_S = 2.0  # a process started this long after the event that named its pid is another one


def worker_pid(instance: DagsterInstance, run_id: str) -> tuple[int, float] | None:
    """The process that executes the run, as its latest run-level engine event with a pid names it
    ("Started process for run", "Executing steps in process"), and when that event was logged."""
    found = None
    for entry in instance.all_logs(run_id, of_type=DagsterEventType.ENGINE_EVENT):
        event = entry.dagster_event
        if event is None or event.step_key is not None:
            continue
        pid = event.engine_event_data.metadata.get("pid") if event.engine_event_data else None
        if pid is not None and str(pid.value).isdigit():
            found = (int(str(pid.value)), entry.timestamp)
    return found


def worker_health(instance: DagsterInstance, run: DagsterRun) -> CheckRunHealthResult:
    """RUNNING while the run's worker process lives (or nothing says which it is), FAILED once it
    is gone: no such process, a zombie, or a newer process that reuses its pid. Runs on this machine
    only (the local instance's launcher starts them here)."""
    found = worker_pid(instance, run.run_id)
    if found is None:
        return CheckRunHealthResult(WorkerStatus.RUNNING, "no worker process recorded yet")
    pid, since = found
    try:
        process = psutil.Process(pid)
        alive = process.status() != psutil.STATUS_ZOMBIE and process.create_time() <= since + PID_TOLERANCE_S
    except psutil.NoSuchProcess:
        alive = False
    except psutil.AccessDenied:
        alive = True
    if alive:
        return CheckRunHealthResult(WorkerStatus.RUNNING, f"worker process {pid} is running")
    return CheckRunHealthResult(
        WorkerStatus.FAILED,
        f"the run's worker process {pid} is gone (killed, or its machine restarted) while the run "
        "was still marked started",
    )


class LocalRunLauncher(DefaultRunLauncher):
    """Dagster's default launcher (runs in a subprocess of the code server), able to tell run
    monitoring whether a run's worker process is alive; see the comment above."""

    @property
    def supports_check_run_worker_health(self) -> bool:
        return True

    def check_run_worker_health(self, run: DagsterRun) -> CheckRunHealthResult:
        return worker_health(self._instance, run)


def reap_dead_runs(instance: DagsterInstance) -> list[str]:
    """Once, now, what the daemon's run monitoring does over time: fail the started runs whose worker
    is gone (where the launcher can tell) and free the concurrency slots of runs that ended.
    Returns the runs it failed."""
    failed = []
    launcher = instance.run_launcher
    if launcher.supports_check_run_worker_health:
        for record in instance.get_run_records(RunsFilter(statuses=[DagsterRunStatus.STARTED])):
            health = launcher.check_run_worker_health(record.dagster_run)
            if health.status == WorkerStatus.FAILED:
                instance.report_run_failed(record.dagster_run, f"Marked failed: {health.msg}.")
                failed.append(record.dagster_run.run_id)
    storage = instance.event_log_storage
    if storage.supports_global_concurrency_limits:
        for run_id in storage.get_concurrency_run_ids():
            run = instance.get_run_by_id(run_id)
            if run is None or run.is_finished:
                storage.free_concurrency_slots_for_run(run_id)
    return failed


def run_gone(instance: DagsterInstance, run_id: str) -> str | None:
    """Why the run `run_id` is no longer running, or None while it runs (or when this instance does
    not know it: a registry shared with another instance)."""
    run = instance.get_run_by_id(run_id)
    if run is None:
        return None
    if run.is_finished:
        return f"its run {run_id} ended ({run.status.value}) while the adapter was still training"
    launcher = instance.run_launcher
    if run.status == DagsterRunStatus.STARTED and launcher.supports_check_run_worker_health:
        health = launcher.check_run_worker_health(run)
        if health.status == WorkerStatus.FAILED:
            return f"its run {run_id} is gone: {health.msg}"
    return None
