"""Reading JSON Lines files defensively: one bad line never costs its neighbours.

`read_json_lines` yields either a parsed object or a `BadLine` saying why the
line was refused (invalid UTF-8, malformed JSON, a truncated last line, a line
over the size cap, binary junk, a JSON value that is not an object). A UTF-8 byte-order
mark before the first line is dropped (editors on Windows write one), and a line whose only
flaws are half a UTF-16 surrogate pair (`"\\ud83d"`, an emoji cut in two: kept with U+FFFD in its
place) or numbers JSON has not (`NaN`, `Infinity`, as Python's json.dumps writes: read as null) is
kept, preceded by a BadLine (`lone_surrogate`, `non_finite_number`) that ingestion counts as a
repair, not a quarantined line. Files are read
in blocks that are split whole, and a line past the size limit is dropped as it is read,
so a multi-gigabyte line never sits in memory; `read_lines` is that capped reading alone,
for text formats (aider's markdown log). `JsonLines` is `read_json_lines` for a format
that must read the file's head before its first line (codex), without reading it twice.

    from trajectory_pipeline.ingest.parsers.lines import read_json_lines
    for item in read_json_lines(Path("session.jsonl"), source="claude_code"):
        ...
"""

from __future__ import annotations

import codecs
import contextlib
import functools
import itertools
import json
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any, NamedTuple, cast

import orjson

from trajectory_pipeline.schema import (
    BINARY_JUNK,
    INVALID_UTF8,
    LONE_SURROGATE,
    MALFORMED_JSON,
    NON_FINITE_NUMBER,
    NOT_AN_OBJECT,
    OVERSIZE_LINE,
    TRUNCATED_LINE,
    BadLine,
    excerpt,
)

MAX_LINE_BYTES = 8 * 1024 * 1024  # real Claude Code lines reach ~200 KB; 8 MiB is far past that
_CHUNK = 1024 * 1024
_HEAD_LINES = 50  # what head_objects reads by default
_HEAD_BYTES = 4 * 1024 * 1024
# Files are read a block at a time and each block split at once, far faster than line by line;
# past 128 KiB a block's buffer costs more to allocate than it saves.
_BLOCK = 64 * 1024
# Readers of a file's first lines alone (planning reads one to three lines of every file) start
# with a small block, doubled up to _BLOCK: reading and splitting a whole first block costs them
# three times what their lines do. Lines come out the same whatever the block sizes.
_HEAD_BLOCK = 4 * 1024


class JsonLine(NamedTuple):
    line_no: int
    obj: dict[str, Any]


# `JsonLine(line_no, obj)` from the pair, without NamedTuple.__new__'s argument handling: one per line.
_json_line_of = cast(
    Callable[[tuple[int, dict[str, Any]]], JsonLine], functools.partial(tuple.__new__, JsonLine)
)


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


class _Tail(NamedTuple):
    """A line that its block does not hold whole: one over the cap whose end lies in a later
    block, or the file's last line when it has no newline."""

    head: bytes  # without its newline; only the first `cap` bytes when oversize
    byte_len: int  # the full length, newline included
    oversize: bool


def _split_lines(fd: int, cap: int, first_block: int = _BLOCK) -> Iterator[bytes | _Tail]:
    """The lines of the file open as `fd`, in order, each without its newline, or as a `_Tail`."""
    # Lines come a block's worth at a time, flattened in C: no generator step per line.
    return itertools.chain.from_iterable(_line_batches(fd, cap, first_block))


def _line_batches(fd: int, cap: int, first_block: int = _BLOCK) -> Iterator[list[bytes] | list[_Tail]]:
    """The lines of each block read, as `_split_lines` gives them.

    A listed line may be over `cap` when its block holds it whole; one that grows past `cap`
    before its block ends comes as an oversize `_Tail`, only its first `cap` bytes kept, so no
    more than `cap` plus a block is ever held. Blocks start at `first_block` bytes and double up
    to `_BLOCK`; the lines do not depend on the block sizes.
    """
    if cap < 1:
        raise ValueError(f"max_line_bytes must be at least 1, got {cap}")
    pending: list[bytes] = []  # the start of a line that runs past the blocks read so far
    pending_len = 0
    oversize: bytes | None = None  # the head of an over-cap line whose newline is still unread
    size = first_block
    first = True
    while block := os.read(fd, size):
        if first:
            first = False
            block = _without_bom(block, fd)
            if not block:
                continue
        if size < _BLOCK:
            size = min(2 * size, _BLOCK)
        if oversize is not None:
            end = block.find(b"\n")
            if end == -1:
                pending_len += len(block)
                continue
            yield [_Tail(oversize, pending_len + end + 1, True)]
            oversize, pending_len = None, 0
            block = block[end + 1 :]
        lines = block.split(b"\n")
        rest = lines.pop()  # what follows the block's last newline: a line still unfinished
        if pending and lines:
            pending.append(lines[0])
            lines[0] = b"".join(pending)
            pending, pending_len = [], 0
        yield lines
        if rest:
            pending.append(rest)
            pending_len += len(rest)
            if pending_len > cap:
                oversize = b"".join(pending)[:cap]
                pending = []
    if oversize is not None:
        yield [_Tail(oversize, pending_len, True)]
    elif pending:
        last = b"".join(pending)
        yield [_Tail(last, len(last), False)]


def _without_bom(block: bytes, fd: int) -> bytes:
    """The file's first block without a UTF-8 byte-order mark (read on when the block cuts one)."""
    while len(block) < len(codecs.BOM_UTF8) and codecs.BOM_UTF8.startswith(block):
        more = os.read(fd, len(codecs.BOM_UTF8) - len(block))
        if not more:
            break
        block += more
    return block.removeprefix(codecs.BOM_UTF8)


# A JSON string escape of a UTF-16 surrogate: a pair is one character, a lone half is no character
# and orjson refuses the whole line. Escaped backslashes are matched first, so one followed by
# "ud83d" is left alone.
_SURROGATE_ESCAPE = re.compile(
    rb"(\\\\)|(\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2})|\\u[dD][89a-fA-F][0-9a-fA-F]{2}"
)
_REPLACEMENT = rb"\ufffd"


def mend_surrogates(body: bytes) -> tuple[bytes, int]:
    """`body` with each lone surrogate escape replaced by U+FFFD's, and how many were."""
    count = 0

    def replace(match: re.Match[bytes]) -> bytes:
        nonlocal count
        if match.group(1) is not None or match.group(2) is not None:
            return match.group(0)
        count += 1
        return _REPLACEMENT

    mended = _SURROGATE_ESCAPE.sub(replace, body)
    return mended, count


class Repair(NamedTuple):
    """How a line orjson refused was read after all: a reason of `schema.REPAIR_REASONS`, and what
    was done, for the count's note."""

    reason: str
    note: str


def loads_mended(body: bytes) -> tuple[Any, Repair | None]:
    """`orjson.loads(body)`; or, when the line's only flaws are lone surrogate escapes (read as
    U+FFFD) or numbers JSON has not (`NaN`, `Infinity`, `-Infinity`, as Python's json.dumps writes
    them: read as null, which is what orjson writes for them), the line so read and the repair.
    Raises orjson's JSONDecodeError otherwise. Only a refused line pays for the second look."""
    try:
        return orjson.loads(body), None
    except orjson.JSONDecodeError as err:
        refused = err
    count = 0
    if b"\\u" in body:
        body, count = mend_surrogates(body)
    surrogates = f"{count} lone surrogate escape(s) read as U+FFFD"
    if count:
        try:
            return orjson.loads(body), Repair(LONE_SURROGATE, surrogates)
        except orjson.JSONDecodeError:
            pass
    if b"NaN" not in body and b"Infinity" not in body:
        raise refused
    constants: list[str] = []
    try:
        obj = json.loads(body, parse_constant=lambda name: constants.append(name))
    except (ValueError, RecursionError):  # not JSON even so (invalid UTF-8 too: a ValueError)
        raise refused from None
    note = f"{len(constants)} non-finite number(s) ({', '.join(sorted(set(constants)))}) read as null"
    return obj, Repair(NON_FINITE_NUMBER, f"{note}; {surrogates}" if count else note)


@contextlib.contextmanager
def _opened(path: Path) -> Iterator[int]:
    """A file descriptor open for reading: read in blocks, a file needs no buffered file object."""
    fd = os.open(path, os.O_RDONLY)
    try:
        yield fd
    finally:
        os.close(fd)


def read_lines(path: Path, max_line_bytes: int = MAX_LINE_BYTES) -> Iterator[RawLine]:
    """Every line of `path`, numbered from 1, none held in memory past `max_line_bytes`."""
    with _opened(path) as fd:
        for line_no, line in enumerate(_split_lines(fd, max_line_bytes), 1):
            if isinstance(line, _Tail):
                yield RawLine(line_no, line.head, line.byte_len, line.oversize)
            elif len(line) > max_line_bytes:
                yield RawLine(line_no, line[:max_line_bytes], len(line) + 1, True)
            else:
                yield RawLine(line_no, line + b"\n", len(line) + 1, False)


def read_json_lines(
    path: Path, source: str, max_line_bytes: int = MAX_LINE_BYTES, *, head_only: bool = False
) -> Iterator[JsonLine | BadLine]:
    """Yield each non-blank line of `path` as a parsed JSON object, or a BadLine.

    `head_only`: the caller means to read only the first lines, so the file is read in small
    blocks at first; the items are the same.
    """
    with JsonLines(path, source, max_line_bytes, head_only=head_only) as lines:
        yield from lines


class JsonLines:
    """`read_json_lines` for a reader that must know the file's head before its first line.

    Inside `with`, `head_objects()` gives what `head_objects(path)` would, from this same reading
    (each line is parsed once, and only as many as the caller asks for); iterating, after it,
    gives every line, those the head read included.

        with JsonLines(path, "codex") as lines:
            meta = next(lines.head_objects(), None)
            for item in lines:
                ...
    """

    def __init__(
        self, path: Path, source: str, max_line_bytes: int = MAX_LINE_BYTES, *, head_only: bool = False
    ) -> None:
        """`head_only`: only the first lines will be read (see `read_json_lines`)."""
        self._path = path
        self._source = source
        self._cap = max_line_bytes
        self._first_block = _HEAD_BLOCK if head_only else _BLOCK
        self._fd: int | None = None
        self._lines: Iterator[bytes | _Tail] | None = None  # set on entering the `with` block
        self._read: list[tuple[bytes | _Tail, object]] = []  # lines the head read, each with its loads

    def __enter__(self) -> JsonLines:
        self._fd = os.open(self._path, os.O_RDONLY)
        self._lines = _split_lines(self._fd, self._cap, self._first_block)
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._fd is not None:
            os.close(self._fd)

    def head_objects(
        self, max_lines: int = _HEAD_LINES, max_bytes: int = _HEAD_BYTES
    ) -> Iterator[dict[str, Any]]:
        """The objects `head_objects(path, max_lines, max_bytes)` gives, in order; call before iterating."""
        budget = held = max_bytes
        given = 0
        for line in itertools.islice(self._opened_lines(), max_lines):
            head_cap = min(MAX_LINE_BYTES, budget)
            if isinstance(line, _Tail):
                text, byte_len, cut = line.head, line.byte_len, line.oversize
            else:
                text, byte_len, cut = line, len(line) + 1, False
            held -= len(text)
            if (cut and self._cap < head_cap) or held < 0:
                # The head reads this line whole but it was cut here, or keeping the lines read would
                # take more than the head's own budget: the head's own reading goes on from here.
                self._read.append((line, _UNPARSED))
                yield from itertools.islice(
                    _head_objects_by_line(self._path, max_lines, max_bytes), given, None
                )
                return
            if cut or len(text) > head_cap:  # over the head's cap: `head_objects` skips it unparsed
                self._read.append((line, _UNPARSED))
                continue
            budget -= byte_len
            if budget <= 0:
                self._read.append((line, _UNPARSED))
                return
            try:
                parsed, repair = loads_mended(text)
            except orjson.JSONDecodeError:
                parsed = _UNPARSED
            else:
                if repair:  # iterating reads the line again, and reports the repair
                    self._read.append((line, _UNPARSED))
                    if type(parsed) is dict:
                        given += 1
                        yield parsed
                    continue
            self._read.append((line, parsed))
            if type(parsed) is dict:
                given += 1
                yield parsed

    def _opened_lines(self) -> Iterator[bytes | _Tail]:
        if self._lines is None:
            raise RuntimeError(f"read {self._path} inside `with JsonLines(...)`: it opens the file")
        return self._lines

    def __iter__(self) -> Iterator[JsonLine | BadLine]:
        source, source_path, cap = self._source, str(self._path), self._cap
        line_no = 0
        read, self._read = self._read, []
        for line, parsed in read:
            line_no += 1
            if type(parsed) is dict and type(line) is bytes and len(line) <= cap:
                yield _json_line_of((line_no, parsed))
            elif item := _json_line(source, source_path, line_no, line, cap, parsed):
                yield from item
        loads = orjson.loads
        for line in self._opened_lines():
            line_no += 1
            # The common case, inline: a whole line that parses as an object.
            if type(line) is bytes and len(line) <= cap:
                try:
                    obj = loads(line)
                except orjson.JSONDecodeError:
                    pass
                else:
                    if type(obj) is dict:
                        yield _json_line_of((line_no, obj))
                        continue
            if item := _json_line(source, source_path, line_no, line, cap):
                yield from item


_UNPARSED = object()  # no orjson.loads result at hand


def _json_line(
    source: str, source_path: str, line_no: int, line: bytes | _Tail, cap: int, parsed: object = _UNPARSED
) -> list[JsonLine | BadLine]:
    """One line as an object, a BadLine saying why it is not one, or nothing when it is blank; a
    line kept by mending it (`loads_mended`) comes after a BadLine reporting the repair.

    `parsed` is `orjson.loads(line)` when the caller already has it.
    """
    if isinstance(line, _Tail):
        if line.oversize:
            return [BadLine(source, source_path, line_no, OVERSIZE_LINE, excerpt(line.head), line.byte_len)]
        text, byte_len, cut_short = line.head, line.byte_len, True
    elif len(line) > cap:
        return [BadLine(source, source_path, line_no, OVERSIZE_LINE, excerpt(line[:cap]), len(line) + 1)]
    else:
        text, byte_len, cut_short = line, len(line) + 1, False
    if type(parsed) is dict:
        return [JsonLine(line_no, parsed)]
    body = text.strip()
    if not body:
        return []
    try:
        obj, repair = loads_mended(body)
    except orjson.JSONDecodeError:
        reason = why_unreadable(body, cut_short)
    else:
        if isinstance(obj, dict):
            if repair is None:
                return [JsonLine(line_no, obj)]
            note = excerpt(f"{repair.note} | {_text(body)}")
            repaired = BadLine(source, source_path, line_no, repair.reason, note, byte_len)
            return [repaired, JsonLine(line_no, obj)]
        reason = NOT_AN_OBJECT
    return [BadLine(source, source_path, line_no, reason, excerpt(body), byte_len)]


def _text(body: bytes) -> str:
    return body[: 4 * 2000].decode("utf-8", errors="replace")


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
    """The first bytes of a file, for sniffing its format without reading it all (less a UTF-8
    byte-order mark)."""
    fd = os.open(path, os.O_RDONLY)  # no buffered file object: a listing sniffs every file
    try:
        return _without_bom(os.read(fd, max_bytes), fd)
    finally:
        os.close(fd)


def head_objects(
    path: Path, max_lines: int = _HEAD_LINES, max_bytes: int = _HEAD_BYTES
) -> Iterator[dict[str, Any]]:
    """Parse the first few JSON lines of a file, skipping any that do not parse.

    Used to learn a session's id and start before streaming the whole file. Each line may be up
    to MAX_LINE_BYTES, or what is left of `max_bytes`; a longer one is skipped unparsed.
    """
    # `JsonLines.head_objects` reads these lines in small blocks, without a buffered file object:
    # planning reads the head of every file, and most callers stop after a line or two.
    with JsonLines(path, "", MAX_LINE_BYTES, head_only=True) as lines:
        yield from lines.head_objects(max_lines, max_bytes)


def _head_objects_by_line(path: Path, max_lines: int, max_bytes: int) -> Iterator[dict[str, Any]]:
    """`head_objects`, one capped line at a time: where `JsonLines.head_objects` cannot go on."""
    with open(path, "rb") as handle:
        if handle.read(len(codecs.BOM_UTF8)) != codecs.BOM_UTF8:
            handle.seek(0)
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
                obj, _ = loads_mended(raw)
            except orjson.JSONDecodeError:
                continue
            if isinstance(obj, dict):
                yield obj


def file_mtime_us(path: Path) -> int:
    """Modification time in µs UTC: the fallback session start for undated formats."""
    return int(os.stat(path).st_mtime * 1_000_000)
