"""Locations: a local path or an object-store URL, and the private local cache between the two.

Every place the pipeline keeps files — the Parquet warehouse (`TRAJECTORY_DATA_DIR`), adapter
artifacts and eval reports (`lora_adapter`'s `artifacts_dir`), an mlx-lm data directory, a base
model, a transcript source root — is a *location*: a local path, or a URL such as
`s3://bucket/prefix` (any fsspec protocol whose package is installed: s3fs for `s3://`, gcsfs for
`gs://`, adlfs for `az://`). Credentials and endpoints come from the store's own configuration (for
S3: the AWS variables and files; `AWS_ENDPOINT_URL` names an S3-compatible server).

Atomic: nothing is written in place under its final key. A file is first written whole in the local
cache (a private temporary file, renamed), then uploaded in one PUT (a multipart upload for large
files). An object store makes an object visible only once its upload completes, so a reader, or a
run killed mid-upload, sees the old object or the new one, never part of one. Local destinations
keep `parquet_io`'s temporary file and rename. A folder (an adapter, an mlx-lm data directory) is
uploaded object by object, its `manifest.json` last, and objects the new version lacks are deleted
after: an object store has no rename of a whole prefix, so a reader checks the manifest's hashes.

The cache (`TRAJECTORY_CACHE_DIR`, default `~/.cache/trajectory-pipeline`; folders 0700, files 0600):

    mirror/<scheme>/<bucket>/<key>   a copy of every object read or written, under its own name, so
                                     steps, training and replay read local files, and a later step on
                                     the same machine downloads nothing. A copy is fresh while its size
                                     and modification time (to the second, taken from the object's)
                                     match the object's: rsync's quick check.
    spool/                           the days a step writes before the IO manager uploads them

It may be deleted whenever no run is going: it fills again as needed.

    size = write_table(table, "s3://bucket/warehouse/raw_sessions/2026-11-20.parquet")
    local = fetch("s3://bucket/warehouse/raw_sessions/2026-11-20.parquet")   # a Path in the mirror
"""

from __future__ import annotations

import datetime as dt
import os
import re
import shutil
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from trajectory_pipeline import settings
from trajectory_pipeline.parquet_io import (
    COMPRESSION,
    FILE_MODE,
    SPOOL_DIR,
    ensure_private_dir,
    move_atomic,
    temporary_sibling,
    write_bytes_atomic,
    write_table_atomic,
)

_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://(.*)$", re.DOTALL)
MIRROR = "mirror"
SPOOL = "spool"
MANIFEST = "manifest.json"
_CHUNK = 1 << 20
# Files being written beside their final name (parquet_io's `.name.tmp-*`, `.name.new-*`, `.name.old-*`).
_IN_PROGRESS = re.compile(r"^\..+\.(tmp|new|old)-")


class StorageError(RuntimeError):
    """A location that cannot be used (its protocol's package is missing, say); the message says why."""


@dataclass(frozen=True)
class Entry:
    """What a listing tells about one object or file: its size and modification time (seconds)."""

    size: int
    mtime: float


# -- locations ------------------------------------------------------------------------------------


def is_remote(location: str) -> bool:
    """Whether `location` is an object-store URL (`file://` and plain paths are local)."""
    found = _URL.match(location)
    return found is not None and found.group(1).lower() != "file"


def local_path(location: str) -> Path:
    """A local location as a Path (`file://` stripped, `~` expanded)."""
    found = _URL.match(location)
    return Path(found.group(2) if found else location).expanduser()


def join(location: str, *parts: str) -> str:
    """`location` with path parts appended, as a URL for a URL and as a path for a path."""
    if is_remote(location):
        return "/".join([location.rstrip("/"), *(part.strip("/") for part in parts)])
    return str(local_path(location).joinpath(*parts))


def filesystem(url: str) -> tuple[Any, str]:
    """The fsspec filesystem of a URL and the path inside it; a StorageError names what is missing."""
    import fsspec  # the object-store layer; only imported where a URL is used

    try:
        return fsspec.core.url_to_fs(url)
    except ImportError as err:
        raise StorageError(
            f"{url}: {err}. Install the package of its protocol (s3fs for s3://, gcsfs for gs://, "
            "adlfs for az://), e.g. pip install 'trajectory-pipeline[s3]'."
        ) from None
    except ValueError as err:
        raise StorageError(f"{url}: not a storage location fsspec knows ({err})") from None


def cache_dir() -> Path:
    """The local cache (`TRAJECTORY_CACHE_DIR`), created 0700."""
    return ensure_private_dir(Path(settings.cache_dir()).expanduser())


def mirror_path(url: str) -> Path:
    """Where the cache keeps its copy of the object (or prefix) `url`: mirror/<scheme>/<bucket>/<key>."""
    found = _URL.match(url)
    if found is None or not is_remote(url):
        raise ValueError(f"not an object-store URL: {url!r}")
    parts = [part for part in PurePosixPath(found.group(2)).parts if part not in ("/", "")]
    if not parts or any(part in (".", "..") for part in parts):
        raise StorageError(f"{url}: name a bucket and a key without '.' or '..' parts")
    return cache_dir() / MIRROR / found.group(1).lower() / Path(*parts)


def remote_of(path: Path) -> str | None:
    """The URL whose mirror `path` is, when it lies in this cache's mirror; None otherwise."""
    root = Path(settings.cache_dir()).expanduser() / MIRROR
    try:
        scheme, *rest = path.expanduser().relative_to(root).parts
    except ValueError:
        return None
    return f"{scheme}://{'/'.join(rest)}" if rest else None


def spool_root(data_location: str) -> Path:
    """Where steps writing to `data_location` spool their finished files: the data directory's
    `.spool/` (a move into place is then a rename), or the cache's `spool/` for an object store."""
    if is_remote(data_location):
        return cache_dir() / SPOOL
    return local_path(data_location) / SPOOL_DIR


# -- listing --------------------------------------------------------------------------------------


def _mtime(info: Mapping[str, Any]) -> float:
    """An object's modification time in seconds, from the keys fsspec's stores use."""
    for key in ("LastModified", "last_modified", "mtime", "updated", "created"):
        value = info.get(key)
        if isinstance(value, dt.datetime):
            return (value if value.tzinfo else value.replace(tzinfo=dt.UTC)).timestamp()
        if isinstance(value, int | float):
            return float(value)
        if isinstance(value, str) and value:
            try:
                return dt.datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
            except ValueError:
                continue
    return 0.0


def _entry(info: Mapping[str, Any]) -> Entry:
    return Entry(int(info.get("size") or info.get("Size") or 0), _mtime(info))


def listing(url: str) -> dict[str, Entry]:
    """Every object under the prefix `url` (or `url` itself, under ""), by name relative to it."""
    fs, path = filesystem(url)
    path = path.rstrip("/")
    fs.invalidate_cache(path)
    try:
        found = fs.find(path, detail=True)
    except FileNotFoundError:
        return {}
    entries = {}
    for name, info in found.items():
        if info.get("type", "file") != "file":
            continue
        relative = name.rstrip("/")[len(path) :].lstrip("/")
        if name.rstrip("/") == path or name.startswith(path + "/"):
            entries[relative] = _entry(info)
    return entries


def stat(location: str) -> Entry | None:
    """The object or file at `location`, or None when there is none."""
    if not is_remote(location):
        try:
            info = local_path(location).stat()
        except FileNotFoundError:
            return None
        return Entry(info.st_size, info.st_mtime)
    fs, path = filesystem(location)
    fs.invalidate_cache(path)
    try:
        info = fs.info(path)
    except FileNotFoundError:
        return None
    return _entry(info) if info.get("type", "file") == "file" else None


def stat_many(locations: Iterable[str]) -> dict[str, Entry | None]:
    """`stat` of many locations; objects sharing a folder are listed once, not asked for one by one."""
    wanted = list(dict.fromkeys(locations))
    found: dict[str, Entry | None] = {}
    folders: dict[str, list[str]] = {}
    for location in wanted:
        if is_remote(location):
            folders.setdefault(location.rsplit("/", 1)[0], []).append(location)
        else:
            found[location] = stat(location)
    for folder, members in folders.items():
        listed = listing(folder)
        for location in members:
            found[location] = listed.get(location.rsplit("/", 1)[1])
    return {location: found[location] for location in wanted}


# -- reading through the cache --------------------------------------------------------------------


def _fresh(local: Path, entry: Entry) -> bool:
    try:
        info = local.stat()
    except FileNotFoundError:
        return False
    return info.st_size == entry.size and int(info.st_mtime) == int(entry.mtime)


def _download(fs: Any, path: str, dest: Path, entry: Entry) -> None:
    """Copy one object into the cache: a private temporary file, its time set, renamed into place."""
    ensure_private_dir(dest.parent)
    tmp = temporary_sibling(dest)
    try:
        with (
            fs.open(path, "rb") as source,
            os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE), "wb") as out,
        ):
            shutil.copyfileobj(source, out, _CHUNK)
        os.utime(tmp, (entry.mtime, entry.mtime))
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)


def fetch(url: str, entry: Entry | None = None) -> Path:
    """The cache's copy of the object `url`, downloaded when missing or stale; `entry` (from a
    listing) saves asking for the object's size and time. FileNotFoundError when there is none."""
    if entry is None:
        entry = stat(url)
        if entry is None:
            raise FileNotFoundError(f"no object at {url}")
    local = mirror_path(url)
    if not _fresh(local, entry):
        fs, path = filesystem(url)
        _download(fs, path, local, entry)
    return local


def fetch_tree(url: str, since: float | None = None) -> Path:
    """The cache's copy of every object under the prefix `url` (a folder), brought up to date:
    stale or missing copies downloaded, copies of objects gone removed. With `since` (seconds),
    objects last modified before it are not downloaded (copies already here stay)."""
    local = mirror_path(url)
    entries = listing(url)
    fs, base = filesystem(url)
    ensure_private_dir(local)
    for name, entry in sorted(entries.items()):
        if not name:
            continue  # `url` is an object, not a prefix
        dest = local.joinpath(*name.split("/"))
        if (since is None or entry.mtime >= since) and not _fresh(dest, entry):
            _download(fs, f"{base.rstrip('/')}/{name}", dest, entry)
    for path in _files(local):
        if path.relative_to(local).as_posix() not in entries:
            path.unlink(missing_ok=True)
    return local


def _files(folder: Path) -> list[Path]:
    """The finished files under `folder`, in name order; what is still being written is left out."""
    return sorted(
        path
        for path in folder.rglob("*")
        if path.is_file() and not any(_IN_PROGRESS.match(part) for part in path.relative_to(folder).parts)
    )


def local_copy(location: str) -> Path:
    """A file at `location` as a local path: itself, or the cache's fresh copy of the object."""
    return fetch(location) if is_remote(location) else local_path(location)


def local_tree(location: str) -> Path:
    """A folder at `location` as a local path: itself, or the cache's fresh copy of the prefix."""
    return fetch_tree(location) if is_remote(location) else local_path(location)


# -- writing --------------------------------------------------------------------------------------


def _upload(local: Path, url: str) -> Entry:
    """Upload a finished local file as the object `url` (visible only once whole); its Entry."""
    fs, path = filesystem(url)
    fs.put_file(str(local), path)
    fs.invalidate_cache(path)
    return _entry(fs.info(path))


def publish_file(local: Path, location: str) -> int:
    """Move a finished local file (a spooled partition) to `location`; returns its size. For an
    object store it is uploaded, then kept as the cache's copy of the object."""
    size = local.stat().st_size
    if not is_remote(location):
        move_atomic(local, local_path(location))
        return size
    entry = _upload(local, location)
    mirror = mirror_path(location)
    move_atomic(local, mirror)
    os.utime(mirror, (entry.mtime, entry.mtime))
    return size


def write_table(table: pa.Table, location: str) -> int:
    """Write a Parquet table to `location`, atomically and privately; returns the file's size."""
    if not is_remote(location):
        write_table_atomic(table, local_path(location))
        return local_path(location).stat().st_size
    mirror = mirror_path(location)
    ensure_private_dir(mirror.parent)
    tmp = temporary_sibling(mirror)
    try:
        with os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE), "wb") as handle:
            pq.write_table(table, handle, compression=COMPRESSION)
        return publish_file(tmp, location)
    finally:
        tmp.unlink(missing_ok=True)


def write_bytes(location: str, body: bytes) -> int:
    """Write `body` to `location`, atomically and privately; returns its size."""
    if not is_remote(location):
        write_bytes_atomic(local_path(location), body)
        return len(body)
    mirror = mirror_path(location)
    ensure_private_dir(mirror.parent)
    tmp = temporary_sibling(mirror)
    try:
        with os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE), "wb") as handle:
            handle.write(body)
        return publish_file(tmp, location)
    finally:
        tmp.unlink(missing_ok=True)


def upload(url: str) -> int:
    """Upload the file the cache holds for `url` (`mirror_path(url)`, written there by the caller) as
    the object `url`; returns its size."""
    local = mirror_path(url)
    entry = _upload(local, url)
    os.utime(local, (entry.mtime, entry.mtime))
    return entry.size


def publish_tree(url: str, last: tuple[str, ...] = (MANIFEST,)) -> int:
    """Upload the folder the cache holds for `url` (`mirror_path(url)`, written there by the caller):
    every file, those named in `last` after the others, then delete the objects under `url` that the
    folder no longer has. Each object appears whole; returns how many were uploaded."""
    local = mirror_path(url)
    files = sorted(_files(local), key=lambda path: (path.name in last, path.relative_to(local).as_posix()))
    names = set()
    for path in files:
        name = path.relative_to(local).as_posix()
        upload(join(url, name))
        names.add(name)
    stale = [join(url, name) for name in listing(url) if name and name not in names]
    if stale:
        fs, _ = filesystem(url)
        fs.rm([filesystem(location)[1] for location in stale])
    return len(files)
