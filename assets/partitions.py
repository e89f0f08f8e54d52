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
