"""action_memory: the calls this person made, per repository, workflow family and tool (weekly).

For a weekly partition it reads the window's `decision_points` and `rendered_splits` (the same days
`lora_adapter` trains on), keeps the decision points of the sessions of the `train` split only (a
held-out session never reaches the memory), and stores one row per remembered call
(`trajectory_pipeline/evaluation/memory.py`): as this asset's Parquet partition, read by
`replay_eval`'s `memory` selector, and in a SQL table (`action_memory`, in the adapter registry's
database by default) that a serving process can query:

    from trajectory_pipeline.evaluation.memory import remembered_calls
    remembered_calls(url, repo="ledger-api", tool="run_shell")

    trajectory-pipeline materialize --select action_memory --partition 2026-11-15
"""

from typing import Any

import dagster as dg
import pandas as pd
from sqlalchemy.engine import make_url

from assets import OWNERS
from assets.metadata import as_table, frame_md
from assets.partitions import WINDOW_WEEKS, rendered_window, weekly_partitions
from resources.adapter_registry import AdapterRegistryResource
from resources.core_config import derive, to_core
from resources.parquet_io_manager import ALLOW_MISSING
from resources.privacy import private_failure, private_metadata
from trajectory_pipeline.evaluation.memory import (
    MEMORY_SCHEMA,
    MemoryStoreConfig,
    build_memory,
    write_memory_sql,
)


class ActionMemoryConfig(derive("ActionMemoryKnobs", MemoryStoreConfig)):  # type: ignore[misc]
    """Where the action memory's SQL copy goes."""

    def store(self) -> MemoryStoreConfig:
        return to_core(MemoryStoreConfig, self)


def decision_window() -> dg.AssetIn:
    """The daily decision_points of the weekly window (days never ingested left out)."""
    return dg.AssetIn(
        key="decision_points",
        partition_mapping=dg.TimeWindowPartitionMapping(
            start_offset=1 - WINDOW_WEEKS, allow_nonexistent_upstream_partitions=True
        ),
        metadata={ALLOW_MISSING: True},
    )


@dg.asset(
    partitions_def=weekly_partitions,
    group_name="training",
    compute_kind="sql",
    ins={"decision_points": decision_window(), "rendered_splits": rendered_window()},
    owners=OWNERS,
    tags={"stage": "evaluation"},
)
def action_memory(
    context: dg.AssetExecutionContext,
    config: ActionMemoryConfig,
    adapter_registry: AdapterRegistryResource,
    decision_points: dict[str, pd.DataFrame],
    rendered_splits: dict[str, pd.DataFrame],
) -> dg.Output[Any]:
    """The remembered calls of the window's training sessions, per repository, family and tool."""
    store = config.store()
    frames = [rendered_splits[day] for day in sorted(rendered_splits)]
    rendered = (
        pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=["session_id", "split"])
    )
    try:
        memory, counts = build_memory(decision_points, rendered)
    except ValueError as err:
        raise private_failure(f"action_memory for week {context.partition_key}: {err}") from None
    url = store.sql_url or adapter_registry.resolved_url()
    written = write_memory_sql(memory, url, context.partition_key, store.sql_table)
    context.log.info(
        f"action memory of week {context.partition_key}: {written} calls of {memory['repo'].nunique()} "
        f"repositories from {counts['remembered']} training decisions ({counts['held_out']} of other "
        "splits left out)"
    )
    top = memory.sort_values(["calls", "repo", "tool", "arguments"], ascending=[False, True, True, True])
    metadata = {
        "calls_remembered": len(memory),
        "repositories": int(memory["repo"].nunique()),
        **{f"decisions_{key}": value for key, value in counts.items()},
        "sql_table": store.sql_table,
        "sql_url": make_url(url).render_as_string(hide_password=True),
        "most_frequent": frame_md(top.head(20)[["repo", "tool", "arguments", "calls", "last_seen"]]),
    }
    return dg.Output(as_table(memory, MEMORY_SCHEMA), metadata=private_metadata(metadata))
