"""Parsers from each agent's transcript format into normalized `Event`s.

Every parser module exposes the same four names, collected here in `PARSERS`:

- `SOURCE`: the source name written into each row;
- `GLOBS`: file patterns, relative to a source root, that may hold its sessions;
- `sniff(path, head) -> bool`: whether the first bytes look like this format, so a
  file in the wrong folder is reported instead of mis-parsed;
- `parse(path, max_line_bytes) -> Iterator[Event | BadLine]`: stream the file;
- `earliest_start(path) -> int | None`: a cheap lower bound (µs UTC) on the start
  of any session whose events the file holds, read from its head, so a partition
  can skip files that cannot hold its sessions.

    from trajectory_pipeline.ingest.parsers import PARSERS, detect_source
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from trajectory_pipeline.ingest.parsers import (
    aider,
    chat_jsonl,
    claude_code,
    codex,
    gemini_cli,
    own_agent,
    swe_agent,
)
from trajectory_pipeline.ingest.parsers.lines import read_head
from trajectory_pipeline.schema import BadLine, Event


@dataclass(frozen=True)
class ParserSpec:
    source: str
    globs: tuple[str, ...]
    sniff: Callable[[Path, bytes], bool]
    parse: Callable[..., Iterator[Event | BadLine]]
    earliest_start: Callable[[Path], int | None]

    @classmethod
    def from_module(cls, module: ModuleType) -> ParserSpec:
        return cls(module.SOURCE, tuple(module.GLOBS), module.sniff, module.parse, module.earliest_start)


# Order matters for sniffing: the most specific formats first.
PARSERS: dict[str, ParserSpec] = {
    spec.source: spec
    for spec in map(
        ParserSpec.from_module,
        (claude_code, codex, gemini_cli, swe_agent, own_agent, chat_jsonl, aider),
    )
}


def detect_source(path: Path, head: bytes | None = None) -> str | None:
    """The source whose format the file's head matches, or None when none does."""
    if head is None:
        head = read_head(path)
    for spec in PARSERS.values():
        if spec.sniff(path, head):
            return spec.source
    return None
