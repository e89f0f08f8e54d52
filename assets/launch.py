"""`trajectory-pipeline materialize`: assets for a day, a week or a range of them, in one run.

It runs in this process against the real instance (`DAGSTER_HOME`), so the run, its metadata and
its checks show up in `make ui`. Its steps run in this process too, whatever `TRAJECTORY_EXECUTOR`
says (the command says so when it is set otherwise): `dagster asset materialize`, the UI and the
daemon's runs use that executor. Unlike `dagster asset materialize`, a partition key
that does not exist yet (before `TRAJECTORY_START_DATE`, or a day that is not over) is one line
that says what to change, not a traceback, and Dagster's notices about its own beta APIs stay out
of the way.

    trajectory-pipeline materialize --select raw_sessions,raw_sessions_quarantine --partition 2026-11-20
    trajectory-pipeline materialize --select decision_points --partition-range 2026-11-09...2026-11-22
    trajectory-pipeline materialize --job weekly_retrain_job --partition 2026-11-15 --config run.yaml
"""

from __future__ import annotations

import datetime as dt
import re
import sys
from pathlib import Path
from typing import Any

import dagster as dg
import yaml

from assets.definitions import defs
from assets.instance import dagster_home, reap_dead_runs
from assets.partitions import START_DATE
from trajectory_pipeline import settings

RANGE_SEPARATOR = "..."
DAY_KEY = re.compile(r"\d{4}-\d{2}-\d{2}")


class LaunchError(ValueError):
    """What the user asked for cannot run; the message says what to change."""


def partition_problem(key: str, partitions: dg.PartitionsDefinition, now: dt.datetime) -> str | None:
    """Why `key` is not a partition of `partitions` yet, in one line, or None when it is one."""
    if key in partitions.get_partition_keys(current_time=now):
        return None
    try:
        day = dt.date.fromisoformat(key) if DAY_KEY.fullmatch(key) else None
    except ValueError:
        day = None
    if day is None:
        return f"{key!r} is not a partition key: write a UTC day as YYYY-MM-DD"
    if day.isoformat() < START_DATE:
        return (
            f"{key} is before the first partition, {START_DATE}: set {settings.START_DATE.name} "
            f"to {key} or earlier to include it"
        )
    if isinstance(partitions, dg.WeeklyPartitionsDefinition) and day.weekday() != 6:
        sunday = day - dt.timedelta(days=(day.weekday() + 1) % 7)
        return f"{key} is not a week's key: weeks run Sunday to Sunday (UTC); the week holding it is {sunday}"
    today = now.astimezone(dt.UTC).date()
    return (
        f"{key} is not over yet (today is {today} UTC): a partition exists once its UTC day "
        "(or week) has ended"
    )


def _keys(partition: str | None, partition_range: str | None) -> tuple[str, str]:
    if (partition is None) == (partition_range is None):
        raise LaunchError("give either --partition DAY or --partition-range FIRST...LAST")
    if partition is not None:
        return partition, partition
    first, separator, last = (partition_range or "").partition(RANGE_SEPARATOR)
    if not separator or not first or not last:
        raise LaunchError(f"--partition-range {partition_range!r}: write it as FIRST{RANGE_SEPARATOR}LAST")
    return first, last


def _selection(select: str | None, job: str | None) -> tuple[dg.JobDefinition, list[dg.AssetKey] | None]:
    if (select is None) == (job is None):
        raise LaunchError("give either --select ASSET[,ASSET...] or --job NAME")
    if job is not None:
        names = [name for name in (j.name for j in defs.resolve_all_job_defs()) if not name.startswith("__")]
        if job not in names:
            raise LaunchError(f"no job {job!r}; the jobs are {', '.join(sorted(names))}")
        return defs.resolve_job_def(job), None
    keys = [dg.AssetKey(name.strip()) for name in (select or "").split(",") if name.strip()]
    known = {spec.key for spec in defs.resolve_all_asset_specs()}
    unknown = [key.to_user_string() for key in keys if key not in known]
    if unknown or not keys:
        names = sorted(key.to_user_string() for key in known)
        raise LaunchError(
            f"no asset {', '.join(unknown) or '(none given)'}; the assets are {', '.join(names)}"
        )
    # One step makes both halves of raw_sessions/raw_sessions_quarantine: selecting one runs both.
    for key in list(keys):
        assets_def = defs.resolve_assets_def(key)
        if not assets_def.can_subset:
            keys += [twin for twin in sorted(assets_def.keys) if twin not in keys]
    return defs.resolve_implicit_global_asset_job_def(), keys


def _check_config(
    run_config: dict[str, Any], job_def: dg.JobDefinition, keys: list[dg.AssetKey] | None
) -> None:
    """An `ops:` entry this run has no step for would be ignored without a word: refuse it."""
    ops = run_config.get("ops") or {}
    if not isinstance(ops, dict):
        raise LaunchError(f"--config: ops is a mapping of step names, got {type(ops).__name__}")
    if keys is None:
        steps = set(job_def.graph.node_names())
    else:
        steps = {defs.resolve_assets_def(key).node_def.name for key in keys}
    stray = sorted(set(ops) - steps)
    if stray:
        raise LaunchError(
            f"--config: this run has no step {', '.join(stray)}; its steps are {', '.join(sorted(steps))}"
        )


def _config_problem(err: dg.DagsterInvalidConfigError) -> str:
    """Dagster's config errors, one per line, without its traceback."""
    return "--config: " + "; ".join(error.message.replace("\n", " ") for error in err.errors)


def load_run_config(path: str | None) -> dict[str, Any]:
    """The run config in a YAML (or JSON) file, as the launchpad takes it; {} without one."""
    if path is None:
        return {}
    try:
        loaded = yaml.safe_load(Path(path).expanduser().read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as err:
        raise LaunchError(f"--config {path}: {err}") from None
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        raise LaunchError(
            f"--config {path}: a run config is a mapping (ops:, resources:), got {type(loaded).__name__}"
        )
    return loaded


def materialize(
    select: str | None,
    job: str | None,
    partition: str | None,
    partition_range: str | None,
    config: str | None = None,
) -> dg.ExecuteInProcessResult:
    """Check the request, then run it: one run for the whole range (the assets' backfill policy)."""
    run_config = load_run_config(config)
    job_def, keys = _selection(select, job)
    first, last = _keys(partition, partition_range)
    if keys is None:
        partitions = job_def.partitions_def
    else:
        found = {defs.resolve_assets_def(key).partitions_def for key in keys}
        if len(found) > 1:
            raise LaunchError("select daily and weekly assets in separate runs: their partitions differ")
        partitions = found.pop()
    if partitions is None:
        raise LaunchError("the selection is not partitioned: drop --partition")
    now = dt.datetime.now(dt.UTC)
    for key in dict.fromkeys((first, last)):
        problem = partition_problem(key, partitions, now)
        if problem:
            raise LaunchError(problem)
    if first > last:
        raise LaunchError(
            f"--partition-range {first}{RANGE_SEPARATOR}{last}: the first key comes after the last"
        )
    if first != last and isinstance(partitions, dg.WeeklyPartitionsDefinition):
        raise LaunchError(
            f"--partition-range {first}{RANGE_SEPARATOR}{last}: a week's training and eval run one week "
            "at a time; give --partition WEEK for each week in turn"
        )
    _check_config(run_config, job_def, keys)
    settings.data_dir()  # a data folder that is a file: one line here, not a failed step's stack
    tags = {"dagster/asset_partition_range_start": first, "dagster/asset_partition_range_end": last}
    executor = settings.executor()
    if executor != "in_process":
        print(
            f"trajectory-pipeline materialize: the steps run in this process; {settings.EXECUTOR.name}="
            f"{executor} applies to runs that dagster asset materialize, the UI or the "
            "daemon launch",
            file=sys.stderr,
        )
    dagster_home()
    with dg.DagsterInstance.get() as instance:
        # No daemon needed: runs killed earlier (their worker gone) are failed and their
        # concurrency slots freed, so this run does not wait for them for ever.
        for run_id in reap_dead_runs(instance):
            print(f"trajectory-pipeline materialize: run {run_id} was killed; marked failed", file=sys.stderr)
        try:
            return job_def.execute_in_process(
                instance=instance,
                asset_selection=keys,
                tags=tags,
                run_config=run_config,
                raise_on_error=False,
            )
        except dg.DagsterInvalidConfigError as err:
            raise LaunchError(_config_problem(err)) from None


def run(
    select: str | None,
    job: str | None,
    partition: str | None,
    partition_range: str | None,
    config: str | None = None,
) -> int:
    """The command: 0 when the run succeeded, 1 when it failed (Dagster logged why), 2 for a bad request."""
    try:
        result = materialize(select, job, partition, partition_range, config)
    except (LaunchError, settings.SettingError) as err:
        print(f"trajectory-pipeline materialize: {err}", file=sys.stderr)
        return 2
    print(f"run {result.run_id}: {'succeeded' if result.success else 'FAILED'}")
    return 0 if result.success else 1
