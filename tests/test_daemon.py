"""The schedules and the sensor, ticked by the real Dagster daemon.

An instance holds the last week that is over (by this machine's clock), ingested. The daemon runs
(`dagster-daemon run`, with the repository's dagster.yaml); `weekly_retrain_schedule` and
`new_sessions_sensor` are turned on with Dagster's own CLI, as operations.md says. Two settings make
it quick, nothing else differs from production: `TRAJECTORY_WEEKLY_CRON="* * * * *"` makes the
schedule tick at the next minute, and `TRAJECTORY_SENSOR_INTERVAL_SECONDS=3` the sensor look every
few seconds. The schedule's tick must launch `weekly_retrain_job` for that week, with the run config
of `TRAJECTORY_RUN_CONFIG` (a two-step training), and the run must succeed; once the sensor has
looked at an empty folder, a transcript file put there must make it launch `daily_ingest_job` for
the days that file can hold, which ingests the file's session.

    .venv/bin/python -m pytest -m daemon
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import dagster as dg
import pandas as pd
import pytest
import yaml

from assets.decision_points import decision_points
from assets.mined_trajectories import mined_trajectories
from assets.raw_sessions import raw_sessions
from assets.rendered_splits import rendered_splits
from resources.parquet_io_manager import ParquetIOManager
from resources.session_sources import SessionSources
from tests.dagster_processes import BIN, TWO_STEP_TRAINER, daemon, make_instance, wait_for, write_workspace
from trajectory_pipeline import blas
from trajectory_pipeline.ingest.formats import FORMATS
from trajectory_pipeline.sample.corpus import SOURCE_FOLDERS, CorpusSpec, generate_corpus
from trajectory_pipeline.sample.tiny_model import TinyModelSpec, build_tiny_model
from trajectory_pipeline.training.registry import AdapterRegistry, sqlite_url

pytestmark = [pytest.mark.daemon, pytest.mark.slow]

TRAINER = TWO_STEP_TRAINER
EVAL = {"holdout_cases": 2, "seen_exact_cases": 1, "seen_variant_cases": 1, "max_tokens": 8, "min_cases": 1}
RENDER = {"rendered_splits": {"config": {"max_length": 6000}}}  # short records: seconds to train
DEADLINE_S = 300  # the schedule's minute, a training and an ingestion on two busy cores
WATCHED = "claude_code"  # the one source the daemon's sensor watches
AROUND_MIDNIGHT_S = 240  # a test starting this close to UTC midnight waits for it


def last_week(today: dt.date) -> dt.date:
    """The Sunday that starts the last Sunday-to-Saturday week that is over."""
    this_sunday = today - dt.timedelta(days=(today.weekday() + 1) % 7)
    return this_sunday - dt.timedelta(weeks=1)


def ingest(
    corpus: Path, warehouse: Path, first: dt.date, last: dt.date, instance: dg.DagsterInstance
) -> None:
    roots = {f"{source}_root": str(corpus / sub) for source, sub in SOURCE_FOLDERS.items()}
    off = {f"{source}_root": "" for source in FORMATS if source not in SOURCE_FOLDERS}
    result = dg.materialize(
        [raw_sessions, mined_trajectories, decision_points, rendered_splits],
        instance=instance,
        tags={
            "dagster/asset_partition_range_start": first.isoformat(),
            "dagster/asset_partition_range_end": last.isoformat(),
        },
        run_config={"ops": RENDER},
        resources={
            "io_manager": ParquetIOManager(base_dir=str(warehouse)),
            "session_sources": SessionSources(**roots, **off),
        },
    )
    assert result.success


def ticks(instance: dg.DagsterInstance, name: str) -> list[Any]:
    """The ticks of the schedule or sensor `name`, newest first."""
    states = [state for state in instance.all_instigator_state() if state.name == name]
    return [
        tick for state in states for tick in instance.get_ticks(state.instigator_origin_id, state.selector_id)
    ]


def launched_by(instance: dg.DagsterInstance, tag: str, name: str) -> list[dg.DagsterRun]:
    return list(instance.get_runs(filters=dg.RunsFilter(tags={tag: name})))


def test_the_daemon_ticks_the_weekly_schedule_and_the_sensor_and_their_runs_succeed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    now = dt.datetime.now(dt.UTC)
    midnight = dt.datetime.combine(now.date() + dt.timedelta(days=1), dt.time(), dt.UTC)
    if (midnight - now).total_seconds() < AROUND_MIDNIGHT_S:  # yesterday and last week change then
        time.sleep((midnight - now).total_seconds() + 1)
    today = dt.datetime.now(dt.UTC).date()
    week = last_week(today)
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))  # the instance config reads it
    home = make_instance(tmp_path / "home")

    # The week that is over, ingested into the instance, and a tiny model that reads its records.
    generate_corpus(
        tmp_path / "corpus",
        CorpusSpec(days=7, end_date=week + dt.timedelta(days=6), sessions_per_day=2, seed=3),
    )
    with dg.DagsterInstance.from_config(str(home)) as instance:
        ingest(tmp_path / "corpus", tmp_path / "warehouse", week, week + dt.timedelta(days=6), instance)
    texts = [
        record
        for path in sorted((tmp_path / "warehouse" / "rendered_splits").glob("*.parquet"))
        for record in pd.read_parquet(path)["record"]
    ]
    model = build_tiny_model(tmp_path / "model", texts, TinyModelSpec(vocab_size=512))

    # What the scheduled runs are launched with (TRAJECTORY_RUN_CONFIG): a two-step training.
    run_config = tmp_path / "scheduled.yaml"
    run_config.write_text(
        yaml.safe_dump(
            {
                "weekly_retrain_job": {
                    "resources": {"trainer": {"config": {**TRAINER, "base_model": str(model)}}},
                    "ops": {
                        "lora_adapter": {
                            "config": {"artifacts_dir": str(tmp_path / "artifacts"), "pad_small_splits": True}
                        },
                        "replay_eval": {"config": EVAL},
                        "promoted_model": {"config": {"models_dir": str(tmp_path / "models")}},
                    },
                },
                "daily_ingest_job": {"ops": RENDER},
            }
        )
    )
    watched = tmp_path / "watched"
    watched.mkdir()
    env = {
        **os.environ,
        **{f"TRAJECTORY_{source.upper()}_ROOT": "" for source in FORMATS},
        f"TRAJECTORY_{WATCHED.upper()}_ROOT": str(watched),
        "DAGSTER_HOME": str(home),
        "TRAJECTORY_DATA_DIR": str(tmp_path / "warehouse"),
        "TRAJECTORY_WINDOW_WEEKS": "1",
        "TRAJECTORY_WEEKLY_CRON": "* * * * *",  # the next minute, not Sunday 03:00
        "TRAJECTORY_SENSOR_INTERVAL_SECONDS": "3",  # every few seconds, not every two minutes
        "TRAJECTORY_RUN_CONFIG": str(run_config),
    }
    env = blas.preload_env(env) or env  # as `make ui` starts the daemon: mlx on the optimized BLAS
    workspace = write_workspace(tmp_path)
    logs = [tmp_path / "daemon.log"]
    started = time.monotonic()
    with daemon(tmp_path, env), dg.DagsterInstance.from_config(str(home)) as instance:
        # Turned on as a person does while the daemon runs (operations.md).
        switches = [
            subprocess.Popen(
                [str(BIN / "dagster"), kind, "start", name, "-w", str(workspace)],
                cwd=tmp_path,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
            for kind, name in (("schedule", "weekly_retrain_schedule"), ("sensor", "new_sessions_sensor"))
        ]
        for switch in switches:
            output, _ = switch.communicate(timeout=180)
            assert switch.returncode == 0, output

        # The sensor looks at the empty folder first; then a transcript of yesterday's sessions lands.
        wait_for("the sensor's first tick", lambda: ticks(instance, "new_sessions_sensor"), 120, *logs)
        yesterday = today - dt.timedelta(days=1)
        new = tmp_path / "new"
        generate_corpus(
            new, CorpusSpec(days=1, end_date=yesterday, sessions_per_day=1, seed=17, malformed_lines=False)
        )
        source = new / SOURCE_FOLDERS[WATCHED]
        file = sorted(source.rglob("*.jsonl"))[0]
        landed = watched / file.relative_to(source)
        landed.parent.mkdir(parents=True)
        shutil.copy2(file, landed)
        # Written yesterday evening: quiet for long enough (the sensor waits out files still growing).
        evening = dt.datetime.combine(yesterday, dt.time(23), dt.UTC).timestamp()
        os.utime(landed, (evening, evening))

        def finished(tag: str, name: str) -> list[dg.DagsterRun] | None:
            runs = launched_by(instance, tag, name)
            return runs if runs and all(run.is_finished for run in runs) else None

        weekly = wait_for(
            "the schedule's weekly_retrain_job run to finish",
            lambda: finished("dagster/schedule_name", "weekly_retrain_schedule"),
            DEADLINE_S - (time.monotonic() - started),
            *logs,
        )
        ingested = wait_for(
            "the sensor's daily_ingest_job run to finish",
            lambda: finished("dagster/sensor_name", "new_sessions_sensor"),
            DEADLINE_S - (time.monotonic() - started),
            *logs,
        )

    # One weekly run, for the week that is over, and it trained and evaluated an adapter.
    [run] = weekly
    assert run.job_name == "weekly_retrain_job" and run.tags["dagster/partition"] == week.isoformat()
    assert run.status == dg.DagsterRunStatus.SUCCESS, (tmp_path / "daemon.log").read_text()[-4000:]
    [adapter] = AdapterRegistry(sqlite_url(home / "adapters.sqlite")).list()
    assert adapter.run_id == run.run_id and adapter.status in ("promoted", "rejected")
    assert adapter.hyperparameters["iters"] == TRAINER["iters"]  # the TRAJECTORY_RUN_CONFIG file's
    assert (tmp_path / "warehouse" / "replay_eval" / f"{week.isoformat()}.parquet").is_file()

    # The sensor's run: the days the new file can hold that are over, and the file's session in them.
    [run] = ingested
    assert run.job_name == "daily_ingest_job" and run.status == dg.DagsterRunStatus.SUCCESS
    day_before = yesterday - dt.timedelta(days=1)
    assert (
        run.tags["dagster/asset_partition_range_start"],
        run.tags["dagster/asset_partition_range_end"],
    ) == (
        day_before.isoformat(),
        yesterday.isoformat(),
    )
    events = pd.read_parquet(tmp_path / "warehouse" / "raw_sessions" / f"{yesterday.isoformat()}.parquet")
    assert len(events) and events["source_path"].str.endswith(landed.name).all()
