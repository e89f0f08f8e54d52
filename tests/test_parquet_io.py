"""Transcript tables must never be half-written or world-readable, even when a run is killed."""

from __future__ import annotations

import multiprocessing
import os
import shutil
import signal
import stat
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from trajectory_pipeline.parquet_io import (
    BatchWriter,
    SharedBudget,
    ensure_private_dir,
    move_atomic,
    spool_dir,
    write_table_atomic,
)

SCHEMA = pa.schema([("n", pa.int64()), ("text", pa.string())])


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_files_are_0600_and_folders_0700_whatever_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        dest = tmp_path / "a" / "b" / "part.parquet"
        write_table_atomic(pa.table({"n": [1, 2]}), dest)
    finally:
        os.umask(old)
    assert _mode(dest) == 0o600
    assert _mode(dest.parent) == 0o700 and _mode(dest.parent.parent) == 0o700
    assert pq.read_table(dest).column("n").to_pylist() == [1, 2]


def test_existing_folder_is_tightened(tmp_path: Path) -> None:
    folder = tmp_path / "open"
    folder.mkdir(mode=0o755)
    ensure_private_dir(folder)
    assert _mode(folder) == 0o700


def test_batch_writer_streams_batches_and_publishes_on_close(tmp_path: Path) -> None:
    dest = tmp_path / "out.parquet"
    writer = BatchWriter(dest, SCHEMA, batch_rows=10)
    writer.extend((n, f"row {n}") for n in range(25))
    assert not dest.exists()  # invisible until closed
    spooled = writer.close()
    assert spooled.row_count == 25
    table = pq.read_table(dest)
    assert table.column("n").to_pylist() == list(range(25))
    assert pq.ParquetFile(dest).metadata.num_row_groups == 3
    assert [p.name for p in tmp_path.iterdir()] == ["out.parquet"]


def test_batch_writer_leaves_nothing_when_the_block_fails(tmp_path: Path) -> None:
    dest = tmp_path / "out.parquet"
    try:
        with BatchWriter(dest, SCHEMA, batch_rows=2) as writer:
            writer.extend((n, "x") for n in range(5))
            raise RuntimeError("boom")
    except RuntimeError:
        pass
    assert list(tmp_path.iterdir()) == []


def test_writers_sharing_a_budget_hold_no_more_than_it_together_and_lose_no_row(tmp_path: Path) -> None:
    budget = SharedBudget(rows=12, size=1_000)
    writers = [
        BatchWriter(tmp_path / f"day-{d}.parquet", SCHEMA, batch_rows=10, budget=budget) for d in range(5)
    ]
    for n in range(300):  # rows of the five days interleaved, as files in path order give them
        writers[n * 7 % 5].add((n, "x" * (n % 50)), size=n % 50)
        assert sum(w.buffered_rows() for w in writers) == budget.rows <= 12
        assert budget.bytes <= 1_000
    for writer in writers:
        writer.close()
    assert budget.rows == budget.bytes == 0 and budget.writers == []
    days = [pq.read_table(tmp_path / f"day-{d}.parquet").column("n").to_pylist() for d in range(5)]
    assert days == [[n for n in range(300) if n * 7 % 5 == d] for d in range(5)]
    with BatchWriter(tmp_path / "alone.parquet", SCHEMA, budget=budget) as writer:
        writer.add((1, "y"), size=1)
        writer.abort()
    assert budget.rows == budget.bytes == 0 and budget.writers == []


def test_move_atomic_replaces_the_destination(tmp_path: Path) -> None:
    write_table_atomic(pa.table({"n": [1]}), tmp_path / "old.parquet")
    write_table_atomic(pa.table({"n": [2]}), tmp_path / "new.parquet")
    move_atomic(tmp_path / "new.parquet", tmp_path / "old.parquet")
    assert pq.read_table(tmp_path / "old.parquet").column("n").to_pylist() == [2]
    assert not (tmp_path / "new.parquet").exists()


def _slow_writer(dest: str, started: multiprocessing.synchronize.Event) -> None:
    writer = BatchWriter(Path(dest), SCHEMA, batch_rows=100)
    for n in range(10_000_000):
        writer.add((n, "x" * 50))
        if n == 1_000:
            started.set()
            time.sleep(0.01)
    writer.close()


def test_a_killed_write_leaves_no_partial_file(tmp_path: Path) -> None:
    dest = tmp_path / "day" / "2026-11-20.parquet"
    context = multiprocessing.get_context("fork")
    started = context.Event()
    child = context.Process(target=_slow_writer, args=(str(dest), started))
    child.start()
    assert started.wait(timeout=30)
    os.kill(child.pid, signal.SIGKILL)
    child.join()
    assert child.exitcode == -signal.SIGKILL
    assert not dest.exists()
    # A re-run produces the complete file.
    write_table_atomic(pa.table({"n": [1, 2, 3]}), dest)
    assert pq.read_table(dest).num_rows == 3


def test_temporaries_of_killed_writers_are_swept_on_the_next_write(tmp_path: Path) -> None:
    dest = tmp_path / "2026-11-20.parquet"
    dead = subprocess_pid_that_exited()
    stale = tmp_path / f".{dest.name}.tmp-{dead}-abcd1234"
    stale.write_bytes(b"PAR1 half a file")
    live = tmp_path / f".{dest.name}.tmp-{os.getpid()}-abcd1234"  # a writer still running: kept
    live.write_bytes(b"in progress")
    write_table_atomic(pa.table({"n": [1]}), dest)
    assert not stale.exists() and live.exists()


def subprocess_pid_that_exited() -> int:
    import subprocess

    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def test_a_spool_folder_is_private_and_goes_with_its_files_when_the_step_fails(tmp_path: Path) -> None:
    root = tmp_path / "data" / ".spool"
    with spool_dir(root, "test-spool-") as kept:
        (kept / "day.parquet").write_bytes(b"rows")
    assert kept.parent == root and (kept / "day.parquet").exists()
    assert _mode(kept) == 0o700 and _mode(root) == 0o700
    shutil.rmtree(kept)
    with pytest.raises(RuntimeError), spool_dir(root, "test-spool-") as failed:
        (failed / "day.parquet").write_bytes(b"transcripts")
        raise RuntimeError("the step failed")
    assert not failed.exists()


def test_a_new_spool_removes_the_spools_of_dead_processes_only(tmp_path: Path) -> None:
    root = tmp_path / ".spool"
    with spool_dir(root, "raw-sessions-") as mine:
        host = mine.name.rsplit("-", 2)[0].removeprefix("raw-sessions-")
        dead = root / f"raw-sessions-{host}-{subprocess_pid_that_exited()}-abc123"
        alive = root / f"raw-sessions-{host}-{os.getpid()}-def456"
        elsewhere = root / f"raw-sessions-0123abcd-{subprocess_pid_that_exited()}-ghi789"  # another host
        for folder in (dead, alive, elsewhere):
            folder.mkdir()
            (folder / "events-2026-11-20.parquet").write_bytes(b"a day of transcripts")
        with spool_dir(root, "mined-") as other:
            assert not dead.exists()
            assert alive.exists() and elsewhere.exists() and mine.exists() and other.exists()
