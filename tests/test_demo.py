"""`make demo` end to end: a fresh folder, the real CLI, a real Dagster instance, Parquet read back."""

import os
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pandas as pd
import pytest


@pytest.mark.slow
def test_demo_materializes_every_sample_day_through_the_instance(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    env = dict(os.environ)
    cli = Path(sys.executable).with_name("trajectory-pipeline")
    out = subprocess.run(
        [str(cli), "demo", "--corpus", "corpus", "--data-dir", "warehouse"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,  # a learned base, an adapter and two models replayed, on two CPU cores
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert "Generated the sample corpus" in out.stdout
    total = next(line for line in out.stdout.splitlines() if line.startswith("total"))
    partitions = sorted((tmp_path / "warehouse" / "raw_sessions").glob("*.parquet"))
    assert [p.stem for p in partitions][:1] == ["2026-11-09"] and len(partitions) == 14
    events = pd.concat(pd.read_parquet(p) for p in partitions)
    assert total.split()[1:3] == [str(events["session_id"].nunique()), str(len(events))]
    with dg.DagsterInstance.from_config(str(tmp_path / "home")) as instance:
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
    assert (tmp_path / "tiny-model" / "pretraining.json").exists()
    assert (tmp_path / "mlx" / "sample-window" / "manifest.json").exists()
    assert len(list((tmp_path / "artifacts" / "adapters").glob("*/adapter/adapters.safetensors"))) == 1
