"""The jobs, the two schedules and the file sensor that run the pipeline by themselves.

- `daily_ingest_job`: raw_sessions → ... → rendered_splits for a day, or a range in one run.
- `weekly_retrain_job`: lora_adapter → replay_eval for a week.
- `daily_ingest_schedule` (00:30 every day): the day that just ended, plus every day of the
  training window that was never ingested.
- `weekly_retrain_schedule` (Sunday 03:00): the week that just ended, once every day of its
  window is ingested.
- `new_sessions_sensor` (every 2 minutes): the days a new or grown transcript file can hold.
- `abandoned_trainings_sensor` (every minute, on by default, launches nothing): marks failed in the
  adapter registry each training whose run is gone (killed with SIGKILL; see assets/instance.py).

The first three start STOPPED. Turn them on in the UI (`make ui`, then Automation, and the toggle beside
each; `make ui` also starts the daemon that evaluates them), or from a shell while it runs:

    dagster schedule start daily_ingest_schedule -m assets.definitions
    dagster sensor start new_sessions_sensor -m assets.definitions

Schedule times are wall-clock times in `TRAJECTORY_SCHEDULE_TIMEZONE` (an IANA name such as
Europe/Berlin; default UTC), read when the definitions load, as are the crons themselves
(`TRAJECTORY_DAILY_CRON`, `TRAJECTORY_WEEKLY_CRON`) and the sensor's interval
(`TRAJECTORY_SENSOR_INTERVAL_SECONDS`). The runs they launch take their run config from the file
`TRAJECTORY_RUN_CONFIG` names, read at each tick: one block per job, as in the launchpad
(`weekly_retrain_job: {resources: {trainer: {config: {iters: 600}}}}`), so scheduled trainings need not
run on the defaults. Partitions stay UTC days and
Sunday-start UTC weeks whatever the zone: a tick takes the last day (week) that is over in UTC.

Why schedules and a sensor, not declarative automation (AutomationCondition): ingestion reads
files outside Dagster's knowledge, so "new data" is a question only a sensor can ask, and the
retrain is a fixed weekly event users plan their machine around (training occupies it for a
while), which a cron schedule says plainly and the UI shows as next tick times. Automation
conditions would also need the daily assets to request old missing days, which `eager()` and
`on_cron()` only do for the latest time window.

How a week trains on complete data: a Dagster schedule can only launch its own job, so the
weekly schedule cannot start ingestion itself. Instead the daily schedule, each night, ingests
with the day that just ended every day of the training window (`TRAJECTORY_WINDOW_WEEKS` weeks,
one more for zones east of UTC) whose `rendered_splits` was never materialized, one run per
span of consecutive days (the daily assets run a range in one process). Two and a half hours
later the weekly schedule checks the window of the week it trains; if a day is still missing
(ingestion failed or is still running, or the daily schedule is off) it skips the week with a
SkipReason naming the days, instead of training on a window with holes. Launch the week by hand
once they are in.

Retries: dagster.yaml retries a failed run twice, from the failed step (Dagster's default
strategy), so a weekly run whose replay_eval failed does not train again. Failures a retry cannot
fix (leakage, a split too small, an unreadable root) are raised before any long work starts, so
retrying them costs seconds. A training that fails is marked "failed" in the adapter registry,
never left half-registered, and its retry registers a new adapter id (ids carry the run id).
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import dagster as dg
import yaml
from sqlalchemy.engine import make_url

from assets.instance import run_gone
from assets.partitions import WINDOW_WEEKS, daily_partitions, weekly_partitions
from resources.adapter_registry import AdapterRegistryResource
from resources.privacy import private
from resources.session_sources import SessionSources
from trajectory_pipeline import settings
from trajectory_pipeline.ingest.new_files import Watch, advance, day_spans

DAILY_CRON = settings.daily_cron()  # "30 0 * * *"
WEEKLY_CRON = settings.weekly_cron()  # "0 3 * * 0"
SENSOR_INTERVAL_SECONDS = settings.sensor_interval_seconds()  # 120
ABANDONED_INTERVAL_SECONDS = 60
RENDERED = dg.AssetKey("rendered_splits")
RANGE_START, RANGE_END = "dagster/asset_partition_range_start", "dagster/asset_partition_range_end"


TIMEZONE = settings.schedule_timezone()

daily_ingest_job = dg.define_asset_job(
    "daily_ingest_job",
    selection=dg.AssetSelection.groups("ingest"),
    description="Ingest a day (or a range, in one run): raw_sessions → ... → rendered_splits.",
)

weekly_retrain_job = dg.define_asset_job(
    "weekly_retrain_job",
    selection=dg.AssetSelection.groups("training"),
    description="Train the week's LoRA adapter on its window of rendered days, then replay-evaluate it.",
)


def scheduled_run_config(job: str) -> dict[str, Any]:
    """The run config the schedules and the sensor launch `job` with: its block in the file
    `TRAJECTORY_RUN_CONFIG` names (read at every tick, so an edit applies to the next run); {} without."""
    path = settings.run_config_file()
    if path is None:
        return {}
    try:
        loaded = yaml.safe_load(path.read_text()) or {}  # JSON is YAML too
    except (OSError, yaml.YAMLError) as err:
        raise dg.Failure(
            f"{settings.RUN_CONFIG.name}={path}: cannot be read as YAML or JSON ({err})"
        ) from None
    block = loaded.get(job, {}) if isinstance(loaded, dict) else None
    if not isinstance(block, dict):
        raise dg.Failure(
            f"{settings.RUN_CONFIG.name}={path}: expected a mapping of job names ({daily_ingest_job.name}, "
            f"{weekly_retrain_job.name}) to run config (ops:, resources:), got {type(block).__name__}"
        )
    return block


def ingest_request(first: dt.date, last: dt.date, run_key: str) -> dg.RunRequest:
    """One daily_ingest_job run over first..last: a partition for one day, a range otherwise."""
    config = scheduled_run_config(daily_ingest_job.name)
    if first == last:
        return dg.RunRequest(run_key=run_key, partition_key=first.isoformat(), run_config=config)
    return dg.RunRequest(
        run_key=run_key, tags={RANGE_START: first.isoformat(), RANGE_END: last.isoformat()}, run_config=config
    )


def describe_days(days: Sequence[dt.date]) -> str:
    return ", ".join(str(a) if a == b else f"{a}...{b}" for a, b in day_spans(days))


def _days(keys: Sequence[str]) -> list[dt.date]:
    return [dt.date.fromisoformat(key) for key in keys]


def _not_ingested(context: dg.ScheduleEvaluationContext, days: Sequence[dt.date]) -> list[dt.date]:
    ingested = context.instance.get_materialized_partitions(RENDERED)
    return [day for day in days if day.isoformat() not in ingested]


@dg.schedule(
    job=daily_ingest_job,
    cron_schedule=DAILY_CRON,
    execution_timezone=TIMEZONE,
    default_status=dg.DefaultScheduleStatus.STOPPED,
    description="Ingest the day that just ended, and every day of the training window never ingested.",
)
def daily_ingest_schedule(context: dg.ScheduleEvaluationContext) -> list[dg.RunRequest] | dg.SkipReason:
    days = _days(daily_partitions.get_partition_keys(current_time=context.scheduled_execution_time))
    if not days:
        return dg.SkipReason("no day is over yet since TRAJECTORY_START_DATE")
    last = days[-1]
    window_start = last - dt.timedelta(weeks=WINDOW_WEEKS + 1)
    todo = {last, *_not_ingested(context, [day for day in days if day >= window_start])}
    return [ingest_request(a, b, run_key=f"ingest {a}...{b}") for a, b in day_spans(todo)]


@dg.schedule(
    job=weekly_retrain_job,
    cron_schedule=WEEKLY_CRON,
    execution_timezone=TIMEZONE,
    default_status=dg.DefaultScheduleStatus.STOPPED,
    description="Train and evaluate the week that just ended, once every day of its window is ingested.",
)
def weekly_retrain_schedule(context: dg.ScheduleEvaluationContext) -> dg.RunRequest | dg.SkipReason:
    now = context.scheduled_execution_time
    weeks = weekly_partitions.get_partition_keys(current_time=now)
    if not weeks:
        return dg.SkipReason("no week is over yet since TRAJECTORY_START_DATE")
    week = weeks[-1]
    week_start = dt.date.fromisoformat(week)
    window_start = week_start - dt.timedelta(weeks=WINDOW_WEEKS - 1)
    window_end = week_start + dt.timedelta(weeks=1)
    window = [
        day
        for day in _days(daily_partitions.get_partition_keys(current_time=now))
        if window_start <= day < window_end
    ]
    missing = _not_ingested(context, window)
    if missing:
        return dg.SkipReason(
            f"week {week} not trained: {len(missing)} of the {len(window)} days of its window were "
            f"never ingested ({describe_days(missing)}). daily_ingest_schedule ingests them each night; "
            "or run daily_ingest_job over them now, then launch weekly_retrain_job for this week."
        )
    return dg.RunRequest(
        run_key=week, partition_key=week, run_config=scheduled_run_config(weekly_retrain_job.name)
    )


@dg.sensor(
    minimum_interval_seconds=ABANDONED_INTERVAL_SECONDS,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Mark failed, in the adapter registry, each training whose run is gone (killed); "
    "launches nothing.",
)
def abandoned_trainings_sensor(
    context: dg.SensorEvaluationContext, adapter_registry: AdapterRegistryResource
) -> dg.SkipReason:
    """A run killed with SIGKILL leaves its adapter "training" for ever; run monitoring fails the run,
    and this marks the adapter, with the reason, within a minute, training or not."""
    url = make_url(adapter_registry.resolved_url())
    if url.get_backend_name() == "sqlite" and not Path(url.database or "").is_file():
        return dg.SkipReason("no adapter registry yet")
    failed = adapter_registry.registry().fail_abandoned(lambda run_id: run_gone(context.instance, run_id))
    if not failed:
        return dg.SkipReason("no training left behind by a run that is gone")
    return dg.SkipReason(
        private("marked failed: " + "; ".join(f"{r.adapter_id} ({r.failure_reason})" for r in failed))
    )


@dg.sensor(
    job=daily_ingest_job,
    minimum_interval_seconds=SENSOR_INTERVAL_SECONDS,
    default_status=dg.DefaultSensorStatus.STOPPED,
    description="Ingest again the days a new or grown transcript file can hold (stat only, no parsing).",
)
def new_sessions_sensor(
    context: dg.SensorEvaluationContext, session_sources: SessionSources
) -> dg.SensorResult:
    now = time.time()
    days = daily_partitions.get_partition_keys(current_time=dt.datetime.fromtimestamp(now, dt.UTC))
    files, watched = session_sources.watched_files()  # no log line per missing root at every tick
    update = advance(
        Watch.from_cursor(context.cursor),
        files,
        now_us=int(now * 1_000_000),
        first_day=daily_partitions.start.date(),
        last_day=dt.date.fromisoformat(days[-1]) if days else None,
    )
    cursor = update.watch.to_cursor()
    requests = [
        ingest_request(a, b, run_key=f"ingest {a}...{b} changed {update.last_change(a, b)}")
        for a, b in update.spans
    ]
    if requests:
        return dg.SensorResult(run_requests=requests, cursor=cursor)
    waiting = f"; waiting: {', '.join(update.waiting)}" if update.waiting else ""
    return dg.SensorResult(
        skip_reason=f"no day ready: {update.changed} of {update.files} recent files new or grown "
        f"(under {watched} source roots){waiting}",
        cursor=cursor,
    )
