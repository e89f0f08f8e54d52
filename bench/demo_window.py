"""The demo window's rendered rows, as the benches that replay or train on it read them.

rows = window_rows(Path("data/warehouse"))   # None when `make demo` has not run
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from trajectory_pipeline.dataset.training_data import dedupe_across_days


def window_rows(warehouse: Path) -> pd.DataFrame | None:
    """Every rendered day under `warehouse`, deduped exactly as the adapter's data directory is
    (so the held-out cases are replay_eval's); None when there is none."""
    days = sorted((warehouse / "rendered_splits").glob("*.parquet"))
    if not days:
        return None
    rows, _ = dedupe_across_days(pd.concat([pd.read_parquet(day) for day in days], ignore_index=True))
    return rows
