"""Ordinary text must come back from the redactor unchanged (trajectory_pipeline.ingest.redact).

Why it exists: a redactor that mangles ordinary text destroys the training data it is
there to protect: `date -u +%Y-%m-%dT%H:%M:%SZ` once lost its minutes to the `-u
user:password` rule. tests/ingest/data/ordinary_lines.txt holds several hundred lines
written for this project (shell commands, format strings, URLs with query strings,
hashes, UUIDs, base64 of ordinary words, timestamps, versions, build numbers and ports,
code in Python, JavaScript, Go and Rust, config files, log lines and prose), many of
them close to what a rule looks for; each must pass unchanged, on its own, inside a
JSON string, and all of them together as one text.

    .venv/bin/pytest tests/ingest/test_redact_false_positives.py
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trajectory_pipeline.ingest.redact import Redactor
from trajectory_pipeline.schema import canonical_json

DATA = Path(__file__).parent / "data" / "ordinary_lines.txt"


def ordinary_lines() -> list[str]:
    """The corpus' lines, without its comments ("# " or a lone "#") and blank lines."""
    lines = DATA.read_text(encoding="utf-8").splitlines()
    return [line for line in lines if line.strip() and not (line.startswith("# ") or line == "#")]


LINES = ordinary_lines()


def test_the_corpus_is_large_and_has_no_duplicates() -> None:
    assert len(LINES) >= 300
    assert len(set(LINES)) == len(LINES)


@pytest.mark.parametrize("line", LINES)
def test_an_ordinary_line_is_left_alone(line: str) -> None:
    assert Redactor().redact(line) == (line, {})


def test_ordinary_lines_inside_json_strings_are_left_alone() -> None:
    # As a tool input or a tool result is stored: canonical JSON, one and two levels deep.
    redactor = Redactor()
    for line in LINES:
        for text in (canonical_json({"cmd": line}), canonical_json({"v": canonical_json({"cmd": line})})):
            assert redactor.redact(text) == (text, {}), line


def test_the_whole_corpus_as_one_text_is_left_alone() -> None:
    # Lines next to each other: a rule that reads across a line break must not fire either.
    text = "\n".join(LINES)
    assert Redactor().redact(text) == (text, {})
    document = json.dumps({"output": text})
    assert Redactor().redact(document) == (document, {})
