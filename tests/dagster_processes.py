"""Real Dagster processes for tests: the repository's instance config with shorter intervals, a
workspace file, the daemon (or `dagster dev`, or the demo) in its own process group, and the waits
and kills around them. Shared by tests/test_killed_runs.py, test_distributed.py, test_daemon.py,
test_ui_backfill.py and conftest's demo.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

import psutil
import pytest
import yaml

from tests.conftest import REPO_ROOT

# A weekly training as short as mlx-lm allows: two steps of one record, validated once, for tests
# that prove a launch, a schedule or a store works, not that a model learns.
TWO_STEP_TRAINER = {
    "num_layers": -1,
    "iters": 2,
    "batch_size": 1,
    "val_batches": 1,
    "steps_per_report": 1,
    "steps_per_eval": 2,
    "learning_rate": 5e-3,
    "max_seq_length": 4096,
}

BIN = Path(sys.executable).parent
# The repository's instance config, its two intervals shortened: the daemon looks at runs every 2 s
# (30 s) and frees a dead run's slots 2 s after it failed (60 s).
SHORTENED = {
    "poll_interval_seconds: 30": "poll_interval_seconds: 2",
    "free_slots_after_run_end_seconds: 60": "free_slots_after_run_end_seconds: 2",
}
# Queued runs are looked at every second (Dagster's default: every 5 s).
QUICK_QUEUE = "\nrun_queue:\n  dequeue_interval_seconds: 1\n"


def instance_config(extra: str = "") -> str:
    """The repository's dagster.yaml with the intervals above shortened, and `extra` appended."""
    text = (REPO_ROOT / "dagster.yaml").read_text()
    for old, new in SHORTENED.items():
        assert old in text, f"dagster.yaml no longer says {old!r}"
        text = text.replace(old, new)
    return text + extra


def make_instance(home: Path, extra: str = QUICK_QUEUE) -> Path:
    """A private DAGSTER_HOME with that config, its storage created once (before several processes
    open it)."""
    import dagster as dg

    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    (home / "dagster.yaml").write_text(instance_config(extra))
    with dg.DagsterInstance.from_config(str(home)):
        pass
    return home


def write_workspace(folder: Path) -> Path:
    """A workspace file loading the project's definitions from the checkout."""
    path = folder / "workspace.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "load_from": [
                    {
                        "python_module": {
                            "module_name": "assets.definitions",
                            "working_directory": str(REPO_ROOT),
                            "location_name": "trajectory_pipeline",
                        }
                    }
                ]
            }
        )
    )
    return path


def kill_tree(pid: int) -> None:
    """SIGKILL a process and everything it started: the way the OOM killer or `kill -9` ends a run."""
    with contextlib.suppress(psutil.NoSuchProcess):
        process = psutil.Process(pid)
        for child in process.children(recursive=True):
            with contextlib.suppress(psutil.NoSuchProcess):
                child.send_signal(signal.SIGKILL)
        process.send_signal(signal.SIGKILL)


def wait_for(what: str, condition, timeout: float, *logs: Path):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        time.sleep(0.5)
    tails = "\n".join(
        f"--- {log.name}:\n{log.read_text(errors='replace')[-4000:]}" for log in logs if log.exists()
    )
    pytest.fail(f"timed out waiting for {what}\n{tails}")


@contextlib.contextmanager
def started(
    command: list[str],
    cwd: Path,
    env: Mapping[str, str],
    log: Path,
    stop_s: float = 30,
    stderr_log: Path | None = None,
) -> Iterator[subprocess.Popen[bytes]]:
    """A process in its own process group (the daemon, its code server and the runs it launches),
    its output in `log` (its stderr in `stderr_log` when given: files, not pipes, as nothing reads
    them while it runs and a full pipe would stall it); on exit SIGTERM, then SIGKILL to the group
    for whatever is left."""
    with contextlib.ExitStack() as files:
        out = files.enter_context(log.open("wb"))
        err = files.enter_context(stderr_log.open("wb")) if stderr_log else subprocess.STDOUT
        process = subprocess.Popen(
            command, cwd=cwd, env=dict(env), stdout=out, stderr=err, start_new_session=True
        )
    try:
        yield process
    finally:
        process.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=stop_s)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def daemon(root: Path, env: Mapping[str, str]) -> contextlib.AbstractContextManager[subprocess.Popen[bytes]]:
    """`dagster-daemon run` on the workspace of `root` (see write_workspace), logging to root/daemon.log."""
    workspace = write_workspace(root)
    return started([str(BIN / "dagster-daemon"), "run", "-w", str(workspace)], root, env, root / "daemon.log")
