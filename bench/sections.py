"""bench/RESULTS.md is shared: each bench script owns one section between its own markers.

write_section(Path("bench/RESULTS.md"), "bench_eval", "## Replay eval speed\n...")
"""

from __future__ import annotations

from pathlib import Path


def write_section(results: Path, name: str, text: str) -> None:
    """Replace the section `name` (between `<!-- name -->` and `<!-- /name -->`) or append it."""
    begin, end = f"<!-- {name} -->", f"<!-- /{name} -->"
    section = f"{begin}\n{text.rstrip()}\n{end}\n"
    old = results.read_text() if results.exists() else ""
    if begin in old and end in old:
        head, rest = old.split(begin, 1)
        after = rest.split(end, 1)[1].lstrip("\n")
        new = head + section + ("\n" + after if after else "")
    else:
        new = old + ("\n" if old and not old.endswith("\n\n") else "") + section
    results.write_text(new)


def markdown_table(rows: list[tuple[str, ...]]) -> list[str]:
    """The lines of a Markdown table: the first row is the header."""
    head, *body = rows
    return [
        "| " + " | ".join(head) + " |",
        "|" + " --- |" * len(head),
        *("| " + " | ".join(row) + " |" for row in body),
    ]
