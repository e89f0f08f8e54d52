"""Shared fixtures: the real transcript corpus (TRAJECTORY_REAL_CORPUS, default ../shared/corpus/real).

A clone of this repository alone has no such corpus: the tests that read it then skip with one
reason. CI sets TRAJECTORY_REQUIRE_REAL_CORPUS=1 (.ci/run), which turns that skip into a failure.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from dagster._core.storage.defs_state.base import set_defs_state_storage

from trajectory_pipeline import settings

REPO_ROOT = Path(__file__).resolve().parents[1]
REAL_CORPUS = settings.real_corpus()


@pytest.fixture(autouse=True)
def no_other_tests_instance() -> Iterator[None]:
    """Each test starts as a fresh process does: with no Dagster instance's definitions-state storage
    in Dagster's context variable. An instance sets it on `__enter__`; one whose exit never resets it
    (a dispose that fails, an exit in another context) leaves a storage whose instance is gone, and
    every later `dg.materialize` in the process fails on its dead weakref."""
    with set_defs_state_storage(None):
        yield


# Small tool specs for records in tests that only need some well-formed tools.
TOOLS = ("read_file", "run_shell", "edit_file")
TOOL_SPECS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": f"{name} tool",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        },
    }
    for name in TOOLS
]

# The real corpus's folder for each source that has real transcripts.
REAL_FOLDERS = {
    "claude_code": "claude-code",
    "codex": "codex",
    "gemini_cli": "gemini-cli",
    "swe_agent": "swe-agent",
    "aider": "aider",
}


@pytest.fixture(scope="session")
def real_corpus() -> Path:
    return require_real_corpus()


def require_real_corpus() -> Path:
    """The real corpus; a skip (a failure under TRAJECTORY_REQUIRE_REAL_CORPUS=1) when it is absent."""
    if not REAL_CORPUS.is_dir():
        reason = (
            f"the real transcript corpus is not at {REAL_CORPUS} (set {settings.REAL_CORPUS.name} "
            "to its folder; a clone of this repository alone has none)"
        )
        if settings.require_real_corpus():
            pytest.fail(f"{reason}, and {settings.REQUIRE_REAL_CORPUS.name} is set", pytrace=False)
        pytest.skip(reason)
    return REAL_CORPUS


@dataclass(frozen=True)
class DemoRun:
    """Where `trajectory-pipeline demo` ran (its DAGSTER_HOME is `root / "home"`) and what it printed."""

    root: Path
    result: subprocess.CompletedProcess[str]

    @property
    def home(self) -> Path:
        return self.root / "home"


# The demo takes minutes of mlx training: started with the session, it runs beside the rest of the
# suite instead of after it, so it is given the time it takes when shared.
DEMO_TIMEOUT_S = 1800
# On one OpenBLAS thread: the tiny model's matrices are too small to split, and a second thread only
# spins. Measured on two cores (12-07): the demo in 11m22s at 104% CPU against 11m36s at 191%, so
# the rest of the suite keeps a core. Its scores differ (float sums in another order train another
# adapter: holdout pass rate 27.1 against 22.9 % in that pair); the demo's tests assert none of them.
DEMO_ENV = {"OPENBLAS_NUM_THREADS": "1"}
# What the demo prints, in files of its folder (`DemoLaunch.root`).
DEMO_STDOUT, DEMO_STDERR = "demo.stdout", "demo.stderr"


@dataclass(frozen=True)
class DemoLaunch:
    """`trajectory-pipeline demo` running in `root`, its output going to files there."""

    root: Path
    process: subprocess.Popen[bytes]

    def finished(self) -> DemoRun:
        """The run, once the demo has exited (waiting at most DEMO_TIMEOUT_S from this call)."""
        self.process.wait(timeout=DEMO_TIMEOUT_S)
        result = subprocess.CompletedProcess(
            self.process.args,
            self.process.returncode,
            (self.root / DEMO_STDOUT).read_text(errors="replace"),
            (self.root / DEMO_STDERR).read_text(errors="replace"),
        )
        return DemoRun(self.root, result)


@pytest.fixture(scope="session", autouse=True)
def demo_launch(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[DemoLaunch | None]:
    """`make demo` in a fresh folder with its own DAGSTER_HOME, started with the session's first
    test when a selected test reads its run (`demo_run`); stopped, its process group killed, at the
    session's end."""
    if not any("demo_run" in getattr(item, "fixturenames", ()) for item in request.session.items):
        yield None
        return
    from tests.dagster_processes import started  # here: that module imports this one

    root = tmp_path_factory.mktemp("demo")
    cli = Path(sys.executable).with_name("trajectory-pipeline")
    with started(
        [str(cli), "demo", "--corpus", "corpus", "--data-dir", "warehouse"],
        root,
        {**DEMO_ENV, **os.environ, "DAGSTER_HOME": str(root / "home")},
        root / DEMO_STDOUT,
        stop_s=5,
        stderr_log=root / DEMO_STDERR,
    ) as process:
        yield DemoLaunch(root, process)


@pytest.fixture(scope="session")
def demo_run(demo_launch: DemoLaunch | None) -> DemoRun:
    """The demo's run, once: its own assertions and the browser test read the same instance."""
    assert demo_launch is not None, "demo_launch starts the demo whenever a selected test needs it"
    return demo_launch.finished()
