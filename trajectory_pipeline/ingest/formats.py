"""The transcript formats: one descriptor per format, built from its parser module.

A descriptor is everything the pipeline knows of a format: its name (the `source` column), the
folder the tool writes to and the variable that overrides it, the file patterns, the sniffing,
parsing and planning functions, and which canonical-vocabulary table maps its tool names.
Adding a format is one parser module (exposing the names below) and one entry in `_MODULES`;
`tests/ingest/test_formats.py` fails when a registered format lacks any part.

A parser module exposes:
- `SOURCE`: the source name written into each row;
- `TITLE`, `HOLDS`: how the README and the UI name the format and what its root folder holds;
- `DEFAULT_ROOT`: the folder the tool writes to ("" when there is none: off until configured);
- `GLOBS`: file patterns, relative to a source root, that may hold its sessions;
- `VOCABULARY`: the key of its table in `trajectory_pipeline/mining/vocabulary.py`;
- `PATH_DATED`: whether a file's path carries its session's date (planning skips far-off files);
- `sniff(path, head) -> bool`: whether the first bytes look like this format (judged by more
  than the first line: one odd line must not cost a file), so a file in the wrong folder is
  reported instead of mis-parsed;
- `parse(path, max_line_bytes) -> Iterator[Event | BadLine]`: stream the file; no exception
  raised while reading one record may escape (`parsers.common.failure` makes it that record's
  quarantine row), and a BadLine whose reason is in `schema.REPAIR_REASONS` reports a line kept;
- `earliest_start(path) -> int | None`: a cheap lower bound (µs UTC) on the start of any session
  whose events the file holds, read from its head, so a partition can skip files that cannot
  hold its sessions;
- `session_starts(path, max_line_bytes) -> set[int]`, optional, for a format whose head bounds
  nothing (`earliest_start` None): every start (µs UTC) `parse` can give the file's sessions,
  read without building events, so a range reads the file only in the passes of those days.

    from trajectory_pipeline.ingest.formats import FORMATS, detect_source
    FORMATS["codex"].variable      # "TRAJECTORY_CODEX_ROOT"
    detect_source(Path("rollout-2026-11-20T10-00-00-abc.jsonl"))  # "codex"
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from trajectory_pipeline import settings
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
class SourceFormat:
    name: str
    title: str
    holds: str
    default_root: str
    globs: tuple[str, ...]
    vocabulary: str
    path_dated: bool
    sniff: Callable[[Path, bytes], bool]
    parse: Callable[..., Iterator[Event | BadLine]]
    earliest_start: Callable[[Path], int | None]
    session_starts: Callable[[Path, int], set[int]] | None = None

    @classmethod
    def from_module(cls, module: ModuleType) -> SourceFormat:
        return cls(
            name=module.SOURCE,
            title=module.TITLE,
            holds=module.HOLDS,
            default_root=module.DEFAULT_ROOT,
            globs=tuple(module.GLOBS),
            vocabulary=module.VOCABULARY,
            path_dated=module.PATH_DATED,
            sniff=module.sniff,
            parse=module.parse,
            earliest_start=module.earliest_start,
            session_starts=getattr(module, "session_starts", None),
        )

    @property
    def variable(self) -> str:
        """The environment variable that overrides the root folder."""
        return settings.source_root_variable(self.name)

    def root(self) -> str:
        """The root folder from the environment, else the default ("" turns the source off)."""
        return settings.source_root(self.name, self.default_root)


# Order matters for sniffing: the most specific formats first.
_MODULES = (claude_code, codex, gemini_cli, swe_agent, own_agent, chat_jsonl, aider)
FORMATS: dict[str, SourceFormat] = {spec.name: spec for spec in map(SourceFormat.from_module, _MODULES)}
SOURCES: tuple[str, ...] = tuple(FORMATS)


def detect_source(path: Path, head: bytes | None = None) -> str | None:
    """The source whose format the file's head matches, or None when none does."""
    if head is None:
        head = read_head(path)
    for spec in FORMATS.values():
        if spec.sniff(path, head):
            return spec.name
    return None


def roots_table() -> str:
    """The README's table of sources, their default folders and variables."""
    lines = ["| source | its folder holds | default | variable |", "| --- | --- | --- | --- |"]
    for spec in FORMATS.values():
        default = f"`{spec.default_root}`" if spec.default_root else "off"
        lines.append(f"| {spec.title} (`{spec.name}`) | {spec.holds} | {default} | `{spec.variable}` |")
    return "\n".join(lines)
