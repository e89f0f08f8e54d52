"""Locations (trajectory_pipeline/storage/objects.py) without a server: what is remote, where the cache
keeps a URL's copy, and local locations written as parquet_io writes them. The object store itself is
tested against a real S3 server in tests/test_object_store.py."""

from __future__ import annotations

import stat
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from trajectory_pipeline.storage import objects


@pytest.mark.parametrize(
    ("location", "remote"),
    [
        ("s3://bucket/prefix", True),
        ("gs://bucket", True),
        ("az://container/x", True),
        ("file:///tmp/x", False),
        ("/tmp/x", False),
        ("data/warehouse", False),
        ("~/data", False),
    ],
)
def test_what_is_an_object_store(location: str, remote: bool) -> None:
    assert objects.is_remote(location) is remote


def test_joining_keeps_urls_urls_and_paths_paths(tmp_path: Path) -> None:
    assert objects.join("s3://bucket/warehouse/", "raw_sessions", "2026-11-20.parquet") == (
        "s3://bucket/warehouse/raw_sessions/2026-11-20.parquet"
    )
    assert objects.join(str(tmp_path), "a", "b.parquet") == str(tmp_path / "a" / "b.parquet")
    assert objects.join(f"file://{tmp_path}", "a") == str(tmp_path / "a")


def test_the_cache_mirrors_a_url_under_its_scheme_and_bucket(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRAJECTORY_CACHE_DIR", str(tmp_path / "cache"))
    path = objects.mirror_path("s3://bucket/adapters/2026-11-22-ab/adapter")
    assert path == tmp_path / "cache" / "mirror" / "s3" / "bucket" / "adapters" / "2026-11-22-ab" / "adapter"
    assert stat.S_IMODE((tmp_path / "cache").stat().st_mode) == 0o700
    assert objects.remote_of(path) == "s3://bucket/adapters/2026-11-22-ab/adapter"
    assert objects.remote_of(tmp_path / "elsewhere") is None
    with pytest.raises(objects.StorageError, match=r"'\.\.'"):
        objects.mirror_path("s3://bucket/../etc")
    with pytest.raises(ValueError, match="not an object-store URL"):
        objects.mirror_path(str(tmp_path))
    # A step writing to an object store spools in the cache, not in the (remote) data directory.
    assert objects.spool_root("s3://bucket/warehouse") == tmp_path / "cache" / "spool"
    assert objects.spool_root(str(tmp_path / "warehouse")) == tmp_path / "warehouse" / ".spool"


def test_local_locations_are_written_privately_and_atomically(tmp_path: Path) -> None:
    dest = tmp_path / "warehouse" / "t" / "2026-11-20.parquet"
    table = pa.table({"n": [1, 2, 3]})
    assert objects.write_table(table, str(dest)) == dest.stat().st_size
    assert pq.read_table(dest).equals(table)
    assert stat.S_IMODE(dest.stat().st_mode) == 0o600
    assert stat.S_IMODE(dest.parent.stat().st_mode) == 0o700
    spooled = tmp_path / "spool" / "x.parquet"
    spooled.parent.mkdir()
    pq.write_table(table, spooled)
    moved = tmp_path / "warehouse" / "t" / "2026-11-21.parquet"
    assert objects.publish_file(spooled, str(moved)) == moved.stat().st_size
    assert not spooled.exists() and pq.read_table(moved).equals(table)
    assert objects.stat_many([str(moved), str(tmp_path / "none")]) == {
        str(moved): objects.Entry(moved.stat().st_size, moved.stat().st_mtime),
        str(tmp_path / "none"): None,
    }
    assert objects.local_tree(str(tmp_path)) == tmp_path


def test_an_unknown_protocol_is_one_clear_error() -> None:
    with pytest.raises(objects.StorageError, match="nosuchfs://bucket"):
        objects.filesystem("nosuchfs://bucket/x")
