"""What describes a trained adapter: its manifest row, its loss curve, and its model card.

card = model_card(record, manifest, result)   # README.md written beside the adapter
"""

from __future__ import annotations

import math

import pyarrow as pa

from trajectory_pipeline.dataset.mlx_data import DatasetManifest
from trajectory_pipeline.training.registry import AdapterRecord
from trajectory_pipeline.training.trainer import TrainResult

ADAPTER_MANIFEST_SCHEMA = pa.schema(
    [
        ("adapter_id", pa.string()),
        ("partition", pa.string()),
        ("adapter_path", pa.string()),
        ("base_model", pa.string()),
        ("data_window_start", pa.string()),
        ("data_window_end", pa.string()),
        ("dataset_hash", pa.string()),
        ("train_examples", pa.int64()),
        ("valid_examples", pa.int64()),
        ("chosen", pa.string()),
        ("best_val_loss", pa.float64()),
        ("best_iteration", pa.int64()),
        ("last_val_loss", pa.float64()),
        ("iterations", pa.int64()),
        ("tokens", pa.int64()),
        ("hyperparameters", pa.string()),
    ]
)

CHART_ROWS = 12
CHART_WIDTH = 48


def adapter_id(partition: str, run_id: str) -> str:
    """One id per training run: the week it trained for, and the run that trained it."""
    return f"{partition}-{run_id[:8]}"


def loss_table(losses: list[dict[str, object]]) -> str:
    """The reports as a Markdown table: iteration, train and validation loss, lr, tokens/s."""
    columns = ("iteration", "train_loss", "val_loss", "learning_rate", "tokens_per_second")
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for row in losses:
        lines.append("| " + " | ".join(_cell(row.get(column)) for column in columns) + " |")
    return "\n".join(lines)


def loss_chart(losses: list[dict[str, object]]) -> str:
    """Train (·) and validation (o) loss against iteration, drawn in text so any UI shows it."""
    points = [
        (int(str(row["iteration"])), float(str(value)), mark)
        for row in losses
        for key, mark in (("train_loss", "·"), ("val_loss", "o"))
        if (value := row.get(key)) is not None and math.isfinite(float(str(value)))
    ]
    if not points:
        return "_no losses reported_"
    low, high = min(p[1] for p in points), max(p[1] for p in points)
    last = max(p[0] for p in points) or 1
    grid = [[" "] * CHART_WIDTH for _ in range(CHART_ROWS)]
    for iteration, value, mark in points:
        x = round(iteration / last * (CHART_WIDTH - 1))
        y = 0 if high == low else round((high - value) / (high - low) * (CHART_ROWS - 1))
        if grid[y][x] != "o":
            grid[y][x] = mark
    rows = [f"{high:8.3f} |" + "".join(grid[0])]
    rows += ["         |" + "".join(line) for line in grid[1:-1]]
    rows += [f"{low:8.3f} |" + "".join(grid[-1]), "          " + "-" * CHART_WIDTH]
    rows.append(f"          0{'iteration':^{CHART_WIDTH - 2 - len(str(last))}}{last}")
    return "```\n" + "\n".join(rows) + "\n```\n· train loss   o validation loss"


def model_card(record: AdapterRecord, manifest: DatasetManifest, result: TrainResult) -> str:
    """The README beside an adapter: what it learned from, how, how well, and how to use it."""
    adapter = record.artifact_path
    stopped = " (stopped early)" if result.stopped_early else ""
    if result.stop_reason:
        stopped = f"\n- Stopped before the last iteration: {result.stop_reason}"
    speed = f"{result.tokens_per_second:.0f} tokens/s, peak memory {result.peak_memory_gb:.3f} GB"
    return f"""# Adapter {record.adapter_id}

A LoRA adapter for `{record.base_model}` that predicts the next tool call of a coding agent,
trained by trajectory-pipeline on decision points from your own sessions.

## Data
- Window: {record.data_window[0]} .. {record.data_window[-1]} ({len(record.data_window)} days with data)
- Examples: train {manifest.counts["train"]}, valid {manifest.counts["valid"]}, test {manifest.counts["test"]}
  (padded: {manifest.padded})
- Examples per tool (train): {manifest.per_tool.get("train", {})}
- Dataset hash: `{manifest.dataset_hash}` (sha256 of train/valid/test.jsonl, in `data/manifest.json`)

## Training
- mlx-lm {record.hyperparameters.get("fine_tune_type", "lora")}, {result.iterations} iterations,
  {result.tokens} tokens at {speed}
- Hyperparameters: `{record.hyperparameters}`
- Validation loss: best {result.best_val_loss} at iteration {result.best_iteration},
  last {result.last_val_loss}; `adapters.safetensors` holds the **{result.chosen}** weights{stopped}

{loss_chart(result.losses)}

## Use it
```
python -m mlx_lm generate --model {record.base_model} --adapter-path {adapter} --prompt "..."
python -m mlx_lm fuse --model {record.base_model} --adapter-path {adapter} --save-path fused-model
```
"""


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)
