"""A daily backfill on the Celery executor: wall time with 1 and with 2 worker processes.

The same set-up as tests/test_distributed.py (Debian's redis-server on 127.0.0.1, Celery workers with
`-P solo`, the real Dagster daemon, an asset backfill cut into runs of k days by
TRAJECTORY_BACKFILL_DAYS_PER_RUN), over a larger sample corpus; every stored row is checked against
one in-process run of the same days. Wall time runs from the backfill's submission (the daemon is
started then) to the last run's end. Not part of `make bench` (a few minutes more); the section
`bench_distributed` of bench/RESULTS.md is rewritten.

    .venv/bin/python bench/bench_distributed.py --days 8 --days-per-run 2 --sessions 40
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import dagster as dg  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

from bench.sections import write_section  # noqa: E402
from tests.dagster_processes import make_instance  # noqa: E402
from tests.test_distributed import celery_cluster, in_process, source_env  # noqa: E402
from trajectory_pipeline.sample.corpus import CorpusSpec, generate_corpus  # noqa: E402

END = dt.date(2026, 11, 22)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=8)
    parser.add_argument("--days-per-run", type=int, default=2)
    parser.add_argument("--sessions", type=int, default=40, help="sessions per source per day")
    parser.add_argument("--step-workers", default="1", help="TRAJECTORY_WORKERS inside each step")
    parser.add_argument("--results", type=Path, default=REPO / "bench" / "RESULTS.md")
    args = parser.parse_args()
    days = tuple((END - dt.timedelta(days=n)).isoformat() for n in reversed(range(args.days)))
    rows: list[tuple[str, str, float]] = []
    with tempfile.TemporaryDirectory(prefix="bench-distributed-") as folder:
        base = Path(folder)
        generate_corpus(
            base / "corpus", CorpusSpec(days=args.days, end_date=END, sessions_per_day=args.sessions)
        )
        started = time.monotonic()
        in_process(base / "corpus", base / "reference", days)
        rows.append(("in process, one run (no Celery, no daemon)", "–", time.monotonic() - started))
        for workers in (1, 2):
            root = base / f"workers-{workers}"
            root.mkdir()
            os.environ["DAGSTER_HOME"] = str(root / "home")
            env = {
                **os.environ,
                **source_env(base / "corpus"),
                "DAGSTER_HOME": str(make_instance(root / "home")),
                "TRAJECTORY_DATA_DIR": str(root / "warehouse"),
                "TRAJECTORY_EXECUTOR": "celery",
                "TRAJECTORY_BACKFILL_DAYS_PER_RUN": str(args.days_per_run),
                "TRAJECTORY_WORKERS": args.step_workers,
            }
            with celery_cluster(root, env, workers, days) as (instance, backfill_id, submitted):
                wall = time.monotonic() - submitted
                runs = instance.get_runs(filters=dg.RunsFilter(tags={"dagster/backfill": backfill_id}))
                assert all(run.status == dg.DagsterRunStatus.SUCCESS for run in runs)
            for path in sorted((base / "reference").rglob("*.parquet")):
                name = path.relative_to(base / "reference")
                assert pq.read_table(root / "warehouse" / name).equals(pq.read_table(path)), name
            rows.append((f"Celery, {len(runs)} runs of {args.days_per_run} days", str(workers), wall))
    text = "\n".join(
        [
            f"## Backfill on Celery workers ({dt.date.today()}, {platform.machine()}, "
            f"{os.cpu_count()} cores, Python {platform.python_version()})",
            "",
            f"`python bench/bench_distributed.py --days {args.days} --days-per-run {args.days_per_run} "
            f"--sessions {args.sessions} --step-workers {args.step_workers}`",
            "",
            f"`daily_ingest_job`'s assets over {args.days} days of a sample corpus ({args.sessions} sessions "
            "per source per day), Redis on 127.0.0.1, the daemon launching the backfill's runs (two at a "
            "time, dagster.yaml); every row equal to the in-process run's. Wall time from submission to the "
            "last run's end, daemon start-up included.",
            "",
            "| how | Celery workers | wall, s |",
            "| --- | --- | --- |",
            *(f"| {how} | {workers} | {wall:.1f} |" for how, workers, wall in rows),
        ]
    )
    print(text)
    write_section(args.results, "bench_distributed", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
