"""A materialization killed with SIGKILL halfway through writing a partition leaves no partial Parquet
under the partition's name, and the next run sweeps the leftover and stores what an uninterrupted run
stores. The kill is real: a child process runs the daily assets through the real ParquetIOManager and
stops, half a table written, in the one write the test aims at.

    .venv/bin/pytest tests/reliability/test_crash_safety.py
"""

from __future__ import annotations

import datetime as dt
import os
import signal
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.reliability.test_guarantees import materialize_daily, warehouse_hashes
from trajectory_pipeline.parquet_io import write_table_atomic
from trajectory_pipeline.sample.corpus import CorpusSpec, generate_corpus

REPO_ROOT = Path(__file__).resolve().parents[2]
SAMPLE = CorpusSpec(days=2, end_date=dt.date(2026, 11, 22), sessions_per_day=3, seed=13)
# The write that is killed: the second day of a mid-pipeline asset the IO manager writes from a
# table, after the first day was stored. (raw_sessions, mined_trajectories and decision_points
# spool each day in the step and the IO manager only moves the finished file into place.)
TARGET = Path("rendered_splits") / "2026-11-22.parquet"

# Run in the child: pyarrow's write_table is wrapped so that the write of TARGET's temporary file
# stores half the rows as a real row group, says so through the `ready` file, and hangs.
CHILD = """
import os, sys, time
from pathlib import Path
import pyarrow.parquet as pq
corpus, warehouse, target, ready = sys.argv[1:5]
real_write_table = pq.write_table

def half_then_hang(table, where, **kwargs):
    name = os.readlink(f"/proc/self/fd/{where.fileno()}") if hasattr(where, "fileno") else str(where)
    target_tmp = Path(target).with_name("." + Path(target).name + ".tmp-")
    if not name.startswith(str(target_tmp)):
        return real_write_table(table, where, **kwargs)
    writer = pq.ParquetWriter(where, table.schema, compression=kwargs.get("compression"))
    writer.write_table(table.slice(0, max(1, table.num_rows // 2)))
    where.flush()
    os.fsync(where.fileno())
    Path(ready).write_text(name)
    time.sleep(600)

pq.write_table = half_then_hang
from tests.reliability.test_guarantees import materialize_daily
materialize_daily(Path(corpus), Path(warehouse))
"""


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """The sample corpus and the content hashes of an uninterrupted run over it."""
    root = tmp_path_factory.mktemp("crash")
    generate_corpus(root / "corpus", SAMPLE)
    materialize_daily(root / "corpus", root / "warehouse")
    return root / "corpus", warehouse_hashes(root / "warehouse")


def kill_mid_write(corpus: Path, warehouse: Path, ready: Path) -> Path:
    """Run the child until it hangs halfway through TARGET, SIGKILL it; returns its temporary file."""
    log = ready.with_name("child.log")
    with log.open("w") as stderr:  # the child holds its own copy of the descriptor
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, str(corpus), str(warehouse), str(warehouse / TARGET), str(ready)],
            cwd=REPO_ROOT,
            env={**os.environ, "DAGSTER_HOME": str(ready.parent)},
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
    try:
        deadline = time.monotonic() + 180  # generous: a loaded CI machine is slow, a hang is not
        while not ready.exists():
            if child.poll() is not None:
                pytest.fail(
                    f"the child ended ({child.returncode}) before the write: {log.read_text()[-3000:]}"
                )
            assert time.monotonic() < deadline, "the child never reached the write of the target"
            time.sleep(0.1)
        os.kill(child.pid, signal.SIGKILL)
        assert child.wait(timeout=30) == -signal.SIGKILL
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    return Path(ready.read_text())


@pytest.mark.parametrize("previous", [False, True], ids=["first-write", "overwrite"])
def test_a_killed_write_leaves_no_partial_parquet_and_a_rerun_matches(
    uninterrupted: tuple[Path, dict[str, str]], tmp_path: Path, previous: bool
) -> None:
    corpus, expected = uninterrupted
    warehouse = tmp_path / "warehouse"
    dest = warehouse / TARGET
    if previous:  # an earlier version of the partition, which must survive the killed overwrite
        write_table_atomic(pa.table({"earlier": ["version"]}), dest)
    before = dest.read_bytes() if previous else None

    temporary = kill_mid_write(corpus, warehouse, tmp_path / "ready")

    # Half the rows really reached the disk, but only under the hidden temporary name.
    assert temporary.exists() and temporary.parent == dest.parent and temporary.name.startswith(".")
    assert temporary.stat().st_size > 0
    with pytest.raises(pa.ArrowInvalid):
        pq.read_table(temporary)  # no footer: a partial file
    if previous:
        assert dest.read_bytes() == before
    else:
        assert not dest.exists()
    # Every file under a final name is a complete Parquet file.
    for path in warehouse.rglob("*.parquet"):
        pq.read_metadata(path)

    materialize_daily(corpus, warehouse)

    assert not temporary.exists(), "the re-run did not sweep the killed writer's temporary file"
    leftovers = [p for p in warehouse.rglob(".*") if p.is_file()]
    assert leftovers == []
    assert warehouse_hashes(warehouse) == expected


# Run in the child: the IO manager's move of a spooled file into the warehouse says so and hangs,
# so the step is killed with every day of raw_sessions finished in its spool folder.
SPOOL_CHILD = """
import sys, time
from pathlib import Path
import trajectory_pipeline.storage.objects as objects
corpus, warehouse, ready = sys.argv[1:4]

def hang(src, dest):
    Path(ready).write_text(str(src.parent))
    time.sleep(600)

objects.move_atomic = hang  # the IO manager publishes a spooled day through objects.publish_file
from tests.reliability.test_guarantees import materialize_daily
materialize_daily(Path(corpus), Path(warehouse))
"""


def test_a_run_killed_with_its_events_spooled_leaves_them_in_the_data_dir_and_the_next_run_removes_them(
    uninterrupted: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    """raw_sessions spools every day of its range before the IO manager moves them into place: a kill
    then used to leave a full copy of the run's events in the system's temporary folder, which no rerun
    and no `make clean` removed."""
    corpus, expected = uninterrupted
    warehouse, ready = tmp_path / "warehouse", tmp_path / "ready"
    temporary = Path(tempfile.gettempdir())
    before = {path.name for path in temporary.iterdir()}
    child = subprocess.Popen(
        [sys.executable, "-c", SPOOL_CHILD, str(corpus), str(warehouse), str(ready)],
        cwd=REPO_ROOT,
        env={**os.environ, "DAGSTER_HOME": str(tmp_path)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 180
        while not ready.exists():
            assert child.poll() is None, "the child ended before it moved a spooled file"
            assert time.monotonic() < deadline, "the child never reached the move"
            time.sleep(0.1)
        os.kill(child.pid, signal.SIGKILL)
        assert child.wait(timeout=30) == -signal.SIGKILL
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()

    spool = Path(ready.read_text())
    # The leftover is inside the data directory (so `make clean` takes it), private, and whole.
    assert spool.parent == warehouse / ".spool"
    assert stat.S_IMODE(spool.stat().st_mode) == 0o700 and stat.S_IMODE(spool.parent.stat().st_mode) == 0o700
    assert sorted(path.name for path in spool.glob("events-*.parquet")) == [
        "events-2026-11-21.parquet",
        "events-2026-11-22.parquet",
    ]
    assert not [
        name for name in {p.name for p in temporary.iterdir()} - before if name.startswith("trajectory-")
    ]

    materialize_daily(corpus, warehouse)  # the next run, in this (another) process

    assert not spool.exists(), "the next run did not remove the killed run's spool"
    assert list((warehouse / ".spool").iterdir()) == []
    assert warehouse_hashes(warehouse) == expected
