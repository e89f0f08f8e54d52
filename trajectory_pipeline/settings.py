"""Every `TRAJECTORY_*` environment variable: declared, read and checked here and nowhere else.

Settings are read when they are needed, not when a module is imported, so a launchpad run or a
test can change them; the few that shape the asset graph itself (the first partition day, the
training window, the schedules' time zone) are read when the definitions load. A bad value is a
`SettingError`: one line that names the variable, what it holds, and what to write instead.

    from trajectory_pipeline import settings
    settings.start_date()      # datetime.date(2025, 1, 1) unless TRAJECTORY_START_DATE says otherwise
    settings.table()           # the README's settings table, from the declarations below
"""

from __future__ import annotations

import datetime as dt
import os
import re
import zoneinfo
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

PREFIX = "TRAJECTORY_"
CHECKOUT = Path(__file__).resolve().parents[1]


class SettingError(ValueError):
    """A `TRAJECTORY_*` variable holds a value that cannot be used; the message says how to fix it."""


@dataclass(frozen=True)
class Setting:
    """One environment variable: its name, its default, when it is read, and what it means."""

    name: str
    default: str
    read: str  # "at load" (shapes the asset graph), "at run time", or "by the tests"
    help: str

    def value(self, env: Mapping[str, str] | None = None) -> str:
        """The variable's text in `env` (this process's environment by default); the default when it
        is unset (an empty value is kept: it can mean off)."""
        value = (os.environ if env is None else env).get(self.name)
        return self.default if value is None else value.strip()

    def fail(self, value: str, problem: str) -> SettingError:
        return SettingError(f"{self.name}={value!r}: {problem}")


DATA_DIR = Setting(
    "TRAJECTORY_DATA_DIR",
    "data/warehouse",
    "at run time",
    "Folder or object-store URL (s3://bucket/prefix) of the Parquet tables, one file per partition.",
)
CACHE_DIR = Setting(
    "TRAJECTORY_CACHE_DIR",
    "~/.cache/trajectory-pipeline",
    "at run time",
    "Local cache of what is read from or written to object storage (copies, uploads being spooled); "
    "0700, safe to delete between runs.",
)
START_DATE = Setting(
    "TRAJECTORY_START_DATE", "2025-01-01", "at load", "First daily partition (YYYY-MM-DD), UTC."
)
WINDOW_WEEKS = Setting(
    "TRAJECTORY_WINDOW_WEEKS", "12", "at load", "Weeks of rendered days a weekly adapter trains on."
)
SCHEDULE_TIMEZONE = Setting(
    "TRAJECTORY_SCHEDULE_TIMEZONE", "UTC", "at load", "IANA time zone of the schedules' wall-clock times."
)
DAILY_CRON = Setting(
    "TRAJECTORY_DAILY_CRON",
    "30 0 * * *",
    "at load",
    "Cron of daily_ingest_schedule (in the time zone above).",
)
WEEKLY_CRON = Setting(
    "TRAJECTORY_WEEKLY_CRON",
    "0 3 * * 0",
    "at load",
    "Cron of weekly_retrain_schedule (in the time zone above).",
)
SENSOR_INTERVAL = Setting(
    "TRAJECTORY_SENSOR_INTERVAL_SECONDS",
    "120",
    "at load",
    "How often new_sessions_sensor looks at the transcript folders, in seconds.",
)
RUN_CONFIG = Setting(
    "TRAJECTORY_RUN_CONFIG",
    "",
    "at each tick",
    "YAML or JSON file of run config per job (daily_ingest_job:, weekly_retrain_job:) that the schedules "
    "and the sensor launch runs with; empty: none.",
)
WORKERS = Setting(
    "TRAJECTORY_WORKERS",
    "",
    "at run time",
    "Processes a range run spreads its days over; empty: one per CPU.",
)
BACKFILL_DAYS_PER_RUN = Setting(
    "TRAJECTORY_BACKFILL_DAYS_PER_RUN",
    "",
    "at load",
    "A backfill of days runs this many days per run (a cluster: runs spread over workers); empty: "
    "the whole range in one run.",
)
EXECUTOR = Setting(
    "TRAJECTORY_EXECUTOR",
    "in_process",
    "at load",
    "Where a run's steps execute: in_process (one after another in the run's process), multiprocess "
    "(a process each, on the machine that launches the run), celery (Celery workers) or k8s (a "
    "Kubernetes Job per step).",
)
CELERY_BROKER = Setting(
    "TRAJECTORY_CELERY_BROKER",
    "redis://127.0.0.1:6379/0",
    "at load",
    "Broker and result backend of the celery executor and its workers (redis://host:port/db).",
)
BASE_MODEL = Setting(
    "TRAJECTORY_BASE_MODEL",
    "data/tiny-model",
    "at run time",
    "MLX model directory the adapter trains on: a folder, or an object-store URL (read from the cache).",
)
REGISTRY_URL = Setting(
    "TRAJECTORY_REGISTRY_URL",
    "",
    "at run time",
    "SQLAlchemy URL of the adapter registry; empty: sqlite:///$DAGSTER_HOME/adapters.sqlite.",
)
SERVE_PORT = Setting(
    "TRAJECTORY_SERVE_PORT",
    "8080",
    "at start",
    "Port of trajectory-pipeline serve (make serve): mlx-lm's OpenAI-compatible server on 127.0.0.1.",
)
SOURCE_ROOT = Setting(
    "TRAJECTORY_<SOURCE>_ROOT",
    "per source",
    "at run time",
    "Folder of one source's transcripts (table in 'Point it at your own sessions'); empty: off.",
)
SQL_EVENTS_URL = Setting(
    "TRAJECTORY_SQL_EVENTS_URL",
    "",
    "at run time",
    "SQLAlchemy URL of the sql_events source (a database of agent events); empty: off.",
)
SQL_EVENTS_TABLE = Setting(
    "TRAJECTORY_SQL_EVENTS_TABLE",
    "agent_events",
    "at run time",
    "Table or view the sql_events source reads (schema.table allowed).",
)
SQL_EVENTS_COLUMNS = Setting(
    "TRAJECTORY_SQL_EVENTS_COLUMNS",
    "",
    "at run time",
    "sql_events column mapping, e.g. session_id=conversation_id,text=payload.content; empty: same names.",
)
BLAS = Setting(
    "TRAJECTORY_BLAS",
    "auto",
    "at start",
    "BLAS for mlx on a Linux CPU: auto (an optimized one when installed), reference, or a libblas path.",
)
BLAS_REEXEC = Setting(
    "TRAJECTORY_BLAS_REEXEC",
    "",
    "at start",
    "Set by the trajectory-pipeline command in the process it restarts with the BLAS preloaded.",
)
MLX_COMPILE = Setting(
    "TRAJECTORY_MLX_COMPILE",
    "auto",
    "at start",
    "mlx's compilation (mx.compile): auto (off where mlx computes on a Linux x86 CPU), on, off.",
)
REAL_CORPUS = Setting(
    "TRAJECTORY_REAL_CORPUS",
    "../shared/corpus/real",
    "by the tests",
    "The real-transcript corpus; tests that read it skip when it is absent.",
)
REQUIRE_REAL_CORPUS = Setting(
    "TRAJECTORY_REQUIRE_REAL_CORPUS",
    "",
    "by the tests",
    "1: a missing real corpus fails those tests instead of skipping them (.ci/run sets it).",
)
REQUIRE_BLAS = Setting(
    "TRAJECTORY_REQUIRE_BLAS",
    "",
    "by the tests",
    "1: a missing optimized BLAS fails tests/test_blas.py instead of skipping it (.ci/run sets it).",
)
REQUIRE_SERVICES = Setting(
    "TRAJECTORY_REQUIRE_SERVICES",
    "",
    "by the tests",
    "1: a missing S3 server, Redis, Celery or Chromium fails the object-store, distributed, daemon and "
    "UI-backfill tests instead of skipping them (.ci/run sets it).",
)

SETTINGS: tuple[Setting, ...] = (
    DATA_DIR,
    CACHE_DIR,
    START_DATE,
    WINDOW_WEEKS,
    SCHEDULE_TIMEZONE,
    DAILY_CRON,
    WEEKLY_CRON,
    SENSOR_INTERVAL,
    RUN_CONFIG,
    WORKERS,
    BACKFILL_DAYS_PER_RUN,
    EXECUTOR,
    CELERY_BROKER,
    BASE_MODEL,
    REGISTRY_URL,
    SERVE_PORT,
    SOURCE_ROOT,
    SQL_EVENTS_URL,
    SQL_EVENTS_TABLE,
    SQL_EVENTS_COLUMNS,
    BLAS,
    BLAS_REEXEC,
    MLX_COMPILE,
    REAL_CORPUS,
    REQUIRE_REAL_CORPUS,
    REQUIRE_BLAS,
    REQUIRE_SERVICES,
)


def data_dir() -> str:
    value = DATA_DIR.value() or DATA_DIR.default
    if Path(value).expanduser().is_file():  # an object-store URL is no local path: left to storage
        raise DATA_DIR.fail(value, "a file, not a folder: point it at the folder the tables go in.")
    return value


def cache_dir() -> str:
    return CACHE_DIR.value() or CACHE_DIR.default


def start_date() -> dt.date:
    value = START_DATE.value() or START_DATE.default
    try:
        return dt.date.fromisoformat(value)
    except ValueError:
        raise START_DATE.fail(
            value, "not a date like 2025-01-01. Set it to the first day you have sessions for, or unset it."
        ) from None


def window_weeks() -> int:
    value = WINDOW_WEEKS.value() or WINDOW_WEEKS.default
    if not value.isdigit() or int(value) < 1:
        raise WINDOW_WEEKS.fail(value, "use a whole number of weeks, 1 or more (default 12).")
    return int(value)


def schedule_timezone() -> str:
    value = SCHEDULE_TIMEZONE.value() or SCHEDULE_TIMEZONE.default
    try:
        zoneinfo.ZoneInfo(value)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise SCHEDULE_TIMEZONE.fail(
            value, "not an IANA time zone such as UTC or Europe/Berlin. Unset it to schedule in UTC."
        ) from None
    return value


# One item of a cron field: *, */step, N, N-M or N-M/step (names such as MON are not read).
_CRON_ITEM = re.compile(r"(?:\*|(?P<low>\d+)(?:-(?P<high>\d+))?)(?:/(?P<step>\d+))?")
_CRON_FIELDS = (("minute", 0, 59), ("hour", 0, 23), ("day", 1, 31), ("month", 1, 12), ("weekday", 0, 7))


def _cron_problem(fields: list[str]) -> str | None:
    """What makes five cron fields a schedule Dagster refuses at load (a value out of its range,
    a step of 0, a range backwards, a day February never has), or None."""
    for field, (name, lowest, highest) in zip(fields, _CRON_FIELDS, strict=True):
        for item in field.split(","):
            found = _CRON_ITEM.fullmatch(item)
            if found is None:
                return f"the {name} field {field!r} is not a number, a range, * or a step"
            low, high, step = (found.group(key) for key in ("low", "high", "step"))
            values = [int(value) for value in (low, high) if value is not None]
            if any(not lowest <= value <= highest for value in values):
                return f"the {name} field {field!r} is outside {lowest}-{highest}"
            if step is not None and int(step) == 0:
                return f"the {name} field {field!r} has a step of 0"
            if len(values) == 2 and values[0] > values[1]:
                return f"the {name} field {field!r} runs backwards"
    if fields[3] == "2" and all(day.isdigit() and int(day) > 29 for day in fields[2].split(",")):
        return "February has no day " + fields[2]
    return None


def _cron(setting: Setting) -> str:
    value = setting.value() or setting.default
    fields = value.split()
    problem = _cron_problem(fields) if len(fields) == 5 else "it needs five fields"
    if problem is not None:
        raise setting.fail(
            value,
            f"not a cron schedule of five fields (minute hour day month weekday) like "
            f"{setting.default!r}: {problem}.",
        )
    return " ".join(fields)


def daily_cron() -> str:
    return _cron(DAILY_CRON)


def weekly_cron() -> str:
    return _cron(WEEKLY_CRON)


def sensor_interval_seconds() -> int:
    value = SENSOR_INTERVAL.value() or SENSOR_INTERVAL.default
    if not value.isdigit() or int(value) < 1:
        raise SENSOR_INTERVAL.fail(value, "use a whole number of seconds, 1 or more (default 120).")
    return int(value)


def run_config_file() -> Path | None:
    value = RUN_CONFIG.value()
    if not value:
        return None
    path = Path(value).expanduser()
    if not path.is_file():
        raise RUN_CONFIG.fail(
            value, "no such file. Point it at a YAML or JSON file of run config, or unset it."
        )
    return path


def workers() -> int | None:
    """The configured number of worker processes, or None to use one per CPU."""
    value = WORKERS.value()
    if not value:
        return None
    if not value.isdigit() or int(value) < 1:
        raise WORKERS.fail(value, "use a whole number of processes, 1 or more, or unset it.")
    return int(value)


def backfill_days_per_run() -> int | None:
    """Days per run of a daily backfill, or None for the whole range in one run."""
    value = BACKFILL_DAYS_PER_RUN.value()
    if not value:
        return None
    if not value.isdigit() or int(value) < 1:
        raise BACKFILL_DAYS_PER_RUN.fail(value, "use a whole number of days, 1 or more, or unset it.")
    return int(value)


EXECUTORS = ("in_process", "multiprocess", "celery", "k8s")


def executor() -> str:
    value = (EXECUTOR.value() or EXECUTOR.default).lower()
    if value not in EXECUTORS:
        raise EXECUTOR.fail(value, f"use one of {', '.join(EXECUTORS)}, or unset it ({EXECUTOR.default}).")
    return value


def celery_broker() -> str:
    value = CELERY_BROKER.value() or CELERY_BROKER.default
    if "://" not in value:
        raise CELERY_BROKER.fail(value, "not a broker URL such as redis://127.0.0.1:6379/0.")
    return value


def base_model() -> str:
    return BASE_MODEL.value() or BASE_MODEL.default


def registry_url() -> str | None:
    return REGISTRY_URL.value() or None


def port_number(value: str) -> int | None:
    """`value` as a TCP port a server can listen on (1 to 65535), or None when it is not one."""
    return int(value) if value.isdigit() and 1 <= int(value) <= 65535 else None


def serve_port() -> int:
    value = SERVE_PORT.value() or SERVE_PORT.default
    port = port_number(value)
    if port is None:
        raise SERVE_PORT.fail(
            value, f"use a TCP port number from 1 to 65535 (default {SERVE_PORT.default}), or unset it."
        )
    return port


def source_root_variable(source: str) -> str:
    return f"{PREFIX}{source.upper()}_ROOT"


def source_root(source: str, default: str) -> str:
    """A source's root folder: its variable when set (empty turns the source off), else `default`."""
    return Setting(source_root_variable(source), default, SOURCE_ROOT.read, SOURCE_ROOT.help).value()


def sql_events_url() -> str:
    """The sql_events source's SQLAlchemy URL; "" turns it off."""
    return SQL_EVENTS_URL.value()


def sql_events_table() -> str:
    return SQL_EVENTS_TABLE.value() or SQL_EVENTS_TABLE.default


def sql_events_columns() -> str:
    return SQL_EVENTS_COLUMNS.value()


MLX_COMPILE_CHOICES = ("auto", "on", "off")


def mlx_compile() -> str:
    value = MLX_COMPILE.value() or MLX_COMPILE.default
    if value.lower() not in MLX_COMPILE_CHOICES:
        raise MLX_COMPILE.fail(
            value, "use auto (off where mlx computes on a Linux x86 CPU), on or off; unset means auto."
        )
    return value.lower()


def real_corpus() -> Path:
    value = REAL_CORPUS.value() or REAL_CORPUS.default
    path = Path(value).expanduser()
    return path if path.is_absolute() else (CHECKOUT / path).resolve()


def require_real_corpus() -> bool:
    return REQUIRE_REAL_CORPUS.value() not in ("", "0")


def require_blas() -> bool:
    return REQUIRE_BLAS.value() not in ("", "0")


def require_services() -> bool:
    return REQUIRE_SERVICES.value() not in ("", "0")


def table() -> str:
    """The README's settings table."""
    lines = ["| variable | default | read | meaning |", "| --- | --- | --- | --- |"]
    for setting in SETTINGS:
        default = f"`{setting.default}`" if setting.default else "(empty)"
        lines.append(f"| `{setting.name}` | {default} | {setting.read} | {setting.help} |")
    return "\n".join(lines)
