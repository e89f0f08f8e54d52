"""raw_sessions materialized for real: sample corpus in, private Parquet partitions out, read back."""

import datetime as dt
import re
import stat
import tempfile
from pathlib import Path

import dagster as dg
import pandas as pd
import pytest

from assets.raw_sessions import raw_sessions
from resources.parquet_io_manager import ParquetIOManager
from resources.session_sources import SessionSources
from trajectory_pipeline.ingest.formats import FORMATS
from trajectory_pipeline.sample.corpus import SOURCE_FOLDERS, CorpusSpec, CorpusSummary, generate_corpus

SPEC = CorpusSpec(days=3, end_date=dt.date(2026, 11, 22), sessions_per_day=2, seed=11)
DAY = "2026-11-21"


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, CorpusSummary]:
    out = tmp_path_factory.mktemp("corpus")
    return out, generate_corpus(out, SPEC)


@pytest.fixture(scope="module")
def corpus(generated: tuple[Path, CorpusSummary]) -> Path:
    return generated[0]


def _resources(corpus: Path, warehouse: Path) -> dict[str, object]:
    roots = {f"{source}_root": str(corpus / sub) for source, sub in SOURCE_FOLDERS.items()}
    off = {f"{source}_root": "" for source in FORMATS if source not in SOURCE_FOLDERS}
    return {
        "io_manager": ParquetIOManager(base_dir=str(warehouse)),
        "session_sources": SessionSources(**roots, **off),
    }


def test_one_day_is_materialized_and_read_back(corpus: Path, tmp_path: Path) -> None:
    result = dg.materialize([raw_sessions], partition_key=DAY, resources=_resources(corpus, tmp_path))
    assert result.success
    path = tmp_path / "raw_sessions" / f"{DAY}.parquet"
    events = pd.read_parquet(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert set(events["source"]) == {"claude_code", "codex", "own_agent", "chat_jsonl"}
    start_days = events["session_start"].dt.strftime("%Y-%m-%d")
    assert set(start_days) == {DAY}  # only sessions that started that day
    assert (events["kind"] == "tool_call").sum() > 0
    calls = events[events["kind"] == "tool_call"]
    results = events[events["kind"] == "tool_result"]
    assert set(results["tool_call_id"].dropna()) <= set(calls["tool_call_id"])
    assert not events["text"].fillna("").str.contains("AKIA[0-9A-Z]{16}", regex=True).any()

    metadata = result.asset_materializations_for_node("raw_sessions")
    by_key = {m.asset_key.to_user_string(): m.metadata for m in metadata}
    assert by_key["raw_sessions"]["row_count"].value == len(events)
    assert by_key["raw_sessions"]["sessions"].value == events["session_id"].nunique()
    assert by_key["raw_sessions"]["files_read"].value > 0
    assert by_key["raw_sessions"]["redactions"].value == int(events["redactions"].sum())
    quarantine = pd.read_parquet(tmp_path / "raw_sessions_quarantine" / f"{DAY}.parquet")
    assert by_key["raw_sessions_quarantine"]["quarantined_lines"].value == len(quarantine)


def test_a_range_in_one_run_writes_each_day_identically(corpus: Path, tmp_path: Path) -> None:
    single = tmp_path / "single"
    dg.materialize([raw_sessions], partition_key=DAY, resources=_resources(corpus, single))
    ranged = tmp_path / "ranged"
    tags = {"dagster/asset_partition_range_start": "2026-11-20", "dagster/asset_partition_range_end": DAY}
    result = dg.materialize([raw_sessions], tags=tags, resources=_resources(corpus, ranged))
    assert result.success
    for event in result.asset_materializations_for_node("raw_sessions"):
        path = ranged / event.asset_key.path[-1] / f"{event.partition}.parquet"
        assert event.metadata["row_count"].value == pd.read_parquet(path).shape[0]
        if event.asset_key.path[-1] == "raw_sessions":
            assert event.metadata["sessions"].value == pd.read_parquet(path)["session_id"].nunique()
    assert sorted(p.name for p in (ranged / "raw_sessions").iterdir()) == [
        "2026-11-20.parquet",
        f"{DAY}.parquet",
    ]
    pd.testing.assert_frame_equal(
        pd.read_parquet(single / "raw_sessions" / f"{DAY}.parquet"),
        pd.read_parquet(ranged / "raw_sessions" / f"{DAY}.parquet"),
    )


def test_no_planted_secret_reaches_any_column_or_excerpt(
    generated: tuple[Path, CorpusSummary], tmp_path: Path
) -> None:
    corpus, summary = generated
    spools_before = set(Path(tempfile.gettempdir()).glob("trajectory-raw-sessions-*"))
    days = [(SPEC.end_date - dt.timedelta(days=n)).isoformat() for n in range(SPEC.days)]
    tags = {"dagster/asset_partition_range_start": days[-1], "dagster/asset_partition_range_end": days[0]}
    assert dg.materialize([raw_sessions], tags=tags, resources=_resources(corpus, tmp_path)).success
    blob = "\n".join(
        str(value)
        for folder in ("raw_sessions", "raw_sessions_quarantine")
        for path in sorted((tmp_path / folder).glob("*.parquet"))
        for column in pd.read_parquet(path).select_dtypes(exclude="number").to_dict("list").values()
        for value in column
    )
    assert len(summary.secret_values) == summary.planted_secrets > 10
    for secret in summary.secret_values:
        # The longest run of token characters identifies the value (a PEM body, a key, a password).
        token = max(re.findall(r"[A-Za-z0-9_+/=.-]{8,}", secret) or [secret], key=len)
        assert token not in blob, f"planted secret leaked: {token[:12]}..."
    # The run's spool folder is gone: its files were moved into the warehouse.
    assert set(Path(tempfile.gettempdir()).glob("trajectory-raw-sessions-*")) == spools_before
