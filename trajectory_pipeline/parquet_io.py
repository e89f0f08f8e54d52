"""Writing Parquet files that hold people's transcripts: private, atomic, streamed.

Every file is written under a temporary name in its final folder and renamed
into place, so a reader (or a run killed mid-write) never sees half a file.
Files are 0600 and folders 0700 whatever the umask. `BatchWriter` streams rows
into a file in fixed-size batches, so memory does not grow with the data.

    writer = BatchWriter(path, EVENT_SCHEMA)
    writer.add(row); writer.close()
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import hashlib
import os
import secrets
import shutil
import socket
import sys
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported where used: the private-folder helpers serve training, which needs no Arrow
    import pyarrow as pa

FILE_MODE = 0o600
DIR_MODE = 0o700
BATCH_ROWS = 16_384
BATCH_BYTES = 64 * 1024 * 1024  # rows of long tool outputs flush sooner: memory stays bounded
COMPRESSION = "zstd"


def ensure_private_dir(path: Path) -> Path:
    """Create `path` and any missing parents as 0700 folders; tighten `path` itself if it exists."""
    missing = []
    current = path
    while not current.exists():
        missing.append(current)
        current = current.parent
    for folder in reversed(missing):
        folder.mkdir(mode=DIR_MODE, exist_ok=True)
        os.chmod(folder, DIR_MODE)
    if path.is_dir() and (path.stat().st_mode & 0o777) != DIR_MODE:
        os.chmod(path, DIR_MODE)
    return path


def make_private_tree(root: Path) -> Path:
    """Make `root` and every folder under it 0700 and every file 0600: for folders that other code
    (mlx-lm, matplotlib) writes into with the umask's modes. Links are left alone, not followed."""
    if root.is_symlink() or not root.is_dir():
        return root
    os.chmod(root, DIR_MODE)
    for folder, dirs, files in os.walk(root):
        for name in dirs:
            path = os.path.join(folder, name)
            if not os.path.islink(path):
                os.chmod(path, DIR_MODE)
        for name in files:
            path = os.path.join(folder, name)
            if not os.path.islink(path):
                os.chmod(path, FILE_MODE)
    return root


def temporary_sibling(dest: Path) -> Path:
    """A hidden, unique name beside `dest`, so the final rename stays on one filesystem."""
    return dest.with_name(f".{dest.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}")


def sweep_stale_temporaries(dest: Path) -> int:
    """Remove temporary files left beside `dest` by writers that were killed; returns how many."""
    removed = 0
    for tmp in dest.parent.glob(f".{dest.name}.tmp-*"):
        pid = tmp.name.rsplit(".tmp-", 1)[1].split("-", 1)[0]
        if pid.isdigit() and not _alive(int(pid)):
            tmp.unlink(missing_ok=True)
            removed += 1
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _open_private(path: Path) -> int:
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)


def publish(tmp: Path, dest: Path) -> None:
    """Make a finished temporary file visible under its final name, atomically."""
    os.chmod(tmp, FILE_MODE)
    with open(tmp, "rb") as handle:
        os.fsync(handle.fileno())
    os.replace(tmp, dest)


def write_table_atomic(table: pa.Table, dest: Path) -> None:
    """Write a whole table to `dest` via a temporary file and a rename."""
    import pyarrow.parquet as pq

    ensure_private_dir(dest.parent)
    sweep_stale_temporaries(dest)
    tmp = temporary_sibling(dest)
    try:
        with os.fdopen(_open_private(tmp), "wb") as handle:
            pq.write_table(table, handle, compression=COMPRESSION)
        publish(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)


def write_bytes_atomic(dest: Path, body: bytes) -> None:
    """Write `body` to `dest` as a private file, via a temporary sibling and a rename."""
    ensure_private_dir(dest.parent)
    sweep_stale_temporaries(dest)
    tmp = temporary_sibling(dest)
    try:
        with os.fdopen(_open_private(tmp), "wb") as handle:
            handle.write(body)
        publish(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)


# --- Whole folders: written beside the old one, then swapped in. ---

_RENAME_EXCHANGE = 2  # renameat2's flag (Linux 3.15+, glibc 2.28+)
_AT_FDCWD = -100


@contextlib.contextmanager
def staged_dir(dest: Path) -> Iterator[Path]:
    """A private folder beside `dest` to write a whole new version of it into; when the block ends
    it replaces `dest` in one step (`swap_dir`). If the block fails, the staged files go and `dest`
    is left as it was. Stale staged or replaced folders of dead writers are removed first.

        with staged_dir(Path("data/mlx/window")) as folder:
            (folder / "train.jsonl").write_text(...)   # then valid, test, manifest
    """
    ensure_private_dir(dest.parent)
    sweep_stale_dirs(dest)
    staging = dest.with_name(f".{dest.name}.new-{os.getpid()}-{secrets.token_hex(4)}")
    ensure_private_dir(staging)
    try:
        yield staging
        swap_dir(staging, dest)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def swap_dir(staging: Path, dest: Path) -> None:
    """Put the folder `staging` in place of `dest`: a reader sees the old folder or the new one,
    never a mix of their files. On Linux the two are exchanged atomically (renameat2
    RENAME_EXCHANGE) and the old one removed; elsewhere the old one is renamed aside first, so a
    kill between the two renames leaves no folder at `dest` (and the old one aside, swept by the
    next write) rather than a mixed one."""
    if not dest.exists():
        os.replace(staging, dest)
        return
    if _exchange(staging, dest):
        shutil.rmtree(staging, ignore_errors=True)  # now the old version
        return
    aside = dest.with_name(f".{dest.name}.old-{os.getpid()}-{secrets.token_hex(4)}")
    os.replace(dest, aside)
    os.replace(staging, dest)
    shutil.rmtree(aside, ignore_errors=True)


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths atomically where the system can (Linux); False where it cannot."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    result = renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)
    if result == 0:
        return True
    error = ctypes.get_errno()
    if error in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):  # a filesystem or kernel without it
        return False
    raise OSError(error, os.strerror(error), str(b))


def sweep_stale_dirs(dest: Path) -> list[Path]:
    """Remove the staged (`.name.new-*`) and set-aside (`.name.old-*`) folders that killed writers
    left beside `dest`; returns them."""
    removed = []
    for kind in ("new", "old"):
        for folder in dest.parent.glob(f".{dest.name}.{kind}-*"):
            pid = folder.name.rsplit(f".{kind}-", 1)[1].split("-", 1)[0]
            if pid.isdigit() and not _alive(int(pid)) and folder.is_dir():
                shutil.rmtree(folder, ignore_errors=True)
                removed.append(folder)
    return removed


SPOOL_DIR = ".spool"  # beside the tables in the data directory, so a move into place is a rename
_HOST = hashlib.sha256(socket.gethostname().encode()).hexdigest()[:8]


@contextlib.contextmanager
def spool_dir(root: Path, prefix: str) -> Iterator[Path]:
    """A private folder under `root` (the data directory's `.spool/`) for a step's finished files,
    which `move_atomic` later empties into place. If the block fails, the folder goes with what it
    holds: those files hold transcripts too.

    A process killed meanwhile (SIGKILL, the OOM killer) cannot clean up, so each folder is named
    by its host and process id, and every new spool first removes this host's folders whose
    process is gone (`sweep_stale_spools`). Inside the data directory, `make clean` removes them
    too, and the final move is a rename on the same filesystem rather than a copy.
    """
    ensure_private_dir(root)
    sweep_stale_spools(root)
    path = Path(tempfile.mkdtemp(prefix=f"{prefix}{_HOST}-{os.getpid()}-", dir=root))
    os.chmod(path, DIR_MODE)
    try:
        yield path
    except BaseException:
        shutil.rmtree(path, ignore_errors=True)
        raise


def sweep_stale_spools(root: Path) -> list[Path]:
    """Remove the spool folders under `root` that this host's dead processes left; returns them.
    Folders of other hosts (a data directory on a shared mount) are left to their own hosts."""
    removed = []
    for folder in root.iterdir() if root.is_dir() else ():
        parts = folder.name.rsplit("-", 2)  # <prefix><host>-<pid>-<mkdtemp's suffix, no dash>
        if len(parts) != 3 or not parts[0].endswith(_HOST) or not parts[1].isdigit():
            continue
        if folder.is_dir() and not _alive(int(parts[1])):
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed


def move_atomic(src: Path, dest: Path) -> None:
    """Move a finished file into place; copies first when `src` is on another filesystem.

    The folder `src` was spooled in is removed once empty.
    """
    ensure_private_dir(dest.parent)
    sweep_stale_temporaries(dest)
    try:
        _move(src, dest)
    finally:
        with contextlib.suppress(OSError):
            src.parent.rmdir()


def _move(src: Path, dest: Path) -> None:
    try:
        os.chmod(src, FILE_MODE)
        os.replace(src, dest)
        return
    except OSError as err:
        if err.errno != errno.EXDEV:  # a rename cannot cross filesystems: copy instead
            raise
    tmp = temporary_sibling(dest)
    try:
        with open(src, "rb") as reader, os.fdopen(_open_private(tmp), "wb") as writer:
            while chunk := reader.read(1 << 20):
                writer.write(chunk)
        publish(tmp, dest)
        src.unlink()
    finally:
        tmp.unlink(missing_ok=True)


@dataclass(frozen=True)
class SpooledParquet:
    """A finished Parquet file waiting to be moved into the warehouse by the IO manager.

    Assets that stream more rows than fit in memory return this instead of a DataFrame.
    Spool each run into a folder of its own: the move removes the folder once it is empty.
    """

    path: Path
    row_count: int


class SharedBudget:
    """The rows and bytes several BatchWriters may hold between them before writing any out.

    Ingesting a range keeps a writer open per day; a file's events go to one day or two, but
    files come in path order, so every day's writer fills at once. Each writer's own batch keeps
    row groups large where a day's rows come together; the shared budget bounds what the whole
    pass holds however many days it has open: over budget, the writer holding most rows writes.
    """

    def __init__(self, rows: int, size: int) -> None:
        self.max_rows = rows
        self.max_bytes = size
        self.rows = 0
        self.bytes = 0
        self.writers: list[BatchWriter] = []

    def over(self) -> bool:
        return self.rows > self.max_rows or self.bytes > self.max_bytes

    def flush_largest(self) -> None:
        max(self.writers, key=BatchWriter.buffered_rows).flush()

    def release(self, rows: int, size: int) -> None:
        """What a writer no longer holds (written out, or dropped by an abort)."""
        self.rows -= rows
        self.bytes -= size


class BatchWriter:
    """Streams rows (tuples in schema order) into a private Parquet file, one batch at a time.

    Timestamp columns take integer microseconds, as the schema's rows hold them: built as
    int64 and viewed as timestamps, which is ten times cheaper than converting each value.

    The file is written under a temporary name and appears at `path` only on `close()`
    (or the end of a `with` block); `abort()` (or an exception in the block) removes it.
    """

    def __init__(
        self,
        path: Path,
        schema: pa.Schema,
        batch_rows: int = BATCH_ROWS,
        batch_bytes: int = BATCH_BYTES,
        budget: SharedBudget | None = None,
    ) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        ensure_private_dir(path.parent)
        self.path = path
        self.schema = schema
        self.batch_rows = batch_rows
        self.batch_bytes = batch_bytes
        self.row_count = 0
        self._rows: list[Sequence[object]] = []
        self._build_types = [pa.int64() if pa.types.is_timestamp(f.type) else f.type for f in schema]
        self._bytes = 0
        self._done = False
        self._tmp = temporary_sibling(path)
        self._handle = os.fdopen(_open_private(self._tmp), "wb")
        self._writer = pq.ParquetWriter(self._handle, schema, compression=COMPRESSION)
        self._budget = budget
        if budget is not None:
            budget.writers.append(self)

    def add(self, row: Sequence[object], size: int = 0) -> None:
        """Queue a row; `size` (its long texts' length, say) lets big rows flush the batch early."""
        self._rows.append(row)
        self._bytes += size
        budget = self._budget
        if budget is not None:
            budget.rows += 1
            budget.bytes += size
        if len(self._rows) >= self.batch_rows or self._bytes >= self.batch_bytes:
            self.flush()
        elif budget is not None and budget.over():
            budget.flush_largest()

    def buffered_rows(self) -> int:
        return len(self._rows)

    def extend(self, rows: Iterable[Sequence[object]]) -> None:
        for row in rows:
            self.add(row)

    def write_table(self, table: pa.Table) -> None:
        """Write an Arrow table of the writer's schema after the rows queued so far, as its own row groups."""
        self.flush()
        self._writer.write_table(table)
        self.row_count += table.num_rows

    def flush(self) -> None:
        if not self._rows:
            return
        import pyarrow as pa

        columns = zip(*self._rows, strict=True)
        arrays = [
            pa.array(column, type=built).view(field.type)
            for column, built, field in zip(columns, self._build_types, self.schema, strict=True)
        ]
        self._writer.write_batch(pa.RecordBatch.from_arrays(arrays, schema=self.schema))
        self.row_count += len(self._rows)
        if self._budget is not None:
            self._budget.release(len(self._rows), self._bytes)
        self._rows.clear()
        self._bytes = 0

    def close(self) -> SpooledParquet:
        if self._done:
            return SpooledParquet(self.path, self.row_count)
        self._done = True
        self.flush()
        if self._budget is not None:
            self._budget.writers.remove(self)
        self._writer.close()
        self._handle.close()
        publish(self._tmp, self.path)
        return SpooledParquet(self.path, self.row_count)

    def abort(self) -> None:
        if self._done:
            return
        self._done = True
        if self._budget is not None:
            self._budget.release(len(self._rows), self._bytes)
            self._budget.writers.remove(self)
        self._rows.clear()
        try:
            self._writer.close()
            self._handle.close()
        finally:
            self._tmp.unlink(missing_ok=True)

    def __enter__(self) -> BatchWriter:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()
