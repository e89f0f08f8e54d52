"""Incremental cost: re-materializing one day of a 60-day corpus should cost about one day of work.

    python bench/bench_incremental.py --days 60 --sessions 8 --repeat 3

Generates the corpus once, then times, alternating, (a) one day through the daily chain's core
(list the sources, `ingest_day`, mining, decision points, render and split), as re-materializing
one `raw_sessions` … `rendered_splits` partition does, and (b) all days the same way (listing
once). The ratio (a) / ((b) / days) is 1 when a day costs a day, `days` when it costs the corpus.
Writes its section of bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import platform
import statistics
import tempfile
import time
from pathlib import Path

from sections import write_section  # bench/sections.py, beside this script

from trajectory_pipeline.sample.corpus import SOURCE_FOLDERS, CorpusSpec, generate_corpus

END = dt.date(2026, 11, 22)


def chain(corpus: Path, days: list[dt.date], out: Path) -> float:
    """Seconds to list the sources once and run every given day through the daily core."""
    import pandas as pd

    from trajectory_pipeline.dataset.render import RenderConfig
    from trajectory_pipeline.dataset.splits import select
    from trajectory_pipeline.decisions.points import extract_decision_points, learnable
    from trajectory_pipeline.ingest.days import SourceRoot, candidate_files, ingest_day
    from trajectory_pipeline.mining.attempts import mine_trajectories

    roots = [SourceRoot(source, corpus / sub) for source, sub in SOURCE_FOLDERS.items()]
    started = time.perf_counter()
    files = candidate_files(roots)
    for day in days:
        events_path = out / f"e-{day}.parquet"
        ingest_day(roots, day, events_path, out / f"q-{day}.parquet", files=files)
        events = pd.read_parquet(events_path)
        points, _ = learnable(extract_decision_points(events, mine_trajectories(events)))
        select(points, RenderConfig())
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=60)
    parser.add_argument("--sessions", type=int, default=8, help="sessions per day")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--results", type=Path, default=Path("bench/RESULTS.md"))
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="bench-incremental-"))
    spec = CorpusSpec(days=args.days, end_date=END, sessions_per_day=args.sessions, seed=3)
    summary = generate_corpus(work / "corpus", spec)
    all_days = [END - dt.timedelta(days=offset) for offset in range(args.days)]
    one, every = [], []
    for run in range(args.repeat):
        one.append(chain(work / "corpus", [END], work / f"one-{run}"))
        every.append(chain(work / "corpus", all_days, work / f"all-{run}"))
    one_day, all_of_them = statistics.median(one), statistics.median(every)
    ratio = one_day / (all_of_them / args.days)
    text = "\n".join(
        [
            f"## Incremental cost ({dt.date.today()}, {platform.machine()}, "
            f"Python {platform.python_version()})",
            "",
            f"`python bench/bench_incremental.py --days {args.days} --sessions {args.sessions} "
            f"--repeat {args.repeat}`",
            "",
            f"Corpus: {args.days} days, {summary.sessions} sessions in {summary.files} files; medians of "
            f"{args.repeat} alternating runs of the daily chain's core (list, ingest, mine, decision "
            "points, render and split).",
            "",
            "| what | seconds |",
            "| --- | --- |",
            f"| one day (the last) | {one_day:.2f} |",
            f"| all {args.days} days | {all_of_them:.2f} |",
            f"| an average day of the full run | {all_of_them / args.days:.3f} |",
            "",
            f"**One day / an average day: {ratio:.2f}** (1 = a day costs a day; {args.days} = it costs "
            "the corpus). What grows with the corpus is the listing of every source file (a stat and "
            "a head read each), done once per run.",
        ]
    )
    print(text)
    write_section(args.results, "bench_incremental", text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
