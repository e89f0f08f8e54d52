"""Every table and artifact in an object store, for real: moto's S3 server runs on 127.0.0.1
(tests/s3_server.py) and the pipeline talks to it through s3fs, as it would to AWS.

The daily chain runs with `TRAJECTORY_DATA_DIR=s3://...` (and its mlx-lm data directory in the
bucket), the weekly assets train and replay with their artifacts, the base model and the warehouse
in the bucket, and the transcripts are read from a bucket prefix; every stored row must equal what
the same runs store on local disk. What the local cache holds stays 0600 in 0700 folders, and a
write that fails leaves no object behind.

    .venv/bin/python -m pytest -m object_store
"""

from __future__ import annotations

import datetime as dt
import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dagster as dg
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from assets.action_memory import action_memory
from assets.decision_points import decision_points
from assets.lora_adapter import lora_adapter
from assets.mined_trajectories import mined_trajectories
from assets.raw_sessions import raw_sessions
from assets.rendered_splits import rendered_splits
from assets.replay_eval import replay_eval
from resources.adapter_registry import AdapterRegistryResource
from resources.mlx_trainer import MLXTrainer
from resources.parquet_io_manager import ParquetIOManager
from resources.session_sources import SessionSources
from tests.assets.sample_window import RANGE, WEEK
from tests.dagster_processes import TWO_STEP_TRAINER
from tests.services import require_service
from trajectory_pipeline.ingest.formats import FORMATS
from trajectory_pipeline.sample.corpus import SOURCE_FOLDERS, CorpusSpec, generate_corpus
from trajectory_pipeline.sample.tiny_model import TinyModelSpec, build_tiny_model
from trajectory_pipeline.storage import objects
from trajectory_pipeline.training.registry import AdapterRegistry

pytestmark = [pytest.mark.object_store, pytest.mark.slow]

DAILY = [raw_sessions, mined_trajectories, decision_points, rendered_splits]
DAYS = ("2026-11-21", "2026-11-22")
TABLES = (
    "raw_sessions",
    "raw_sessions_quarantine",
    "mined_trajectories",
    "decision_points",
    "rendered_splits",
)
TRAINER = TWO_STEP_TRAINER
EVAL = {"holdout_cases": 3, "seen_exact_cases": 2, "seen_variant_cases": 1, "max_tokens": 16, "min_cases": 1}
# Columns that name a run or a place, not data: the adapter id holds the run id, paths the store.
PLACES = {
    "lora_adapter": ["adapter_id", "adapter_path", "base_model"],
    "replay_eval": ["adapter_id"],
    "action_memory": [],
}


@pytest.fixture(scope="module")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The S3 server, and this process's environment pointed at it (and at a private cache)."""
    require_service("S3 server (moto)", "moto.server", "s3fs")
    from tests.s3_server import running_s3

    root = tmp_path_factory.mktemp("s3")
    with running_s3(root / "moto.log") as server:
        saved = {name: os.environ.get(name) for name in [*server.env, "TRAJECTORY_CACHE_DIR"]}
        os.environ.update(server.env, TRAJECTORY_CACHE_DIR=str(root / "cache"))
        import s3fs

        s3fs.S3FileSystem.clear_instance_cache()  # no client made before, for another endpoint
        try:
            yield server
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
            s3fs.S3FileSystem.clear_instance_cache()


def _sources(corpus: str) -> SessionSources:
    roots = {f"{source}_root": objects.join(corpus, sub) for source, sub in SOURCE_FOLDERS.items()}
    off = {f"{source}_root": "" for source in FORMATS if source not in SOURCE_FOLDERS}
    return SessionSources(**roots, **off)


def _daily(io_manager: ParquetIOManager, sources: SessionSources, mlx_dir: str) -> None:
    result = dg.materialize(
        DAILY,
        tags=RANGE,
        run_config={"ops": {"rendered_splits": {"config": {"max_length": 6000, "mlx_data_dir": mlx_dir}}}},
        resources={"io_manager": io_manager, "session_sources": sources},
    )
    assert result.success


def _weekly(
    io_manager: ParquetIOManager, registry: str, base_model: str, artifacts: str
) -> dg.ExecuteInProcessResult:
    result = dg.materialize(
        [
            decision_points.to_source_asset(),
            rendered_splits.to_source_asset(),
            lora_adapter,
            action_memory,
            replay_eval,
        ],
        partition_key=WEEK,
        resources={
            "io_manager": io_manager,
            "adapter_registry": AdapterRegistryResource(url=registry),
            "trainer": MLXTrainer(base_model=base_model, **TRAINER),
        },
        run_config={
            "ops": {
                "lora_adapter": {"config": {"artifacts_dir": artifacts, "pad_small_splits": True}},
                "replay_eval": {"config": EVAL},
            }
        },
    )
    assert result.success
    return result


def _remote(url: str) -> bytes:
    fs, path = objects.filesystem(url)
    with fs.open(path, "rb") as handle:
        return handle.read()


def _remote_table(url: str) -> pa.Table:
    fs, path = objects.filesystem(url)
    fs.invalidate_cache()
    with fs.open(path, "rb") as handle:
        return pq.read_table(handle)


def _keys(url: str) -> set[str]:
    return set(objects.listing(url))


def _local_files(folder: Path) -> set[str]:
    return {path.relative_to(folder).as_posix() for path in folder.rglob("*") if path.is_file()}


@pytest.fixture(scope="module")
def chain(s3: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The daily chain over the same corpus twice: on local disk, and with TRAJECTORY_DATA_DIR and
    the mlx-lm data directory in the bucket."""
    root = tmp_path_factory.mktemp("chain")
    spec = CorpusSpec(days=2, end_date=dt.date(2026, 11, 22), sessions_per_day=4, seed=5)
    generate_corpus(root / "corpus", spec)
    local = root / "warehouse"
    _daily(ParquetIOManager(base_dir=str(local)), _sources(str(root / "corpus")), str(root / "mlx"))
    previous = os.environ.get("TRAJECTORY_DATA_DIR")
    os.environ["TRAJECTORY_DATA_DIR"] = s3.url("warehouse")
    try:
        _daily(ParquetIOManager(), _sources(str(root / "corpus")), s3.url("mlx", "window"))
    finally:
        if previous is None:
            os.environ.pop("TRAJECTORY_DATA_DIR")
        else:
            os.environ["TRAJECTORY_DATA_DIR"] = previous
    return {"root": root, "local": local}


def test_the_daily_chain_stores_in_the_bucket_the_rows_it_stores_on_disk(
    s3: Any, chain: dict[str, Any]
) -> None:
    local: Path = chain["local"]
    stored = _keys(s3.url("warehouse"))
    assert stored == _local_files(local), "the bucket holds other partitions than the disk"
    assert {f"{table}/{day}.parquet" for table in TABLES for day in DAYS} <= stored
    for name in sorted(stored):
        expected = pq.read_table(local / name)
        assert expected.num_rows or name.startswith("raw_sessions_quarantine"), f"{name}: no rows to compare"
        assert _remote_table(s3.url("warehouse", name)).equals(expected), f"{name} differs in the bucket"
    # The mlx-lm data directory: the same files, byte for byte (manifest.json uploaded last), but
    # for the manifest's record of the config, which names where the directory went.
    mlx = chain["root"] / "mlx"
    assert _keys(s3.url("mlx", "window")) == _local_files(mlx) >= {"train.jsonl", "manifest.json"}
    for name in _local_files(mlx) - {"manifest.json"}:
        assert _remote(s3.url("mlx", "window", name)) == (mlx / name).read_bytes(), name
    found, expected = (
        json.loads(text)
        for text in (_remote(s3.url("mlx", "window", "manifest.json")), (mlx / "manifest.json").read_bytes())
    )
    assert found["config"].pop("mlx_data_dir") == s3.url("mlx", "window")
    expected["config"].pop("mlx_data_dir")
    assert found == expected


def _private(folder: Path) -> list[str]:
    """Paths under `folder` that are not 0700 folders or 0600 files."""
    loose = []
    for path in [folder, *folder.rglob("*")]:
        mode = stat.S_IMODE(path.lstat().st_mode)
        if (path.is_dir() and mode != 0o700) or (path.is_file() and mode != 0o600):
            loose.append(f"{path.relative_to(folder)} {oct(mode)}")
    return loose


def test_the_weekly_assets_train_and_replay_with_everything_in_the_bucket(
    s3: Any, chain: dict[str, Any], tmp_path: Path
) -> None:
    texts = [
        record
        for path in sorted((chain["local"] / "rendered_splits").glob("*.parquet"))
        for record in pd.read_parquet(path)["record"]
    ]
    model = build_tiny_model(tmp_path / "model", texts, TinyModelSpec(vocab_size=512))
    for path in sorted(model.rglob("*")):  # the base model too comes from the bucket
        if path.is_file():
            objects.write_bytes(
                s3.url("models", "tiny", path.relative_to(model).as_posix()), path.read_bytes()
            )

    _weekly(
        ParquetIOManager(base_dir=str(chain["local"])),
        f"sqlite:///{tmp_path / 'local.sqlite'}",
        str(model),
        str(tmp_path / "artifacts"),
    )
    remote_registry = f"sqlite:///{tmp_path / 'remote.sqlite'}"
    _weekly(
        ParquetIOManager(base_dir=s3.url("warehouse")),
        remote_registry,
        s3.url("models", "tiny"),
        s3.url("adapters"),
    )

    for table in ("lora_adapter", "action_memory", "replay_eval"):
        expected = pd.read_parquet(chain["local"] / table / f"{WEEK}.parquet").drop(columns=PLACES[table])
        found = _remote_table(s3.url("warehouse", table, f"{WEEK}.parquet")).to_pandas()
        pd.testing.assert_frame_equal(found.drop(columns=PLACES[table]), expected)
        assert len(found), table

    # The adapter's weights, data, card and eval report are objects; the registry and manifest name them.
    [record] = AdapterRegistry(remote_registry).list()
    adapter = s3.url("adapters", record.adapter_id)
    assert record.artifact_path == f"{adapter}/adapter" and record.status in ("promoted", "rejected")
    manifest = _remote_table(s3.url("warehouse", "lora_adapter", f"{WEEK}.parquet")).to_pylist()[0]
    assert manifest["adapter_path"] == record.artifact_path
    assert {
        "adapter/adapters.safetensors",
        "adapter/adapter_config.json",
        "data/train.jsonl",
        "data/manifest.json",
        "README.md",
        "eval/report.md",
        "eval/pass_rate.png",
    } <= _keys(adapter)
    assert b"Replay eval" in _remote(f"{adapter}/eval/report.md")
    assert not [key for key in _keys(s3.url()) if ".tmp-" in key], "a temporary object was left behind"
    # Training and replay ran in the local cache, whose every file is private.
    cache = Path(os.environ["TRAJECTORY_CACHE_DIR"])
    assert (objects.mirror_path(adapter) / "adapter" / "adapters.safetensors").is_file()
    assert _private(cache) == []


def test_transcripts_are_read_from_a_bucket_prefix(s3: Any, chain: dict[str, Any], tmp_path: Path) -> None:
    corpus: Path = chain["root"] / "corpus"
    fs, bucket_path = objects.filesystem(s3.url("corpus"))
    for path in sorted(corpus.rglob("*")):
        if path.is_file():
            fs.put_file(str(path), f"{bucket_path}/{path.relative_to(corpus).as_posix()}")
    sources = _sources(s3.url("corpus"))
    # The sensor lists the prefixes as it stats folders: the same files, by the same patterns.
    listed, watched = sources.watched_files()
    local_listed, _ = _sources(str(corpus)).watched_files()
    assert watched == len(SOURCE_FOLDERS)
    assert sorted(state.path.removeprefix(s3.url("corpus")) for state in listed) == sorted(
        state.path.removeprefix(str(corpus)) for state in local_listed
    )
    # The copies keep their objects' times; ingestion reads them as it reads the folders.
    _daily(ParquetIOManager(base_dir=str(tmp_path / "warehouse")), sources, "")
    for table in ("raw_sessions", "raw_sessions_quarantine", "rendered_splits"):
        for day in DAYS:
            found = pd.read_parquet(tmp_path / "warehouse" / table / f"{day}.parquet")
            expected = pd.read_parquet(chain["local"] / table / f"{day}.parquet")
            if "source_path" in expected:  # where the file was read: the bucket's copy, not the folder
                assert found["source_path"].str.contains("/mirror/s3/trajectory/corpus/").all()
                found, expected = found.drop(columns="source_path"), expected.drop(columns="source_path")
            pd.testing.assert_frame_equal(found, expected, obj=f"{table} {day}")


def test_a_write_that_fails_leaves_no_object(s3: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    url = s3.url("atomic", "table.parquet")
    table = pa.table({"n": list(range(1000))})
    objects.write_table(table, url)

    def broken(table: pa.Table, handle: Any, **kwargs: Any) -> None:
        handle.write(b"PAR1 half a file")
        raise OSError("disk full")

    monkeypatch.setattr(pq, "write_table", broken)
    with pytest.raises(OSError, match="disk full"):
        objects.write_table(pa.table({"n": [1]}), url)
    with pytest.raises(OSError, match="disk full"):
        objects.write_table(pa.table({"n": [1]}), s3.url("atomic", "never.parquet"))
    monkeypatch.undo()
    assert _remote_table(url).equals(table), "the old object was replaced by a broken one"
    assert _keys(s3.url("atomic")) == {"table.parquet"}
    assert not [p for p in objects.mirror_path(s3.url("atomic")).iterdir() if ".tmp-" in p.name]
