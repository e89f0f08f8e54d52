"""Ingestion throughput and peak memory on a generated corpus, against the floor of just parsing it.

The floor reads every JSONL line of the corpus and parses it with orjson in one
loop: no pipeline can beat it. The pipeline run ingests every day of the corpus
(parse, redact, write Parquet) exactly as `raw_sessions` does. Each runs in its
own process, so its peak RSS is its own; each is repeated and the median kept.

    python bench/bench_ingest.py --sessions 300 --days 14 --repeat 3
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from sections import write_section  # bench/sections.py, beside this script

from trajectory_pipeline.sample_corpus import SOURCE_FOLDERS, CorpusSpec, generate_corpus

END = dt.date(2026, 11, 22)


def floor(corpus: Path) -> dict[str, float]:
    import orjson

    started, lines = time.perf_counter(), 0
    for path in sorted(corpus.rglob("*.jsonl")):
        with open(path, "rb") as handle:
            for line in handle:
                with contextlib.suppress(orjson.JSONDecodeError):
                    orjson.loads(line)
                lines += 1
    return {"seconds": time.perf_counter() - started, "lines": lines}


def pipeline(corpus: Path, days: int) -> dict[str, float]:
    from trajectory_pipeline.ingest import SourceRoot, candidate_files, ingest_day

    roots = [SourceRoot(source, corpus / sub) for source, sub in SOURCE_FOLDERS.items()]
    out = Path(tempfile.mkdtemp(prefix="bench-ingest-"))
    started, rows = time.perf_counter(), 0
    files = candidate_files(roots)
    for offset in range(days):
        day = END - dt.timedelta(days=offset)
        stats = ingest_day(roots, day, out / f"e-{day}.parquet", out / f"q-{day}.parquet", files=files)
        rows += stats.rows
    ingested = time.perf_counter() - started
    return {"seconds": ingested, "rows": rows, **mine_and_cut(out, days)}


def mine_and_cut(out: Path, days: int) -> dict[str, float]:
    """mined_trajectories then decision_points over each ingested day, timed apart."""
    import pandas as pd

    from trajectory_pipeline.decisions import extract_decision_points, learnable
    from trajectory_pipeline.mining import mine_trajectories
    from trajectory_pipeline.render import RenderConfig
    from trajectory_pipeline.splits import select

    mining = cutting = rendering = 0.0
    attempts = decisions = rendered = 0
    for offset in range(days):
        events = pd.read_parquet(out / f"e-{END - dt.timedelta(days=offset)}.parquet")
        started = time.perf_counter()
        mined = mine_trajectories(events)
        mining += time.perf_counter() - started
        started = time.perf_counter()
        points, _ = learnable(extract_decision_points(events, mined))
        cutting += time.perf_counter() - started
        started = time.perf_counter()
        rows, _ = select(points, RenderConfig())
        rendering += time.perf_counter() - started
        attempts, decisions, rendered = attempts + len(mined), decisions + len(points), rendered + len(rows)
    return {
        "mining_seconds": mining,
        "decision_seconds": cutting,
        "render_seconds": rendering,
        "attempts": attempts,
        "decisions": decisions,
        "rendered": rendered,
    }


def measure(kind: str, corpus: Path, days: int) -> dict[str, float]:
    """Run one measurement in a child process and add its peak RSS."""
    code = (
        "import json, resource, sys; sys.path.insert(0, 'bench'); import bench_ingest as b; "
        "from pathlib import Path; "
        f"r = b.{kind}(Path({str(corpus)!r})" + (f", {days})" if kind == "pipeline" else ")") + "; "
        "r['peak_rss_mib'] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024; print(json.dumps(r))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=300, help="sessions per source per day")
    parser.add_argument("--days", type=int, default=14)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--corpus", type=Path, help="reuse a generated corpus instead of a temporary one")
    parser.add_argument("--results", type=Path, default=Path("bench/RESULTS.md"))
    args = parser.parse_args()

    corpus = args.corpus or Path(tempfile.mkdtemp(prefix="bench-corpus-"))
    if not (corpus / ".sample-corpus.json").exists():
        generate_corpus(corpus, CorpusSpec(days=args.days, end_date=END, sessions_per_day=args.sessions))
    size_mb = sum(p.stat().st_size for p in corpus.rglob("*") if p.is_file()) / 1e6

    runs = {"floor": [], "pipeline": []}
    for _ in range(args.repeat):  # interleaved, so both see the same machine load
        for kind in runs:
            runs[kind].append(measure(kind, corpus, args.days))
    med = {kind: statistics.median(r["seconds"] for r in results) for kind, results in runs.items()}
    rows = runs["pipeline"][0]["rows"]
    peak = max(r["peak_rss_mib"] for r in runs["pipeline"])
    mining = statistics.median(r["mining_seconds"] for r in runs["pipeline"])
    cutting = statistics.median(r["decision_seconds"] for r in runs["pipeline"])
    rendering = statistics.median(r["render_seconds"] for r in runs["pipeline"])
    report = [
        f"## Ingest ({dt.date.today()}, {platform.machine()}, {platform.python_version()}, one process)",
        "",
        f"`python bench/bench_ingest.py --sessions {args.sessions} --days {args.days} "
        f"--repeat {args.repeat}`",
        "",
        f"Corpus: {size_mb:.0f} MB, {runs['floor'][0]['lines']:.0f} lines; "
        f"medians of {args.repeat} interleaved runs.",
        "",
        "| path | seconds | MB/s | rows/s | peak RSS MiB |",
        "| --- | --- | --- | --- | --- |",
        f"| orjson floor | {med['floor']:.2f} | {size_mb / med['floor']:.0f} | | "
        f"{max(r['peak_rss_mib'] for r in runs['floor']):.0f} |",
        f"| ingest_day, all days | {med['pipeline']:.2f} | {size_mb / med['pipeline']:.1f} | "
        f"{rows / med['pipeline']:.0f} | {peak:.0f} |",
        f"| mine_trajectories, all days | {mining:.2f} | | {rows / mining:.0f} events/s | |",
        f"| extract_decision_points, all days | {cutting:.2f} | | {rows / cutting:.0f} events/s | |",
        f"| select (render, filter, split), all days | {rendering:.2f} | | "
        f"{runs['pipeline'][0]['decisions'] / rendering:.0f} decision points/s | |",
        "",
        f"{runs['pipeline'][0]['attempts']:.0f} attempts, {runs['pipeline'][0]['decisions']:.0f} decision "
        f"points, {runs['pipeline'][0]['rendered']:.0f} rendered rows (timed in the pipeline process after "
        "ingestion; its peak RSS covers every stage).",
        "",
        f"Pipeline / floor throughput: {med['floor'] / med['pipeline']:.3f}",
    ]
    text = "\n".join(report)
    print(text)
    write_section(args.results, "bench_ingest", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
