"""Reading JSON Lines files defensively: one bad line never costs its neighbours.

`read_json_lines` yields either a parsed object or a `BadLine` saying why the
line was refused (invalid UTF-8, malformed JSON, a truncated last line, a line
over the size cap, binary junk, a JSON value that is not an object). Lines are
read with a size limit, so a multi-gigabyte line never sits in memory; `read_lines`
is that capped reading alone, for text formats (aider's markdown log).

    from trajectory_pipeline.parsers.lines import read_json_lines
    for item in read_json_lines(Path("session.jsonl"), source="claude_code"):
        ...
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, NamedTuple

import orjson

from trajectory_pipeline.schema import (
    BINARY_JUNK,
    INVALID_UTF8,
    MALFORMED_JSON,
    NOT_AN_OBJECT,
    OVERSIZE_LINE,
    TRUNCATED_LINE,
    BadLine,
    excerpt,
    parse_ts,
)

MAX_LINE_BYTES = 8 * 1024 * 1024  # real Claude Code lines reach ~200 KB; 8 MiB is far past that
_CHUNK = 1024 * 1024


class JsonLine(NamedTuple):
    line_no: int
    obj: dict[str, Any]


class RawLine(NamedTuple):
    line_no: int  # 1-based
    raw: bytes  # with its newline; only the first `cap` bytes when oversize
    byte_len: int  # the full length, newline included
    oversize: bool


def read_capped_line(handle: IO[bytes], cap: int) -> tuple[bytes, int, bool]:
    """Next line (without its newline), its full byte length, and whether it was over `cap`.

    An oversize line is consumed in chunks and only its first `cap` bytes are kept.
    """
    line = handle.readline(cap + 1)
    if len(line) <= cap or line.endswith(b"\n"):
        return line, len(line), False
    total = len(line)
    while True:
        rest = handle.readline(_CHUNK)
        total += len(rest)
        if not rest or rest.endswith(b"\n"):
            return line[:cap], total, True


def read_lines(path: Path, max_line_bytes: int = MAX_LINE_BYTES) -> Iterator[RawLine]:
    """Every line of `path`, numbered from 1, none held in memory past `max_line_bytes`."""
    with open(path, "rb") as handle:
        for line_no in itertools.count(1):
            raw, byte_len, oversize = read_capped_line(handle, max_line_bytes)
            if not raw:
                return
            yield RawLine(line_no, raw, byte_len, oversize)


def read_json_lines(
    path: Path, source: str, max_line_bytes: int = MAX_LINE_BYTES
) -> Iterator[JsonLine | BadLine]:
    """Yield each non-blank line of `path` as a parsed JSON object, or a BadLine."""
    source_path = str(path)
    for line_no, raw, byte_len, oversize in read_lines(path, max_line_bytes):
        if oversize:
            yield BadLine(source, source_path, line_no, OVERSIZE_LINE, excerpt(raw), byte_len)
            continue
        ends_with_newline = raw.endswith(b"\n")
        body = raw.strip()
        if not body:
            continue
        reason = None
        try:
            obj = orjson.loads(body)
        except orjson.JSONDecodeError:
            reason = why_unreadable(body, cut_short=not ends_with_newline)
        else:
            if isinstance(obj, dict):
                yield JsonLine(line_no, obj)
                continue
            reason = NOT_AN_OBJECT
        yield BadLine(source, source_path, line_no, reason, excerpt(body), byte_len)


def why_unreadable(body: bytes, cut_short: bool, truncated: str = TRUNCATED_LINE) -> str:
    """Why bytes that orjson refused are not JSON: binary junk, invalid UTF-8, text that was
    cut short (reported as `truncated`), else malformed JSON."""
    if b"\x00" in body[:4096]:
        return BINARY_JUNK
    try:
        body.decode("utf-8")
    except UnicodeDecodeError:
        return INVALID_UTF8
    return truncated if cut_short else MALFORMED_JSON


def read_head(path: Path, max_bytes: int = 64 * 1024) -> bytes:
    """The first bytes of a file, for sniffing its format without reading it all."""
    with open(path, "rb") as handle:
        return handle.read(max_bytes)


def head_objects(
    path: Path, max_lines: int = 50, max_bytes: int = 4 * 1024 * 1024
) -> Iterator[dict[str, Any]]:
    """Parse the first few JSON lines of a file, skipping any that do not parse.

    Used to learn a session's id and start before streaming the whole file.
    """
    with open(path, "rb") as handle:
        budget = max_bytes
        for _ in range(max_lines):
            raw, byte_len, oversize = read_capped_line(handle, min(MAX_LINE_BYTES, budget))
            if not raw:
                return
            if oversize:
                # Skipped unparsed (the full read quarantines it): it must not use up the budget
                # and hide the lines after it, which may hold the session's id or model.
                continue
            budget -= byte_len
            if budget <= 0:
                return
            try:
                obj = orjson.loads(raw)
            except orjson.JSONDecodeError:
                continue
            if isinstance(obj, dict):
                yield obj


def first_timestamp(objects: Iterator[dict[str, Any]], key: str = "timestamp") -> int | None:
    """The first readable `key` timestamp among `objects` (µs UTC)."""
    for obj in objects:
        ts = parse_ts(obj.get(key))
        if ts is not None:
            return ts
    return None


def file_mtime_us(path: Path) -> int:
    """Modification time in µs UTC: the fallback session start for undated formats."""
    return int(os.stat(path).st_mtime * 1_000_000)
