"""action_memory materialized for real over a small sample window: only training sessions reach it, its
SQL copy answers a query in the registry's database, and a rerun stores the same rows."""

from pathlib import Path

import dagster as dg
import orjson
import pandas as pd
import pytest

from assets.action_memory import action_memory
from assets.decision_points import decision_points
from assets.rendered_splits import rendered_splits
from tests.assets.sample_window import WEEK, ingest_sample_window, weekly_resources
from trajectory_pipeline.evaluation.memory import remembered_calls

pytestmark = [pytest.mark.action_memory, pytest.mark.slow]


def _materialize(root: Path) -> dg.ExecuteInProcessResult:
    resources = weekly_resources(root)
    return dg.materialize(
        [decision_points.to_source_asset(), rendered_splits.to_source_asset(), action_memory],
        partition_key=WEEK,
        resources={key: resources[key] for key in ("io_manager", "adapter_registry")},
    )


def _window(warehouse: Path, asset: str) -> pd.DataFrame:
    return pd.concat(pd.read_parquet(path) for path in sorted((warehouse / asset).glob("*.parquet")))


def test_action_memory_holds_training_sessions_only_and_is_queryable(tmp_path: Path) -> None:
    ingest_sample_window(tmp_path, sessions_per_day=6, seed=11)
    result = _materialize(tmp_path)
    assert result.success
    warehouse = tmp_path / "warehouse"
    memory = pd.read_parquet(warehouse / "action_memory" / f"{WEEK}.parquet")
    assert len(memory) > 0
    decisions = _window(warehouse, "decision_points")
    rendered = _window(warehouse, "rendered_splits")
    held_out = set(rendered.loc[rendered["split"] != "train", "session_id"])
    assert held_out, "the sample window should hold test sessions"
    # Every remembered call was made in a training session; none is only a held-out session's.
    train_calls = decisions[~decisions["session_id"].isin(held_out)]
    assert memory["calls"].sum() <= len(train_calls)
    assert set(memory["repo"]) <= set(train_calls["repo"].dropna())
    metadata = result.asset_materializations_for_node("action_memory")[0].metadata
    assert metadata["decisions_held_out"].value == int(decisions["session_id"].isin(held_out).sum())

    url = f"sqlite:///{tmp_path / 'adapters.sqlite'}"
    repo = memory.sort_values(["calls", "repo"], ascending=[False, True]).iloc[0]["repo"]
    served = remembered_calls(url, repo)
    assert (
        served
        and served[0]["calls"]
        == memory[memory["repo"] == repo].groupby(["tool", "arguments"])["calls"].sum().max()
    )
    assert all(isinstance(call["arguments"], dict) for call in served)
    assert orjson.dumps(served[0]["arguments"])  # what a server hands on as JSON

    again = _materialize(tmp_path)
    assert again.success
    assert pd.read_parquet(warehouse / "action_memory" / f"{WEEK}.parquet").equals(memory)
    assert remembered_calls(url, repo) == served  # the week's rows replaced, not doubled
