"""replay_eval materialized for real: the week's adapter and the base model replayed on the tiny model.

One weekly partition of a small sample corpus is trained and evaluated in process through the real
IO manager and a SQLite registry; the results of both models are read back, the decision reaches
the registry, the check and the report; a second adapter is then evaluated against the promoted one.
"""

import os
import stat
from pathlib import Path
from typing import Any

import dagster as dg
import pandas as pd
import pytest

from resources.adapter_registry import AdapterRegistryResource
from tests.assets.sample_window import WEEK, ingest_sample_window, train_and_evaluate

EVAL = {"holdout_cases": 6, "seen_exact_cases": 3, "seen_variant_cases": 3, "max_tokens": 48, "min_cases": 1}


def _train_and_evaluate(
    root: Path, instance: dg.DagsterInstance, **eval_config: Any
) -> dg.ExecuteInProcessResult:
    return train_and_evaluate(root, {**EVAL, **eval_config}, instance)


@pytest.fixture(scope="module")
def evaluated(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, dg.ExecuteInProcessResult, dg.DagsterInstance]:
    root = tmp_path_factory.mktemp("replay")
    ingest_sample_window(root, sessions_per_day=6, seed=11)
    instance = dg.DagsterInstance.ephemeral()
    umask = os.umask(0o022)  # the usual one: files 0644, folders 0755 unless the code says otherwise
    try:
        return root, _train_and_evaluate(root, instance, min_cases=1000), instance
    finally:
        os.umask(umask)


@pytest.mark.slow
def test_both_models_answer_every_case_and_differ(
    evaluated: tuple[Path, dg.ExecuteInProcessResult, dg.DagsterInstance],
) -> None:
    root, result, _ = evaluated
    assert result.success
    stored = pd.read_parquet(root / "warehouse" / "replay_eval" / f"{WEEK}.parquet")
    # Every answer scored as given and through the action memory, side by side.
    assert set(stored["selector"]) == {"none", "memory"}
    results = stored[stored["selector"] == "none"]
    memory = stored[stored["selector"] == "memory"]
    assert list(memory["raw_text"]) == list(results["raw_text"])
    assert set(results["model"]) == {"base", "candidate"}
    base = results[results["model"] == "base"].set_index(["lane", "decision_id"])
    candidate = results[results["model"] == "candidate"].set_index(["lane", "decision_id"])
    assert base.index.equals(candidate.index) and "holdout" in set(results["lane"])
    # The adapter changed the model: its answers are not the base model's.
    assert (base["raw_text"] != candidate["raw_text"]).any()
    assert candidate["adapter_id"].notna().all() and base["adapter_id"].isna().all()


@pytest.mark.slow
def test_the_decision_reaches_the_registry_the_check_and_the_report(
    evaluated: tuple[Path, dg.ExecuteInProcessResult, dg.DagsterInstance],
) -> None:
    root, result, _ = evaluated
    manifest = pd.read_parquet(root / "warehouse" / "lora_adapter" / f"{WEEK}.parquet").iloc[0]
    record = (
        AdapterRegistryResource(url=f"sqlite:///{root / 'adapters.sqlite'}")
        .registry()
        .get(manifest["adapter_id"])
    )
    # min_cases above the lane's size: never promoted, and the reason says why.
    assert record.status == "rejected" and record.eval_summary is not None
    assert record.eval_summary["reason"].startswith("too few holdout cases")
    [check] = result.get_asset_check_evaluations()
    assert check.check_name == "adapter_promoted" and not check.passed
    metadata = result.asset_materializations_for_node("replay_eval")[0].metadata
    assert metadata["decision"].value == "rejected" and "holdout_pass_rate_base" in metadata
    assert "holdout_memory_pass_rate_candidate" in metadata and "memory" in metadata
    report = Path(metadata["report_path"].value)
    assert "# Replay eval: candidate rejected" in report.read_text()
    assert "## Action memory" in report.read_text()
    assert (report.parent / "pass_rate.png").stat().st_mode & 0o777 == 0o600


@pytest.mark.slow
def test_every_artifact_is_private(
    evaluated: tuple[Path, dg.ExecuteInProcessResult, dg.DagsterInstance],
) -> None:
    """Weights and the model card were 0644 in a 0755 folder: mlx-lm and matplotlib write with the
    umask's modes. Every file under the artifacts folder is 0600, every folder 0700."""
    root, _, _ = evaluated
    artifacts = root / "artifacts"
    files = [path for path in artifacts.rglob("*") if path.is_file()]
    names = {path.name for path in files}
    assert {"adapters.safetensors", "adapter_config.json", "README.md", "report.md", "pass_rate.png"} <= names
    assert {str(p.relative_to(artifacts)): oct(stat.S_IMODE(p.stat().st_mode)) for p in files} == {
        str(p.relative_to(artifacts)): "0o600" for p in files
    }
    folders = [artifacts, *(path for path in artifacts.rglob("*") if path.is_dir())]
    assert {str(p): oct(stat.S_IMODE(p.stat().st_mode)) for p in folders} == {
        str(p): "0o700" for p in folders
    }


@pytest.mark.slow
def test_a_new_adapter_is_compared_with_the_promoted_one(
    evaluated: tuple[Path, dg.ExecuteInProcessResult, dg.DagsterInstance],
) -> None:
    root, _, instance = evaluated
    registry = AdapterRegistryResource(url=f"sqlite:///{root / 'adapters.sqlite'}").registry()
    first = registry.latest()
    assert first is not None
    registry.promote(first.adapter_id)
    second = _train_and_evaluate(root, instance)
    assert second.success
    results = pd.read_parquet(root / "warehouse" / "replay_eval" / f"{WEEK}.parquet")
    assert set(results["model"]) == {"base", "candidate", "promoted"}
    assert set(results.loc[results["model"] == "promoted", "adapter_id"]) == {first.adapter_id}
    status = registry.get(set(results.loc[results["model"] == "candidate", "adapter_id"]).pop()).status
    assert status in ("promoted", "rejected")
