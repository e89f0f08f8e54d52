"""The pipeline's promises, each checked so it can fail: the same corpus gives the same tables and
splits, transcripts stay private and the UI stays on loopback, and a leaking window never trains.

    .venv/bin/pytest tests/reliability/test_guarantees.py
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import re
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import dagster as dg
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from assets.decision_points import decision_points
from assets.lora_adapter import lora_adapter
from assets.mined_trajectories import mined_trajectories
from assets.raw_sessions import raw_sessions
from assets.rendered_splits import rendered_splits
from resources.parquet_io_manager import ParquetIOManager
from resources.session_sources import SessionSources
from tests.assets.sample_window import RANGE, WEEK, ingest_sample_window, weekly_resources
from trajectory_pipeline.dataset.training_data import LeakageError, dedupe_across_days, write_window
from trajectory_pipeline.ingest.formats import FORMATS
from trajectory_pipeline.sample.corpus import SOURCE_FOLDERS, CorpusSpec, generate_corpus

REPO_ROOT = Path(__file__).resolve().parents[2]
SAMPLE = CorpusSpec(days=2, end_date=dt.date(2026, 11, 22), sessions_per_day=3, seed=7)


def materialize_daily(corpus: Path, warehouse: Path, mlx_data_dir: Path | None = None) -> None:
    """Both sample days of `corpus` through every daily asset into `warehouse`, in one run."""
    roots = {f"{source}_root": str(corpus / sub) for source, sub in SOURCE_FOLDERS.items()}
    off = {f"{source}_root": "" for source in FORMATS if source not in SOURCE_FOLDERS}
    render: dict[str, object] = {"max_length": 6000}
    if mlx_data_dir is not None:
        render |= {"mlx_data_dir": str(mlx_data_dir), "batch_size": 1, "pad_small_splits": True}
    result = dg.materialize(
        [raw_sessions, mined_trajectories, decision_points, rendered_splits],
        tags=RANGE,
        run_config={"ops": {"rendered_splits": {"config": render}}},
        resources={
            "io_manager": ParquetIOManager(base_dir=str(warehouse)),
            "session_sources": SessionSources(**roots, **off),
        },
    )
    assert result.success


def content_hash(path: Path) -> str:
    """A hash of a Parquet file's rows, independent of row order, compression and file layout."""
    rows = sorted(json.dumps(row, sort_keys=True, default=str) for row in pq.read_table(path).to_pylist())
    return hashlib.sha256("\n".join(rows).encode()).hexdigest()


def warehouse_hashes(warehouse: Path) -> dict[str, str]:
    """Content hash of every stored partition, keyed by `<asset>/<partition>.parquet`."""
    return {
        str(path.relative_to(warehouse)): content_hash(path) for path in sorted(warehouse.rglob("*.parquet"))
    }


@pytest.fixture(scope="module")
def twice(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """One generated corpus materialized into two warehouses; the first also writes an mlx data dir."""
    root = tmp_path_factory.mktemp("twice")
    generate_corpus(root / "corpus", SAMPLE)
    materialize_daily(root / "corpus", root / "a" / "warehouse", mlx_data_dir=root / "a" / "mlx")
    materialize_daily(root / "corpus", root / "b" / "warehouse")
    return root, root / "a" / "warehouse", root / "b" / "warehouse"


# --- determinism --------------------------------------------------------------------------------


def test_two_materializations_store_identical_content(twice: tuple[Path, Path, Path]) -> None:
    _, first, second = twice
    a, b = warehouse_hashes(first), warehouse_hashes(second)
    assert {name.split("/")[0] for name in a} >= {
        "raw_sessions",
        "mined_trajectories",
        "decision_points",
        "rendered_splits",
    }
    assert list(a) == list(b)
    differing = [name for name in a if a[name] != b[name]]
    assert differing == []


def test_two_materializations_assign_identical_splits(twice: tuple[Path, Path, Path]) -> None:
    _, first, second = twice

    def assignment(warehouse: Path) -> list[tuple[str, str]]:
        frames = [pd.read_parquet(p) for p in sorted((warehouse / "rendered_splits").glob("*.parquet"))]
        rows = pd.concat(frames, ignore_index=True)
        return sorted(zip(rows["decision_id"], rows["split"], strict=True))

    pairs = assignment(first)
    assert len(pairs) > 0 and {split for _, split in pairs} >= {"train"}
    assert pairs == assignment(second)


# --- permissions and exposure -------------------------------------------------------------------


def test_every_stored_file_is_0600_and_every_folder_0700(
    twice: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    root, warehouse, _ = twice
    mlx = root / "a" / "mlx"
    assert (mlx / "train.jsonl").exists(), "rendered_splits wrote no mlx data dir"
    # A registry's SQLite file holds the adapters' data windows and losses: private too.
    registry = weekly_resources(tmp_path)["adapter_registry"].registry()
    registry.list()
    sqlite_file = tmp_path / "adapters.sqlite"
    assert sqlite_file.exists()
    checked = [sqlite_file, *(p for top in (warehouse, mlx) for p in [top, *top.rglob("*")])]
    loose = []
    for path in checked:
        mode = stat.S_IMODE(path.stat().st_mode)
        wanted = 0o700 if path.is_dir() else 0o600
        if mode != wanted:
            loose.append(f"{path} is {mode:o}, expected {wanted:o}")
    assert len(checked) > 10
    assert loose == []


def _open_folder(path: Path) -> Path:
    path.mkdir()
    os.chmod(path, 0o755)  # as Dagster, or a `mkdir` under the usual umask, leaves it
    return path


def test_make_repairs_an_open_instance_folder(tmp_path: Path) -> None:
    """`mkdir -m 700` only applied when make created the folder; one Dagster made first stayed 0755."""
    home = _open_folder(tmp_path / "home")
    subprocess.run(["make", "-s", "instance", f"DAGSTER_HOME={home}"], cwd=REPO_ROOT, check=True)
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    assert (home / "dagster.yaml").resolve() == REPO_ROOT / "dagster.yaml"
    assert "instance" in re.search(r"^install:(.*)$", (REPO_ROOT / "Makefile").read_text(), re.MULTILINE)[1]


def test_a_dagster_command_run_by_hand_gets_a_private_instance_folder(tmp_path: Path) -> None:
    """`dagster dev` (or any command that loads the definitions) started without make."""
    home = _open_folder(tmp_path / "home")
    dagster = Path(sys.executable).with_name("dagster")
    subprocess.run(
        [str(dagster), "definitions", "validate", "-m", "assets.definitions"],
        cwd=REPO_ROOT,
        env={**os.environ, "DAGSTER_HOME": str(home)},
        check=True,
        capture_output=True,
        timeout=300,
    )
    assert stat.S_IMODE(home.stat().st_mode) == 0o700


def test_make_ui_binds_loopback() -> None:
    recipe = re.search(r"^ui:.*\n((?:\t.*\n)+)", (REPO_ROOT / "Makefile").read_text(), re.MULTILINE)
    assert recipe is not None, "the Makefile has no ui target"
    assert re.search(r"dagster dev\b.*\s-h 127\.0\.0\.1\b", recipe.group(1)), recipe.group(1)


def test_the_webserver_listens_on_loopback_only_without_a_host(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    webserver = Path(sys.executable).with_name("dagster-webserver")
    server = subprocess.Popen(
        [str(webserver), "--empty-workspace", "-p", str(port)],
        env={**os.environ, "DAGSTER_HOME": str(tmp_path)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 40
        while not _listening(port):
            assert server.poll() is None, f"dagster-webserver exited with {server.returncode}"
            assert time.monotonic() < deadline, "dagster-webserver did not listen within 40 s"
            time.sleep(0.3)
        assert _listening(port) == {"127.0.0.1"}
        for address in _own_addresses():
            with socket.socket() as client:
                client.settimeout(2)
                assert client.connect_ex((address, port)) != 0, f"the UI answers on {address}:{port}"
    finally:
        server.terminate()
        server.wait(timeout=20)


def _listening(port: int) -> set[str]:
    """Local IPv4/IPv6 addresses with a socket listening on `port` (from /proc/net/tcp{,6})."""
    found = set()
    for table, width in (("/proc/net/tcp", 8), ("/proc/net/tcp6", 32)):
        for line in Path(table).read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            address, hex_port = local.split(":")
            if state == "0A" and int(hex_port, 16) == port:  # 0A: LISTEN
                raw = bytes.fromhex(address)
                # The kernel prints each 32-bit word in host (little-endian) order.
                words = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
                family = socket.AF_INET if width == 8 else socket.AF_INET6
                found.add(socket.inet_ntop(family, words))
    return found


def _own_addresses() -> list[str]:
    """This machine's non-loopback IPv4 addresses."""
    out = subprocess.run(["hostname", "-I"], capture_output=True, text=True, check=False).stdout
    return [a for a in out.split() if "." in a and not a.startswith("127.")]


# --- leakage ------------------------------------------------------------------------------------


def planted_duplicate(rows: pd.DataFrame, *, same_session: bool) -> pd.DataFrame:
    """`rows` plus a copy of a test row, same prompt and target, planted into train on its day."""
    test = rows[rows["split"] == "test"].sort_values("decision_id")
    # A session with two test rows: after the copy wins the dedupe, its session is still in test.
    sizes = test.groupby("session_id").size()
    assert (sizes > 1).any(), "the sample window has no session with two test rows to copy from"
    plant = test[test["session_id"] == sizes[sizes > 1].index[0]].iloc[[0]].copy()
    # "0" sorts before every generated id, so a dedupe that keeps the first keeps the plant.
    plant["decision_id"] = "0-planted"
    plant["split"] = "train"
    if not same_session:
        plant["session_id"] = "planted-session"
    return pd.concat([rows, plant], ignore_index=True)


def window_rows(warehouse: Path) -> pd.DataFrame:
    paths = sorted((warehouse / "rendered_splits").glob("*.parquet"))
    return pd.concat([pd.read_parquet(p) for p in paths], ignore_index=True)


def test_a_duplicate_planted_in_the_same_session_is_refused(
    twice: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    rows = planted_duplicate(window_rows(twice[1]), same_session=True)
    with pytest.raises(LeakageError, match="leakage found"):
        write_window(rows, tmp_path / "data", batch_size=1, pad_small_splits=True)
    assert not (tmp_path / "data").exists()


def test_a_duplicate_planted_from_another_session_leaves_train_not_test(
    twice: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    # Across sessions (and so across days) a repeated example is natural, not a broken split:
    # training goes on without its train copy, and the held-out copy stays for the eval.
    original = window_rows(twice[1])
    rows = planted_duplicate(original, same_session=False)
    kept, dropped = dedupe_across_days(rows)
    assert "0-planted" not in set(kept["decision_id"]) and dropped >= 1
    assert set(original.loc[original["split"] == "test", "decision_id"]) <= set(kept["decision_id"])
    manifest = write_window(rows, tmp_path / "data", batch_size=1, pad_small_splits=True)
    assert manifest.config["dropped_duplicates_across_days"] == dropped
    assert (
        manifest.counts["test"]
        == write_window(original, tmp_path / "without", batch_size=1, pad_small_splits=True).counts["test"]
    )


def test_a_planted_duplicate_never_reaches_both_train_and_test(
    twice: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    # Whatever write_window does with a cross-split duplicate, the files it writes must not share it.
    rows = planted_duplicate(window_rows(twice[1]), same_session=False)
    write_window(rows, tmp_path / "data", batch_size=1, pad_small_splits=True)
    train = set((tmp_path / "data" / "train.jsonl").read_text().splitlines())
    test = set((tmp_path / "data" / "test.jsonl").read_text().splitlines())
    assert train and test and not train & test


def test_lora_adapter_refuses_a_window_with_a_planted_duplicate(tmp_path: Path) -> None:
    ingest_sample_window(tmp_path, sessions_per_day=3, seed=4)
    day = tmp_path / "warehouse" / "rendered_splits" / "2026-11-22.parquet"
    rows = pd.read_parquet(day)
    if not (rows["split"] == "test").any():
        day = day.with_name("2026-11-21.parquet")
        rows = pd.read_parquet(day)
    planted = planted_duplicate(rows, same_session=True)
    pq.write_table(pa.Table.from_pandas(planted, schema=pq.read_schema(day), preserve_index=False), day)
    result = dg.materialize(
        [rendered_splits.to_source_asset(), lora_adapter],
        partition_key=WEEK,
        run_config={"ops": {"lora_adapter": {"config": {"artifacts_dir": str(tmp_path / "artifacts")}}}},
        resources=weekly_resources(tmp_path),
        raise_on_error=False,
    )
    assert not result.success
    failure = next(e for e in result.all_events if e.is_step_failure)
    error = failure.step_failure_data.error
    assert error is not None
    message = error.message
    assert "training refused" in message and "leakage" in message
    # It failed before training: no weights were written.
    assert list((tmp_path / "artifacts").rglob("adapters.safetensors")) == []
