"""The pipeline runs by itself only if its schedules and sensor ask for the right runs: these tests
tick them at fixed times against a temporary instance and check the jobs, partitions and skips.

The daily schedule must fill the gaps of the training window so the weekly one never trains on a
window with holes; the sensor must request each new or grown file's days once, not at every tick.
Ingestion is real (the daily assets on empty source roots); no tick waits on the clock.

    .venv/bin/python -m pytest tests/test_automation.py -q
"""

import datetime as dt
import json
import os
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pytest

from assets.automation import (
    RANGE_END,
    RANGE_START,
    daily_ingest_schedule,
    new_sessions_sensor,
    weekly_retrain_schedule,
)
from assets.decision_points import decision_points
from assets.definitions import defs
from assets.mined_trajectories import mined_trajectories
from assets.partitions import WINDOW_WEEKS
from assets.raw_sessions import raw_sessions
from assets.rendered_splits import rendered_splits
from resources.parquet_io_manager import ParquetIOManager
from resources.session_sources import SessionSources
from tests.conftest import REPO_ROOT
from trajectory_pipeline.ingest.days import SourceRoot
from trajectory_pipeline.ingest.formats import FORMATS
from trajectory_pipeline.ingest.new_files import FileState, Watch, advance, day_spans, days_held, file_states
from trajectory_pipeline.settings import schedule_timezone

ROOTS_OFF = {f"{source}_root": "" for source in FORMATS}
D = dt.date.fromisoformat
SUNDAY = D("2026-11-22")  # a weekly partition key: the week 2026-11-22 ... 2026-11-28


def at(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text).replace(tzinfo=dt.UTC)


def days(first: dt.date, last: dt.date) -> list[dt.date]:
    return [first + dt.timedelta(days=n) for n in range((last - first).days + 1)]


def window(week: dt.date) -> list[dt.date]:
    """The daily partitions a weekly adapter of `week` trains on."""
    return days(week - dt.timedelta(weeks=WINDOW_WEEKS - 1), week + dt.timedelta(days=6))


@pytest.fixture
def instance() -> Iterator[dg.DagsterInstance]:
    with dg.instance_for_test() as instance:
        yield instance


def mark_ingested(instance: dg.DagsterInstance, ingested: list[dt.date]) -> None:
    """Record rendered_splits as materialized for these days, without running anything."""
    for day in ingested:
        instance.report_runless_asset_event(
            dg.AssetMaterialization(asset_key="rendered_splits", partition=day.isoformat())
        )


def tick(schedule: dg.ScheduleDefinition, instance: dg.DagsterInstance, when: str) -> list[dg.RunRequest]:
    context = dg.build_schedule_context(
        instance=instance, scheduled_execution_time=at(when), repository_def=defs.get_repository_def()
    )
    data = schedule.evaluate_tick(context)
    return list(data.run_requests or [])


def skip_message(schedule: dg.ScheduleDefinition, instance: dg.DagsterInstance, when: str) -> str:
    context = dg.build_schedule_context(instance=instance, scheduled_execution_time=at(when))
    result = schedule(context)
    assert isinstance(result, dg.SkipReason), result
    return str(result.skip_message)


def span(request: dg.RunRequest) -> tuple[str, str]:
    if request.partition_key is not None:
        return request.partition_key, request.partition_key
    return request.tags[RANGE_START], request.tags[RANGE_END]


# ---------------------------------------------------------------- definitions and instance


def test_definitions_hold_the_automation_stopped() -> None:
    dg.Definitions.validate_loadable(defs)
    weekly = defs.resolve_job_def("weekly_retrain_job")
    assert weekly.partitions_def is not None
    assert weekly.partitions_def.get_partition_keys(current_time=at("2026-11-29 03:00"))[-1] == "2026-11-22"
    assert {key.to_user_string() for key in weekly.asset_layer.executable_asset_keys} == {
        "lora_adapter",
        "action_memory",
        "replay_eval",
        "promoted_model",
    }
    assert daily_ingest_schedule.job_name == "daily_ingest_job"
    assert weekly_retrain_schedule.job_name == "weekly_retrain_job"
    assert new_sessions_sensor.job_name == "daily_ingest_job"
    assert (weekly_retrain_schedule.cron_schedule, weekly_retrain_schedule.execution_timezone) == (
        "0 3 * * 0",
        "UTC",
    )
    for schedule in (daily_ingest_schedule, weekly_retrain_schedule):
        assert schedule.default_status == dg.DefaultScheduleStatus.STOPPED
    assert new_sessions_sensor.default_status == dg.DefaultSensorStatus.STOPPED


def test_instance_retries_failed_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "dagster.yaml").write_text((REPO_ROOT / "dagster.yaml").read_text())
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    with dg.DagsterInstance.from_config(str(tmp_path)) as instance:
        assert instance.run_retries_enabled
        assert instance.run_retries_max_retries == 2


@pytest.mark.parametrize(
    ("value", "expected"), [(None, "UTC"), ("", "UTC"), ("Europe/Berlin", "Europe/Berlin")]
)
def test_schedule_timezone_from_the_environment(
    value: str | None, expected: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if value is None:
        monkeypatch.delenv("TRAJECTORY_SCHEDULE_TIMEZONE", raising=False)
    else:
        monkeypatch.setenv("TRAJECTORY_SCHEDULE_TIMEZONE", value)
    assert schedule_timezone() == expected


def test_a_wrong_timezone_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRAJECTORY_SCHEDULE_TIMEZONE", "Europe/Paname")
    with pytest.raises(ValueError, match=r"TIMEZONE='Europe/Paname': not an IANA time zone"):
        schedule_timezone()


# ---------------------------------------------------------------- schedules


def test_daily_schedule_ingests_the_day_that_just_ended(instance: dg.DagsterInstance) -> None:
    yesterday = D("2026-11-24")
    mark_ingested(instance, days(yesterday - dt.timedelta(weeks=WINDOW_WEEKS + 1), yesterday))
    (request,) = tick(daily_ingest_schedule, instance, "2026-11-25 00:30")
    assert request.partition_key == "2026-11-24"
    assert request.tags["dagster/partition"] == "2026-11-24"


def test_daily_schedule_fills_the_gaps_of_the_window(instance: dg.DagsterInstance) -> None:
    yesterday = D("2026-11-24")
    first = yesterday - dt.timedelta(weeks=WINDOW_WEEKS + 1)
    holes = {D("2026-10-01"), D("2026-11-10"), D("2026-11-11")}
    mark_ingested(instance, [day for day in days(first, yesterday) if day not in holes])
    requests = tick(daily_ingest_schedule, instance, "2026-11-25 00:30")
    assert [span(request) for request in requests] == [
        ("2026-10-01", "2026-10-01"),
        ("2026-11-10", "2026-11-11"),  # a range: one run over both days
        ("2026-11-24", "2026-11-24"),  # re-ingested even if the sensor got there first
    ]
    assert len({request.run_key for request in requests}) == 3


def test_weekly_schedule_trains_the_week_that_just_ended(instance: dg.DagsterInstance) -> None:
    mark_ingested(instance, window(SUNDAY))
    (request,) = tick(weekly_retrain_schedule, instance, "2026-11-29 03:00")
    assert request.partition_key == "2026-11-22"
    assert request.tags["dagster/partition"] == "2026-11-22"


def test_weekly_schedule_waits_for_the_days_never_ingested(instance: dg.DagsterInstance) -> None:
    mark_ingested(instance, [day for day in window(SUNDAY) if day not in (D("2026-11-27"), D("2026-11-28"))])
    message = skip_message(weekly_retrain_schedule, instance, "2026-11-29 03:00")
    assert "week 2026-11-22 not trained" in message
    assert f"2 of the {7 * WINDOW_WEEKS} days" in message
    assert "(2026-11-27...2026-11-28)" in message


def test_the_nightly_gap_fill_completes_the_week(instance: dg.DagsterInstance, tmp_path: Path) -> None:
    """Weekly tick skips; the daily tick asks for the missing days; ingesting them for real lets the
    next weekly tick train."""
    mark_ingested(instance, days(D("2026-11-28") - dt.timedelta(weeks=WINDOW_WEEKS + 1), D("2026-11-26")))
    assert "2026-11-27...2026-11-28" in skip_message(weekly_retrain_schedule, instance, "2026-11-29 03:00")

    (request,) = tick(daily_ingest_schedule, instance, "2026-11-29 00:30")
    assert span(request) == ("2026-11-27", "2026-11-28")
    result = dg.materialize(
        [raw_sessions, mined_trajectories, decision_points, rendered_splits],
        instance=instance,
        tags=request.tags,
        resources={
            "io_manager": ParquetIOManager(base_dir=str(tmp_path)),
            "session_sources": SessionSources(**ROOTS_OFF),
        },
    )
    assert result.success
    (weekly,) = tick(weekly_retrain_schedule, instance, "2026-11-29 03:00")
    assert weekly.partition_key == "2026-11-22"


def test_schedules_skip_before_the_first_partition(instance: dg.DagsterInstance) -> None:
    assert "no week is over" in skip_message(weekly_retrain_schedule, instance, "2025-01-02 03:00")
    assert "no day is over" in skip_message(daily_ingest_schedule, instance, "2025-01-01 00:30")


# ---------------------------------------------------------------- the file watch (pure)

NOW = int(dt.datetime(2026, 11, 25, 12, tzinfo=dt.UTC).timestamp()) * 1_000_000
HOUR = 3_600 * 1_000_000


def state(path: str, size: int, hours_ago: float) -> FileState:
    return FileState(path, size, NOW - int(hours_ago * HOUR))


def tick_watch(watch: Watch, files: list[FileState], now: int = NOW) -> tuple[Watch, list[tuple[str, str]]]:
    update = advance(watch, files, now, first_day=D("2026-11-01"), last_day=D("2026-11-24"))
    return update.watch, [(a.isoformat(), b.isoformat()) for a, b in update.spans]


@pytest.mark.parametrize(
    ("mtime", "held"),
    [
        ("2026-11-20 00:00:00", ("2026-11-19", "2026-11-20", "2026-11-21")),
        ("2026-11-20 23:59:59", ("2026-11-19", "2026-11-20", "2026-11-21")),
    ],
)
def test_days_a_file_can_hold(mtime: str, held: tuple[str, ...]) -> None:
    us = int(at(mtime).timestamp()) * 1_000_000
    assert tuple(day.isoformat() for day in days_held(us)) == held


def test_day_spans_group_consecutive_days() -> None:
    found = day_spans([D("2026-11-03"), D("2026-11-01"), D("2026-11-02"), D("2026-11-05"), D("2026-11-02")])
    assert found == [(D("2026-11-01"), D("2026-11-03")), (D("2026-11-05"), D("2026-11-05"))]


def test_a_file_is_requested_once_then_again_when_it_grows() -> None:
    files = [state("/r/a.jsonl", 100, hours_ago=60)]  # 2026-11-23 00:00: days 22, 23, 24
    watch, requested = tick_watch(Watch(), files)
    assert requested == [("2026-11-22", "2026-11-24")]
    watch, requested = tick_watch(Watch.from_cursor(watch.to_cursor()), files)
    assert requested == []
    watch, requested = tick_watch(watch, [state("/r/a.jsonl", 180, hours_ago=50)])
    assert requested == [("2026-11-22", "2026-11-24")]


def test_days_not_over_wait_in_the_cursor() -> None:
    """A file written today holds yesterday (ready) and today and tomorrow (not partitions yet)."""
    watch, requested = tick_watch(Watch(), [state("/r/a.jsonl", 100, hours_ago=1)])
    assert requested == [("2026-11-24", "2026-11-24")]
    assert sorted(watch.pending) == ["2026-11-25", "2026-11-26"]
    later = NOW + 13 * HOUR  # 2026-11-26 01:00: today is over
    update = advance(watch, [state("/r/a.jsonl", 100, hours_ago=1)], later, D("2026-11-01"), D("2026-11-25"))
    assert [(a.isoformat(), b.isoformat()) for a, b in update.spans] == [("2026-11-25", "2026-11-25")]
    assert update.waiting == ["2026-11-26"]


def test_a_file_still_being_written_waits_until_quiet() -> None:
    files = [state("/r/a.jsonl", 100, hours_ago=12.05)]  # 2026-11-24 23:57: a session past midnight
    watch, requested = tick_watch(Watch(), files, now=NOW - 12 * HOUR)  # 3 minutes later
    assert requested == []
    watch, requested = tick_watch(watch, files, now=NOW - 11 * HOUR)
    assert requested == [("2026-11-23", "2026-11-24")]


def test_old_files_and_days_before_the_first_partition_are_left_alone() -> None:
    old = state("/r/old.jsonl", 100, hours_ago=24 * 8)  # past the 7-day horizon: backfills' job
    watch, requested = tick_watch(Watch(), [old])
    assert (watch, requested) == (Watch(), [])
    update = advance(Watch(), [state("/r/a.jsonl", 1, hours_ago=60)], NOW, D("2026-11-23"), D("2026-11-24"))
    assert [(a.isoformat(), b.isoformat()) for a, b in update.spans] == [("2026-11-23", "2026-11-24")]


@pytest.mark.parametrize(
    "cursor", ["not json", '{"v": 2, "seen": [], "pending": {}}', '{"v": 1, "seen": []}']
)
def test_a_foreign_cursor_is_refused(cursor: str) -> None:
    with pytest.raises(ValueError, match="new_sessions_sensor cursor must be"):
        Watch.from_cursor(cursor)


def test_file_states_list_what_ingestion_lists(tmp_path: Path) -> None:
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "s.jsonl").write_text('{"x": 1}\n')
    (tmp_path / "project" / "notes.txt").write_text("not a transcript\n")
    (found,) = file_states([SourceRoot("claude_code", tmp_path)])
    assert (Path(found.path).name, found.size) == ("s.jsonl", 9)


# ---------------------------------------------------------------- the sensor


def test_sensor_requests_new_and_grown_files_once(tmp_path: Path) -> None:
    root = tmp_path / "claude"
    (root / "project").mkdir(parents=True)
    today = dt.datetime.now(dt.UTC).date()
    noon = dt.datetime.combine(today - dt.timedelta(days=4), dt.time(12), tzinfo=dt.UTC).timestamp()
    session = root / "project" / "s.jsonl"
    session.write_text('{"type": "user"}\n')
    os.utime(session, (noon, noon))
    resources = {"session_sources": SessionSources(**{**ROOTS_OFF, "claude_code_root": str(root)})}

    def sense(cursor: str | None) -> dg.SensorResult:
        result = new_sessions_sensor(dg.build_sensor_context(cursor=cursor, resources=resources))
        assert isinstance(result, dg.SensorResult)
        return result

    first = sense(None)
    (request,) = first.run_requests or []
    expected = [(today - dt.timedelta(days=n)).isoformat() for n in (5, 3)]
    assert [request.tags[RANGE_START], request.tags[RANGE_END]] == expected
    assert request.run_key is not None
    assert len(json.loads(first.cursor or "")["seen"]) == 1

    second = sense(first.cursor)
    assert not second.run_requests
    assert second.skip_reason is not None and "0 of 1 recent files new or grown" in str(second.skip_reason)

    with session.open("a") as handle:
        handle.write('{"type": "assistant"}\n')
    os.utime(session, (noon + 86_400, noon + 86_400))
    (again,) = sense(second.cursor).run_requests or []
    assert [again.tags[RANGE_START], again.tags[RANGE_END]] == [
        (today - dt.timedelta(days=n)).isoformat() for n in (4, 2)
    ]
    assert again.run_key != request.run_key


# ---------------------------------------------------------------- what scheduled runs are launched with


def test_scheduled_runs_take_their_run_config_from_the_file_the_setting_names(
    instance: dg.DagsterInstance, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trainer = {"resources": {"trainer": {"config": {"iters": 600, "batch_size": 2}}}}
    ingest = {"ops": {"rendered_splits": {"config": {"max_length": 6000}}}}
    path = tmp_path / "scheduled.json"  # JSON or YAML
    path.write_text(json.dumps({"weekly_retrain_job": trainer, "daily_ingest_job": ingest}))
    monkeypatch.setenv("TRAJECTORY_RUN_CONFIG", str(path))
    mark_ingested(instance, window(SUNDAY))
    (request,) = tick(weekly_retrain_schedule, instance, "2026-11-29 03:00")
    assert request.run_config == trainer
    requests = tick(daily_ingest_schedule, instance, "2026-11-29 00:30")
    assert requests and all(request.run_config == ingest for request in requests)
    # The jobs accept these blocks, as the launchpad would check them.
    for job, config in (("weekly_retrain_job", trainer), ("daily_ingest_job", ingest)):
        assert dg.validate_run_config(defs.resolve_job_def(job), config)

    path.write_text("weekly_retrain_job: [not, a, mapping]\n")
    with pytest.raises(dg.DagsterUserCodeExecutionError) as raised:  # an error tick, naming the file
        tick(weekly_retrain_schedule, instance, "2026-11-29 03:00")
    assert f"TRAJECTORY_RUN_CONFIG={path}: expected a mapping" in str(raised.value.__cause__)
    monkeypatch.delenv("TRAJECTORY_RUN_CONFIG")
    (request,) = tick(weekly_retrain_schedule, instance, "2026-11-29 03:00")
    assert request.run_config == {}
