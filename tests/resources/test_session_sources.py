"""A missing root is normal (few people run every agent); an unreadable one must stop the run, clearly."""

import os
from pathlib import Path

import dagster as dg
import pytest

from resources.session_sources import SessionSources
from trajectory_pipeline.ingest.formats import FORMATS

OFF = {f"{source}_root": "" for source in FORMATS}


def test_missing_roots_are_skipped_with_a_log_line(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    (tmp_path / "codex").mkdir()
    sources = SessionSources(
        **{**OFF, "codex_root": str(tmp_path / "codex"), "claude_code_root": str(tmp_path / "nope")}
    )
    import logging

    log = logging.getLogger("test")
    with caplog.at_level(logging.INFO, logger="test"):
        roots = sources.roots(log)
    assert [(r.source, r.root) for r in roots] == [("codex", tmp_path / "codex")]
    assert "does not exist, skipping" in caplog.text


def test_empty_root_turns_a_source_off(tmp_path: Path) -> None:
    assert SessionSources(**OFF).roots() == []


def test_a_file_where_a_folder_belongs_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(dg.Failure, match="is a file, not a folder"):
        SessionSources(**{**OFF, "aider_root": str(tmp_path / "file")}).roots()


def test_an_unreadable_root_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Tests run as root in CI, where chmod 000 does not stop reads, so the refusal is simulated.
    def refuse(path: object) -> object:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(os, "scandir", refuse)
    with pytest.raises(dg.Failure, match="exists but cannot be read"):
        SessionSources(**{**OFF, "codex_root": str(tmp_path)}).roots()
