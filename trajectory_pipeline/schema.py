"""The normalized event record every parser produces, and its Parquet schema.

One `Event` is one thing that happened in a session (a message, a tool call,
its result, an error...). Parsers build them with `event(...)`, which applies
the shared text cap, so every source behaves the same. `BadLine` is a line
that could not be read: it goes to the quarantine table, never silently away
(one whose reason is in REPAIR_REASONS reports a line kept by mending it instead,
and is counted, not written).

    from trajectory_pipeline.schema import EVENT_SCHEMA, event
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any, NamedTuple

import orjson
import pyarrow as pa

ROLES = ("user", "assistant", "tool", "system")
KINDS = ("message", "tool_call", "tool_result", "error", "decision", "reasoning", "meta")

# Long tool outputs are common (a 150 KB file dump); the cap keeps rows small
# without dropping them. `text_truncated` says the cap was applied.
TEXT_CAP_CHARS = 32_000


class Event(NamedTuple):
    """One normalized event. Timestamps are integer microseconds since the epoch, UTC.

    A NamedTuple rather than a dataclass: immutable like a frozen dataclass, but
    cheap enough to build millions of times during ingestion.
    """

    source: str
    session_id: str
    session_start: int | None  # µs UTC of the session's first event; decides the partition
    source_path: str
    line_no: int  # 1-based line (or record index, for whole-file JSON formats)
    seq: int  # 0-based ordinal of the event within its file
    ts: int | None
    role: str
    kind: str
    text: str | None = None
    tool_name: str | None = None
    tool_call_id: str | None = None
    tool_input: str | None = None  # canonical JSON, see canonical_json()
    is_error: bool | None = None
    exit_code: int | None = None
    cwd: str | None = None
    repo: str | None = None
    git_branch: str | None = None
    model: str | None = None
    is_sidechain: bool = False
    agent_id: str | None = None
    event_id: str | None = None  # the source's own id for the line (Claude `uuid`, ...)
    parent_id: str | None = None
    interrupted: bool = False
    confidence: float | None = None
    text_truncated: bool = False
    redactions: int = 0


class BadLine(NamedTuple):
    """A line that could not be turned into events; kept in the quarantine table."""

    source: str
    source_path: str
    line_no: int
    reason: str
    excerpt: str
    byte_len: int
    session_id: str | None = None
    session_start: int | None = None


# Reasons a line is quarantined. Parsers may add their own; these are the shared ones.
INVALID_UTF8 = "invalid_utf8"
MALFORMED_JSON = "malformed_json"
TRUNCATED_LINE = "truncated_line"  # last line without newline that does not parse
OVERSIZE_LINE = "oversize_line"
NOT_AN_OBJECT = "not_an_object"
UNKNOWN_RECORD_TYPE = "unknown_record_type"
WRONG_FIELD_TYPE = "wrong_field_type"
BINARY_JUNK = "binary_junk"
# Reasons of whole-file formats (Gemini CLI, SWE-agent), where the file is one record.
FILE_TOO_LARGE = "file_too_large"
TRUNCATED_FILE = "truncated_file"  # the document stops early: a file caught mid-write
# A record the parser failed on in a way no other reason names (any exception while reading it):
# the excerpt starts with the exception's type and message; the rest of the file still loads.
UNREADABLE_RECORD = "unreadable_record"
TOO_DEEP = "too_deep"  # a value nested past MAX_JSON_DEPTH levels (a tool input, mostly)
# A time outside [EARLIEST_PLAUSIBLE_TS, the file's mtime + a day], or not representable: the
# line's events are kept, untimed, and its session starts at its first plausible time.
IMPLAUSIBLE_TIMESTAMP = "implausible_timestamp"
# The same session read from another file before this one (a copy in another folder, a renamed
# copy): this file's events that repeat it are skipped, and the row names both files.
DUPLICATE_SESSION = "duplicate_session"

# Not quarantine reasons: nothing of the line is lost. A parser reports one as a BadLine with one of
# these reasons when it kept a line by mending it, or read once a line its file holds twice;
# ingestion counts it (IngestStats.repaired) and writes no row.
LONE_SURROGATE = "lone_surrogate"  # half a UTF-16 pair (the escape `\\ud83d`), read as U+FFFD
# NaN, Infinity or -Infinity, which no JSON holds but Python's json.dumps writes by default (a
# home-made agent's float metric, a dataframe's missing value), read as null
NON_FINITE_NUMBER = "non_finite_number"
# A line written again whole (same id, session, time and content: Claude Code re-appends a session's
# lines when an IDE reopens it), read once
REPEATED_LINE = "repeated_line"
REPAIR_REASONS = frozenset({LONE_SURROGATE, NON_FINITE_NUMBER, REPEATED_LINE})

EXCERPT_CHARS = 200  # what the quarantine table keeps, after redaction
RAW_EXCERPT_CHARS = 2_000  # what parsers keep, so redaction sees a secret that crosses the cut

_TS = pa.timestamp("us", tz="UTC")

EVENT_SCHEMA = pa.schema(
    [
        ("source", pa.string()),
        ("session_id", pa.string()),
        ("session_start", _TS),
        ("source_path", pa.string()),
        ("line_no", pa.int64()),
        ("seq", pa.int64()),
        ("ts", _TS),
        ("role", pa.string()),
        ("kind", pa.string()),
        ("text", pa.large_string()),
        ("tool_name", pa.string()),
        ("tool_call_id", pa.string()),
        ("tool_input", pa.large_string()),
        ("is_error", pa.bool_()),
        ("exit_code", pa.int64()),
        ("cwd", pa.string()),
        ("repo", pa.string()),
        ("git_branch", pa.string()),
        ("model", pa.string()),
        ("is_sidechain", pa.bool_()),
        ("agent_id", pa.string()),
        ("event_id", pa.string()),
        ("parent_id", pa.string()),
        ("interrupted", pa.bool_()),
        ("confidence", pa.float64()),
        ("text_truncated", pa.bool_()),
        ("redactions", pa.int64()),
    ]
)
assert tuple(EVENT_SCHEMA.names) == Event._fields

QUARANTINE_SCHEMA = pa.schema(
    [
        ("source", pa.string()),
        ("source_path", pa.string()),
        ("line_no", pa.int64()),
        ("reason", pa.string()),
        ("excerpt", pa.string()),
        ("byte_len", pa.int64()),
        ("session_id", pa.string()),
        ("session_start", _TS),
    ]
)
assert tuple(QUARANTINE_SCHEMA.names) == BadLine._fields


_CANONICAL = orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS
_dumps = orjson.dumps  # bound once, like the option: every tool call's arguments come through here

# orjson serializes up to 254 levels of nesting; a tool input nested deeper is refused, not
# serialized by recursion that a thousand levels would take past Python's stack.
MAX_JSON_DEPTH = 254


class TooDeepError(ValueError):
    """A value nested past MAX_JSON_DEPTH levels: the record holding it is quarantined (`too_deep`)."""

    reason = TOO_DEEP


def canonical_json(value: Any) -> str:
    """Sorted keys, compact separators, UTF-8: the same input always gives the same string.

    Raises TooDeepError for a value nested past MAX_JSON_DEPTH levels.
    """
    try:
        return _dumps(value, option=_CANONICAL).decode()
    except orjson.JSONEncodeError:
        depth = json_depth(value, MAX_JSON_DEPTH + 1)
        if depth > MAX_JSON_DEPTH:
            raise TooDeepError(f"nested more than {MAX_JSON_DEPTH} levels deep") from None
        # Not nesting: an integer past 64 bits, say. The standard library writes what orjson will not.
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def json_depth(value: Any, limit: int) -> int:
    """How deeply lists and dicts nest in `value` (a scalar is 0), counted without recursion and
    only up to `limit`: a million levels cost no more than `limit`."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        depth += 1
        if depth > deepest:
            deepest = depth
            if deepest >= limit:
                return deepest
        stack.extend((child, depth) for child in children)
    return deepest


_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_NAIVE_EPOCH = dt.datetime(1970, 1, 1)
# Bound once: looking it up through the module and the class took a tenth of each call.
_fromisoformat = dt.datetime.fromisoformat

# The times a timestamp column can hold and a day key can be made of: years 1 to 9999, as ISO
# strings give. An epoch number outside them (1e20, 1e308) is no time: parse_ts gives None.
_MIN_SECONDS = (dt.datetime(1, 1, 1, tzinfo=dt.UTC) - _EPOCH).total_seconds()
_MAX_SECONDS = (dt.datetime(9999, 12, 31, 23, 59, 59, tzinfo=dt.UTC) - _EPOCH).total_seconds()
# A day in the unit of every timestamp (µs since the epoch): the day of `ts` is `ts // DAY_US`.
DAY_US = 86_400 * 1_000_000
# Sessions cannot start before this: a 1970 or epoch-0 time is a clock that was not set.
EARLIEST_PLAUSIBLE_TS = 1_420_070_400_000_000  # 2015-01-01T00:00:00Z


def parse_ts(value: object) -> int | None:
    """Microseconds since the epoch (UTC) from an ISO-8601 string or epoch seconds/ms.

    Naive ISO strings are read as UTC. Returns None for anything unreadable, or outside years
    1 to 9999, so a bad timestamp costs one field, not the row; it never raises.
    """
    if type(value) is not str:  # strings first: nearly every call has one
        if value is None or isinstance(value, bool):
            return None
        if isinstance(value, int | float):
            try:
                seconds = float(value)
            except OverflowError:  # an integer past a float's range
                return None
            if seconds > 1e11:  # epoch milliseconds
                seconds /= 1000.0
            if not _MIN_SECONDS <= seconds <= _MAX_SECONDS:  # NaN fails both tests too
                return None
            return round(seconds * 1_000_000)
        if not isinstance(value, str):
            return None
    try:
        parsed = _fromisoformat(value)
    except ValueError:
        return None
    try:
        delta = parsed - (_EPOCH if parsed.tzinfo is not None else _NAIVE_EPOCH)
    except OverflowError:  # year 1 with a positive offset
        return None
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def ts_to_datetime(micros: int) -> dt.datetime:
    """The inverse of parse_ts, for display and partition keys."""
    return _EPOCH + dt.timedelta(microseconds=micros)


def utc_day(micros: int) -> str:
    """The partition key (YYYY-MM-DD, UTC) a timestamp falls on."""
    return ts_to_datetime(micros).strftime("%Y-%m-%d")


def cap_text(text: str | None, cap: int = TEXT_CAP_CHARS) -> tuple[str | None, bool]:
    """Cap a text at `cap` characters, keeping its head and its tail; the flag says whether anything was cut.

    The tail is kept because that is where tools print their verdicts (a test run's summary,
    the last error of a build).
    """
    if text is None or len(text) <= cap:
        return text, False
    marker = f"\n[... {len(text) - cap} characters omitted ...]\n"
    keep = max(cap - len(marker), 0)
    head = keep * 3 // 4
    return text[:head] + marker + text[len(text) - (keep - head) :], True


def event(**fields: Any) -> Event:
    """Build an Event. Texts stay whole here: ingestion redacts first and caps after,
    so a secret that straddles the cap is never half kept."""
    return Event(**fields)


def excerpt(raw: bytes | str, limit: int = RAW_EXCERPT_CHARS) -> str:
    """A printable excerpt of a bad line; ingestion redacts it, then cuts it to EXCERPT_CHARS."""
    if isinstance(raw, bytes):
        raw = raw[: limit * 4].decode("utf-8", errors="replace")
    return raw[:limit].replace("\x00", "\\x00")


def repo_name(cwd: str | None, remote_url: str | None = None, git_branch: str | None = None) -> str | None:
    """A short repository name: from the git remote when known, else from the working folder.

    The folder's name, except where it is not the repository's:
    - a home folder itself (`/home/<name>`, `/Users/<name>`, `C:\\Users\\<name>`, `/root`): no repo,
      not the login name;
    - a git worktree: `<repo>/.claude/worktrees/<name>` and `<repo>/.worktrees/<name>` (Claude Code
      and others put them inside the repository), `<repo>-worktrees/<name>` beside it, and a folder
      named `<repo>-<branch>` (`myrepo-feature-x` on branch `feature/x`) give `<repo>`.
    """
    if remote_url:
        name = _last_part(remote_url.rstrip("/\\").rsplit(":", 1)[-1]).removesuffix(".git")
        if name:
            return name
    if not cwd:
        return None
    parts = [part for part in cwd.replace("\\", "/").split("/") if part]
    if not parts or _is_home(parts):
        return None
    for i in range(len(parts) - 2, 0, -1):  # a worktree kept inside its repository
        if parts[i] == "worktrees" and parts[i - 1] == ".claude" and i >= 2:
            return parts[i - 2]
        if parts[i] == ".worktrees":
            return parts[i - 1]
    leaf = parts[-1]
    if len(parts) >= 2:
        parent = parts[-2]
        for suffix in ("-worktrees", "_worktrees", ".worktrees"):
            if parent.endswith(suffix) and len(parent) > len(suffix):
                return parent[: -len(suffix)]
    if git_branch:
        slug = git_branch.strip().replace("/", "-")
        for separator in ("-", "_", "."):
            if slug and leaf.endswith(separator + slug) and len(leaf) > len(slug) + 1:
                return leaf[: -len(slug) - 1]
    return leaf


def _last_part(text: str) -> str:
    return text.replace("\\", "/").rsplit("/", 1)[-1]


_HOMES = ("home", "Users", "users")


def _is_home(parts: list[str]) -> bool:
    """Whether the path's parts are a home folder itself (`/home/<name>`, `C:/Users/<name>`, `/root`),
    wherever the homes are mounted (WSL's `/mnt/c/Users/<name>`, Silverblue's `/var/home/<name>`,
    FreeBSD's `/usr/home/<name>`): its last part is a login name, never a repository's."""
    if parts[0].endswith(":"):  # a Windows drive
        parts = parts[1:]
    if parts in (["root"], ["var", "root"]):
        return True
    return len(parts) >= 2 and parts[-2] in _HOMES
