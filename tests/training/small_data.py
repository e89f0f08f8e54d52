"""The small training data the training tests share: records of a few dozen tokens, a data
directory of them, and trainer settings that run in seconds on a CPU."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pandas as pd

from tests.conftest import TOOL_SPECS, TOOLS
from trajectory_pipeline.dataset.mlx_data import write_mlx_dataset
from trajectory_pipeline.training.trainer import TrainConfig

# Small enough for seconds on a CPU, long enough to see losses move and several evaluations.
FAST = TrainConfig(
    num_layers=-1,
    rank=4,
    iters=12,
    batch_size=4,
    learning_rate=1e-3,
    steps_per_report=2,
    steps_per_eval=4,
    val_batches=-1,
    save_every=6,
    max_seq_length=512,
)


def short_record(n: int) -> str:
    tool = TOOLS[n % len(TOOLS)]
    arguments = json.dumps({"path": f"src/module_{n % 5}.py"})
    call = {"id": f"call_{n}", "type": "function", "function": {"name": tool, "arguments": arguments}}
    record = {
        "messages": [
            {"role": "system", "content": "You are a coding agent."},
            {"role": "user", "content": f"Task {n}: look at src/module_{n % 5}.py and fix the failing test."},
            {"role": "assistant", "content": "", "tool_calls": [call]},
        ],
        "tools": TOOL_SPECS,
    }
    return json.dumps(record, sort_keys=True, separators=(",", ":"))


def write_data(out_dir: Path, sizes: tuple[int, int, int], batch_size: int = 4) -> Path:
    rows = []
    n = 0
    for split, size in zip(("train", "valid", "test"), sizes, strict=True):
        for _ in range(size):
            rows.append(
                {
                    "decision_id": hashlib.sha256(f"d{n}".encode()).hexdigest()[:16],
                    "split": split,
                    "record": short_record(n),
                    "target_name": TOOLS[n % len(TOOLS)],
                }
            )
            n += 1
    write_mlx_dataset(pd.DataFrame(rows), out_dir, batch_size=batch_size)
    return out_dir
