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


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> DemoRun:
    """`make demo` once per session in a fresh folder with its own DAGSTER_HOME: the demo's own
    assertions and the browser test read the same run (it takes minutes on two cores)."""
    root = tmp_path_factory.mktemp("demo")
    cli = Path(sys.executable).with_name("trajectory-pipeline")
    result = subprocess.run(
        [str(cli), "demo", "--corpus", "corpus", "--data-dir", "warehouse"],
        cwd=root,
        env={**os.environ, "DAGSTER_HOME": str(root / "home")},
        capture_output=True,
        text=True,
        timeout=900,  # a learned base, an adapter and two models replayed, on two CPU cores
    )
    return DemoRun(root, result)
