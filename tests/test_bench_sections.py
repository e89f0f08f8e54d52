"""bench/RESULTS.md is rewritten one section at a time: the others must come through untouched."""

from __future__ import annotations

import importlib.util
from pathlib import Path

_SPEC = importlib.util.spec_from_file_location(
    "bench_sections", Path(__file__).parents[1] / "bench" / "sections.py"
)
assert _SPEC is not None and _SPEC.loader is not None
sections = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(sections)


def test_rewriting_a_section_keeps_the_blank_line_before_the_next(tmp_path: Path) -> None:
    results = tmp_path / "RESULTS.md"
    sections.write_section(results, "a", "## A\nold")
    sections.write_section(results, "b", "## B")
    sections.write_section(results, "a", "## A\nnew")
    assert results.read_text() == ("<!-- a -->\n## A\nnew\n<!-- /a -->\n\n<!-- b -->\n## B\n<!-- /b -->\n")


def test_rewriting_the_last_section_ends_the_file_with_one_newline(tmp_path: Path) -> None:
    results = tmp_path / "RESULTS.md"
    sections.write_section(results, "a", "## A")
    sections.write_section(results, "a", "## A again\n\n")
    assert results.read_text() == "<!-- a -->\n## A again\n<!-- /a -->\n"
