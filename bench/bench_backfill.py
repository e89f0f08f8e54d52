"""What a run per day costs: a backfill of N daily partitions as one run over the range, against N runs.

Both ways ingest the same days of a generated sample corpus through `daily_ingest_job` (raw_sessions
→ ... → rendered_splits) into a fresh SQLite instance (a temporary DAGSTER_HOME holding the
project's dagster.yaml) and warehouse:

- in process: the job's `execute_in_process`, once with the range tags, or once per day. The gap is
  Dagster's own per-run work (run record, event log, step orchestration, IO manager calls) alone.
- as processes: the documented command, `dagster asset materialize --partition-range A...B`, or
  `--partition D` once per day. Each is a fresh process that loads the code location and runs the
  steps on the executor `TRAJECTORY_EXECUTOR` names (in its own process by default; a child process
  per step with `multiprocess`), as a run the daemon launches does; that start-up is what a run per
  day repeats.

Overhead per partition = (time of N runs - time of one range run) / N. Medians of `--repeat`
interleaved measurements; the section `bench_backfill` of bench/RESULTS.md is rewritten.

    .venv/bin/python bench/bench_backfill.py                       # 7 days in process, 3 as processes
    .venv/bin/python bench/bench_backfill.py --days 14 --process-days 7 --repeat 3
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from sections import write_section  # bench/sections.py, beside this script

from trajectory_pipeline.sample.corpus import SOURCE_FOLDERS, CorpusSpec, generate_corpus

REPO = Path(__file__).resolve().parents[1]

END = dt.date(2026, 11, 22)
SOURCES = ("claude_code", "codex", "own_agent", "chat_jsonl", "gemini_cli", "swe_agent", "aider")
RANGE_START, RANGE_END = "dagster/asset_partition_range_start", "dagster/asset_partition_range_end"


def source_roots(corpus: Path) -> dict[str, str]:
    """Every source root: the corpus's folders, the rest off, so nothing outside the corpus is read."""
    return {
        source: str(corpus / SOURCE_FOLDERS[source]) if source in SOURCE_FOLDERS else "" for source in SOURCES
    }


def fresh_home(scratch: Path) -> Path:
    """An empty Dagster instance folder with the project's instance config (SQLite storage)."""
    home = Path(tempfile.mkdtemp(prefix="home-", dir=scratch))
    shutil.copy(REPO / "dagster.yaml", home / "dagster.yaml")
    return home


def in_process(corpus: Path, days: list[str], scratch: Path, single: bool) -> float:
    """Seconds to ingest `days` with execute_in_process: one range run, or a run per day."""
    import dagster as dg

    from assets.automation import daily_ingest_job
    from assets.definitions import defs
    from resources.parquet_io_manager import ParquetIOManager
    from resources.session_sources import SessionSources

    home = fresh_home(scratch)
    os.environ["DAGSTER_HOME"] = str(home)  # dagster.yaml reads its storage folder from it
    local = dg.Definitions(
        assets=defs.assets,
        jobs=[daily_ingest_job],
        resources={
            **(defs.resources or {}),
            "io_manager": ParquetIOManager(base_dir=str(home / "warehouse")),
            "session_sources": SessionSources(
                **{f"{source}_root": root for source, root in source_roots(corpus).items()}
            ),
        },
    )
    job = local.resolve_job_def("daily_ingest_job")
    quiet = {"loggers": {"console": {"config": {"log_level": "ERROR"}}}}  # the event log still gets all
    with dg.DagsterInstance.from_config(str(home)) as instance:
        started = time.perf_counter()
        if single:
            tags = {RANGE_START: days[0], RANGE_END: days[-1]}
            results = [job.execute_in_process(quiet, instance=instance, tags=tags)]
        else:
            results = [job.execute_in_process(quiet, instance=instance, partition_key=day) for day in days]
        seconds = time.perf_counter() - started
        assert all(result.success for result in results)
        ingested = instance.get_materialized_partitions(dg.AssetKey("rendered_splits"))
        assert ingested == set(days), f"expected {days} ingested, got {sorted(ingested)}"
    return seconds


def as_processes(corpus: Path, days: list[str], scratch: Path, single: bool) -> float:
    """Seconds to ingest `days` with the CLI: one --partition-range run, or a --partition run per day."""
    home = fresh_home(scratch)
    env = {
        **os.environ,
        "DAGSTER_HOME": str(home),
        "TRAJECTORY_DATA_DIR": str(home / "warehouse"),
        "PYTHONWARNINGS": "ignore",
        **{f"TRAJECTORY_{source.upper()}_ROOT": root for source, root in source_roots(corpus).items()},
    }
    base = [str(Path(sys.executable).parent / "dagster"), "asset", "materialize"]
    base += ["-m", "assets.definitions", "--select", "group:ingest"]
    commands = (
        [[*base, "--partition-range", f"{days[0]}...{days[-1]}"]]
        if single
        else [[*base, "--partition", day] for day in days]
    )
    started = time.perf_counter()
    for command in commands:
        done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True)
        if done.returncode:
            raise RuntimeError(f"{' '.join(command)} failed:\n{done.stderr[-3000:]}")
    return time.perf_counter() - started


def measure(
    way: Callable[[Path, list[str], Path, bool], float], corpus: Path, days: list[str], repeat: int
) -> dict[str, float]:
    """Medians of `repeat` interleaved (range run, run per day) pairs."""
    single, per_day = [], []
    for _ in range(repeat):
        with tempfile.TemporaryDirectory(prefix="bench-backfill-") as scratch:
            single.append(way(corpus, days, Path(scratch), True))
            per_day.append(way(corpus, days, Path(scratch), False))
    one, many = statistics.median(single), statistics.median(per_day)
    return {"days": len(days), "single": one, "per_day": many, "overhead": (many - one) / len(days)}


def last_days(count: int) -> list[str]:
    return [(END - dt.timedelta(days=count - 1 - n)).isoformat() for n in range(count)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=7, help="days backfilled in process")
    parser.add_argument("--process-days", type=int, default=3, help="days backfilled as CLI processes")
    parser.add_argument("--sessions", type=int, default=2, help="sessions per source per day")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--results", type=Path, default=REPO / "bench" / "RESULTS.md")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="bench-backfill-corpus-") as folder:
        corpus = Path(folder)
        span = max(args.days, args.process_days)
        generate_corpus(corpus, CorpusSpec(days=span, end_date=END, sessions_per_day=args.sessions))
        with tempfile.TemporaryDirectory(prefix="bench-backfill-warmup-") as scratch:
            in_process(corpus, last_days(1), Path(scratch), True)  # imports and first-run caches
        inside = measure(in_process, corpus, last_days(args.days), args.repeat)
        outside = measure(as_processes, corpus, last_days(args.process_days), args.repeat)

    text = report(args, inside, outside)
    print(text)
    write_section(args.results, "bench_backfill", text)
    return 0


def report(args: argparse.Namespace, inside: dict[str, float], outside: dict[str, float]) -> str:
    rows = [
        ("in process (`execute_in_process`)", inside),
        ("as processes (`dagster asset materialize`)", outside),
    ]
    lines = [
        f"## Backfill: one run over a range against a run per day ({dt.date.today()}, "
        f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()})",
        "",
        f"`python bench/bench_backfill.py --days {args.days} --process-days {args.process_days} "
        f"--sessions {args.sessions} --repeat {args.repeat}`",
        "",
        f"`daily_ingest_job` over the last days of a sample corpus ({args.sessions} sessions per source "
        f"per day), each time into a fresh SQLite instance; medians of {args.repeat} interleaved runs.",
        "",
        "| how | days | one range run, s | a run per day, s | overhead per partition of a run per day, s |",
        "| --- | --- | --- | --- | --- |",
        *(
            f"| {name} | {r['days']:.0f} | {r['single']:.2f} | {r['per_day']:.2f} | {r['overhead']:.2f} |"
            for name, r in rows
        ),
        "",
        f"Each extra run repeats {inside['overhead']:.2f} s of Dagster's run bookkeeping in process, and "
        f"{outside['overhead']:.2f} s as a process (loading the code location, a child process per step), "
        f"which a range run pays once: {365 * outside['overhead'] / 3600:.1f} h over a year of days. "
        "The ingest assets therefore use `BackfillPolicy.single_run()`.",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
