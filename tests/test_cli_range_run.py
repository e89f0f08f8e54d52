"""The CLI range run a user types, `dagster asset materialize -m assets.definitions --partition-range`,
runs its steps on the executor `TRAJECTORY_EXECUTOR` names (assets/executors.py): in the run's
process by default, or each in a process forked from a fork server (`multiprocess`). Either way it
must store the same rows as `trajectory-pipeline materialize`, day by day. bench/bench_backfill_cli.py
times this very command.

    .venv/bin/python -m pytest tests/test_cli_range_run.py -q
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq

from tests.conftest import REPO_ROOT
from trajectory_pipeline.ingest.formats import FORMATS
from trajectory_pipeline.sample.corpus import SOURCE_FOLDERS, CorpusSpec, generate_corpus

LAST = dt.date(2026, 11, 22)
SELECT = "raw_sessions,raw_sessions_quarantine,mined_trajectories,decision_points"
ASSETS = SELECT.split(",")


def environment(corpus: Path, home: Path, first: str) -> dict[str, str]:
    shutil.copy(REPO_ROOT / "dagster.yaml", home / "dagster.yaml")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, (str(REPO_ROOT), os.environ.get("PYTHONPATH")))),
        "DAGSTER_HOME": str(home),
        "TRAJECTORY_DATA_DIR": str(home / "warehouse"),
        "TRAJECTORY_START_DATE": first,
        "TRAJECTORY_WORKERS": "2",  # the days spread over worker processes inside the steps, too
    }
    for source in FORMATS:
        folder = SOURCE_FOLDERS.get(source)
        env[f"TRAJECTORY_{source.upper()}_ROOT"] = str(corpus / folder) if folder else ""
    return env


def test_the_cli_range_run_stores_the_rows_of_the_in_process_run(tmp_path: Path) -> None:
    spec = CorpusSpec(days=2, end_date=LAST, sessions_per_day=2, seed=5, own_agent_tasks=30)
    generate_corpus(tmp_path / "corpus", spec)
    first, last = spec.dates[0].isoformat(), LAST.isoformat()
    bin_dir = Path(sys.executable).parent
    dagster = [str(bin_dir / "dagster"), "asset", "materialize", "-m", "assets.definitions"]
    # name: (command, TRAJECTORY_EXECUTOR, how Dagster says it executes the steps)
    commands = {
        "trajectory-pipeline": ([sys.executable, "-m", "trajectory_pipeline.cli", "materialize"], "", None),
        "dagster": (dagster, "", "in process"),
        "dagster-multiprocess": (dagster, "multiprocess", "using multiprocess executor"),
    }
    for name, (command, executor, announced) in commands.items():
        home = tmp_path / name
        home.mkdir()
        done = subprocess.run(
            [*command, "--select", SELECT, "--partition-range", f"{first}...{last}"],
            cwd=REPO_ROOT,
            env={**environment(tmp_path / "corpus", home, first), "TRAJECTORY_EXECUTOR": executor},
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        if announced is not None:
            assert f"Executing steps {announced}" in done.stderr + done.stdout
    for asset in ASSETS:
        for day in spec.dates:
            tables = [
                pq.read_table(tmp_path / name / "warehouse" / asset / f"{day}.parquet") for name in commands
            ]
            assert tables[0].num_rows > 0 or asset == "raw_sessions_quarantine", (asset, day)
            assert all(table.equals(tables[0]) for table in tables[1:]), (asset, day)


WARM_UP_PROBE = """
import multiprocessing.forkserver, sys
started = []
multiprocessing.forkserver.ensure_running = lambda: started.append("dagster" in sys.modules)
from trajectory_pipeline.cli import main
code = main(["materialize", "--select", "raw_sessions"] + sys.argv[1:])
print(code, started)
"""


def test_our_cli_starts_the_fork_server_of_a_range_before_importing_dagster(tmp_path: Path) -> None:
    """A range is days for the stages' workers: their fork server starts first, so its imports run
    beside Dagster's (a single day stays in the step's process: no server)."""
    env = {
        **os.environ,
        "DAGSTER_HOME": str(tmp_path),
        "TRAJECTORY_DATA_DIR": str(tmp_path / "warehouse"),
        "TRAJECTORY_START_DATE": "2026-11-22",  # the days asked for come before it: refused, nothing run
    }
    days = ["--partition-range", "2026-11-20...2026-11-21"]
    seen = {}
    for name, given, workers in (
        ("range", days, "2"),
        ("day", ["--partition", "2026-11-20"], "2"),
        ("range, bad TRAJECTORY_WORKERS", days, "many"),  # left for the run to report, as before
    ):
        probe = [sys.executable, "-c", WARM_UP_PROBE, *given]
        done = subprocess.run(
            probe,
            cwd=REPO_ROOT,
            env={**env, "TRAJECTORY_WORKERS": workers},
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        assert "is before the first partition" in done.stderr, (name, done.stderr)
        seen[name] = done.stdout.strip().splitlines()[-1]
    # Refused (2) as the definitions load, after the range's server started: Dagster was not imported.
    assert seen == {"range": "2 [False]", "day": "2 []", "range, bad TRAJECTORY_WORKERS": "2 []"}
