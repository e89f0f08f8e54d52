"""Shared fixtures: where the real transcript corpus lives (../shared/corpus/real beside the checkout)."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
REAL_CORPUS = REPO_ROOT.parent / "shared" / "corpus" / "real"
# The real corpus's folder for each source that has real transcripts.
REAL_FOLDERS = {
    "claude_code": "claude-code",
    "codex": "codex",
    "gemini_cli": "gemini-cli",
    "swe_agent": "swe-agent",
    "aider": "aider",
}


@pytest.fixture(scope="session")
def real_corpus() -> Path:
    if not REAL_CORPUS.is_dir():
        pytest.fail(f"the real transcript corpus is missing: expected it at {REAL_CORPUS}")
    return REAL_CORPUS
