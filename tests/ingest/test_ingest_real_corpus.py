"""Every real transcript in ../shared/corpus/real is ingested whole: no row lost, none quarantined."""

import datetime as dt
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.conftest import REAL_FOLDERS
from trajectory_pipeline.ingest.days import SourceRoot, candidate_files, ingest_day
from trajectory_pipeline.ingest.formats import FORMATS
from trajectory_pipeline.schema import Event, utc_day


@pytest.fixture(scope="module")
def roots(real_corpus: Path) -> list[SourceRoot]:
    return [SourceRoot(source, real_corpus / folder) for source, folder in REAL_FOLDERS.items()]


def test_every_real_file_is_listed_by_its_source(roots: list[SourceRoot], real_corpus: Path) -> None:
    listed = {file.path.relative_to(real_corpus).as_posix(): file.source for file in candidate_files(roots)}
    assert Counter(listed.values()) == {
        "claude_code": 16,
        "codex": 4,
        "gemini_cli": 2,
        "swe_agent": 3,
        "aider": 1,
    }
    assert "gemini-cli/codemie-code/logs.json" not in listed  # prompts only, repeated in the session file


def test_ingesting_every_start_day_keeps_every_event(roots: list[SourceRoot], tmp_path: Path) -> None:
    files = candidate_files(roots)
    expected: Counter[str] = Counter()
    for file in files:
        for item in FORMATS[file.source].parse(file.path):
            assert isinstance(item, Event), f"{file.path} line {item.line_no}: {item.reason}"
            expected[utc_day(item.session_start)] += 1
    total = Counter[str]()
    emails = 0
    for day in sorted(expected):
        events, quarantine = tmp_path / f"{day}.parquet", tmp_path / f"q{day}.parquet"
        stats = ingest_day(roots, dt.date.fromisoformat(day), events, quarantine, files=files)
        total[day] = pq.read_metadata(events).num_rows
        assert stats.quarantined.total() == 0
        assert stats.redactions.get("aws_access_key", 0) == 0
        emails += stats.redactions.get("email", 0)
    assert total == expected
    # 2_009: the SWE-agent 0.x run's final `submit` is answered by its patch (the last trajectory step)
    assert sum(total.values()) == 2_009
    assert emails > 0  # SOURCES.md: spotter's subagent.jsonl and a Gemini session hold e-mail addresses
