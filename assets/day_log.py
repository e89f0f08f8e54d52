"""A range step's log: every day's line on a short range, evenly spaced ones on a long one.

Each log line is an event Dagster stores (about 4 ms each in the instance's SQLite event log,
assets/instance_storage.py; 10 in Dagster's own), and a line per day and stage made a fifth of a
long backfill's events: 450 of the 2,250 of a 150-day run. The days between two lines lose
nothing: each day's figures are in its materialization's metadata, its checks' results in their
own events.
"""

from __future__ import annotations

import math

import dagster as dg

# A step logs every day's line up to this many days, and about this many lines on a longer range.
DAY_LINES = 20


class DayLog:
    """Say a day's line when its turn comes; on a long range, with how far the step has come."""

    def __init__(self, context: dg.AssetExecutionContext, days: int) -> None:
        self._log, self._days, self._done = context.log, days, 0
        self._every = 1 if days <= DAY_LINES else math.ceil(days / DAY_LINES)

    def __call__(self, line: str) -> None:
        self._done += 1
        if self._every == 1:
            self._log.info(line)
        elif self._done % self._every == 0 or self._done == self._days:
            self._log.info(f"{self._done} of {self._days} days; {line}")
