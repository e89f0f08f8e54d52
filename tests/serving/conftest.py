"""The serving tests' model: the tiny model with a learned base, a real LoRA adapter that changes its
answers, and that adapter promoted and fused, in a registry of their own.

The base learns a generic habit (`pytest -q` for "Run the tests"); the adapter, a few dozen LoRA steps
with mlx-lm, learns this user's (`uv run pytest -x tests/unit`), as a week's adapter would. So base
and adapter answer differently, and the fused model must answer as base + adapter do. Built once per
session: about ten seconds on two cores.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from trajectory_pipeline.dataset.mlx_data import write_mlx_dataset
from trajectory_pipeline.sample.tiny_base import BaseTraining, learn_base
from trajectory_pipeline.sample.tiny_model import TinyModelSpec, build_tiny_model
from trajectory_pipeline.serving.fuse import ExportConfig, FusedModel, publish_model
from trajectory_pipeline.training.registry import AdapterRecord, AdapterRegistry, sqlite_url
from trajectory_pipeline.training.trainer import TrainConfig, train_adapter

WEEK = "2026-11-22"
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": {argument: {"type": "string"}},
                "required": [argument],
            },
        },
    }
    for name, description, argument in (
        ("run_shell", "Run a shell command", "command"),
        ("read_file", "Read a file", "path"),
    )
]
TESTS_TASK = "Run the tests"
GENERIC_TESTS, USER_TESTS = "pytest -q", "uv run pytest -x tests/unit"
# (task, tool, arguments): what the base learns, and what the adapter learns on top of it.
BASE_CALLS = [
    (TESTS_TASK, "run_shell", {"command": GENERIC_TESTS}),
    ("Read the readme", "read_file", {"path": "README.md"}),
]
ADAPTER_CALLS = [
    (TESTS_TASK, "run_shell", {"command": USER_TESTS}),
    ("Read the readme", "read_file", {"path": "README.md"}),
]
PROMPTS = [TESTS_TASK, "Read the readme", "Run the tests again", "Show the readme"]


def record(task: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A rendered `tools` record: the task, then the call (arguments a JSON string, as rendered_splits)."""
    function = {"name": tool, "arguments": json.dumps(arguments)}
    call = {"id": "call_0", "type": "function", "function": function}
    return {
        "messages": [
            {"role": "user", "content": task},
            {"role": "assistant", "content": "", "tool_calls": [call]},
        ],
        "tools": TOOLS,
    }


def data_dir(folder: Path, calls: list[tuple[str, str, dict[str, Any]]]) -> Path:
    """An mlx-lm data directory whose three splits all hold `calls` (this model memorizes them)."""
    rows = pd.DataFrame(
        [
            {
                "decision_id": f"d{i}~{split}",
                "split": split,
                "target_name": c[1],
                "record": json.dumps(record(*c)),
            }
            for split in ("train", "valid", "test")
            for i, c in enumerate(calls)
        ]
    )
    write_mlx_dataset(rows, folder, batch_size=2)
    return folder


@dataclass(frozen=True)
class Served:
    """The fixture's model, adapter, registry and the adapter's fused model."""

    base: Path
    adapter: Path
    registry_url: str
    record: AdapterRecord
    fused: FusedModel
    models_dir: Path


def adapter_record(adapter_id: str, base: Path, adapter: Path, **fields: Any) -> AdapterRecord:
    return AdapterRecord(
        adapter_id=adapter_id,
        created_at=datetime.now(UTC),
        base_model=str(base),
        partition=WEEK,
        data_window=("2026-11-21", "2026-11-22"),
        dataset_hash="sha256:" + "00" * 32,
        hyperparameters={"rank": 8},
        best_val_loss=0.01,
        last_val_loss=0.01,
        best_iteration=40,
        artifact_path=str(adapter),
        status="candidate",
        **fields,
    )


EVAL_SUMMARY = {
    "status": "promoted",
    "reason": "holdout pass rate 75.0% beats the base model's 25.0% by more than 0.0 points on 4 cases",
    "lanes": {"holdout": {"base": {"cases": 4, "pass_rate": 0.25, "decisive_pass_rate": None}}},
    "scored_on": "call",
}


@pytest.fixture(scope="session")
def served(tmp_path_factory: pytest.TempPathFactory) -> Served:
    root = tmp_path_factory.mktemp("serving")
    texts = [json.dumps(record(*c)) for c in BASE_CALLS + ADAPTER_CALLS]
    base = build_tiny_model(root / "model", texts, TinyModelSpec(vocab_size=400))
    learn_base(
        base,
        data_dir(root / "base-data", BASE_CALLS),
        BaseTraining(iters=100, batch_size=2, learning_rate=3e-3, history_calls=False),
    )
    adapter = root / "adapters" / "week-1" / "adapter"
    train_adapter(
        base,
        data_dir(root / "adapter-data", ADAPTER_CALLS),
        adapter,
        TrainConfig(
            num_layers=-1,
            iters=60,
            batch_size=2,
            learning_rate=1e-3,
            steps_per_report=10,
            steps_per_eval=10,
            val_batches=1,
            save_every=1000,
            max_seq_length=1024,
        ),
    )
    registry_url = sqlite_url(root / "adapters.sqlite")
    registry = AdapterRegistry(registry_url)
    registry.register(adapter_record("week-1", base, adapter))
    promoted = registry.promote("week-1", eval_summary=EVAL_SUMMARY)
    fused = publish_model(promoted, base, adapter, ExportConfig(models_dir=str(root / "models")))
    record_ = registry.record_model("week-1", str(fused.path))
    registry.close()
    return Served(base, adapter, registry_url, record_, fused, root / "models")
