"""`make demo` end to end: a fresh folder, the real CLI, a real Dagster instance, Parquet read back.

The demo runs once per session (the `demo_run` fixture in conftest.py); tests/test_ui_browser.py
opens the same instance in the Dagster UI.

    .venv/bin/python -m pytest tests/test_demo.py
"""

import dagster as dg
import pandas as pd
import pytest

from tests.conftest import DemoRun


@pytest.mark.slow
def test_demo_materializes_every_sample_day_through_the_instance(
    demo_run: DemoRun, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DAGSTER_HOME", str(demo_run.home))  # dagster.yaml's storage reads it
    out, root = demo_run.result, demo_run.root
    assert out.returncode == 0, out.stderr[-3000:]
    assert "Generated the sample corpus" in out.stdout
    total = next(line for line in out.stdout.splitlines() if line.startswith("total"))
    partitions = sorted((root / "warehouse" / "raw_sessions").glob("*.parquet"))
    assert [p.stem for p in partitions][:1] == ["2026-11-09"] and len(partitions) == 14
    events = pd.concat(pd.read_parquet(p) for p in partitions)
    assert total.split()[1:3] == [str(events["session_id"].nunique()), str(len(events))]
    with dg.DagsterInstance.from_config(str(demo_run.home)) as instance:
        runs = instance.get_runs()
        assert len(runs) == 2 and all(run.is_success for run in runs)  # the ingest range, then training
        assert "daily_ingest_job" in {run.job_name for run in runs}
        for asset in ("raw_sessions", "rendered_splits", "lora_adapter", "replay_eval"):
            assert instance.get_latest_materialization_event(dg.AssetKey(asset)) is not None
    assert "Trained lora_adapter and ran replay_eval for the week of 2026-11-22" in out.stdout
    # The closing table: pass rates of base and adapter per lane, then the promotion decision.
    table = [line.split() for line in out.stdout.splitlines() if line.startswith(("holdout ", "seen-"))]
    assert {(row[0], row[1]) for row in table} >= {("holdout", "base"), ("holdout", "candidate")}
    assert any(line.startswith("Promotion: ") for line in out.stdout.splitlines())
    assert (root / "tiny-model" / "pretraining.json").exists()
    assert (root / "mlx" / "sample-window" / "manifest.json").exists()
    assert len(list((root / "artifacts" / "adapters").glob("*/adapter/adapters.safetensors"))) == 1
