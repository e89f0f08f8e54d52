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
    verdicts = audits([(DAY, 2, attempts)], MinedTrajectoriesConfig(min_kept_attempts=2))
    results = {check: found for check, (found,) in verdicts.items()}
    assert not results["kept_attempts"].passed
    assert results["kept_attempts"].metadata["kept"] == 1
    assert results["kept_attempts"].metadata["minimum"] == 2
    assert not results["no_repeated_inspection_after_guard"].passed
    assert results["no_repeated_inspection_after_guard"].metadata["attempt_ids"].value == ["a"]
    assert results["no_repeated_inspection_after_guard"].description == (
        f"{DAY}: 1 kept attempts repeat an inspection after a guard denial (e.g. a)"
    )


def test_guard_recoveries_is_judged_over_the_run() -> None:
    """A day may have denials and no recovery; the warning asks whether the run holds any."""
    from assets.mined_trajectories import MinedTrajectoriesConfig, guard_counts, guard_recoveries

    attempts = pd.DataFrame({"guard_denials": [2, 0, 1], "guard_recoveries": [0, 1, 0]})
    assert guard_counts(attempts) == (3, 1)
    config = MinedTrajectoriesConfig()
    result = guard_recoveries({"2026-11-20": (2, 0), "2026-11-21": (1, 1)}, config)
    assert result.passed and result.severity == dg.AssetCheckSeverity.WARN
    assert result.metadata["by_day"].value["2026-11-20"] == {"denials": 2, "recoveries": 0}
    assert not guard_recoveries({"2026-11-20": (2, 0)}, config).passed  # a denial, no recovery
    assert guard_recoveries({"2026-11-20": (0, 0)}, config).passed  # nothing to recover from


def test_kept_attempts_fails_a_day_with_sessions_but_no_attempt_and_passes_a_day_without_sessions() -> None:
    from assets.mined_trajectories import AUDITED_COLUMNS, MinedTrajectoriesConfig, audits

    none = pd.DataFrame({name: pd.Series(dtype=object) for name in AUDITED_COLUMNS})
    verdicts = audits([("2026-11-20", 3, none), ("2026-11-21", 0, none)], MinedTrajectoriesConfig())
    busy, quiet = verdicts["kept_attempts"]
    assert (busy.day, busy.passed) == ("2026-11-20", False)
    assert busy.description == "2026-11-20: 0 gold + silver attempts of 0 from 3 sessions, fewer than 1"
    assert (quiet.day, quiet.passed) == ("2026-11-21", True)


def day_points(key: str, extracted: int, aside: dict[tuple[str, str], list[str]], rows: int = 0) -> Any:
    from collections import Counter

    from trajectory_pipeline.day_stages import DayPoints
    from trajectory_pipeline.decisions.points import SET_ASIDE_REASONS

    counts = Counter({group: len(ids) for group, ids in aside.items()})
    by_reason = Counter[str]()
    for (reason, _), count in counts.items():
        by_reason[reason] += count
    return DayPoints(
        key=key,
        path=Path("unused"),
        rows=rows,
        extracted=extracted,
        set_aside={reason: by_reason[reason] for reason in SET_ASIDE_REASONS},
        set_aside_by_tool=dict(counts),
        set_aside_examples={group: tuple(sorted(ids)[:3]) for group, ids in aside.items()},
        included_attempts=2,
        by_tool={},
        by_action_class={},
        decisive=0,
        after_guard=0,
        history_dropped=0,
        preview=pd.DataFrame(),
    )


def test_failing_decision_audits_name_the_day_tool_count_and_examples() -> None:
    from assets.decision_points import DecisionPointsConfig, audits

    bad = day_points(
        "2026-11-14",
        78,
        {
            ("missing_required_arguments", "run_shell"): [f"d{n:02}" for n in range(38)],
            ("unparseable_arguments", "mcp__search"): ["u1", "u2"],
        },
    )
    clean = day_points("2026-11-15", 50, {("missing_required_arguments", "read_file"): ["r1"]}, rows=49)
    verdicts = audits([bad, clean], DecisionPointsConfig())
    enough_bad, enough_clean = verdicts["enough_decision_points"]
    assert not enough_bad.passed and enough_bad.metadata["kept_attempts"] == 2
    assert enough_clean.passed
    bad_args, clean_args = verdicts["targets_have_required_arguments"]
    # Judged per day: 40 of 78 (51 %) on the bad day; 1 of 50 (2 %) on the clean one passes.
    assert not bad_args.passed and bad_args.metadata["share"] == 0.5128
    assert bad_args.metadata["unparseable_arguments"] == 2
    assert bad_args.description == (
        "2026-11-14: 40 of 78 targets (51%) lack usable arguments, more than the 5% allowed: "
        "run_shell: 38 missing_required_arguments (e.g. d00, d01, d02); "
        "mcp__search: 2 unparseable_arguments (e.g. u1, u2)"
    )
    assert clean_args.passed and clean_args.metadata["share"] == 0.02


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


def test_a_day_without_sessions_logs_one_line_per_stage(tmp_path: Path) -> None:
    """raw_sessions always said what a day held; mining and cutting said nothing on an empty day."""
    off = SessionSources(**{f"{source}_root": "" for source in FORMATS})
    instance = dg.DagsterInstance.ephemeral()
    result = dg.materialize(
        ASSETS,
        partition_key="2026-11-19",
        instance=instance,
        resources={"io_manager": ParquetIOManager(base_dir=str(tmp_path)), "session_sources": off},
    )
    assert result.success
    lines = [entry.user_message for entry in instance.all_logs(result.run_id) if entry.user_message]
    assert "2026-11-19: 0 attempts from 0 sessions, 0 kept (gold + silver)" in lines
    assert "2026-11-19: 0 decision points from 0 kept attempts; 0 set aside" in lines
    checks = {(e.check_name, e.partition): e.passed for e in result.get_asset_check_evaluations()}
    assert checks[("kept_attempts", "2026-11-19")] and checks[("enough_decision_points", "2026-11-19")]
