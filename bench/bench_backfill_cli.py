"""A backfill as a user runs it: one CLI range run over own-agent logs, whole process, Dagster included.

bench/bench_ingest.py times the core functions only; this times what a user pays. For each corpus:

- the floor: every JSONL line of the same files read and parsed with orjson in one loop, one core;
- the CLI run, exactly as a user types it, in a fresh process and a fresh DAGSTER_HOME (the
  project's dagster.yaml, SQLite), the sources pointed at the corpus through the TRAJECTORY_*
  settings, every other source off:

      dagster asset materialize -m assets.definitions \
          --select raw_sessions,raw_sessions_quarantine,mined_trajectories,decision_points \
          --partition-range FIRST...LAST
      trajectory-pipeline materialize --select ... --partition-range FIRST...LAST  # the README's

- the core: the functions behind those assets over the same days (`ingest_days`, `mine_days`,
  `cut_days`, as bench_ingest runs them), no Dagster. Dagster's share is (CLI - core) / CLI.
- the CLI run and the core again over the same days with the sources' folders empty: what the
  run costs with nothing to read, set against the time the target allows (3 x the floor).

Two corpora, generated once and kept in `--scratch`: a busy user's own-agent logs (one file a
day, `--tasks` short one-instruction tasks a day, tool results up to 2 KB: `CorpusSpec.own_agent_tasks`)
and the mixed-format corpus of bench_ingest. Seconds are medians of `--repeat` alternating runs
with nothing watching them. Peak memory comes from one more run of each path: the summed
proportional set size (PSS) of the measured process and all its children, sampled every 50 ms
(sampling slows a run: bench/chain.py); the CLI run is repeated on a corpus `--scale` times as
long to show whether it stays flat. The section `bench_backfill_cli` of bench/RESULTS.md is
rewritten.

    python bench/bench_backfill_cli.py                               # 150 days x 1,200 tasks, ~0.95 GB
    python bench/bench_backfill_cli.py --days 10 --mixed-days 3 --scale 2 --repeat 1   # a quick look
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

# bench/chain.py, beside this script
from chain import FLOOR_FRACTION_TARGET, PEAK_TARGET_MIB, core_chain, floor, memory_met, watched
from sections import write_section  # bench/sections.py, beside this script

from trajectory_pipeline.sample.corpus import SOURCE_FOLDERS, CorpusSpec, generate_corpus

REPO = Path(__file__).resolve().parents[1]
END = dt.date(2026, 11, 22)
SELECT = "raw_sessions,raw_sessions_quarantine,mined_trajectories,decision_points"
# Every source the settings know; those a corpus does not hold are turned off (empty root).
SOURCES = ("claude_code", "codex", "own_agent", "chat_jsonl", "gemini_cli", "swe_agent", "aider")
CLIS = ("dagster", "trajectory-pipeline")
# Dagster's format_duration: 8.3ms, 533ms, 5.6s, then 4m52s and 1h4m past a minute.
STEP_DONE = re.compile(r'Finished execution of step "([^"]+)" in ((?:[\d.]+(?:ms|h|m|s))+)\.')
DURATION_PART = re.compile(r"([\d.]+)(ms|h|m|s)")
UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
EMPTY = "empty:"  # a path run over the same days with no logs at all


def day_keys(days: int) -> list[str]:
    return [(END - dt.timedelta(days=days - 1 - n)).isoformat() for n in range(days)]


def child_env(
    corpus: Path, sources: tuple[str, ...], first_day: str, home: Path | None = None
) -> dict[str, str]:
    """The environment a user sets: this checkout's code first, the corpus's sources on, the rest off."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, (str(REPO), os.environ.get("PYTHONPATH")))),
    }
    env["TRAJECTORY_START_DATE"] = first_day
    for source in SOURCES:
        env[f"TRAJECTORY_{source.upper()}_ROOT"] = (
            str(corpus / SOURCE_FOLDERS[source]) if source in sources else ""
        )
    if home is not None:
        env["DAGSTER_HOME"] = str(home)
        env["TRAJECTORY_DATA_DIR"] = str(home / "warehouse")
    return env


# --------------------------------------------------------------------------- in the child


def core(corpus: Path, sources: tuple[str, ...], days: int, out: Path) -> dict[str, float]:
    """The daily chain's core over every day, on the workers a run gets by default (one per CPU)."""
    from trajectory_pipeline.ingest.days import SourceRoot
    from trajectory_pipeline.parallel import default_workers

    roots = [SourceRoot(source, corpus / SOURCE_FOLDERS[source]) for source in sources]
    dates = [dt.date.fromisoformat(key) for key in day_keys(days)]
    return core_chain(roots, dates, default_workers(), out)


def child_main(args: argparse.Namespace) -> int:
    sources = tuple(args.sources.split(","))
    if args.child == "floor":
        result = floor(
            sorted(
                path for source in sources for path in (args.corpus / SOURCE_FOLDERS[source]).rglob("*.jsonl")
            )
        )
    else:
        result = core(args.corpus, sources, args.days, args.out)
    print(json.dumps(result))
    return 0


# --------------------------------------------------------------------------- in the parent


def step_seconds(log: str) -> dict[str, float]:
    """Each step's own time, from the run's 'Finished execution of step' lines (a step of 4m52s
    is 292 s: reading its first number alone gave 240 s, and 1h4m no step at all)."""
    return {
        step: sum(float(value) * UNIT_SECONDS[unit] for value, unit in DURATION_PART.findall(duration))
        for step, duration in STEP_DONE.findall(log)
    }


def measure_cli(
    cli: str, corpus: Path, sources: tuple[str, ...], days: int, scratch: Path, memory: bool
) -> dict[str, float]:
    """One CLI range run, in a fresh DAGSTER_HOME holding the project's dagster.yaml."""
    home = Path(tempfile.mkdtemp(prefix="home-", dir=scratch))
    shutil.copy(REPO / "dagster.yaml", home / "dagster.yaml")
    keys = day_keys(days)
    bin_dir = Path(sys.executable).parent
    if cli == "dagster":
        command = [str(bin_dir / "dagster"), "asset", "materialize", "-m", "assets.definitions"]
    else:
        command = [str(bin_dir / "trajectory-pipeline"), "materialize"]
    command += ["--select", SELECT, "--partition-range", f"{keys[0]}...{keys[-1]}"]
    try:
        seconds, peak, stdout, stderr, status = watched(
            command, child_env(corpus, sources, keys[0], home), REPO, memory
        )
        if status != 0:
            raise SystemExit(f"{' '.join(command)} failed ({status}):\n{stderr[-4000:]}")
        stored = len(list((home / "warehouse" / "decision_points").glob("*.parquet")))
        if stored != days:
            raise SystemExit(f"{cli}: {stored} days of decision_points stored, expected {days}")
    finally:
        shutil.rmtree(home, ignore_errors=True)
    result = {"seconds": seconds, "steps": step_seconds(stdout + stderr)}
    return {**result, "peak_tree_mib": peak} if memory else result  # type: ignore[return-value]


def measure_child(
    kind: str, corpus: Path, sources: tuple[str, ...], days: int, scratch: Path, memory: bool
) -> dict[str, float]:
    out = Path(tempfile.mkdtemp(prefix=f"{kind}-", dir=scratch))
    command = [sys.executable, __file__, "--child", kind, "--corpus", str(corpus), "--days", str(days)]
    command += ["--sources", ",".join(sources), "--out", str(out)]
    try:
        _, peak, stdout, stderr, status = watched(
            command, child_env(corpus, sources, day_keys(days)[0]), REPO, memory
        )
    finally:
        shutil.rmtree(out, ignore_errors=True)
    if status != 0:
        raise SystemExit(f"{kind} failed ({status}):\n{stderr[-4000:]}")
    result = json.loads(stdout.strip().splitlines()[-1])
    return {**result, "peak_tree_mib": peak} if memory else result


def corpus_for(scratch: Path, name: str, spec: CorpusSpec, sources: tuple[str, ...]) -> tuple[Path, float]:
    """The corpus (generated unless already there with this spec) and the MB its sources' files hold."""
    corpus = scratch / name
    marker = corpus / ".sample-corpus.json"
    wanted = {k: str(v) if isinstance(v, dt.date) else v for k, v in spec.__dict__.items()}
    if not marker.exists() or json.loads(marker.read_text()).get("spec") != wanted:
        started = time.perf_counter()
        generate_corpus(corpus, spec, workers=os.cpu_count() or 1)
        print(f"generated {corpus} in {time.perf_counter() - started:.0f} s", flush=True)
    size = sum(p.stat().st_size for s in sources for p in (corpus / SOURCE_FOLDERS[s]).rglob("*.jsonl"))
    return corpus, size / 1e6


def bench_corpus(
    args: argparse.Namespace, scratch: Path, label: str, spec: CorpusSpec, sources: tuple[str, ...]
) -> dict[str, object]:
    """Floor, CLI run(s) and core, alternating, on one corpus (kept in --scratch; outputs go to
    `scratch`), each timed alone; then each once more for its peak memory (`chain.watched`: the
    sampling would slow a timed run); the CLI again at `--scale` x, for its memory."""
    corpus, size = corpus_for(args.scratch, f"{label}-{spec.days}d", spec, sources)
    print(f"{label}: {size:,.0f} MB, {spec.days} days", flush=True)
    # The same days with the sources' folders empty: what the run costs with nothing to read.
    empty = scratch / f"{label}-empty"
    for source in sources:
        (empty / SOURCE_FOLDERS[source]).mkdir(parents=True, exist_ok=True)
    kinds = ["floor", *(f"cli:{cli}" for cli in args.clis), "core"]

    def measure(kind: str, memory: bool) -> dict[str, float]:
        logs = corpus
        if kind.startswith(EMPTY):
            kind, logs = kind.removeprefix(EMPTY), empty
        if kind.startswith("cli:"):
            return measure_cli(kind[4:], logs, sources, spec.days, scratch, memory)
        return measure_child(kind, logs, sources, spec.days, scratch, memory)

    timed = [*kinds, f"{EMPTY}cli:{args.clis[0]}", f"{EMPTY}core"]
    runs: dict[str, list[dict[str, float]]] = {kind: [] for kind in timed}
    for _ in range(args.repeat):  # alternating, so every path sees the same machine load
        for kind in timed:
            runs[kind].append(measure(kind, memory=False))
            print(f"  {kind}", json.dumps(runs[kind][-1]), flush=True)
    peaks: dict[str, float] = {}
    for kind in kinds:
        peaks[kind] = measure(kind, memory=True)["peak_tree_mib"]
        print(f"  {kind} memory: {peaks[kind]:.0f} MiB", flush=True)
    large: dict[str, object] = {}
    if args.scale > 1 and label == "own-agent":
        big_spec = replace(spec, days=spec.days * args.scale)
        big, big_size = corpus_for(args.scratch, f"{label}-{big_spec.days}d", big_spec, sources)
        result = measure_cli(args.clis[0], big, sources, big_spec.days, scratch, memory=True)
        print(f"  cli x{args.scale}", json.dumps(result), flush=True)
        large = {"size": big_size, "days": big_spec.days, **result}
    return {"label": label, "size": size, "days": spec.days, "runs": runs, "peaks": peaks, "large": large}


def report(args: argparse.Namespace, results: list[dict[str, object]]) -> str:
    def med(runs: list[dict[str, float]], key: str) -> float:
        return statistics.median(r[key] for r in runs)

    lines = [
        f"## Backfill as a user runs it: CLI range run, whole process ({dt.date.today()}, "
        f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()})",
        "",
        f"`python bench/bench_backfill_cli.py --days {args.days} --tasks {args.tasks} --mixed-days "
        f"{args.mixed_days} --mixed-sessions {args.mixed_sessions} --scale {args.scale} --repeat "
        f"{args.repeat} --clis {','.join(args.clis)}`",
        "",
        f"`dagster asset materialize -m assets.definitions --select {SELECT} --partition-range "
        "FIRST...LAST` (and the README's `trajectory-pipeline materialize` with the same arguments), "
        "each run a fresh process and a fresh DAGSTER_HOME with the project's dagster.yaml, against "
        "reading and orjson-parsing the same files in one loop (the floor) and the core functions "
        "alone (`ingest_days`, `mine_days`, `cut_days`, no Dagster). Seconds: medians of "
        f"{args.repeat} alternating runs with nothing sampling them, as a user runs them; peak "
        "memory: one more run of each path, the summed PSS of the process and all its children "
        "sampled every 50 ms (the sampling costs the kernel about a fifth of a core, so those runs "
        "are not timed; the x-scale row is such a run).",
        "",
        "| corpus | path | seconds | MB/s | fraction of the floor | peak PSS, all processes, MiB |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    notes: list[str] = []
    for result in results:
        runs: dict[str, list[dict[str, float]]] = result["runs"]  # type: ignore[assignment]
        size = float(result["size"])  # type: ignore[arg-type]
        label = f"{result['label']} ({size:,.0f} MB, {result['days']} days)"
        floor_s = med(runs["floor"], "seconds")
        core_s = med(runs["core"], "seconds")

        def row(
            path: str,
            seconds: float,
            peak: float,
            corpus: str = "",
            size: float = size,
            base: float = floor_s,
        ) -> str:
            rate, fraction = size / seconds, base / seconds
            return f"| {corpus} | {path} | {seconds:.1f} | {rate:.1f} | {fraction:.3f} | {peak:.0f} |"

        peaks: dict[str, float] = result["peaks"]  # type: ignore[assignment]
        lines.append(row("orjson floor (one loop, one core)", floor_s, peaks["floor"], label))
        for kind, cli_runs in runs.items():
            if not kind.startswith("cli:"):
                continue
            cli_s = med(cli_runs, "seconds")
            name = (
                "`dagster asset materialize`"
                if kind == "cli:dagster"
                else "`trajectory-pipeline materialize`"
            )
            lines.append(row(f"CLI range run: {name}", cli_s, peaks[kind]))
            share = (cli_s - core_s) / cli_s
            steps: dict[str, float] = cli_runs[len(cli_runs) // 2]["steps"]  # type: ignore[assignment]
            step_text = ", ".join(f"{step} {s:.1f} s" for step, s in steps.items())
            fraction = floor_s / cli_s
            notes.append(
                f"{result['label']}, {name}: **{fraction:.3f} of the floor** "
                f"(target ≥ {FLOOR_FRACTION_TARGET:.3f}: "
                f"{'met' if fraction >= FLOOR_FRACTION_TARGET else 'not met'}); "
                f"Dagster's share (CLI - core) / CLI = {share:.2f} ({cli_s - core_s:.1f} s); "
                f"its steps: {step_text or 'none logged'}."
            )
        first = runs["core"][0]
        lines.append(row("core only (no Dagster)", core_s, peaks["core"]))
        stages = [med(runs["core"], f"{stage}_seconds") for stage in ("ingest", "mining", "decision")]
        lines.append(
            f"| | ↳ ingest {stages[0]:.1f} s, mine {stages[1]:.1f} s, decision points {stages[2]:.1f} s; "
            f"{first['rows']:,.0f} events, {first['attempts']:,.0f} attempts, "
            f"{first['decisions']:,.0f} decision points | | | | |"
        )
        empty_cli = med(runs[f"{EMPTY}cli:{args.clis[0]}"], "seconds")
        empty_core = med(runs[f"{EMPTY}core"], "seconds")
        lines.append(f"| | the same days with no logs: CLI range run | {empty_cli:.1f} | | | |")
        lines.append(f"| | the same days with no logs: core only | {empty_core:.1f} | | | |")
        budget, rest = floor_s / FLOOR_FRACTION_TARGET, empty_cli - empty_core
        notes.append(
            f"{result['label']}, the same {result['days']} days with no logs at all: the CLI run takes "
            f"{empty_cli:.1f} s, the core {empty_core:.1f} s of it and the rest (process start, imports, "
            f"Dagster's bookkeeping of every day) {rest:.1f} s, where the target allows the whole run "
            f"{budget:.1f} s ({1 / FLOOR_FRACTION_TARGET:.0f} × the floor): "
            f"the rest alone is {rest / budget:.2f} of it."
        )
        large: dict[str, float] = result["large"]  # type: ignore[assignment]
        if large:
            peak_1x = peaks[f"cli:{args.clis[0]}"]
            big = f"{result['label']} x{args.scale} ({large['size']:,.0f} MB, {large['days']:.0f} days)"
            lines.append(
                f"| {big} | CLI range run, one run, memory sampled | {large['seconds']:.1f} | "
                f"{large['size'] / large['seconds']:.1f} | | {large['peak_tree_mib']:.0f} |"
            )
            flat, ok = memory_met(peak_1x, large["peak_tree_mib"])
            notes.append(
                f"Peak memory of the CLI run: {peak_1x:.0f} MiB at 1x, {large['peak_tree_mib']:.0f} MiB at "
                f"{args.scale}x ({flat:.2f}x; target ≤ {PEAK_TARGET_MIB} MiB at both, flat: "
                f"{'met' if ok else 'not met'})."
            )
    return "\n".join([*lines, "", *(f"- {note}" for note in notes)])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=150, help="days of own-agent logs")
    parser.add_argument("--tasks", type=int, default=1200, help="own-agent short tasks a day")
    parser.add_argument(
        "--mixed-days", type=int, default=40, help="days of the mixed-format corpus (0: skip)"
    )
    parser.add_argument("--mixed-sessions", type=int, default=500, help="its sessions per source per day")
    parser.add_argument(
        "--scale", type=int, default=4, help="memory run: own-agent days times this (1: skip)"
    )
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument(
        "--clis", type=lambda text: tuple(text.split(",")), default=CLIS, help="dagster,trajectory-pipeline"
    )
    parser.add_argument(
        "--scratch", type=Path, default=REPO / "data" / "bench-backfill-cli", help="corpora (kept)"
    )
    parser.add_argument("--results", type=Path, default=REPO / "bench" / "RESULTS.md")
    parser.add_argument("--child", choices=("floor", "core"), help=argparse.SUPPRESS)
    parser.add_argument("--corpus", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--sources", help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child_main(args)
    if unknown := set(args.clis) - set(CLIS):
        parser.error(f"--clis: unknown {', '.join(sorted(unknown))}; choose from {', '.join(CLIS)}")

    args.scratch.mkdir(parents=True, exist_ok=True)
    runs = tempfile.mkdtemp(prefix="runs-", dir=args.scratch)
    try:
        own = CorpusSpec(days=args.days, end_date=END, sessions_per_day=1, own_agent_tasks=args.tasks)
        results = [bench_corpus(args, Path(runs), "own-agent", own, ("own_agent",))]
        if args.mixed_days:
            mixed = CorpusSpec(days=args.mixed_days, end_date=END, sessions_per_day=args.mixed_sessions)
            results.append(bench_corpus(args, Path(runs), "mixed", mixed, tuple(SOURCE_FOLDERS)))
    finally:
        shutil.rmtree(runs, ignore_errors=True)
    text = report(args, results)
    print(text)
    write_section(args.results, "bench_backfill_cli", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
