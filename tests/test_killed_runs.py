"""Killed runs must not block the next ones: a training run killed with SIGKILL used to stay STARTED
for ever, holding the `mlx_training` pool slot (the next training waited more than ten minutes, for
ever in fact) and leaving its adapter "training" in the registry.

Everything here is real: a `trajectory-pipeline materialize` of lora_adapter is killed with SIGKILL
while it trains, the Dagster daemon runs with the repository's dagster.yaml (its run monitoring
intervals shortened so the test takes a minute, not three), and the next training is launched
through the daemon's queue the way a schedule or the UI launches it. The daemon's run monitoring
must find the dead worker and fail the run, free its slot, and the next training must start, train,
and leave the killed one's adapter marked failed with the reason.

    .venv/bin/python -m pytest tests/test_killed_runs.py -q
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pytest
import yaml

from assets.instance import reap_dead_runs, worker_health
from tests.assets.sample_window import WEEK, ingest_sample_window
from tests.conftest import REPO_ROOT
from tests.dagster_processes import BIN, instance_config, kill_tree, wait_for
from trajectory_pipeline import blas
from trajectory_pipeline.training.registry import AdapterRegistry, sqlite_url

TRAINER = {"num_layers": -1, "batch_size": 1, "val_batches": 1, "learning_rate": 5e-3, "max_seq_length": 4096}
DEADLINE_S = 240  # the whole scenario on two busy cores; it takes about a minute


def training_rows(home: Path) -> list[tuple[str, str, str | None, str | None]]:
    database = home / "adapters.sqlite"
    if not database.exists():
        return []
    with contextlib.closing(sqlite3.connect(database)) as connection:
        try:
            return connection.execute(
                "SELECT adapter_id, status, run_id, failure_reason FROM adapters ORDER BY created_at"
            ).fetchall()
        except sqlite3.OperationalError:  # the table is being created
            return []


@pytest.fixture
def setting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, dict[str, str]]]:
    ingest_sample_window(tmp_path, sessions_per_day=4, seed=5)
    home = tmp_path / "home"
    monkeypatch.setenv("DAGSTER_HOME", str(home))  # the instance config reads it
    home.mkdir(mode=0o700)
    (home / "dagster.yaml").write_text(instance_config())
    with dg.DagsterInstance.from_config(str(home)):  # its storage made once, before three processes open it
        pass
    (tmp_path / "workspace.yaml").write_text(
        yaml.safe_dump(
            {
                "load_from": [
                    {
                        "python_module": {
                            "module_name": "assets.definitions",
                            "working_directory": str(REPO_ROOT),
                        }
                    }
                ]
            }
        )
    )
    env = {
        **os.environ,
        "DAGSTER_HOME": str(home),
        "TRAJECTORY_DATA_DIR": str(tmp_path / "warehouse"),
        "TRAJECTORY_BASE_MODEL": str(tmp_path / "model"),
    }
    env = blas.preload_env(env) or env  # as `make ui` starts the daemon: mlx on the optimized BLAS
    yield tmp_path, env


@pytest.mark.slow
def test_a_killed_training_frees_its_slot_the_next_one_trains_and_the_row_is_marked_failed(
    setting: tuple[Path, dict[str, str]],
) -> None:
    root, env = setting
    home = root / "home"
    artifacts = str(root / "artifacts")
    # The run to kill: a training far longer than the test, run by the CLI in its own process.
    (root / "long.yaml").write_text(
        yaml.safe_dump(
            {
                "resources": {"trainer": {"config": {**TRAINER, "iters": 100_000, "steps_per_eval": 50_000}}},
                "ops": {"lora_adapter": {"config": {"artifacts_dir": artifacts, "pad_small_splits": True}}},
            }
        )
    )
    # The next one: two steps, then a small replay eval.
    (root / "short.yaml").write_text(
        yaml.safe_dump(
            {
                "resources": {
                    "trainer": {"config": {**TRAINER, "iters": 2, "steps_per_eval": 2, "steps_per_report": 1}}
                },
                "ops": {
                    "lora_adapter": {"config": {"artifacts_dir": artifacts, "pad_small_splits": True}},
                    "replay_eval": {
                        "config": {
                            "holdout_cases": 2,
                            "seen_exact_cases": 1,
                            "seen_variant_cases": 1,
                            "max_tokens": 8,
                            "min_cases": 1,
                        }
                    },
                    "promoted_model": {"config": {"models_dir": str(root / "models")}},
                },
            }
        )
    )
    logs = {name: root / f"{name}.log" for name in ("killed", "daemon", "launch")}
    started = time.monotonic()
    with logs["daemon"].open("wb") as daemon_log, logs["killed"].open("wb") as killed_log:
        daemon = subprocess.Popen(
            [str(BIN / "dagster-daemon"), "run", "-w", str(root / "workspace.yaml")],
            cwd=root,
            env=env,
            stdout=daemon_log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # the daemon, its code server and the runs it launches
        )
        killed = subprocess.Popen(
            [
                str(BIN / "trajectory-pipeline"),
                "materialize",
                "--select",
                "lora_adapter",
                "--partition",
                WEEK,
                "--config",
                str(root / "long.yaml"),
            ],
            cwd=root,
            env=env,
            stdout=killed_log,
            stderr=subprocess.STDOUT,
        )
    try:
        # It holds the pool's one slot and its adapter says "training": kill it mid-training.
        [(killed_adapter, _, killed_run, _)] = wait_for(
            "the first training to start",
            lambda: [r for r in training_rows(home) if r[1] == "training"],
            120,
            logs["killed"],
        )
        with dg.DagsterInstance.from_config(str(home)) as instance:
            wait_for(
                "the first training's slot",
                lambda: instance.event_log_storage.get_concurrency_info("mlx_training").claimed_slots,
                60,
                logs["killed"],
            )
            kill_tree(killed.pid)
            assert killed.wait(timeout=30) == -signal.SIGKILL
            # Nothing reported its end: without run monitoring it would stay STARTED for ever.
            assert instance.get_run_by_id(killed_run).status == dg.DagsterRunStatus.STARTED
            assert worker_health(instance, instance.get_run_by_id(killed_run)).status.value == "FAILED"

            # The next training goes through the daemon's queue, as a schedule's would.
            launched = subprocess.run(
                [
                    str(BIN / "dagster"),
                    "job",
                    "launch",
                    "-w",
                    str(root / "workspace.yaml"),
                    "-j",
                    "weekly_retrain_job",
                    "-c",
                    str(root / "short.yaml"),
                    "--tags",
                    json.dumps({"dagster/partition": WEEK}),
                ],
                cwd=root,
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
            )
            logs["launch"].write_text(launched.stdout + launched.stderr)
            assert launched.returncode == 0, launched.stderr[-3000:]
            [next_run] = [run for run in instance.get_runs() if run.run_id != killed_run]

            finished = wait_for(
                "the next training to finish",
                lambda: (run := instance.get_run_by_id(next_run.run_id)) and run.is_finished and run,
                DEADLINE_S - (time.monotonic() - started),
                logs["daemon"],
                logs["killed"],
            )
            assert finished.status == dg.DagsterRunStatus.SUCCESS, logs["daemon"].read_text()[-4000:]

            # The daemon's run monitoring failed the killed run, naming its dead worker.
            dead = instance.get_run_by_id(killed_run)
            assert dead.status == dg.DagsterRunStatus.FAILURE
            messages = [
                entry.dagster_event.message or "" if entry.dagster_event else entry.user_message
                for entry in instance.all_logs(killed_run)
            ]
            assert any("worker process" in message and "is gone" in message for message in messages), (
                messages[-5:]
            )
            # Its slot was freed (the next one trained), and none is held now.
            assert instance.event_log_storage.get_concurrency_info("mlx_training").claimed_slots == []
            assert reap_dead_runs(instance) == []

        registry = AdapterRegistry(sqlite_url(home / "adapters.sqlite"))
        record = registry.get(killed_adapter)
        assert record.status == "failed" and record.run_id == killed_run
        assert record.failure_reason is not None and killed_run in record.failure_reason
        [newer] = [r for r in registry.list() if r.adapter_id != killed_adapter]
        assert newer.status in ("candidate", "promoted", "rejected") and newer.run_id == next_run.run_id
        assert time.monotonic() - started < DEADLINE_S
    finally:
        kill_tree(killed.pid)
        daemon.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            daemon.wait(timeout=30)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(daemon.pid, signal.SIGKILL)
        daemon.wait()


# ---- the same, one piece at a time, in seconds -------------------------------------------------


def dead_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def started_run(instance: dg.DagsterInstance, pid: int, when: float | None = None) -> str:
    """A run marked STARTED whose worker, by its event log, is process `pid` (logged at `when`)."""
    from dagster._core.events import EngineEventData
    from dagster._core.storage.dagster_run import DagsterRun
    from dagster._core.utils import make_new_run_id

    run = instance.add_run(
        DagsterRun(
            job_name="weekly_retrain_job", run_id=make_new_run_id(), status=dg.DagsterRunStatus.STARTED
        )
    )
    instance.report_engine_event(
        f"Executing steps in process (pid: {pid})", run, EngineEventData.in_process(pid)
    )
    if when is not None:  # the event as logged `when` (a pid recorded before this process started)
        storage = instance.event_log_storage
        [record] = [r for r in instance.all_logs(run.run_id)]
        storage.delete_events(run.run_id)
        storage.store_event(record._replace(timestamp=when))
    return run.run_id


@pytest.fixture
def local_instance(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dg.DagsterInstance]:
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    (tmp_path / "dagster.yaml").write_text((REPO_ROOT / "dagster.yaml").read_text())
    with dg.DagsterInstance.from_config(str(tmp_path)) as instance:
        yield instance


def test_the_instance_watches_run_workers_and_frees_dead_runs_slots(
    local_instance: dg.DagsterInstance,
) -> None:
    from assets.instance import LocalRunLauncher

    settings = local_instance.run_monitoring_settings
    assert isinstance(local_instance.run_launcher, LocalRunLauncher)
    assert local_instance.run_monitoring_enabled and settings["max_resume_run_attempts"] == 0
    assert settings["free_slots_after_run_end_seconds"] <= 60 and settings["poll_interval_seconds"] <= 30
    assert local_instance.run_monitoring_max_runtime_seconds >= 3600
    assert local_instance.run_launcher.supports_check_run_worker_health


def test_a_run_whose_worker_is_gone_is_failed_and_its_slot_freed(local_instance: dg.DagsterInstance) -> None:
    storage = local_instance.event_log_storage
    storage.set_concurrency_slots("mlx_training", 1)
    killed = started_run(local_instance, dead_pid())
    reused = started_run(local_instance, os.getpid(), when=time.time() - 10 * 24 * 3600)  # its pid, reused
    alive = started_run(local_instance, os.getpid())
    storage.claim_concurrency_slot("mlx_training", killed, "lora_adapter")
    assert storage.get_concurrency_info("mlx_training").claimed_slots

    assert sorted(reap_dead_runs(local_instance)) == sorted([killed, reused])

    for run_id in (killed, reused):
        assert local_instance.get_run_by_id(run_id).status == dg.DagsterRunStatus.FAILURE
    assert local_instance.get_run_by_id(alive).status == dg.DagsterRunStatus.STARTED
    assert storage.get_concurrency_info("mlx_training").claimed_slots == []


def test_the_adapters_of_runs_that_are_gone_are_marked_failed_with_the_reason(
    local_instance: dg.DagsterInstance, tmp_path: Path
) -> None:
    import datetime as dt

    from assets.instance import run_gone
    from trajectory_pipeline.training.registry import AdapterRecord

    registry = AdapterRegistry(sqlite_url(tmp_path / "adapters.sqlite"))
    killed, alive = started_run(local_instance, dead_pid()), started_run(local_instance, os.getpid())

    def record(adapter_id: str, run_id: str | None) -> AdapterRecord:
        return AdapterRecord(
            adapter_id=adapter_id,
            created_at=dt.datetime.now(dt.UTC),
            base_model="data/tiny-model",
            partition=WEEK,
            data_window=(WEEK,),
            dataset_hash="h",
            hyperparameters={},
            best_val_loss=None,
            last_val_loss=None,
            best_iteration=None,
            artifact_path="a",
            status="training",
            run_id=run_id,
        )

    for adapter_id, run_id in (
        ("killed", killed),
        ("alive", alive),
        ("unknown", "not-a-run-here"),
        ("old", None),
    ):
        registry.register(record(adapter_id, run_id))
    [failed] = registry.fail_abandoned(lambda run_id: run_gone(local_instance, run_id))
    assert failed.adapter_id == "killed" and failed.status == "failed"
    assert failed.failure_reason is not None and failed.failure_reason.startswith(
        f"its run {killed} is gone:"
    )
    assert {r.adapter_id: r.status for r in registry.list()} == {
        "killed": "failed",
        "alive": "training",
        "unknown": "training",  # another instance's run, or none: not ours to judge
        "old": "training",  # registered before runs were recorded
    }
    # Once monitoring has failed the run, the reason says how it ended.
    local_instance.report_run_failed(local_instance.get_run_by_id(alive))
    [ended] = registry.fail_abandoned(lambda run_id: run_gone(local_instance, run_id))
    assert ended.failure_reason == f"its run {alive} ended (FAILURE) while the adapter was still training"


def test_the_sensor_marks_a_killed_training_within_a_minute_and_launches_nothing(
    local_instance: dg.DagsterInstance, tmp_path: Path
) -> None:
    import datetime as dt

    from assets.automation import ABANDONED_INTERVAL_SECONDS, abandoned_trainings_sensor
    from resources.adapter_registry import AdapterRegistryResource
    from trajectory_pipeline.training.registry import AdapterRecord

    assert abandoned_trainings_sensor.default_status == dg.DefaultSensorStatus.RUNNING
    assert ABANDONED_INTERVAL_SECONDS <= 60 and not abandoned_trainings_sensor.targets
    resource = AdapterRegistryResource(url=sqlite_url(tmp_path / "adapters.sqlite"))
    context = dg.build_sensor_context(instance=local_instance, resources={"adapter_registry": resource})
    assert abandoned_trainings_sensor(context).skip_message == "no adapter registry yet"
    assert not (tmp_path / "adapters.sqlite").exists()  # looking does not create one

    killed = started_run(local_instance, dead_pid())
    resource.registry().register(
        AdapterRecord(
            adapter_id=f"{WEEK}-{killed[:8]}",
            created_at=dt.datetime.now(dt.UTC),
            base_model="data/tiny-model",
            partition=WEEK,
            data_window=(WEEK,),
            dataset_hash="h",
            hyperparameters={},
            best_val_loss=None,
            last_val_loss=None,
            best_iteration=None,
            artifact_path="a",
            status="training",
            run_id=killed,
        )
    )
    result = abandoned_trainings_sensor(
        dg.build_sensor_context(instance=local_instance, resources={"adapter_registry": resource})
    )
    assert result.skip_message.startswith(f"marked failed: {WEEK}-{killed[:8]} (its run {killed} is gone")
    assert resource.registry().get(f"{WEEK}-{killed[:8]}").status == "failed"
