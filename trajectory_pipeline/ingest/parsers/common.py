"""Helpers that several format parsers share, so each format module holds only its own format.

- typed field access (`get_str`, `get_dict`, ...) raising `WrongFieldType`, the
  `RecordError`s a parser raises for a record that breaks its format, `bad_record`,
  the quarantine row for such a record, and `failure`, the reason and note for any exception
  raised while reading one record (so no record can cost its file, let alone the run);
- OpenAI-style message pieces: `content_text` (a content string or part list),
  `parse_arguments` (a tool call's arguments, JSON string or object) and `prompt_cwd` (the working
  folder a system prompt names, for formats that keep no cwd field);
- timestamps: `Clock`, which believes a file's times only from 2015 to its last write plus a day
  (a 1970, epoch-0 or future time is quarantined as `implausible_timestamp`, its line kept
  untimed, and never starts a session that would land on a day no run ingests);
- JSON-lines helpers: `sniff_lines` (a head judged by its first few records), `fallback_start`
  for undated lines, and `Orphans`, which parks bad lines until the session they belong to is known;
- whole-file JSON formats (Gemini CLI, SWE-agent): `load_json_document` and `stamp_events`.

Line reading itself lives in `lines.py`; reasons and the `Event` record in `schema.py`.

    from trajectory_pipeline.ingest.parsers.common import get_str, load_json_document
"""

from __future__ import annotations

import codecs
import datetime as dt
import functools
import itertools
import os
import re
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, cast

import orjson

from trajectory_pipeline.ingest.parsers.lines import file_mtime_us, loads_mended, why_unreadable
from trajectory_pipeline.schema import (
    DAY_US,
    EARLIEST_PLAUSIBLE_TS,
    FILE_TOO_LARGE,
    IMPLAUSIBLE_TIMESTAMP,
    NOT_AN_OBJECT,
    TRUNCATED_FILE,
    UNKNOWN_RECORD_TYPE,
    UNREADABLE_RECORD,
    WRONG_FIELD_TYPE,
    BadLine,
    Event,
    TooDeepError,
    event,
    excerpt,
    parse_ts,
    ts_to_datetime,
)

# One event's fields before the file-wide ones (source, session, seq) are added.
Fields = dict[str, Any]

# `Event(*values)` from all its values in field order, without the argument handling of
# NamedTuple.__new__, which costs as much again: the busy parsers build events with it.
new_event = cast(Callable[[tuple[Any, ...]], Event], functools.partial(tuple.__new__, Event))

# Whole-file formats are loaded at once; past this size a file is refused, not loaded.
MAX_FILE_BYTES = 256 * 1024 * 1024
# What an encrypted thinking block (Anthropic's redacted_thinking) becomes: that there was some.
REDACTED_THINKING = "[redacted thinking]"

# Bad lines held while waiting for the session they belong to; past this they go out unassigned.
ORPHAN_CAP = 10_000

_NOTE_SOURCE_BYTES = 1024
# What a quarantine excerpt keeps of a value nested too deeply to serialize whole.
_EXCERPT_DEPTH = 8


# --- typed field access ----------------------------------------------------------------------


class RecordError(Exception):
    """A parsed record that breaks its format: that record is quarantined, not the file.

    `reason` is the quarantine reason; the message says what was wrong (see `bad_record`).
    """

    reason: str


class WrongFieldType(RecordError):
    """A known record with a field of the wrong JSON type."""

    reason = WRONG_FIELD_TYPE

    def __init__(self, field: str, expected: str, value: object) -> None:
        super().__init__(f"{field}: expected {expected}, got {_json_type(value)}")


class UnknownRecordType(RecordError):
    """A record of a type (or role) the format does not have, or not yet."""

    reason = UNKNOWN_RECORD_TYPE


_JSON_TYPE_NAMES: dict[type, str] = {str: "string", list: "array", dict: "object"}


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    return _JSON_TYPE_NAMES.get(type(value), type(value).__name__)


def get_str(obj: dict[str, Any], key: str, where: str = "") -> str | None:
    """`obj[key]` when it is a string, None when absent or null; any other type is a WrongFieldType."""
    value = obj.get(key)
    if value is None or isinstance(value, str):
        return value
    raise WrongFieldType(where + key, "a string", value)


def get_dict(obj: dict[str, Any], key: str, where: str = "") -> dict[str, Any] | None:
    value = obj.get(key)
    if value is None or isinstance(value, dict):
        return value
    raise WrongFieldType(where + key, "an object", value)


def get_list(obj: dict[str, Any], key: str, where: str = "") -> list[Any] | None:
    value = obj.get(key)
    if value is None or isinstance(value, list):
        return value
    raise WrongFieldType(where + key, "an array", value)


def get_int(obj: dict[str, Any], key: str, where: str = "") -> int | None:
    value = obj.get(key)
    if value is None or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    raise WrongFieldType(where + key, "an integer", value)


def get_number(obj: dict[str, Any], key: str, where: str = "") -> float | None:
    value = obj.get(key)
    if value is None:
        return None
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    raise WrongFieldType(where + key, "a number", value)


def bad_record(
    source: str,
    source_path: str,
    line_no: int,
    reason: str,
    value: object,
    note: str | None = None,
    *,
    session_id: str | None = None,
    session_start: int | None = None,
) -> BadLine:
    """A quarantine row for a parsed record (a line, or an element of a whole-file document).

    The raw bytes are gone by then, so the excerpt and byte length come from re-serializing
    the value; a `note` (what was wrong) leads the excerpt when given.
    """
    try:
        raw = orjson.dumps(value, default=repr)
    except (TypeError, ValueError, RecursionError):  # nested too deeply: its outer levels tell enough
        raw = orjson.dumps(_shallow(value, _EXCERPT_DEPTH), default=repr)
    text: bytes | str = raw
    if note is not None:
        text = f"{note} | {raw[:_NOTE_SOURCE_BYTES].decode('utf-8', errors='replace')}"
    return BadLine(source, source_path, line_no, reason, excerpt(text), len(raw), session_id, session_start)


def _shallow(value: object, depth: int) -> object:
    """`value` with what lies below `depth` levels replaced by "…" (recursion at most `depth` deep)."""
    if isinstance(value, dict):
        return {str(k): _shallow(v, depth - 1) for k, v in value.items()} if depth > 0 else "…"
    if isinstance(value, list | tuple):
        return [_shallow(v, depth - 1) for v in value] if depth > 0 else "…"
    return value


def failure(err: Exception) -> tuple[str, str]:
    """The quarantine reason and note for an exception raised while reading one record.

    A `RecordError` (the record breaks its format) and a `TooDeepError` carry their own reason;
    anything else, a parser's own bug on an input nobody foresaw included, is `unreadable_record`,
    its note naming the exception, so the record is quarantined and the file read on.
    """
    if isinstance(err, RecordError | TooDeepError):
        return err.reason, str(err)
    return UNREADABLE_RECORD, f"{type(err).__name__}: {err}"


# --- timestamps ------------------------------------------------------------------------------

_NO_LATEST = 2**62  # a file whose modification time cannot be read bounds no time from above


class Clock:
    """Which of one file's timestamps to believe: from 2015-01-01 (EARLIEST_PLAUSIBLE_TS) to the
    file's modification time plus a day, the slack planning gives a file (`days._verdicts`).

    A time outside that is a clock that was not set (1970, epoch 0) or a future one: a session
    started by it would land on a day no run ingests, or that planning never reads the file for,
    and vanish. Parsers time such a line's events with None (its neighbours order it), start its
    session at the first plausible time, and quarantine a row `implausible_timestamp` for the line.
    """

    __slots__ = ("_latest", "_path")

    def __init__(self, path: Path) -> None:
        self._path = path
        self._latest: int | None = None  # read when first needed: most lines are judged by the floor

    @property
    def latest(self) -> int:
        if self._latest is None:
            try:
                self._latest = file_mtime_us(self._path) + DAY_US
            except OSError:
                self._latest = _NO_LATEST
        return self._latest

    def read(self, value: object) -> tuple[int | None, bool]:
        """A timestamp field's time when it is believed (else None), and whether it was refused as
        implausible (a time, or a number, out of range) rather than absent or unreadable."""
        ts = parse_ts(value)
        if ts is None:
            return None, isinstance(value, int | float) and not isinstance(value, bool)
        if EARLIEST_PLAUSIBLE_TS <= ts <= self.latest:
            return ts, False
        return None, True

    def believe(self, value: object) -> int | None:
        """`read(value)[0]`: the time, when there is one to believe."""
        return self.read(value)[0]

    def why(self, value: object) -> str:
        """What is wrong with a refused time, for the quarantine note."""
        ts = parse_ts(value)
        shown = repr(value)[:60]
        if ts is None:
            return f"timestamp {shown} is no representable time"
        if ts < EARLIEST_PLAUSIBLE_TS:
            return f"timestamp {shown} ({ts_to_datetime(ts):%Y-%m-%d}) is before 2015-01-01"
        return f"timestamp {shown} is later than a day after the file was last written"

    def bad_row(
        self,
        source: str,
        source_path: str,
        line_no: int,
        value: object,
        record: object,
        *,
        session_id: str | None = None,
        session_start: int | None = None,
    ) -> BadLine:
        """The `implausible_timestamp` row of a line whose events were kept untimed."""
        note = f"{self.why(value)}; the line is kept without it"
        return bad_record(
            source,
            source_path,
            line_no,
            IMPLAUSIBLE_TIMESTAMP,
            record,
            note,
            session_id=session_id,
            session_start=session_start,
        )


# --- OpenAI-style message pieces -------------------------------------------------------------


def parse_arguments(raw: object, where: str = "arguments") -> dict[str, Any]:
    """Tool arguments as an object: JSON strings are parsed; text that is not a JSON object is kept as
    `{"raw": text}` so a sloppy call still counts as a call."""
    if raw is None:
        return {}
    if isinstance(raw, dict):
        return raw
    if not isinstance(raw, str):
        raise WrongFieldType(where, "a JSON string or an object", raw)
    if not raw.strip():
        return {}
    try:
        parsed = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return {"raw": raw}
    return parsed if isinstance(parsed, dict) else {"raw": raw}


def content_text(content: object, where: str = "content") -> str | None:
    """The text of a message's content: a string, or a list of parts whose text is joined.

    Parts without text (images, files) leave a short marker such as `[image]`, never their payload,
    which may be a megabyte of base64.
    """
    if content is None or isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise WrongFieldType(where, "a string or a list of parts", content)
    pieces: list[str] = []
    for part in content:
        if isinstance(part, str):
            pieces.append(part)
            continue
        if not isinstance(part, dict):
            raise WrongFieldType(where + "[]", "an object", part)
        text = part.get("text")
        if isinstance(text, str):
            pieces.append(text)
            continue
        kind = part.get("type")
        if not isinstance(kind, str):
            kind = "part"
        pieces.append("[image]" if "image" in kind else f"[{kind}]")
    return "\n".join(pieces)


# The working folder as agents' system prompts state it: Codex's `<cwd>/p</cwd>`, Claude Code's and
# others' `Working directory: /p` / `cwd: /p`, and the plain `working in /p`. Only an absolute path
# (POSIX, `~/`, or a Windows drive) counts: "working in the repository" names no folder.
_PROMPT_CWD = re.compile(
    r"<cwd>\s*(?P<tagged>[^<\n]+?)\s*</cwd>"
    r"|(?:(?:current\s+)?working\s+(?:directory|dir|folder)|\bcwd|\bworkdir)\s*(?:is|:|=)?\s*"
    r"[`'\"]?(?P<labelled>(?:/|~/|[A-Za-z]:\\)[^\s`'\"<>]*)"
    r"|\bworking\s+in\s+[`'\"]?(?P<plain>(?:/|~/|[A-Za-z]:\\)[^\s`'\"<>]*)",
    re.IGNORECASE,
)


def prompt_cwd(text: str | None) -> str | None:
    """The working folder a system prompt names, else None; trailing sentence punctuation is not
    part of it (`working in /home/a/src/app.` names `/home/a/src/app`)."""
    if not text:
        return None
    found = _PROMPT_CWD.search(text)
    if found is None:
        return None
    path = next(value for value in found.groups() if value is not None).strip()
    path = path.rstrip(".,;:!?)]}")
    return path if len(path) > 1 else None


# --- JSON-lines formats ----------------------------------------------------------------------


SNIFF_LINES = 20  # lines of the head a sniff may look through, damaged ones included


def _head_lines(head: bytes) -> Iterator[tuple[bytes, bool]]:
    """The non-blank lines of a file's head, each with whether its newline falls inside the head."""
    start = 0
    while start <= len(head):
        end = head.find(b"\n", start)
        if end == -1:
            line = head[start:].strip()
            if line:
                yield line, False
            return
        line = head[start:end].strip()
        if line:
            yield line, True
        start = end + 1


# Records of the head a sniff judges the file by. A file may open with a line its format does not
# have (a header, an entry type added since, `{"messages": []}`, an entry without its time): one
# odd line must not make the whole file unrecognized. It is quarantined when parsed, like any other.
SNIFF_RECORDS = 5


def sniff_lines(
    head: bytes,
    matches: Callable[[dict[str, Any]], bool],
    prefix: re.Pattern[bytes],
    records: int = SNIFF_RECORDS,
) -> bool:
    """Judge a JSON-lines head by its first `records` lines that parse (damaged lines between them
    are skipped: they are quarantined like any other): it is the format's when one of them is a
    record of it. A line the head cuts short is judged by its opening bytes."""
    judged = 0
    for line, complete in itertools.islice(_head_lines(head), SNIFF_LINES):
        try:
            obj, _ = loads_mended(line)  # a line parsing reads after a repair counts too
        except orjson.JSONDecodeError:
            if not complete:
                return prefix.match(line) is not None
            continue
        if isinstance(obj, dict) and matches(obj):
            return True
        judged += 1
        if judged >= records:
            return False
    return False


_NAME_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})")


def fallback_start(path: Path) -> int:
    """The start to give sessions whose lines carry no time: a YYYY-MM-DD in the file name
    (midnight UTC), else the file's mtime."""
    match = _NAME_DATE.search(path.name)
    if match:
        try:
            year, month, day_of_month = map(int, match.groups())
            day = dt.datetime(year, month, day_of_month, tzinfo=dt.UTC)
        except ValueError:
            pass
        else:
            return int(day.timestamp()) * 1_000_000
    return file_mtime_us(path)


class Orphans:
    """Bad lines met before the session they belong to has started.

    They join the next session that starts, or go out unassigned (no session id, the file's
    fallback start) at the end of the file, or as soon as `cap` pile up, so a file of junk
    cannot grow memory.
    """

    def __init__(self, path: Path, cap: int = ORPHAN_CAP) -> None:
        self._path = path
        self._cap = cap
        self._held: list[BadLine] = []

    def hold(self, bad: BadLine) -> list[BadLine]:
        self._held.append(bad)
        return self.release(None, None) if len(self._held) >= self._cap else []

    def release(self, session_id: str | None, session_start: int | None) -> list[BadLine]:
        if not self._held:
            return []
        if session_start is None:
            session_start = fallback_start(self._path)
        held, self._held = self._held, []
        return [bad._replace(session_id=session_id, session_start=session_start) for bad in held]


# --- whole-file JSON formats -----------------------------------------------------------------


def load_json_document(path: Path, source: str, max_bytes: int = MAX_FILE_BYTES) -> dict[str, Any] | BadLine:
    """The file's top-level JSON object, or one BadLine (line 0) saying why it cannot be had."""
    source_path = str(path)
    size = os.stat(path).st_size
    if size > max_bytes:
        return _too_large(source, source_path, size, max_bytes)
    with open(path, "rb") as handle:
        body = handle.read(max_bytes + 1)
    if len(body) > max_bytes:  # grew since the stat
        return _too_large(source, source_path, len(body), max_bytes)
    body = body.removeprefix(codecs.BOM_UTF8)
    try:
        doc = orjson.loads(body)
    except orjson.JSONDecodeError as err:
        # An error at the very end means the text stopped early: a file caught mid-write.
        reason = why_unreadable(body, err.pos >= len(body.rstrip()), TRUNCATED_FILE)
        near = body[max(0, err.pos - 100) : err.pos + 100]
        return BadLine(source, source_path, 0, reason, excerpt(near), len(body))
    if not isinstance(doc, dict):
        return BadLine(source, source_path, 0, NOT_AN_OBJECT, excerpt(body), len(body))
    return doc


def _too_large(source: str, source_path: str, size: int, max_bytes: int) -> BadLine:
    note = f"{size} bytes, over the {max_bytes}-byte cap for whole-file formats"
    return BadLine(source, source_path, 0, FILE_TOO_LARGE, note, size)


def stamp_events(items: Iterable[Fields | BadLine], common: Fields) -> Iterator[Event | BadLine]:
    """Turn per-record fields into Events with the file's shared fields and a running `seq`."""
    seq = 0
    for item in items:
        if isinstance(item, BadLine):
            yield item._replace(session_id=common["session_id"], session_start=common["session_start"])
            continue
        yield event(seq=seq, **common, **item)
        seq += 1
