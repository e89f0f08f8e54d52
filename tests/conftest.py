"""Shared fixtures: where the real transcript corpus lives (../shared/corpus/real beside the checkout)."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
REAL_CORPUS = REPO_ROOT.parent / "shared" / "corpus" / "real"
# Small tool specs for records in tests that only need some well-formed tools.
TOOLS = ("read_file", "run_shell", "edit_file")
TOOL_SPECS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": f"{name} tool",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        },
    }
    for name in TOOLS
]

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
