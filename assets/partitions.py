"""Daily and weekly partitions, side by side.

Daily partitions are UTC days on which a session *started*. The first day is
`TRAJECTORY_START_DATE` (YYYY-MM-DD, default 2025-01-01): partitions are part of
the code location, so the start date is read when the definitions load.
"""

from __future__ import annotations

import dagster as dg

from resources.parquet_io_manager import ALLOW_MISSING
from trajectory_pipeline import settings

START_DATE = settings.start_date().isoformat()

daily_partitions = dg.DailyPartitionsDefinition(start_date=START_DATE, timezone="UTC")

# A backfill of days: the whole range in one run (one machine: no start-up cost per day, the days
# spread over its cores), or runs of k days (TRAJECTORY_BACKFILL_DAYS_PER_RUN=k: on a cluster, the
# runs and their steps spread over the executor's workers). Read when the definitions load.
DAYS_PER_RUN = settings.backfill_days_per_run()


def daily_backfill_policy() -> dg.BackfillPolicy:
    """The daily assets' backfill policy: one run per range, or runs of `DAYS_PER_RUN` days."""
    if DAYS_PER_RUN is None:
        return dg.BackfillPolicy.single_run()
    return dg.BackfillPolicy.multi_run(max_partitions_per_run=DAYS_PER_RUN)


# Sunday-to-Sunday weeks: a weekly adapter trains on the days up to the end of its week.
weekly_partitions = dg.WeeklyPartitionsDefinition(start_date=START_DATE, timezone="UTC")

# Weeks of daily rendered_splits a weekly adapter trains on (and its replay eval replays), up to
# the end of its week (TRAJECTORY_WINDOW_WEEKS). Part of the asset graph: read when definitions load.
WINDOW_WEEKS = settings.window_weeks()


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
