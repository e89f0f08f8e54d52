"""The weekly schedule launches `weekly_retrain_job`, not the assets one by one: this test runs that
job, as the definitions hold it, end to end on the tiny model for one week of a sample window
ingested through the daily assets, and checks what a user would look at next: both weekly assets
materialized for the week, the adapter's window ending with the week, and a decision in the registry.

    .venv/bin/python -m pytest tests/test_weekly_job.py -q
"""

import datetime as dt
from pathlib import Path

import dagster as dg
import pandas as pd
import pytest

from assets.automation import weekly_retrain_job
from assets.definitions import defs
from resources.adapter_registry import AdapterRegistryResource
from resources.session_sources import SessionSources
from tests.assets.sample_window import WEEK, ingest_sample_window, weekly_resources
from trajectory_pipeline.ingest.formats import FORMATS

EVAL = {"holdout_cases": 4, "seen_exact_cases": 2, "seen_variant_cases": 2, "max_tokens": 16, "min_cases": 1}


@pytest.mark.slow
def test_weekly_retrain_job_trains_evaluates_and_decides(tmp_path: Path) -> None:
    ingest_sample_window(tmp_path, sessions_per_day=4, seed=5)
    registry_url = f"sqlite:///{tmp_path / 'adapters.sqlite'}"
    no_sources = SessionSources(**{f"{source}_root": "" for source in FORMATS})
    local = dg.Definitions(
        assets=defs.assets,
        jobs=[weekly_retrain_job],
        resources={**weekly_resources(tmp_path), "session_sources": no_sources},
    )
    run_config = {
        "ops": {
            "lora_adapter": {
                "config": {"artifacts_dir": str(tmp_path / "artifacts"), "pad_small_splits": True}
            },
            "replay_eval": {"config": EVAL},
            "promoted_model": {"config": {"models_dir": str(tmp_path / "models")}},
        }
    }
    with dg.instance_for_test() as instance:
        result = local.resolve_job_def("weekly_retrain_job").execute_in_process(
            partition_key=WEEK, instance=instance, run_config=run_config
        )
        assert result.success
        for key in ("lora_adapter", "replay_eval"):
            assert instance.get_materialized_partitions(dg.AssetKey(key)) == {WEEK}, key
        fused = instance.get_materialized_partitions(dg.AssetKey("promoted_model"))

    manifest = pd.read_parquet(tmp_path / "warehouse" / "lora_adapter" / f"{WEEK}.parquet").iloc[0]
    week_end = dt.date.fromisoformat(WEEK) + dt.timedelta(days=6)
    assert manifest["data_window_end"] <= week_end.isoformat()
    assert (Path(manifest["adapter_path"]) / "adapters.safetensors").is_file()
    record = AdapterRegistryResource(url=registry_url).registry().get(manifest["adapter_id"])
    assert record.status in ("promoted", "rejected")
    assert record.eval_summary is not None
    [check] = result.get_asset_check_evaluations()
    assert check.check_name == "adapter_promoted"
    assert check.passed == (record.status == "promoted")
    # A promoted adapter is fused and recorded; a rejected one leaves no model.
    assert fused == ({WEEK} if record.status == "promoted" else set())
    assert (record.model_path is not None) == (record.status == "promoted")
