"""A range of days, read once and spread over processes, gives each day exactly what a lone day gets."""

import dataclasses
import datetime as dt
import gc
import os
import pickle
import platform
import subprocess
import sys
from array import array
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import trajectory_pipeline
from trajectory_pipeline import day_stages, parallel, settings
from trajectory_pipeline.day_stages import DayEvents, cut_days, mine_days
from trajectory_pipeline.decisions.points import (
    DECISION_SCHEMA,
    EVENT_READ_COLUMNS,
    DecisionConfig,
    extract_decision_points,
    learnable,
)
from trajectory_pipeline.events import READ_COLUMNS, ordered_table
from trajectory_pipeline.ingest import days as days_module
from trajectory_pipeline.ingest.days import (
    SourceRoot,
    _balanced_parts,
    _verdicts,
    candidate_files,
    day_bounds,
    day_index,
    ingest_day,
    ingest_days,
    pass_count,
)
from trajectory_pipeline.ingest.listing import CandidateFile, FileListing
from trajectory_pipeline.ingest.redact import Redactor
from trajectory_pipeline.mining.attempts import TRAJECTORY_SCHEMA, MiningConfig, mine_trajectories
from trajectory_pipeline.sample.corpus import SOURCE_FOLDERS, CorpusSpec, generate_corpus
from trajectory_pipeline.schema import DAY_US, EVENT_SCHEMA
from trajectory_pipeline.settings import CHECKOUT

END = dt.date(2026, 11, 22)
DAYS = [END - dt.timedelta(days=offset) for offset in range(5, -1, -1)]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> list[SourceRoot]:
    root = tmp_path_factory.mktemp("corpus")
    generate_corpus(root, CorpusSpec(days=8, end_date=END, sessions_per_day=3, seed=5))
    return [SourceRoot(source, root / folder) for source, folder in SOURCE_FOLDERS.items()]


@pytest.fixture(scope="module")
def day_by_day(corpus: list[SourceRoot], tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Each day ingested alone: the reference a range run must equal."""
    out = tmp_path_factory.mktemp("alone")
    files = candidate_files(corpus)
    return {
        day: (ingest_day(corpus, day, out / f"e-{day}", out / f"q-{day}", files=files), out, day)
        for day in DAYS
    }


def assert_same_days(day_by_day: dict, ranged: dict, out: Path) -> None:
    for day in DAYS:
        alone, alone_out, _ = day_by_day[day]
        assert ranged[day] == alone
        for prefix in ("e", "q"):
            expected = pq.read_table(alone_out / f"{prefix}-{day}")
            assert pq.read_table(out / f"{prefix}-{day}").equals(expected), (day, prefix)
    assert sum(stats.rows for stats in ranged.values()) > 0


@pytest.mark.parametrize("chunk_days", [1, 2, 7, 31])
def test_a_range_in_one_pass_equals_each_day_alone(
    corpus: list[SourceRoot], day_by_day: dict, tmp_path: Path, chunk_days: int
) -> None:
    outputs = {day: (tmp_path / f"e-{day}", tmp_path / f"q-{day}") for day in DAYS}
    assert_same_days(day_by_day, ingest_days(corpus, outputs, chunk_days=chunk_days), tmp_path)


@pytest.mark.parametrize("looks_in_processes", [False, True])
def test_a_range_over_two_processes_equals_each_day_alone(
    corpus: list[SourceRoot],
    day_by_day: dict,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    looks_in_processes: bool,
) -> None:
    """The passes in processes, and with `looks_in_processes` the planning's looks into files too."""
    if looks_in_processes:
        monkeypatch.setattr(days_module, "PARALLEL_LOOK_FILES", 1)
    mapped = record_process_maps(monkeypatch)
    outputs = {day: (tmp_path / f"e-{day}", tmp_path / f"q-{day}") for day in DAYS}
    ranged = ingest_days(corpus, outputs, workers=2, chunk_days=2, parallel_min_bytes=0)
    assert_same_days(day_by_day, ranged, tmp_path)
    assert ("_looked_into_part" in mapped) is looks_in_processes


def test_the_looks_stay_in_the_caller_when_the_passes_will(
    corpus: list[SourceRoot], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Too few bytes to ingest in processes: no fork server is started for the looks alone."""
    monkeypatch.setattr(days_module, "PARALLEL_LOOK_FILES", 1)
    mapped = record_process_maps(monkeypatch)
    outputs = {day: (tmp_path / f"e-{day}", tmp_path / f"q-{day}") for day in DAYS}
    ingest_days(corpus, outputs, workers=2, parallel_min_bytes=2**62)
    assert "_looked_into_part" not in mapped


def test_planning_parts_are_taken_only_when_asked_for_and_cover_the_files_in_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    files = [CandidateFile("own_agent", "own_agent", f"/logs/{k}.jsonl", k, k) for k in range(11)]
    listing = FileListing(files)
    taken: list[int] = []
    take = FileListing.take
    monkeypatch.setattr(FileListing, "take", lambda self, at: taken.append(len(at)) or take(self, at))
    parts = days_module._LookParts(listing, array("q", [1, 2, 4, 5, 6, 9, 10]), 3, (7, 8, 9))
    assert len(parts) == 3 and taken == []
    assert [list(part[0]) for part in parts] == [
        [files[1], files[2], files[4]],
        [files[5], files[6], files[9]],
        [files[10]],
    ]
    assert parts[-1] == parts[2] and parts[0][1:] == (7, 8, 9)
    later = parts[1:]  # a pool's run of parts: still nothing taken for it
    assert taken == [3, 3, 1, 1, 1, 3] and len(later) == 2 and list(later) == list(parts)[1:]
    for outside in (3, -4):
        with pytest.raises(IndexError):
            parts[outside]
    with pytest.raises(ValueError):
        parts[::2]


def test_every_worker_gets_a_part_to_look_into(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(days_module, "PARALLEL_LOOK_FILES", 4)
    seen: list[int] = []
    monkeypatch.setattr(  # looked in this process, part by part
        parallel, "imap_in_processes", lambda fn, parts, workers: seen.append(len(parts)) or map(fn, parts)
    )
    files = [
        CandidateFile("own_agent", "own_agent", str(tmp_path / f"{k}.jsonl"), DAY_US * 30, 1)
        for k in range(5)
    ]
    looks = list(days_module._looks(FileListing(files), 30, 31, 1024, workers=3))
    assert seen == [3]  # 5 files over 3 workers: parts of 2, not one of 4 and one of 1
    assert [(position, file) for position, file, _ in looks] == list(enumerate(files))
    assert all(isinstance(look, days_module._Gone) for _, _, look in looks)  # none of them exists


def record_process_maps(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the functions handed to worker processes from now on (the maps still run)."""
    names: list[str] = []
    imap = parallel.imap_in_processes

    def recorded(fn: Any, tasks: Any, workers: int) -> Any:
        names.append(fn.__name__)
        return imap(fn, tasks, workers)

    monkeypatch.setattr(parallel, "imap_in_processes", recorded)
    return names


def test_a_day_counts_each_session_once_by_source_as_its_events_hold_them(day_by_day: dict) -> None:
    """A day's stats keep session counts, not ids: a session whose events come from several files
    (sub-agents, copies) or with several events counts once, as the written events say."""
    for day in DAYS:
        stats, out, _ = day_by_day[day]
        events = pq.read_table(out / f"e-{day}", columns=["source", "session_id"]).to_pylist()
        distinct = {(row["source"], row["session_id"]) for row in events}
        assert stats.sessions_by_source == Counter(source for source, _ in distinct), day
        assert stats.sessions == len(distinct) < len(events)


def test_days_not_asked_for_are_neither_written_nor_counted(corpus: list[SourceRoot], tmp_path: Path) -> None:
    wanted = [DAYS[0], DAYS[3]]  # a gap between them
    outputs = {day: (tmp_path / f"e-{day}", tmp_path / f"q-{day}") for day in wanted}
    stats = ingest_days(corpus, outputs)
    assert sorted(stats) == wanted
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted(
        f"{prefix}-{day}" for day in wanted for prefix in ("e", "q")
    )
    for day in wanted:
        starts = pq.read_table(tmp_path / f"e-{day}", columns=["session_start"]).column(0).to_pylist()
        lo, hi = day_bounds(day)
        assert starts and all(lo <= start.timestamp() * 1e6 < hi for start in starts)


def test_a_range_verdict_is_each_days_verdict(corpus: list[SourceRoot]) -> None:
    """The spans a file is skipped or read for over a range, day by day, equal one-day verdicts."""
    first, last = day_index(DAYS[0]) - 3, day_index(DAYS[-1]) + 3
    files = [file for file in candidate_files(corpus) if file.problem is None]
    assert len(files) > 20
    for file in files:
        spans = _verdicts(file.source, file.path, file.mtime_us, first, last)
        by_day = {d: reason for reason, lo, hi in spans for d in range(lo, hi + 1)}
        assert sorted(by_day) == list(range(first, last + 1)), "spans must cover the range once"
        assert sum(hi - lo + 1 for _, lo, hi in spans) == last - first + 1
        for d in range(first, last + 1):
            ((alone, _, _),) = _verdicts(file.source, file.path, file.mtime_us, d, d)
            assert by_day[d] == alone, (file.path, d)


@pytest.mark.parametrize(
    ("path", "mtime_day", "earliest_day", "expected"),
    [
        # modified on day 10: read on days up to 11 (a late local clock), not after
        ("a.jsonl", 10, None, {9: None, 10: None, 11: None, 12: "modified_before_day"}),
        # a start read from the head on day 10: earlier days cannot hold it
        ("a.jsonl", 12, 10, {9: "starts_after_day", 10: None, 13: None, 14: "modified_before_day"}),
    ],
)
def test_verdict_spans(
    monkeypatch: pytest.MonkeyPatch,
    path: str,
    mtime_day: int,
    earliest_day: int | None,
    expected: dict[int, str | None],
) -> None:
    from trajectory_pipeline.ingest import days as ingest

    spec = ingest.FORMATS["claude_code"]
    fake = dataclasses.replace(
        spec, earliest_start=lambda _: None if earliest_day is None else earliest_day * DAY_US
    )
    monkeypatch.setitem(ingest.FORMATS, "claude_code", fake)
    spans = _verdicts("claude_code", Path(path), mtime_day * DAY_US + 5, 0, 40)
    by_day = {d: reason for reason, lo, hi in spans for d in range(lo, hi + 1)}
    assert {d: by_day[d] for d in expected} == expected


def test_a_path_date_rules_out_all_but_three_days(tmp_path: Path) -> None:
    path = tmp_path / "sessions/2026/11/20/rollout-2026-11-20T10-00-00-x.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("")
    d = day_index(dt.date(2026, 11, 20))
    spans = _verdicts("codex", path, (d + 30) * DAY_US, d - 5, d + 5)
    reasons = {day: reason for reason, lo, hi in spans for day in range(lo, hi + 1)}
    assert [day - d for day, reason in sorted(reasons.items()) if reason != "path_date"] == [-1, 0, 1]


def as_stored(frame: pd.DataFrame, schema: pa.Schema) -> pd.DataFrame:
    return pa.Table.from_pandas(frame, schema=schema, preserve_index=False).to_pandas()


def test_day_stages_over_two_processes_equal_the_stages_day_by_day(
    corpus: list[SourceRoot], day_by_day: dict, tmp_path: Path
) -> None:
    days = [DayEvents(day.isoformat(), (str(day_by_day[day][1] / f"e-{day}"),)) for day in DAYS]
    expected = {day.key: mine_trajectories(day.read(), MiningConfig()) for day in days}
    mined = list(mine_days(days, MiningConfig(), tmp_path, workers=2, columns=["tier"], min_events=0))
    assert [day.key for day in mined] == [day.key for day in days]
    for got in mined:
        frame = expected[got.key]
        pd.testing.assert_frame_equal(pd.read_parquet(got.path), as_stored(frame, TRAJECTORY_SCHEMA))
        assert got.rows == len(frame) and list(got.columns["tier"]) == list(frame["tier"])
        assert len(got.head) == min(8, len(frame))
    days = [replace(day, attempt_files=(str(got.path),)) for day, got in zip(days, mined, strict=True)]
    cut = list(cut_days(days, DecisionConfig(), tmp_path, workers=2, min_events=0))
    assert [day.key for day in cut] == [day.key for day in days]
    for day, got in zip(days, cut, strict=True):
        points = extract_decision_points(day.read(), expected[day.key], DecisionConfig())
        kept, aside = learnable(points)
        pd.testing.assert_frame_equal(pd.read_parquet(got.path), as_stored(kept, DECISION_SCHEMA))
        assert (got.rows, got.set_aside, got.extracted) == (len(kept), aside, len(points))
        assert got.by_tool == dict(Counter(kept["target_name"])) and len(got.preview) == min(8, len(kept))
    assert sum(day.rows for day in cut) > 0


def test_a_day_cut_in_small_runs_is_the_day_cut_at_once(
    day_by_day: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cut writes and sums up a day run by run: runs of a few sessions give the same file and
    the same summary (set-aside counts and examples, tools, preview) as one run of the whole day."""
    day = next(day for day in DAYS if day_by_day[day][0].rows)
    events = DayEvents(day.isoformat(), (str(day_by_day[day][1] / f"e-{day}"),))
    mined = next(mine_days([events], MiningConfig(), tmp_path))
    events = replace(events, attempt_files=(str(mined.path),))
    monkeypatch.setattr(day_stages, "ROW_GROUP_BYTES", 1)  # each run its own row group
    whole = day_stages._cut(day_stages._CutTask(events, DecisionConfig(), tmp_path / "whole.parquet", 10**9))
    runs = day_stages._cut(day_stages._CutTask(events, DecisionConfig(), tmp_path / "runs.parquet", 40))
    assert pq.ParquetFile(runs.path).metadata.num_row_groups > 1  # it did cut in runs
    assert pq.ParquetFile(whole.path).metadata.num_row_groups == 1
    assert pq.read_table(runs.path).equals(pq.read_table(whole.path))
    assert runs._replace(path=whole.path, preview=None) == whole._replace(preview=None)
    pd.testing.assert_frame_equal(runs.preview, whole.preview)


def test_a_day_without_an_accepted_attempt_is_cut_without_reading_its_events(
    day_by_day: dict, tmp_path: Path
) -> None:
    """No accepted attempt, no decision point: the cut stores the day's empty table, as it did
    after reading the day, and never opens the events."""
    day = next(day for day in DAYS if day_by_day[day][0].rows)
    events = DayEvents(day.isoformat(), (str(day_by_day[day][1] / f"e-{day}"),))
    mined = next(mine_days([events], MiningConfig(), tmp_path))
    cut = day_stages._cut(
        day_stages._CutTask(
            replace(events, attempt_files=(str(mined.path),)), DecisionConfig(), tmp_path / "cut", 10**9
        )
    )
    assert cut.rows > 0
    attempts = pq.read_table(mined.path)
    included = pa.array(DecisionConfig().included_tiers)
    refused = attempts.filter(pc.invert(pc.is_in(attempts.column("tier"), included)))
    assert refused.num_rows > 0
    pq.write_table(refused, tmp_path / "refused.parquet")
    gone = DayEvents(events.key, (str(tmp_path / "gone.parquet"),), (str(tmp_path / "refused.parquet"),))
    got = day_stages._cut(day_stages._CutTask(gone, DecisionConfig(), tmp_path / "none", 10**9))
    assert (got.rows, got.extracted, got.included_attempts, got.by_tool) == (0, 0, 0, {})
    assert set(got.set_aside.values()) == {0} and got.preview.empty
    stored = pq.read_table(got.path)
    assert stored.num_rows == 0 and stored.schema.equals(pq.read_schema(cut.path), check_metadata=True)


@pytest.mark.parametrize("some_sessions", [False, True])
def test_a_day_read_a_column_at_a_time_is_the_day_read_and_ordered(
    day_by_day: dict, tmp_path: Path, some_sessions: bool
) -> None:
    """The cut reads a day's events column by column into event order (each raw column held alone
    beside the ordered ones); the table is the one ordering the whole read gives, over a day stored
    in more than one file, for every session or some of them."""
    day = next(day for day in DAYS if day_by_day[day][0].rows)
    stored = pq.read_table(day_by_day[day][1] / f"e-{day}")
    halves = [tmp_path / "a.parquet", tmp_path / "b.parquet"]  # a day of two files, rows in file order
    pq.write_table(stored.slice(stored.num_rows // 2), halves[0])
    pq.write_table(stored.slice(0, stored.num_rows // 2), halves[1])
    files = tuple(str(path) for path in halves)
    session_ids = sorted(set(stored.column("session_id").to_pylist()))
    sessions = set(session_ids[::2]) if some_sessions else None
    got = day_stages._read_ordered(files, (*EVENT_READ_COLUMNS, "not_stored"), sessions)
    expected = ordered_table(day_stages._read(files), EVENT_READ_COLUMNS, sessions)
    assert got.equals(expected, check_metadata=True)
    assert len(set(got.column("session_id").to_pylist())) == (len(sessions) if sessions else len(session_ids))


def test_an_empty_day_reads_as_an_empty_ordered_table(tmp_path: Path) -> None:
    empty = tmp_path / "empty.parquet"
    pq.write_table(EVENT_SCHEMA.empty_table(), empty)
    got = day_stages._read_ordered((str(empty),), READ_COLUMNS)
    assert got.num_rows == 0 and got.column_names == [*READ_COLUMNS, "ordinal"]
    assert day_stages._read_ordered((str(empty),), EVENT_READ_COLUMNS, set()).num_rows == 0


@pytest.mark.parametrize("looks_in_processes", [False, True])
def test_a_file_gone_since_the_listing_is_quarantined_and_the_rest_load(
    corpus: list[SourceRoot], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, looks_in_processes: bool
) -> None:
    if looks_in_processes:
        monkeypatch.setattr(days_module, "PARALLEL_LOOK_FILES", 1)
    mapped = record_process_maps(monkeypatch)
    files = candidate_files(corpus)
    gone = tmp_path / "gone.jsonl"
    gone.write_text("{}\n")
    files.append(files[0]._replace(location=str(gone), mtime_us=day_bounds(DAYS[0])[0]))
    gone.unlink()
    outputs = {day: (tmp_path / f"e-{day}", tmp_path / f"q-{day}") for day in DAYS}
    workers = 2 if looks_in_processes else 1
    stats = ingest_days(corpus, outputs, files=files, workers=workers, parallel_min_bytes=0)
    assert stats[DAYS[0]].files_skipped["unreadable_file"] == 1
    assert stats[DAYS[0]].rows > 0
    bad = pq.read_table(tmp_path / f"q-{DAYS[0]}").to_pylist()
    assert [row["reason"] for row in bad if row["source_path"].endswith("gone.jsonl")] == ["unreadable_file"]
    assert ("_looked_into_part" in mapped) is looks_in_processes


def test_a_redactor_crosses_to_a_worker_with_its_options() -> None:
    text = "mail dana@example.com from /home/dana/src"
    for options in ({}, {"emails": False}, {"home_paths": False}):
        redactor = Redactor(**options)
        assert pickle.loads(pickle.dumps(redactor)).redact(text) == redactor.redact(text)


def _fail_on_three(n: int) -> int:
    if n == 3:
        raise ValueError("three")
    return n * n


def _worker_pid(n: int) -> tuple[int, int]:
    return n, os.getpid()


def test_workers_are_replaced_after_a_few_tasks_and_results_stay_in_order() -> None:
    tasks = list(range(2 * parallel.TASKS_PER_WORKER * 2 + 3))
    results = parallel.map_in_processes(_worker_pid, tasks, workers=2)
    assert [n for n, _ in results] == tasks
    served = Counter(pid for _, pid in results)  # three pools of two: each serves 16 tasks at most
    per_pool = 2 * parallel.TASKS_PER_WORKER
    assert len(served) >= 3 and max(served.values()) <= per_pool


def test_results_come_back_in_task_order_and_a_failure_is_raised() -> None:
    assert parallel.map_in_processes(_fail_on_three, [5, 1, 4, 2, 0], workers=2) == [25, 1, 16, 4, 0]
    with pytest.raises(ValueError, match="three"):
        parallel.map_in_processes(_fail_on_three, [1, 2, 3, 4], workers=2)


WORKER_SCRIPT = """
import dataclasses, functools, os, sys
with open(sys.argv[1], "a") as marks:
    print(__name__, file=marks)  # once per import of this script

@dataclasses.dataclass
class Task:
    n: int

def scale(k, task):
    return k * task.n

if __name__ == "__main__":
    from trajectory_pipeline import parallel
    names = ["a/one", "b/two", "c/three", "d/four", "e/five", "f/six"]
    print(parallel.map_in_processes(os.path.basename, names, workers=3))
    if sys.argv[2:] == ["--with-main"]:  # a partial of a function and tasks defined here
        print(parallel.map_in_processes(functools.partial(scale, 3), [Task(1), Task(2)], workers=2))
"""


def _run_script(tmp_path: Path, *args: str) -> tuple[list[str], list[str]]:
    script, marks = tmp_path / "main_script.py", tmp_path / "imports.txt"
    script.write_text(WORKER_SCRIPT)
    path = [str(CHECKOUT), *filter(None, [os.environ.get("PYTHONPATH")])]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path)}
    run = subprocess.run(
        [sys.executable, str(script), str(marks), *args], env=env, capture_output=True, text=True, check=True
    )
    return run.stdout.split("\n")[:-1], marks.read_text().split()


def test_workers_do_not_import_the_callers_main_script(tmp_path: Path) -> None:
    """Under Dagster the caller's main script is the `dagster` command: a worker that imported it
    (as multiprocessing does, `__mp_main__`) paid for all of Dagster before its first task. Quick
    tasks: a worker may start at any submit, not only the first ones."""
    printed, imports = _run_script(tmp_path)
    assert printed == ["['one', 'two', 'three', 'four', 'five', 'six']"]
    assert imports == ["__main__"]


def test_tasks_defined_in_the_callers_main_script_still_run(tmp_path: Path) -> None:
    """A function (even behind a partial) or a task class of the script itself: its workers import
    the script, as before."""
    printed, imports = _run_script(tmp_path, "--with-main")
    assert printed[-1] == "[3, 6]"
    assert imports.count("__mp_main__") == 2 and imports[0] == "__main__"


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc", reason="malloc_trim is glibc's"
)
def test_workers_can_hand_freed_heap_back_on_glibc() -> None:
    assert parallel._malloc_trim() is not None
    parallel._trim_heap()


needs_mimalloc = pytest.mark.skipif(
    "mimalloc" not in pa.supported_memory_backends(), reason="this build of Arrow has no mimalloc"
)


def _scan_from_mimalloc(path: Path) -> int:
    """What a dataset scan, Arrow's C++ code, allocated from mimalloc in this process."""
    import pyarrow.dataset as pads

    pads.dataset(path).to_table()
    return pa.mimalloc_memory_pool().max_memory()


@pytest.fixture
def scanned(tmp_path: Path) -> Path:
    """A Parquet file for the tests below to scan."""
    path = tmp_path / "scanned.parquet"
    pq.write_table(pa.table({"n": list(range(50_000)), "text": ["some text"] * 50_000}), path)
    return path


def _arrow_allocations(path: Path, code: str, **env: str) -> list[str]:
    """Run `code` in a fresh interpreter (Arrow's pool is chosen at its import), with the file to
    scan at `path`; its printed words."""
    environment = {k: v for k, v in os.environ.items() if k != trajectory_pipeline.ARROW_POOL_ENV} | env
    prelude = f"import os; from pathlib import Path; path = Path({str(path)!r}); "
    done = subprocess.run(
        [sys.executable, "-c", prelude + code], env=environment, cwd=CHECKOUT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


@needs_mimalloc
def test_arrow_allocates_from_the_c_library_even_in_its_own_cpp_code(scanned: Path) -> None:
    """mimalloc, Arrow's default, kept each worker at its high-water mark for the whole run. Setting
    pyarrow's own default pool is not enough: its C++ code (scans, Parquet decoding) allocates from
    the pool chosen when pyarrow is imported, so this package chooses it first, for the processes
    it starts too."""
    scan = "import pyarrow.dataset as pads; pads.dataset(path).to_table(); "
    from_mimalloc = "pyarrow.mimalloc_memory_pool().max_memory()"
    pools = f"pyarrow.default_memory_pool().backend_name, os.environ[{trajectory_pipeline.ARROW_POOL_ENV!r}]"
    words = _arrow_allocations(
        scanned, f"import trajectory_pipeline, pyarrow; {scan} print({from_mimalloc}, {pools})"
    )
    assert words == ["0", "system", "system"]
    # The Dagster definitions and resources import the package before any module of theirs imports pyarrow.
    for entry in ("assets.definitions", "resources.parquet_io_manager"):
        words = _arrow_allocations(scanned, f"import {entry}, pyarrow; {scan} print({from_mimalloc})")
        assert words[-1] == "0", entry


@needs_mimalloc
def test_a_pool_the_user_names_is_left_alone_and_an_empty_one_is_none(scanned: Path) -> None:
    code = "import trajectory_pipeline, pyarrow as pa; print(pa.default_memory_pool().backend_name)"
    assert _arrow_allocations(scanned, code, ARROW_DEFAULT_MEMORY_POOL="mimalloc") == ["mimalloc"]
    assert _arrow_allocations(scanned, code, ARROW_DEFAULT_MEMORY_POOL="") == ["system"]


def test_pyarrow_imported_first_still_gets_the_c_library_for_its_own_calls(scanned: Path) -> None:
    code = "import pyarrow as pa, trajectory_pipeline; print(pa.default_memory_pool().backend_name)"
    assert _arrow_allocations(scanned, code) == ["system"]


@needs_mimalloc
@pytest.mark.skipif(
    os.environ.get(trajectory_pipeline.ARROW_POOL_ENV) != "system",
    reason="the environment names another Arrow pool",
)
def test_range_run_workers_scan_on_the_c_library(scanned: Path) -> None:
    assert parallel.map_in_processes(_scan_from_mimalloc, [scanned, scanned], workers=2) == [0, 0]


def _arrow_threads(_: int) -> tuple[int, int, int]:
    return pa.cpu_count(), pa.io_thread_count(), os.getpid()


def test_a_workers_arrow_pools_have_one_thread_each_and_the_callers_keep_theirs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two workers each with an Arrow pool per core oversubscribed the cores, and each pool thread
    that allocated kept a C-library arena of its own between tasks. One task per worker: the
    workers of every pool, not only the first, are set up so."""
    monkeypatch.setattr(parallel, "TASKS_PER_WORKER", 1)
    before = pa.cpu_count(), pa.io_thread_count()
    results = parallel.map_in_processes(_arrow_threads, [0, 1, 2, 3, 4, 5], workers=2)
    assert [(cpus, io) for cpus, io, _ in results] == [(1, 1)] * 6
    assert len({pid for *_, pid in results} - {os.getpid()}) >= 3  # three pools of fresh workers
    assert (pa.cpu_count(), pa.io_thread_count()) == before


@pytest.mark.parametrize("value", ["two", "0", "-1"])
def test_a_bad_worker_count_says_what_to_write(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(settings.WORKERS.name, value)
    with pytest.raises(ValueError, match=settings.WORKERS.name):
        parallel.default_workers()
    monkeypatch.setenv(settings.WORKERS.name, "3")
    assert parallel.default_workers() == 3


def _young_threshold(_: int) -> tuple[int, int]:
    return gc.get_threshold()[0], os.getpid()


@pytest.mark.parametrize("workers", [1, 2])
def test_tasks_run_with_fewer_collections_and_the_callers_setting_comes_back(workers: int) -> None:
    before = gc.get_threshold()
    results = parallel.map_in_processes(_young_threshold, [0, 1, 2], workers=workers)
    assert {threshold for threshold, _ in results} == {parallel.TASK_GC_THRESHOLD}
    assert gc.get_threshold() == before
    in_caller = {pid for _, pid in results} == {os.getpid()}
    assert in_caller == (workers == 1)


def test_workers_are_spawned_where_the_working_folder_holds_another_checkout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert parallel._context().get_start_method() == "forkserver"
    (tmp_path / "trajectory_pipeline").mkdir()  # what a fork server would import instead of ours
    monkeypatch.chdir(tmp_path)
    assert parallel._context().get_start_method() == "spawn"


@pytest.mark.parametrize(
    ("days", "workers", "passes"), [(20, 2, 4), (150, 2, 22), (7, 2, 2), (1, 2, 1), (20, 1, 3), (30, 4, 8)]
)
def test_passes_in_processes_come_in_rounds_that_keep_every_worker_busy(
    days: int, workers: int, passes: int
) -> None:
    assert pass_count(days, 7, workers) == passes
    span = [END - dt.timedelta(days=n) for n in range(days - 1, -1, -1)]
    spans = [(100, day_index(day), day_index(day)) for day in span]
    parts = _balanced_parts(span, spans, passes, chunk_days=7)
    assert len(parts) == passes and [day for part in parts for day in part] == span


def test_passes_split_a_range_by_what_they_read_not_by_days() -> None:
    days = [END - dt.timedelta(days=n) for n in range(9, -1, -1)]
    first = day_index(days[0])

    def file(size: int, lo: int, hi: int) -> tuple[int, int, int]:
        return size, first + lo, first + hi

    # The last two days hold as much as the eight before; a file no head bounds is read by all.
    planned = [file(10, d, d) for d in range(8)] + [file(40, 8, 8), file(40, 9, 9), file(5, 0, 9)]
    parts = _balanced_parts(days, planned, count=2, chunk_days=31)
    assert [day for part in parts for day in part] == days
    assert [len(part) for part in parts] == [8, 2]  # 85 and 85 bytes to read, not 55 and 115
    assert all(len(part) <= 3 for part in _balanced_parts(days, planned, count=4, chunk_days=3))
    assert len(_balanced_parts(days, [], count=2, chunk_days=31)) <= 2
