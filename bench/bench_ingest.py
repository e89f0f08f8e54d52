"""Ingest, mine and cut decision points over a 1 GB corpus against the floor of just parsing it,
and peak memory on that corpus and on one 4x larger.

The floor reads every JSONL line of the corpus and parses it with orjson in one loop, one core:
nothing that reads the data can beat it. The pipeline is what a backfill of `raw_sessions`,
`mined_trajectories` and `decision_points` runs over every day of the corpus, through the same
core functions and on all cores: `ingest_days` (list, parse, redact, write Parquet), then
`mine_days` and `cut_days` (each day read back, mined or cut, and written). Each measurement is
its own process, and runs alternate so both sides see the same machine load. Timed runs have
nothing watching them; peak memory comes from one more run of each, sampled over the process
*and its workers* together (sampling slows a run: bench/chain.py).

    python bench/bench_ingest.py --sessions 500 --days 40 --scale 4 --repeat 3
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

# bench/chain.py, beside this script
from chain import FLOOR_FRACTION_TARGET, PEAK_TARGET_MIB, core_chain, floor, memory_met, watched
from sections import write_section  # bench/sections.py, beside this script

from trajectory_pipeline.sample.corpus import SOURCE_FOLDERS, CorpusSpec, generate_corpus

END = dt.date(2026, 11, 22)


def pipeline(corpus: Path, days: int, workers: int, out: Path) -> dict[str, float]:
    """raw_sessions, mined_trajectories and decision_points over every day, as a backfill runs them."""
    from trajectory_pipeline.ingest.days import SourceRoot

    roots = [SourceRoot(source, corpus / sub) for source, sub in SOURCE_FOLDERS.items()]
    dates = [END - dt.timedelta(days=offset) for offset in range(days - 1, -1, -1)]
    return core_chain(roots, dates, workers, out)


def measure(
    kind: str, corpus: Path, days: int, workers: int, scratch: Path, memory: bool
) -> dict[str, float]:
    """One measurement in a child process; with `memory`, peak PSS is sampled over it and its
    workers together (and its timings, slowed by the sampling, are not the bench's)."""
    out = Path(tempfile.mkdtemp(prefix="bench-ingest-out-", dir=scratch))
    command = [sys.executable, __file__, "--child", kind, "--corpus", str(corpus), "--days", str(days)]
    command += ["--workers", str(workers), "--out", str(out)]
    _, peak_mib, stdout, _, status = watched(command, memory=memory)
    shutil.rmtree(out, ignore_errors=True)
    if status != 0:
        raise SystemExit(f"{kind} run failed with exit status {status}")
    result = json.loads(stdout.strip().splitlines()[-1])
    return {**result, "peak_tree_mib": peak_mib} if memory else result


def corpus_for(scratch: Path, name: str, days: int, sessions: int) -> tuple[Path, float, float]:
    """The corpus (made unless already there), its size in MB and the seconds it took to make."""
    corpus = scratch / name
    started = time.perf_counter()
    if not (corpus / ".sample-corpus.json").exists():
        spec = CorpusSpec(days=days, end_date=END, sessions_per_day=sessions)
        generate_corpus(corpus, spec, workers=os.cpu_count() or 1)  # its sources side by side
    made = time.perf_counter() - started
    size = sum(path.stat().st_size for path in corpus.rglob("*.jsonl")) / 1e6
    return corpus, size, made


def child_main(args: argparse.Namespace) -> int:
    import resource

    if args.child == "floor":
        result = floor(sorted(args.corpus.rglob("*.jsonl")))
    else:
        result = pipeline(args.corpus, args.days, args.workers, args.out)
    result["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    result["peak_worker_rss_mib"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(json.dumps(result))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=500, help="sessions per source per day")
    parser.add_argument("--days", type=int, default=40, help="days of the main corpus (40: about 1 GB)")
    parser.add_argument("--scale", type=int, default=4, help="memory run: days times this")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--scratch", type=Path, help="where corpora and outputs go (kept when given)")
    parser.add_argument("--results", type=Path, default=Path("bench/RESULTS.md"))
    parser.add_argument("--child", choices=("floor", "pipeline"), help=argparse.SUPPRESS)
    parser.add_argument("--corpus", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child_main(args)

    scratch = args.scratch or Path(tempfile.mkdtemp(prefix="bench-ingest-"))
    scratch.mkdir(parents=True, exist_ok=True)
    try:
        report = run(args, scratch)
    finally:
        if args.scratch is None:
            shutil.rmtree(scratch, ignore_errors=True)
    print(report)
    write_section(args.results, "bench_ingest", report)
    return 0


def run(args: argparse.Namespace, scratch: Path) -> str:
    corpus, size, made = corpus_for(scratch, f"corpus-{args.days}d", args.days, args.sessions)
    print(f"corpus: {size:.0f} MB in {made:.0f} s", flush=True)
    runs: dict[str, list[dict[str, float]]] = {"floor": [], "pipeline": []}
    for _ in range(args.repeat):  # alternating, so both see the same machine load
        for kind in runs:
            runs[kind].append(measure(kind, corpus, args.days, args.workers, scratch, memory=False))
            print(kind, json.dumps(runs[kind][-1]), flush=True)
    peaks = {kind: measure(kind, corpus, args.days, args.workers, scratch, memory=True) for kind in runs}
    print("memory", json.dumps({kind: run["peak_tree_mib"] for kind, run in peaks.items()}), flush=True)
    big_days = args.days * args.scale
    big, big_size, big_made = corpus_for(scratch, f"corpus-{big_days}d", big_days, args.sessions)
    print(f"corpus x{args.scale}: {big_size:.0f} MB in {big_made:.0f} s", flush=True)
    large = measure("pipeline", big, big_days, args.workers, scratch, memory=True)
    print("pipeline x4", json.dumps(large), flush=True)

    def med(kind: str, key: str) -> float:
        return statistics.median(r[key] for r in runs[kind])

    seconds, floor_seconds = med("pipeline", "seconds"), med("floor", "seconds")
    first = runs["pipeline"][0]
    ratio = floor_seconds / seconds
    peak = peaks["pipeline"]["peak_tree_mib"]
    flat, met = memory_met(peak, large["peak_tree_mib"])
    largest = max(large["peak_rss_mib"], large["peak_worker_rss_mib"])
    lines = [
        f"## Ingest, mine, cut: throughput and memory ({dt.date.today()}, {platform.machine()}, "
        f"{os.cpu_count()} cores, Python {platform.python_version()})",
        "",
        f"`python bench/bench_ingest.py --sessions {args.sessions} --days {args.days} "
        f"--scale {args.scale} --repeat {args.repeat} --workers {args.workers}`",
        "",
        f"Corpus: {size:,.0f} MB of JSONL, {runs['floor'][0]['lines']:,.0f} lines, {args.days} days of "
        f"{args.sessions} sessions per source; medians of {args.repeat} alternating runs, each in a fresh "
        f"process with nothing sampling it. The pipeline runs on {args.workers} worker processes; peak "
        "memory comes from one more run of each path, sampled every 50 ms over its process and its "
        "workers together, as their summed proportional set size (PSS: shared library pages counted "
        "once; the sampling costs the kernel about a fifth of a core, so those runs are not timed, "
        f"the {args.scale}x row excepted).",
        "",
        "| path | seconds | MB/s | rows/s | peak memory, all processes (PSS), MiB |",
        "| --- | --- | --- | --- | --- |",
        f"| orjson floor (one loop, one core) | {floor_seconds:.2f} | {size / floor_seconds:.0f} | "
        f"{runs['floor'][0]['lines'] / floor_seconds:,.0f} lines/s | "
        f"{peaks['floor']['peak_tree_mib']:.0f} |",
        f"| pipeline: ingest + mine + cut | {seconds:.2f} | {size / seconds:.1f} | "
        f"{first['rows'] / seconds:,.0f} events/s | {peak:.0f} |",
        f"| ↳ ingest_days (parse, redact, write) | {med('pipeline', 'ingest_seconds'):.2f} | "
        f"{size / med('pipeline', 'ingest_seconds'):.1f} | "
        f"{first['rows'] / med('pipeline', 'ingest_seconds'):,.0f} events/s | |",
        f"| ↳ mine_days | {med('pipeline', 'mining_seconds'):.2f} | | "
        f"{first['rows'] / med('pipeline', 'mining_seconds'):,.0f} events/s | |",
        f"| ↳ cut_days (decision points) | {med('pipeline', 'decision_seconds'):.2f} | | "
        f"{first['rows'] / med('pipeline', 'decision_seconds'):,.0f} events/s | |",
        f"| pipeline on the {args.scale}x corpus ({big_size:,.0f} MB, {big_days} days, "
        "one run, memory sampled) | "
        f"{large['seconds']:.2f} | {big_size / large['seconds']:.1f} | "
        f"{large['rows'] / large['seconds']:,.0f} events/s | {large['peak_tree_mib']:.0f} |",
        "",
        f"{first['rows']:,.0f} events ({first['quarantined']:,.0f} lines quarantined), "
        f"{first['attempts']:,.0f} attempts, {first['decisions']:,.0f} decision points.",
        "",
        f"**Pipeline / floor throughput: {ratio:.3f}** (target ≥ {FLOOR_FRACTION_TARGET:.3f} on both cores: "
        f"{'met' if ratio >= FLOOR_FRACTION_TARGET else 'not met'}).",
        "",
        f"**Peak memory, {args.scale}x corpus / 1x: {flat:.2f}** ({large['peak_tree_mib']:.0f} MiB against "
        f"{peak:.0f} MiB; target ≤ {PEAK_TARGET_MIB} MiB at both, flat: "
        f"{'met' if met else 'not met'}). "
        f"The largest single process peaked at {largest:.0f} MiB RSS (its shared libraries included).",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
