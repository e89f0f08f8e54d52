"""The daily stages after ingestion, materialized for real on a sample-corpus day and read back."""

import datetime as dt
import json
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import dagster as dg
import pandas as pd
import pytest

from assets.decision_points import decision_points
from assets.mined_trajectories import mined_trajectories
from assets.raw_sessions import raw_sessions
from assets.rendered_splits import rendered_splits
from resources.parquet_io_manager import ParquetIOManager
from resources.session_sources import SessionSources
from trajectory_pipeline.ingest.formats import FORMATS
from trajectory_pipeline.mining.attempts import mine_trajectories
from trajectory_pipeline.sample.corpus import SOURCE_FOLDERS, CorpusSpec, generate_corpus

SPEC = CorpusSpec(days=2, end_date=dt.date(2026, 11, 22), sessions_per_day=4, seed=2)
DAY = "2026-11-22"
ASSETS = [raw_sessions, mined_trajectories, decision_points, rendered_splits]


@pytest.fixture(scope="module")
def materialized(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dg.ExecuteInProcessResult]:
    corpus = tmp_path_factory.mktemp("corpus")
    generate_corpus(corpus, SPEC)
    warehouse = tmp_path_factory.mktemp("warehouse")
    roots = {f"{source}_root": str(corpus / sub) for source, sub in SOURCE_FOLDERS.items()}
    off = {f"{source}_root": "" for source in FORMATS if source not in SOURCE_FOLDERS}
    resources = {
        "io_manager": ParquetIOManager(base_dir=str(warehouse)),
        "session_sources": SessionSources(**roots, **off),
    }
    result = dg.materialize(ASSETS, partition_key=DAY, resources=resources)
    return warehouse, result


@pytest.fixture
def warehouse(materialized: tuple[Path, dg.ExecuteInProcessResult], tmp_path: Path) -> Path:
    """A private copy of the materialized warehouse, for tests that materialize again."""
    copy = tmp_path / "warehouse"
    shutil.copytree(materialized[0], copy)
    return copy


def rerun(
    warehouse: Path, asset: str, run_config: dict[str, Any], raise_on_error: bool = True
) -> dg.ExecuteInProcessResult:
    """Materialize one asset of DAY again, from the stored upstream partitions, with `run_config`."""
    off = SessionSources(**{f"{source}_root": "" for source in FORMATS})
    return dg.materialize(
        ASSETS,
        selection=[asset],
        partition_key=DAY,
        resources={"io_manager": ParquetIOManager(base_dir=str(warehouse)), "session_sources": off},
        run_config=run_config,
        raise_on_error=raise_on_error,
    )


def test_mined_trajectories_are_the_core_mining_of_the_stored_day(
    materialized: tuple[Path, dg.ExecuteInProcessResult],
) -> None:
    warehouse, result = materialized
    assert result.success
    attempts = pd.read_parquet(warehouse / "mined_trajectories" / f"{DAY}.parquet")
    events = pd.read_parquet(warehouse / "raw_sessions" / f"{DAY}.parquet")
    expected = mine_trajectories(events)
    assert attempts["attempt_id"].tolist() == expected["attempt_id"].tolist()
    assert Counter(attempts["tier"]) == {"gold": 11, "bronze": 6, "silver": 1, "reject": 2}
    # The generator plants one kind of task per session; its fixes whose tests pass are gold.
    gold = attempts[attempts["tier"] == "gold"]
    assert gold["verified_after_last_edit"].all() and (gold["edits"] > 0).all()
    metadata = result.asset_materializations_for_node("mined_trajectories")[0].metadata
    assert metadata["attempts"].value == len(attempts)
    assert metadata["families"].value == attempts["family_id"].nunique()


def test_decision_points_come_from_kept_attempts_only(
    materialized: tuple[Path, dg.ExecuteInProcessResult],
) -> None:
    warehouse, _ = materialized
    attempts = pd.read_parquet(warehouse / "mined_trajectories" / f"{DAY}.parquet")
    decisions = pd.read_parquet(warehouse / "decision_points" / f"{DAY}.parquet")
    kept = attempts[attempts["tier"].isin(["gold", "silver"])]
    assert len(decisions) == 86
    assert set(decisions["attempt_id"]) <= set(kept["attempt_id"])
    assert decisions["decision_id"].is_unique
    assert not decisions["target_guard_denied"].any()
    assert (decisions["missing_required"].map(len) == 0).all()


def test_the_audits_run_with_the_assets_and_pass_on_the_sample(
    materialized: tuple[Path, dg.ExecuteInProcessResult],
) -> None:
    _, result = materialized
    checks = {evaluation.check_name: evaluation.passed for evaluation in result.get_asset_check_evaluations()}
    assert checks == {
        "kept_attempts": True,
        "guard_recoveries": True,
        "no_repeated_inspection_after_guard": True,
        "enough_decision_points": True,
        "targets_have_required_arguments": True,
        "no_leakage": True,
        "rows_kept": True,
    }


def test_rendered_splits_keep_each_session_in_one_split(
    materialized: tuple[Path, dg.ExecuteInProcessResult],
) -> None:
    warehouse, result = materialized
    rows = pd.read_parquet(warehouse / "rendered_splits" / f"{DAY}.parquet")
    decisions = pd.read_parquet(warehouse / "decision_points" / f"{DAY}.parquet")
    assert 0 < len(rows) <= len(decisions)
    assert set(rows["decision_id"]) <= set(decisions["decision_id"])
    assert (rows.groupby("session_id")["split"].nunique() == 1).all()
    assert set(rows["split"]) <= {"train", "valid", "test"}
    record = json.loads(rows["record"].iloc[0])
    assert record["messages"][-1]["role"] == "assistant" and record["messages"][-1]["tool_calls"]
    metadata = result.asset_materializations_for_node("rendered_splits")[0].metadata
    assert metadata["rows"].value == len(rows)


def test_a_holdout_session_never_reaches_train_or_valid(warehouse: Path, tmp_path: Path) -> None:
    rows = pd.read_parquet(warehouse / "rendered_splits" / f"{DAY}.parquet")
    held = rows[rows["split"] == "train"]["session_id"].iloc[0]
    holdout = tmp_path / "holdout.txt"
    holdout.write_text(f"# sessions we evaluate on\n{held}\n")
    config = {"ops": {"rendered_splits": {"config": {"holdout_path": str(holdout)}}}}
    assert rerun(warehouse, "rendered_splits", config).success
    again = pd.read_parquet(warehouse / "rendered_splits" / f"{DAY}.parquet")
    assert set(again[again["session_id"] == held]["split"]) == {"test"}


def test_a_failing_audit_names_the_numbers() -> None:
    from assets.mined_trajectories import MinedTrajectoriesConfig, audits

    attempts = pd.DataFrame(
        {
            "attempt_id": ["a", "b"],
            "tier": ["gold", "reject"],
            "guard_denials": [1, 0],
            "guard_recoveries": [0, 0],
            "repeated_inspections_after_guard": [1, 0],
        }
    )
    results = {r.check_name: r for r in audits(attempts, MinedTrajectoriesConfig(min_kept_attempts=2))}
    assert not results["guard_recoveries"].passed  # a denial, and nothing recovered from it
    assert not results["kept_attempts"].passed
    assert results["kept_attempts"].metadata["kept"].value == 1
    assert results["kept_attempts"].metadata["minimum"].value == 2
    assert not results["no_repeated_inspection_after_guard"].passed
    assert results["no_repeated_inspection_after_guard"].metadata["attempt_ids"].value == ["a"]


def test_failing_decision_audits_name_the_numbers() -> None:
    from collections import Counter

    from assets.decision_points import DecisionPointsConfig, audits

    aside = Counter({"missing_required_arguments": 3})
    results = {r.check_name: r for r in audits(0, 10, aside, 2, DecisionPointsConfig())}
    assert not results["enough_decision_points"].passed
    assert results["enough_decision_points"].metadata["kept_attempts"].value == 2
    assert not results["targets_have_required_arguments"].passed
    assert results["targets_have_required_arguments"].metadata["share"].value == 0.3


def test_a_bad_decision_config_is_a_clear_failure(warehouse: Path) -> None:
    config = {"ops": {"decision_points": {"config": {"included_tiers": ["platinum"]}}}}
    result = rerun(warehouse, "decision_points", config, raise_on_error=False)
    failure = result.failure_data_for_node("decision_points")
    assert failure is not None and "included_tiers" in failure.error.message
    assert "platinum" in failure.error.message


def test_rendered_splits_can_write_the_mlx_data_directory(warehouse: Path, tmp_path: Path) -> None:
    from trajectory_pipeline.dataset.mlx_data import read_manifest

    data_dir = tmp_path / "mlx"
    settings = {
        "mlx_data_dir": str(data_dir),
        "batch_size": 2,
        "pad_small_splits": True,
        "seed": 3,
        "train_ratio": 0.5,
        "valid_ratio": 0.25,
        "test_ratio": 0.25,
    }
    result = rerun(warehouse, "rendered_splits", {"ops": {"rendered_splits": {"config": settings}}})
    manifest = read_manifest(data_dir)  # also re-checks every file's sha256
    rows = pd.read_parquet(warehouse / "rendered_splits" / f"{DAY}.parquet")
    assert manifest.counts["train"] == (rows["split"] == "train").sum()
    assert list(manifest.partitions) == [DAY] and manifest.config["seed"] == 3
    metadata = result.asset_materializations_for_node("rendered_splits")[0].metadata
    assert metadata["dataset_hash"].value == manifest.dataset_hash
