"""`trajectory-pipeline materialize` as a user runs it: a day in one run through the real instance,
no Dagster notices in the user's face, and a partition that does not exist yet is one line that
says what to change."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
from pathlib import Path

import pytest

from assets.launch import partition_problem
from assets.partitions import daily_partitions, weekly_partitions
from trajectory_pipeline.ingest.formats import FORMATS

NOW = dt.datetime(2026, 12, 1, 10, tzinfo=dt.UTC)
CLI = Path(sys.executable).with_name("trajectory-pipeline")


@pytest.mark.parametrize(
    ("key", "weekly", "expected"),
    [
        ("2026-11-30", False, None),
        ("2026-11-22", True, None),
        ("2026-11-29", True, "2026-11-29 is not over yet"),
        (
            "2024-06-01",
            False,
            "2024-06-01 is before the first partition, 2025-01-01: set TRAJECTORY_START_DATE",
        ),
        ("2026-12-01", False, "2026-12-01 is not over yet (today is 2026-12-01 UTC)"),
        ("2026-11-25", True, "the week holding it is 2026-11-22"),
        ("20261130", False, "'20261130' is not a partition key"),
    ],
)
def test_a_missing_partition_is_named_with_the_fix(key: str, weekly: bool, expected: str | None) -> None:
    problem = partition_problem(key, weekly_partitions if weekly else daily_partitions, NOW)
    if expected is None:
        assert problem is None
    else:
        assert problem is not None and expected in problem and "\n" not in problem


def _run(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "DAGSTER_HOME": str(tmp_path / "home"),
        "TRAJECTORY_DATA_DIR": str(tmp_path / "wh"),
        **(env or {}),
    }
    env.update({spec.variable: "" for spec in FORMATS.values()})  # no source: never the real home folders
    return subprocess.run(
        [str(CLI), "materialize", *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )


@pytest.mark.slow
def test_a_day_runs_quietly_through_the_real_instance(tmp_path: Path) -> None:
    result = _run(tmp_path, "--select", "raw_sessions,raw_sessions_quarantine", "--partition", "2026-11-20")
    assert result.returncode == 0, result.stderr[-2000:]
    assert "succeeded" in result.stdout
    assert "Warning" not in result.stderr
    assert (tmp_path / "wh" / "raw_sessions" / "2026-11-20.parquet").exists()
    assert (tmp_path / "home").stat().st_mode & 0o777 == 0o700


def test_a_day_before_the_start_is_one_line(tmp_path: Path) -> None:
    result = _run(tmp_path, "--select", "raw_sessions", "--partition", "2024-06-01")
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0 and "TRAJECTORY_START_DATE" in result.stderr


def test_a_config_file_is_the_run_config(tmp_path: Path) -> None:
    from assets.launch import LaunchError, load_run_config

    config = tmp_path / "run.yaml"
    config.write_text("ops:\n  decision_points:\n    config:\n      max_incomplete_share: 0.5\n")
    assert load_run_config(str(config)) == {
        "ops": {"decision_points": {"config": {"max_incomplete_share": 0.5}}}
    }
    assert load_run_config(None) == {}
    config.write_text("- a list\n")
    with pytest.raises(LaunchError, match="a run config is a mapping"):
        load_run_config(str(config))
    with pytest.raises(LaunchError, match=r"--config .*missing\.yaml"):
        load_run_config(str(tmp_path / "missing.yaml"))


@pytest.mark.slow
def test_the_config_reaches_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "run.yaml"
    config.write_text("ops:\n  mined_trajectories:\n    config:\n      min_kept_attempts: 7\n")
    result = _run(
        tmp_path,
        "--select",
        "raw_sessions,raw_sessions_quarantine,mined_trajectories",
        "--partition",
        "2026-11-20",
        "--config",
        str(config),
    )
    assert result.returncode == 0, result.stderr[-2000:]
    import dagster as dg

    # The instance as the command left it (its dagster.yaml links the repository's: only read it).
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    with dg.DagsterInstance.from_config(str(tmp_path / "home")) as instance:
        [run] = instance.get_runs()
        assert run.run_config["ops"]["mined_trajectories"]["config"]["min_kept_attempts"] == 7


def test_a_range_of_weeks_is_one_line() -> None:
    from assets.launch import LaunchError, materialize

    with pytest.raises(LaunchError, match="one week at a time; give --partition WEEK"):
        materialize(None, "weekly_retrain_job", None, "2026-11-08...2026-11-15")


def test_one_half_of_the_raw_sessions_step_selects_both() -> None:
    import dagster as dg

    from assets.launch import _selection

    for name in ("raw_sessions", "raw_sessions_quarantine"):
        _, keys = _selection(name, None)
        assert set(keys or []) == {dg.AssetKey("raw_sessions"), dg.AssetKey("raw_sessions_quarantine")}


def test_config_for_a_step_the_run_does_not_have_is_refused(tmp_path: Path) -> None:
    from assets.launch import LaunchError, materialize

    config = tmp_path / "run.yaml"
    config.write_text("ops:\n  mined_trajectorie:\n    config:\n      min_kept_attempts: 7\n")
    with pytest.raises(LaunchError, match="no step mined_trajectorie; its steps are mined_trajectories"):
        materialize("mined_trajectories", None, "2026-11-20", None, str(config))


def test_config_dagster_refuses_is_one_line(tmp_path: Path) -> None:
    config = tmp_path / "run.yaml"
    config.write_text("ops:\n  mined_trajectories:\n    config:\n      unverified_edit_tierr: bronze\n")
    result = _run(
        tmp_path, "--select", "mined_trajectories", "--partition", "2026-11-20", "--config", str(config)
    )
    assert result.returncode == 2, result.stderr[-2000:]
    assert result.stderr.strip().count("\n") == 0
    assert "--config" in result.stderr and "unverified_edit_tierr" in result.stderr


@pytest.mark.slow
def test_the_command_says_its_steps_run_here_whatever_the_executor(tmp_path: Path) -> None:
    env_executor = {"TRAJECTORY_EXECUTOR": "multiprocess"}
    result = _run(tmp_path, "--select", "raw_sessions", "--partition", "2026-11-20", env=env_executor)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "the steps run in this process; TRAJECTORY_EXECUTOR=multiprocess applies to" in result.stderr


def test_a_data_folder_that_is_a_file_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "tables").write_text("not a folder")
    result = _run(
        tmp_path,
        "--select",
        "mined_trajectories",
        "--partition",
        "2026-11-20",
        env={"TRAJECTORY_DATA_DIR": str(tmp_path / "tables")},
    )
    assert result.returncode == 2
    assert (
        result.stderr.strip().count("\n") == 0
        and "TRAJECTORY_DATA_DIR=" in result.stderr
        and "a file, not a folder" in result.stderr
    )
