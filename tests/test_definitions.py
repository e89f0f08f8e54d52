"""The code location must load as `dagster dev` loads it, and the core must stay free of dagster."""

import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest

from assets.definitions import defs
from tests.conftest import REPO_ROOT

# Entry points that assemble or run the graph; every other core module must not import dagster.
DAGSTER_ENTRY_POINTS = {"definitions", "demo"}


def test_definitions_load() -> None:
    dg.Definitions.validate_loadable(defs)
    keys = {key.to_user_string() for key in defs.resolve_all_asset_keys()}
    assert {"raw_sessions", "raw_sessions_quarantine"} <= keys
    assert {"lora_adapter", "replay_eval"} <= keys  # the weekly end of the chain
    graph = defs.resolve_asset_graph()
    parents = {key.to_user_string() for key in graph.get(dg.AssetKey("replay_eval")).parent_keys}
    assert parents == {"lora_adapter", "rendered_splits", "action_memory"}
    memory_parents = {key.to_user_string() for key in graph.get(dg.AssetKey("action_memory")).parent_keys}
    assert memory_parents == {"decision_points", "rendered_splits"}  # train split only: see its tests
    assert defs.resolve_job_def("daily_ingest_job") is not None


def test_workspace_points_at_the_definitions() -> None:
    text = (REPO_ROOT / "workspace.yaml").read_text()
    assert "module_name: assets.definitions" in text


def test_core_modules_do_not_import_dagster() -> None:
    core = sorted(
        ".".join(path.relative_to(REPO_ROOT).with_suffix("").parts)
        for path in (REPO_ROOT / "trajectory_pipeline").rglob("*.py")
        if path.stem not in DAGSTER_ENTRY_POINTS and path.stem != "__main__"
    )
    code = "import sys\n" + "".join(f"import {name}\n" for name in core) + "print('dagster' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "False", f"a core module imports dagster: {core}"


def test_loading_the_definitions_leaves_the_model_and_drawing_libraries_unloaded() -> None:
    # Every Dagster process loads the code location (the CLI, the daemon, the fork server of a run's
    # steps): mlx, matplotlib and datasketch (with scipy) cost it about a second and tens of MiB, for
    # the few steps that train, draw or sketch; those import them when they run.
    heavy = ("mlx", "mlx_lm", "matplotlib", "datasketch", "scipy")
    code = f"import sys, assets.definitions\nprint([m for m in {heavy!r} if m in sys.modules])"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"


def test_instance_config_loads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "dagster.yaml").write_text((REPO_ROOT / "dagster.yaml").read_text())
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    with dg.DagsterInstance.from_config(str(tmp_path)) as instance:
        assert instance.get_settings("telemetry") == {"enabled": False}
        concurrency = instance.get_concurrency_config()
        assert concurrency.run_queue_config.max_concurrent_runs == 2
        assert concurrency.pool_config.default_pool_limit == 1  # one mlx training at a time
