"""The IO manager is how every stage reads and writes: partitions, ranges, and types must round-trip."""

import stat
from pathlib import Path

import dagster as dg
import pandas as pd
import pyarrow as pa
import pyarrow.dataset as pads
import pytest

from resources.parquet_io_manager import ParquetIOManager

days = dg.DailyPartitionsDefinition(start_date="2026-11-01", end_date="2026-11-05")
RANGE_TAGS = {
    "dagster/asset_partition_range_start": "2026-11-01",
    "dagster/asset_partition_range_end": "2026-11-03",
}


@dg.asset(partitions_def=days, backfill_policy=dg.BackfillPolicy.single_run())
def daily_numbers(context: dg.AssetExecutionContext) -> object:
    frames = {key: pd.DataFrame({"day": [key] * 2, "n": [1, 2]}) for key in context.partition_keys}
    return frames if len(frames) > 1 else next(iter(frames.values()))


@dg.asset(ins={"daily_numbers": dg.AssetIn(partition_mapping=dg.AllPartitionMapping())})
def as_dict(daily_numbers: dict[str, pd.DataFrame]) -> pd.DataFrame:
    return pd.DataFrame(
        {"day": sorted(daily_numbers), "rows": [len(daily_numbers[k]) for k in sorted(daily_numbers)]}
    )


@dg.asset(ins={"daily_numbers": dg.AssetIn(partition_mapping=dg.AllPartitionMapping())})
def as_frame(daily_numbers: pd.DataFrame) -> pa.Table:
    return pa.table({"total": [int(daily_numbers["n"].sum())]})


@dg.asset(ins={"daily_numbers": dg.AssetIn(partition_mapping=dg.AllPartitionMapping())})
def as_dataset(daily_numbers: pads.Dataset) -> pd.DataFrame:
    return pd.DataFrame({"rows": [daily_numbers.count_rows()]})


@dg.asset(ins={"daily_numbers": dg.AssetIn(partition_mapping=dg.AllPartitionMapping())})
def as_dataset_dict(daily_numbers: dict[str, pads.Dataset]) -> pd.DataFrame:
    return pd.DataFrame(
        {"day": sorted(daily_numbers), "rows": [daily_numbers[k].count_rows() for k in sorted(daily_numbers)]}
    )


@dg.asset(ins={"daily_numbers": dg.AssetIn(partition_mapping=dg.AllPartitionMapping())})
def as_paths(daily_numbers: dict[str, Path]) -> pd.DataFrame:
    """The stored files themselves, for a step that hands them to worker processes."""
    return pd.DataFrame(
        {"day": sorted(daily_numbers), "path": [str(daily_numbers[k]) for k in sorted(daily_numbers)]}
    )


@pytest.fixture
def io_manager(tmp_path: Path) -> ParquetIOManager:
    return ParquetIOManager(base_dir=str(tmp_path / "warehouse"))


def test_one_partition_is_one_private_file_with_metadata(io_manager: ParquetIOManager) -> None:
    result = dg.materialize([daily_numbers], partition_key="2026-11-02", resources={"io_manager": io_manager})
    path = Path(io_manager.base_dir) / "daily_numbers" / "2026-11-02.parquet"
    assert pd.read_parquet(path)["n"].tolist() == [1, 2]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    metadata = result.asset_materializations_for_node("daily_numbers")[0].metadata
    assert metadata["row_count"].value == 2
    assert metadata["path"].value == str(path)
    assert metadata["size_bytes"].value == path.stat().st_size


def test_a_single_run_over_a_range_writes_every_partition(io_manager: ParquetIOManager) -> None:
    # Dagster's stock UPathIOManager refuses this (one output covering several partitions).
    result = dg.materialize([daily_numbers], tags=RANGE_TAGS, resources={"io_manager": io_manager})
    folder = Path(io_manager.base_dir) / "daily_numbers"
    written = sorted(p.name for p in folder.iterdir())
    assert written == ["2026-11-01.parquet", "2026-11-02.parquet", "2026-11-03.parquet"]
    # Each partition's materialization describes its own file, not the run's total.
    for event in result.asset_materializations_for_node("daily_numbers"):
        assert event.metadata["row_count"].value == 2
        assert event.metadata["path"].value == str(folder / f"{event.partition}.parquet")


def test_downstream_chooses_dict_frame_or_dataset(io_manager: ParquetIOManager) -> None:
    for key in ("2026-11-01", "2026-11-02", "2026-11-03", "2026-11-04"):
        dg.materialize([daily_numbers], partition_key=key, resources={"io_manager": io_manager})
    result = dg.materialize(
        [daily_numbers.to_source_asset(), as_dict, as_frame, as_dataset, as_dataset_dict, as_paths],
        resources={"io_manager": io_manager},
    )
    assert result.success
    base = Path(io_manager.base_dir)
    assert pd.read_parquet(base / "as_dict.parquet")["rows"].tolist() == [2, 2, 2, 2]
    assert pd.read_parquet(base / "as_frame.parquet")["total"].tolist() == [12]
    assert pd.read_parquet(base / "as_dataset.parquet")["rows"].tolist() == [8]
    assert pd.read_parquet(base / "as_dataset_dict.parquet")["rows"].tolist() == [2, 2, 2, 2]
    paths = pd.read_parquet(base / "as_paths.parquet")
    assert paths["path"].tolist() == [str(base / "daily_numbers" / f"{day}.parquet") for day in paths["day"]]
    assert len(paths) == 4


def test_missing_upstream_partition_says_what_to_materialize(io_manager: ParquetIOManager) -> None:
    dg.materialize([daily_numbers], partition_key="2026-11-01", resources={"io_manager": io_manager})
    with pytest.raises(dg.Failure, match=r"no stored data for partition\(s\) 2026-11-02.*Materialize"):
        dg.materialize([daily_numbers.to_source_asset(), as_frame], resources={"io_manager": io_manager})
