"""Settings are declared once, read in one module, listed in one README table, and a bad value is
one line that names the variable."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from trajectory_pipeline import settings
from trajectory_pipeline.settings import CHECKOUT, SettingError

PACKAGES = ("trajectory_pipeline", "assets", "resources")


def test_only_the_settings_module_reads_trajectory_variables() -> None:
    readers = re.compile(r"(os\.environ|os\.getenv|environ\.get)[^\n]*TRAJECTORY_")
    offenders = [
        str(path.relative_to(CHECKOUT))
        for package in PACKAGES
        for path in (CHECKOUT / package).rglob("*.py")
        if path.name != "settings.py" and readers.search(path.read_text())
    ]
    assert offenders == []


def test_the_readme_lists_every_setting() -> None:
    readme = (CHECKOUT / "README.md").read_text()
    assert settings.table() in readme, "the README's settings table is stale: paste settings.table()"


@pytest.mark.parametrize(
    ("setting", "value", "reader"),
    [
        (settings.START_DATE, "2025-13-01", settings.start_date),
        (settings.WINDOW_WEEKS, "twelve", settings.window_weeks),
        (settings.WINDOW_WEEKS, "0", settings.window_weeks),
        (settings.SCHEDULE_TIMEZONE, "Mars/Olympus", settings.schedule_timezone),
        (settings.WORKERS, "-2", settings.workers),
        (settings.BACKFILL_DAYS_PER_RUN, "a week", settings.backfill_days_per_run),
        (settings.EXECUTOR, "spark", settings.executor),
        (settings.CELERY_BROKER, "localhost", settings.celery_broker),
        (settings.WEEKLY_CRON, "every sunday", settings.weekly_cron),
        (settings.DAILY_CRON, "30 0 * *", settings.daily_cron),
        # Five fields that Dagster would refuse as the definitions load, for every command.
        (settings.DAILY_CRON, "0 24 * * *", settings.daily_cron),
        (settings.DAILY_CRON, "61 * * * *", settings.daily_cron),
        (settings.DAILY_CRON, "*/0 * * * *", settings.daily_cron),
        (settings.WEEKLY_CRON, "0 0 31 2 *", settings.weekly_cron),
        (settings.SENSOR_INTERVAL, "0", settings.sensor_interval_seconds),
        (settings.RUN_CONFIG, "/nonexistent/run.yaml", settings.run_config_file),
        (settings.SERVE_PORT, "70000", settings.serve_port),
    ],
)
def test_a_bad_value_is_one_line_naming_the_variable(
    setting: settings.Setting, value: str, reader: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(setting.name, value)
    with pytest.raises(SettingError) as raised:
        reader()  # type: ignore[operator]
    message = str(raised.value)
    assert message.startswith(f"{setting.name}={value!r}: ") and "\n" not in message


def test_unset_and_blank_values_take_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(settings.WINDOW_WEEKS.name, raising=False)
    monkeypatch.setenv(settings.DATA_DIR.name, "")
    assert settings.window_weeks() == 12
    assert settings.data_dir() == "data/warehouse"
    assert settings.workers() is None


def test_the_real_corpus_resolves_against_the_checkout(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv(settings.REAL_CORPUS.name, raising=False)
    assert settings.real_corpus() == (CHECKOUT.parent / "shared" / "corpus" / "real").resolve()
    monkeypatch.setenv(settings.REAL_CORPUS.name, str(tmp_path))
    assert settings.real_corpus() == tmp_path


@pytest.mark.parametrize(
    "value", ["0 3 * * 0", "30 0 * * *", "*/15 8-18/2 1,15 * 1-5", "0 0 29 2 *", "0 9 * * 7"]
)
def test_a_cron_schedule_the_settings_accept_is_one_dagster_accepts(
    value: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import dagster as dg

    monkeypatch.setenv(settings.DAILY_CRON.name, value)
    dg.ScheduleDefinition(name="probe", cron_schedule=settings.daily_cron(), target="*")


@pytest.mark.parametrize("value", ["99999", "-5", "0", "http"])
def test_a_serve_port_flag_out_of_range_is_one_line(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    from trajectory_pipeline import cli

    with pytest.raises(SystemExit) as raised:
        cli.build_parser().parse_args(["serve", "--port", value])
    assert raised.value.code == 2
    assert f"argument --port: {value!r} is not a TCP port number from 1 to 65535" in capsys.readouterr().err
