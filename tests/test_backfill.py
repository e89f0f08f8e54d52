"""Backfills must be one action that ends with every day ingested, and weekly backfills must train
history honestly: these tests run a range of daily partitions through the real `daily_ingest_job`
against a temporary instance, and check which days a weekly adapter of an old week may read.

A UI backfill of the ingest group is one run because every asset of it has
`BackfillPolicy.single_run()`; the same run is what `dagster asset materialize --partition-range`
executes (docs/operations.md).

    .venv/bin/python -m pytest tests/test_backfill.py -q
"""

import datetime as dt
from pathlib import Path

import dagster as dg
import pytest

from assets.action_memory import action_memory
from assets.automation import RANGE_END, RANGE_START, daily_ingest_job
from assets.definitions import defs
from assets.lora_adapter import lora_adapter
from assets.partitions import WINDOW_WEEKS, daily_partitions, weekly_partitions
from assets.replay_eval import replay_eval
from resources.parquet_io_manager import ParquetIOManager
from resources.session_sources import SessionSources
from trajectory_pipeline.ingest.formats import FORMATS
from trajectory_pipeline.sample.corpus import SOURCE_FOLDERS, CorpusSpec, generate_corpus

INGEST = (
    "raw_sessions",
    "raw_sessions_quarantine",
    "mined_trajectories",
    "decision_points",
    "rendered_splits",
)
FIRST, LAST = dt.date(2026, 11, 18), dt.date(2026, 11, 22)
LATER = dt.datetime(2027, 6, 1, tzinfo=dt.UTC)  # long after every week tested: all their days exist


def test_every_ingest_asset_backfills_a_range_in_one_run() -> None:
    graph = defs.resolve_asset_graph()
    job = defs.resolve_job_def("daily_ingest_job")
    selected = {key.to_user_string() for key in job.asset_layer.executable_asset_keys}
    assert selected == set(INGEST)
    for key in selected:
        assert graph.get(dg.AssetKey(key)).backfill_policy == dg.BackfillPolicy.single_run(), key
    # Weekly assets keep one run per week: each week trains its own adapter.
    for weekly in ("lora_adapter", "replay_eval"):
        assert graph.get(dg.AssetKey(weekly)).backfill_policy is None


def test_a_range_backfill_materializes_every_day_in_one_run(tmp_path: Path) -> None:
    spec = CorpusSpec(days=(LAST - FIRST).days + 1, end_date=LAST, sessions_per_day=1, seed=3)
    generate_corpus(tmp_path / "corpus", spec)
    roots = {f"{source}_root": str(tmp_path / "corpus" / sub) for source, sub in SOURCE_FOLDERS.items()}
    off = {f"{source}_root": "" for source in FORMATS if source not in SOURCE_FOLDERS}
    local = dg.Definitions(
        assets=defs.assets,
        jobs=[daily_ingest_job],
        resources={
            **(defs.resources or {}),
            "io_manager": ParquetIOManager(base_dir=str(tmp_path / "warehouse")),
            "session_sources": SessionSources(**roots, **off),
        },
    )
    with dg.instance_for_test() as instance:
        result = local.resolve_job_def("daily_ingest_job").execute_in_process(
            instance=instance, tags={RANGE_START: FIRST.isoformat(), RANGE_END: LAST.isoformat()}
        )
        assert result.success
        days = {day.isoformat() for day in spec.dates}
        for key in INGEST:
            assert instance.get_materialized_partitions(dg.AssetKey(key)) == days, key
        assert len(instance.get_runs()) == 1
    for day in days:
        assert (tmp_path / "warehouse" / "rendered_splits" / f"{day}.parquet").is_file()


def window_days(
    weekly_asset: dg.AssetsDefinition, week: str, now: dt.datetime, upstream: str = "rendered_splits"
) -> list[str]:
    """The daily `upstream` partitions (rendered_splits) the weekly asset's run for `week` loads."""
    mapping = weekly_asset.get_partition_mapping(dg.AssetKey(upstream))
    assert mapping is not None
    mapped = mapping.get_upstream_mapped_partitions_result_for_partitions(
        weekly_partitions.subset_with_partition_keys([week]),
        weekly_partitions,
        daily_partitions,
        current_time=now,
    )
    return sorted(mapped.partitions_subset.get_partition_keys())


@pytest.mark.parametrize(
    "weekly_asset",
    [lora_adapter, action_memory, replay_eval],
    ids=["lora_adapter", "action_memory", "replay_eval"],
)
@pytest.mark.parametrize("week", ["2026-03-01", "2026-08-16"])
def test_an_old_week_reads_only_days_up_to_its_end(weekly_asset: dg.AssetsDefinition, week: str) -> None:
    """Backfilled long after, a week sees its trailing window and none of the later days."""
    start = dt.date.fromisoformat(week)
    first = start - dt.timedelta(weeks=WINDOW_WEEKS - 1)
    days = window_days(weekly_asset, week, LATER)
    assert days[0] == max(first, daily_partitions.start.date()).isoformat()
    assert days[-1] == (start + dt.timedelta(days=6)).isoformat()  # the Saturday that ends the week
    assert len(days) == (dt.date.fromisoformat(days[-1]) - dt.date.fromisoformat(days[0])).days + 1
    if weekly_asset is action_memory:  # its decision points are the same days as its rendered rows
        assert window_days(weekly_asset, week, LATER, "decision_points") == days


def test_the_first_weeks_window_stops_at_the_first_partition() -> None:
    first_week = weekly_partitions.get_first_partition_key()
    assert first_week is not None
    days = window_days(lora_adapter, first_week, LATER)
    assert days[0] == daily_partitions.get_first_partition_key()
    assert days[-1] == (dt.date.fromisoformat(first_week) + dt.timedelta(days=6)).isoformat()
