"""One bad day never blocks the good ones: a ten-day range run whose one day has targets without
their arguments renders the nine clean days, leaves that day out, and fails naming it.

The fault is planted the way a parser bug or a transcript published with its arguments stripped
would leave it: every second tool call of the bad day keeps its name but loses its arguments.
"""

import datetime as dt
import json
from pathlib import Path

import dagster as dg
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from assets.decision_points import decision_points
from assets.mined_trajectories import mined_trajectories
from assets.raw_sessions import raw_sessions
from assets.rendered_splits import rendered_splits
from resources.parquet_io_manager import ParquetIOManager
from resources.session_sources import SessionSources
from trajectory_pipeline.decisions.points import extract_decision_points, learnable
from trajectory_pipeline.ingest.formats import FORMATS
from trajectory_pipeline.mining.attempts import mine_trajectories
from trajectory_pipeline.sample.corpus import SOURCE_FOLDERS, CorpusSpec, generate_corpus

END = dt.date(2026, 11, 22)
DAYS = [(END - dt.timedelta(days=n)).isoformat() for n in range(9, -1, -1)]
BAD = DAYS[4]
ASSETS = [raw_sessions, mined_trajectories, decision_points, rendered_splits]
RANGE = {"dagster/asset_partition_range_start": DAYS[0], "dagster/asset_partition_range_end": DAYS[-1]}


def strip_every_second_call(path: Path) -> None:
    """Every second tool call of the file's day keeps its name and loses its arguments."""
    table = pq.read_table(path)
    calls = pc.equal(table.column("kind"), "tool_call").to_pylist()
    seen = 0
    inputs = table.column("tool_input").to_pylist()
    for index, is_call in enumerate(calls):
        if is_call:
            if seen % 2 == 0:
                inputs[index] = "{}"
            seen += 1
    position = table.schema.get_field_index("tool_input")
    table = table.set_column(
        position, table.schema.field(position), pa.array(inputs, table.schema.field(position).type)
    )
    pq.write_table(table, path)


@pytest.fixture(scope="module")
def ranged(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, dg.DagsterInstance, dg.ExecuteInProcessResult]:
    root = tmp_path_factory.mktemp("days")
    generate_corpus(root / "corpus", CorpusSpec(days=10, end_date=END, sessions_per_day=3, seed=11))
    roots = {f"{source}_root": str(root / "corpus" / sub) for source, sub in SOURCE_FOLDERS.items()}
    off = {f"{source}_root": "" for source in FORMATS if source not in SOURCE_FOLDERS}
    resources = {
        "io_manager": ParquetIOManager(base_dir=str(root / "warehouse")),
        "session_sources": SessionSources(**roots, **off),
    }
    instance = dg.DagsterInstance.ephemeral()
    ingested = dg.materialize(
        ASSETS, selection=[raw_sessions], tags=RANGE, instance=instance, resources=resources
    )
    assert ingested.success
    strip_every_second_call(root / "warehouse" / "raw_sessions" / f"{BAD}.parquet")
    result = dg.materialize(
        ASSETS,
        selection=[mined_trajectories, decision_points, rendered_splits],
        tags=RANGE,
        instance=instance,
        resources=resources,
        raise_on_error=False,
    )
    return root, instance, result


def test_the_clean_days_are_rendered_and_the_bad_day_is_not(
    ranged: tuple[Path, dg.DagsterInstance, dg.ExecuteInProcessResult],
) -> None:
    root, instance, result = ranged
    assert not result.success
    # decision_points is written for every day, as a failing check leaves its own asset.
    assert instance.get_materialized_partitions(dg.AssetKey("decision_points")) == set(DAYS)
    clean = set(DAYS) - {BAD}
    assert instance.get_materialized_partitions(dg.AssetKey("rendered_splits")) == clean
    stored = {path.stem for path in (root / "warehouse" / "rendered_splits").glob("*.parquet")}
    assert stored == clean
    status = instance.get_status_by_partition(
        dg.AssetKey("rendered_splits"),
        DAYS,
        rendered_splits.partitions_def,  # type: ignore[arg-type]
    )
    assert status is not None and status[BAD] == dg.AssetPartitionStatus.FAILED
    assert {status[day] for day in clean} == {dg.AssetPartitionStatus.MATERIALIZED}
    # The stored days carry their own metadata and row counts.
    day = sorted(clean)[0]
    [record] = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey("rendered_splits"), asset_partitions=[day]), limit=2
    ).records
    event = record.asset_materialization
    assert event is not None and record.run_id == result.run_id
    rows = pd.read_parquet(root / "warehouse" / "rendered_splits" / f"{day}.parquet")
    assert event.metadata["rows"].value == len(rows) == event.metadata["dagster/row_count"].value


def test_each_day_has_its_own_check_result(
    ranged: tuple[Path, dg.DagsterInstance, dg.ExecuteInProcessResult],
) -> None:
    _, _, result = ranged
    evaluations = result.get_asset_check_evaluations()
    by_check: dict[str, dict[str | None, bool]] = {}
    for evaluation in evaluations:
        by_check.setdefault(evaluation.check_name, {})[evaluation.partition] = evaluation.passed
    assert by_check["targets_have_required_arguments"] == {day: day != BAD for day in DAYS}
    assert set(by_check["kept_attempts"]) == set(DAYS)
    assert by_check["guard_recoveries"] == {None: True}  # judged over the run
    # rendered_splits' own checks judge the days it rendered.
    assert set(by_check["no_leakage"]) == set(DAYS) - {BAD}


def test_the_failure_names_the_day_tool_count_examples_and_what_to_do(
    ranged: tuple[Path, dg.DagsterInstance, dg.ExecuteInProcessResult],
) -> None:
    root, _, result = ranged
    failure = result.failure_data_for_node("rendered_splits")
    assert failure is not None
    message = failure.error.message
    # The example ids are the first set-aside decision ids of the worst tool, as the core cuts them.
    events = pd.read_parquet(root / "warehouse" / "raw_sessions" / f"{BAD}.parquet")
    points = extract_decision_points(events, mine_trajectories(events))
    _, set_aside = learnable(points)
    missing = points[(points["missing_required"].map(len) > 0) & ~points["target_guard_denied"]]
    worst = missing["target_name"].value_counts()
    tool, count = worst.index[0], int(worst.iloc[0])
    examples = sorted(missing[missing["target_name"] == tool]["decision_id"])[:3]
    share = set_aside["missing_required_arguments"] / len(points)
    assert share > 0.3
    assert f"{BAD}, decision_points targets_have_required_arguments:" in message
    assert f"{tool}: {count} missing_required_arguments (e.g. {', '.join(examples)})" in message
    assert f"({share:.0%}) lack usable arguments, more than the 5% allowed" in message
    assert "the other 9 day(s) of the run were rendered and stored" in message
    assert f"To render {BAD}:" in message and "max_incomplete_share" in message


def test_a_later_run_honours_the_verdict_until_the_day_passes(
    ranged: tuple[Path, dg.DagsterInstance, dg.ExecuteInProcessResult], tmp_path: Path
) -> None:
    root, instance, _ = ranged
    off = SessionSources(**{f"{source}_root": "" for source in FORMATS})
    resources = {"io_manager": ParquetIOManager(base_dir=str(root / "warehouse")), "session_sources": off}
    alone = dg.materialize(
        ASSETS,
        selection=[rendered_splits],
        partition_key=BAD,
        instance=instance,
        resources=resources,
        raise_on_error=False,
    )
    assert not alone.success and not (root / "warehouse" / "rendered_splits" / f"{BAD}.parquet").exists()
    # The remedy the message gives: accept the day as it is, then render it.
    accepted = {"ops": {"decision_points": {"config": {"max_incomplete_share": 1.0}}}}
    again = dg.materialize(
        ASSETS,
        selection=[decision_points, rendered_splits],
        partition_key=BAD,
        instance=instance,
        resources=resources,
        run_config=accepted,
    )
    assert again.success
    assert (root / "warehouse" / "rendered_splits" / f"{BAD}.parquet").exists()
    assert (
        json.loads(json.dumps(sorted(instance.get_materialized_partitions(dg.AssetKey("rendered_splits")))))
        == DAYS
    )
