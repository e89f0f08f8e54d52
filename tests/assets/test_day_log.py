"""A long range logs a few evenly spaced day lines per step (each line is a stored event); a short
one logs every day's line."""

import datetime as dt
import itertools
import re
from pathlib import Path

import dagster as dg
import pytest

from assets.day_log import DAY_LINES
from assets.decision_points import decision_points
from assets.mined_trajectories import mined_trajectories
from assets.raw_sessions import raw_sessions
from resources.parquet_io_manager import ParquetIOManager
from resources.session_sources import SessionSources
from trajectory_pipeline.ingest.formats import FORMATS

LAST = dt.date(2026, 11, 22)
# Each stage's day line begins with the day: raw_sessions, mined_trajectories, decision_points.
STAGE_LINES = (r"\d+ sessions, \d+ events", r"\d+ attempts from \d+ sessions", r"\d+ decision points from")


def day_lines(days: int, tmp_path: Path) -> list[str]:
    first = (LAST - dt.timedelta(days=days - 1)).isoformat()
    instance = dg.DagsterInstance.ephemeral()
    result = dg.materialize(
        [raw_sessions, mined_trajectories, decision_points],
        instance=instance,
        tags={"dagster/asset_partition_range_start": first, "dagster/asset_partition_range_end": str(LAST)},
        resources={
            "io_manager": ParquetIOManager(base_dir=str(tmp_path)),
            "session_sources": SessionSources(**{f"{source}_root": "" for source in FORMATS}),
        },
    )
    assert result.success
    return [entry.user_message for entry in instance.all_logs(result.run_id) if entry.user_message]


def test_a_short_range_logs_every_day_of_every_stage(tmp_path: Path) -> None:
    lines = day_lines(3, tmp_path)
    for stage in STAGE_LINES:
        days = [line[:10] for line in lines if re.match(rf"\d{{4}}-\d\d-\d\d: {stage}", line)]
        assert days == ["2026-11-20", "2026-11-21", "2026-11-22"], stage


@pytest.mark.parametrize("days", [DAY_LINES + 1, 3 * DAY_LINES + 5])
def test_a_long_range_logs_a_few_evenly_spaced_days_and_the_last(days: int, tmp_path: Path) -> None:
    lines = day_lines(days, tmp_path)
    for stage in STAGE_LINES:
        found = [
            (int(done), day)
            for done, total, day in re.findall(
                rf"^(\d+) of (\d+) days; (\S+): {stage}", "\n".join(lines), re.M
            )
            if int(total) == days
        ]
        assert len(found) <= DAY_LINES + 1 and found[-1] == (days, str(LAST)), stage
        steps = {b[0] - a[0] for a, b in itertools.pairwise(found[:-1])}  # the last may come sooner
        assert len(steps) <= 1 and all(step > 1 for step in steps), stage
        assert not any(re.match(rf"\d{{4}}-\d\d-\d\d: {stage}", line) for line in lines), stage
