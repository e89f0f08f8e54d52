"""Daily and weekly partitions, side by side.

Daily partitions are UTC days on which a session *started*. The first day is
`TRAJECTORY_START_DATE` (YYYY-MM-DD, default 2025-01-01): partitions are part of
the code location, so the start date is read from the environment when the
definitions load.
"""

from __future__ import annotations

import datetime as dt
import os

import dagster as dg

from resources.parquet_io_manager import ALLOW_MISSING

DEFAULT_START_DATE = "2025-01-01"


def start_date() -> str:
    """The configured first partition day, validated so a typo fails loudly at load time."""
    value = os.environ.get("TRAJECTORY_START_DATE", DEFAULT_START_DATE)
    try:
        dt.date.fromisoformat(value)
    except ValueError:
        raise ValueError(
            f"TRAJECTORY_START_DATE must be a date like 2025-01-01, got {value!r}. "
            "Set it to the first day you have sessions for, or unset it."
        ) from None
    return value


daily_partitions = dg.DailyPartitionsDefinition(start_date=start_date(), timezone="UTC")


# Sunday-to-Sunday weeks: a weekly adapter trains on the days up to the end of its week.
weekly_partitions = dg.WeeklyPartitionsDefinition(start_date=start_date(), timezone="UTC")

# Weeks of daily rendered_splits a weekly adapter trains on (and its replay eval replays), up to
# the end of its week. Part of the asset graph, so read from the environment when definitions load.
WINDOW_WEEKS = int(os.environ.get("TRAJECTORY_WINDOW_WEEKS", "12"))


def rendered_window() -> dg.AssetIn:
    """A weekly asset's input: the daily rendered_splits of its window; days never ingested are
    left out (the IO manager's allow-missing metadata), not an error."""
    return dg.AssetIn(
        key="rendered_splits",
        partition_mapping=dg.TimeWindowPartitionMapping(
            start_offset=1 - WINDOW_WEEKS, allow_nonexistent_upstream_partitions=True
        ),
        metadata={ALLOW_MISSING: True},
    )
