"""What the ingest benches share: the orjson floor, the daily chain's core, and memory as PSS.

floor(paths)                              # read and orjson-parse every line: nothing can beat it
core_chain(roots, dates, workers, out)    # raw_sessions, mined_trajectories, decision_points
resident(psutil.Process(pid))             # bytes: PSS on Linux, RSS elsewhere
memory_met(peak_1x, peak_4x)              # (4x / 1x, met): at most 512 MiB at both, and flat
watched(command)                          # wall s, peak PSS of its process tree (MiB), output
watched(command, memory=False)            # the same, nothing sampled: run as a user runs it

Speed and memory come from separate runs: reading a process tree's PSS every 50 ms makes the
kernel walk each process's page tables, about a fifth of a core for a CLI range run and its
workers, which the run then lacks (a 20-day `dagster asset materialize` took 11-16 % longer
while `watched`, the core chain 7 %). So the benches time runs with `memory=False` and take the
peak from one more run of each path.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import subprocess
import threading
import time
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

MIB = 1024 * 1024
# Issue 17's throughput target for a backfill: at least this fraction of the orjson floor's
# throughput on the same files, so a run may take the floor's time divided by it.
FLOOR_FRACTION_TARGET = 1 / 3
# Issue 17's memory target for a backfill, at 1x and 4x its corpus: peak PSS of all its processes
# at most this, and the larger run's peak within FLAT_WITHIN times the smaller's.
PEAK_TARGET_MIB = 512
FLAT_WITHIN = 1.25


def memory_met(peak_1x: float, peak_large: float) -> tuple[float, bool]:
    """The larger corpus's peak over the 1x one's, and whether both meet the target
    (`PEAK_TARGET_MIB`, flat)."""
    flat = peak_large / peak_1x if peak_1x > 0 else float("inf")
    return flat, max(peak_1x, peak_large) <= PEAK_TARGET_MIB and flat < FLAT_WITHIN


def floor(paths: Iterable[Path]) -> dict[str, float]:
    """Read and orjson-parse every line of `paths` in one loop on one core."""
    import orjson

    started, lines = time.perf_counter(), 0
    for path in paths:
        with open(path, "rb") as handle:
            for line in handle:
                with contextlib.suppress(orjson.JSONDecodeError):
                    orjson.loads(line)
                lines += 1
    return {"seconds": time.perf_counter() - started, "lines": lines}


def core_chain(roots: list[Any], dates: list[dt.date], workers: int, out: Path) -> dict[str, float]:
    """raw_sessions, mined_trajectories and decision_points over every day of `dates` through the
    core functions (no Dagster), as a backfill runs them: `ingest_days` (list, parse, redact, write
    Parquet), then `mine_days` and `cut_days` (each day read back, mined or cut, and written)."""
    from trajectory_pipeline.day_stages import DayEvents, cut_days, mine_days
    from trajectory_pipeline.decisions.points import DecisionConfig
    from trajectory_pipeline.ingest.days import candidate_files, ingest_days
    from trajectory_pipeline.mining.attempts import MiningConfig

    started = time.perf_counter()
    outputs = {day: (out / f"events-{day}.parquet", out / f"quarantine-{day}.parquet") for day in dates}
    stats = ingest_days(roots, outputs, files=candidate_files(roots), workers=workers)
    ingested = time.perf_counter()
    parts = [DayEvents(day.isoformat(), (str(outputs[day][0]),)) for day in dates]
    attempts = sum(day.rows for day in mine_days(parts, MiningConfig(), out, workers))
    mined = time.perf_counter()
    parts = [replace(part, attempt_files=(str(out / f"mined-{part.key}.parquet"),)) for part in parts]
    decisions = sum(day.rows for day in cut_days(parts, DecisionConfig(), out, workers))
    finished = time.perf_counter()
    return {
        "seconds": finished - started,
        "ingest_seconds": ingested - started,
        "mining_seconds": mined - ingested,
        "decision_seconds": finished - mined,
        "rows": sum(day.rows for day in stats.values()),
        "quarantined": sum(day.quarantined.total() for day in stats.values()),
        "attempts": attempts,
        "decisions": decisions,
    }


def resident(process: object) -> int:
    """Proportional set size where the OS tells it (Linux): pages shared by the run's processes
    (the Python, NumPy and Arrow libraries each maps) count once, as the machine pays for them;
    plain RSS elsewhere."""
    try:
        return int(process.memory_full_info().pss)  # type: ignore[attr-defined]
    except (AttributeError, NotImplementedError):
        return int(process.memory_info().rss)  # type: ignore[attr-defined]


def watched(
    command: list[str], env: dict[str, str] | None = None, cwd: Path | None = None, memory: bool = True
) -> tuple[float, float, str, str, int]:
    """Run `command`; its wall seconds, the peak PSS of its process tree in MiB (sampled every 50 ms
    over the process and all its children together; 0 without `memory`), stdout, stderr and exit
    status. Time a run without `memory`: the sampling slows it (see the module docstring)."""
    if not memory:
        started = time.perf_counter()
        done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, check=False)
        return time.perf_counter() - started, 0.0, done.stdout, done.stderr, done.returncode
    import psutil

    started = time.perf_counter()
    child = subprocess.Popen(
        command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    peak = 0
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        parent = psutil.Process(child.pid)
        while not done.is_set():
            with contextlib.suppress(psutil.Error):
                total = 0
                for process in [parent, *parent.children(recursive=True)]:
                    with contextlib.suppress(psutil.Error):
                        total += resident(process)
                peak = max(peak, total)
            done.wait(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    stdout, stderr = child.communicate()
    seconds = time.perf_counter() - started
    done.set()
    sampler.join()
    return seconds, peak / MIB, stdout, stderr, child.returncode
