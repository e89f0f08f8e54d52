"""Fuzzing ingestion: one damaged line costs that line alone, and the quarantine counts the damage.

Why this exists: transcripts reach us half-written, copied between machines and now and then
corrupted. `ingest_day` promises that a bad line never costs its neighbours and never vanishes
silently. These tests take real transcripts (../shared/corpus/real) and generated ones, apply one
kind of seeded fault to chosen lines of one JSON Lines file (a line cut short, flipped bytes,
invalid UTF-8, a line over the size cap, a known field of the wrong JSON type, a duplicated line,
an emptied file), ingest the file's days before and after through `ingest_day`, and check that:

- ingestion never raises;
- every untouched line gives exactly the rows it gave in the clean run;
- the quarantine holds one row per damaged line, with the expected reason, and nothing else.

Lines to damage are drawn with `random.Random(seed)` among lines that are *independent*: lines
whose loss (the line blanked) leaves every other line's rows as they were. A Codex function call
names the output that follows it, an own-agent entry's time can split a session: losing such a
line legitimately changes its neighbours, so it would prove nothing here. A damaged first line
and an oversize line in a Codex head (which once cost earlier events their model) are tested on
their own at the end.

    .venv/bin/pytest tests/reliability/test_fuzz.py -q
"""

from __future__ import annotations

import datetime as dt
import os
import random
import re
import shutil
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pyarrow.parquet as pq
import pytest

from tests.conftest import require_real_corpus
from trajectory_pipeline.ingest.days import UNRECOGNIZED_FORMAT, SourceRoot, candidate_files, ingest_day
from trajectory_pipeline.ingest.formats import FORMATS
from trajectory_pipeline.ingest.parsers.lines import MAX_LINE_BYTES
from trajectory_pipeline.ingest.redact import Redactor
from trajectory_pipeline.sample.corpus import SOURCE_FOLDERS, CorpusSpec, generate_corpus
from trajectory_pipeline.schema import (
    IMPLAUSIBLE_TIMESTAMP,
    INVALID_UTF8,
    MALFORMED_JSON,
    OVERSIZE_LINE,
    WRONG_FIELD_TYPE,
    Event,
    utc_day,
)

SEEDS = (0, 1, 2)
KINDS = ("truncate", "flip_bytes", "invalid_utf8", "huge_line", "wrong_type", "duplicate", "empty_file")
LINES_PER_FAULT = 2  # lines damaged per case (one huge line: each is 8 MiB on disk)
MAX_TRIES = 12  # candidate lines tested for independence per case

# Real files per format, small enough to ingest a few hundred times; relative to the real corpus.
REAL_INPUTS = {
    "real_claude_short": ("claude_code", "claude-code/spotter/short.jsonl"),
    "real_claude_parser": (
        "claude_code",
        "claude-code/claude-parser/3a7770b4-aba3-46dd-b677-8fc2d71d4e06.jsonl",
    ),
    "real_codex_localpush": (
        "codex",
        "codex/localpush/rollout-2026-02-23T13-19-38-019c8a70-dda7-7f33-98ea-f30553347322.jsonl",
    ),
    "real_codex_codemie": (
        "codex",
        "codex/codemie-code/rollout-2026-01-02T18-39-45-019b7f94-51b4-7593-922e-ba12b5b73b52.jsonl",
    ),
}
GENERATED_INPUTS = {f"generated_{source}": source for source in SOURCE_FOLDERS}
GENERATED_SPEC = CorpusSpec(days=2, sessions_per_day=3, seed=11, malformed_lines=False)

# A field every parser reads with a fixed JSON type, and a value of another type; and which
# records read it (a Claude `system` line has no `message`, so a wrong one there goes unseen).
WRONG_TYPES: dict[str, tuple[str, object, frozenset[str] | None]] = {
    "claude_code": ("message", 42, frozenset({"user", "assistant"})),
    "codex": ("payload", 42, frozenset({"session_meta", "turn_context", "response_item", "event_msg"})),
    "own_agent": ("timestamp", [], None),
    "chat_jsonl": ("messages", 42, None),
}

# Columns that count positions rather than content: `seq` is the event's ordinal in its file, so it
# shifts when a line before it gives no rows; `line_no` shifts when a line is inserted (it is mapped
# back to the original line before comparing). Own-agent call ids embed the line number.
POSITIONAL = ("seq", "line_no")
_LINE_SUFFIX = re.compile(r"-L(\d+)$")

REDACTOR = Redactor()


@dataclass(frozen=True)
class Fuzzed:
    """A file's lines after one fault, and where each came from: the original line number, or
    minus it for a line inserted as a copy of that line."""

    lines: list[bytes]
    origin: list[int]
    touched: frozenset[int]  # original lines whose bytes were damaged


# --------------------------------------------------------------------------- inputs


@pytest.fixture(scope="module")
def generated_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("generated")
    generate_corpus(out, GENERATED_SPEC)
    return out


def _generated_file(corpus: Path, source: str) -> Path:
    """The generated file to fuzz: the last day's (own agent: its day file chains to the day before)."""
    root = corpus / SOURCE_FOLDERS[source]
    files = [f.path for f in candidate_files([SourceRoot(source, root)]) if "subagents" not in f.path.parts]
    return max(files, key=lambda path: (path.stat().st_mtime_ns, path.name))


def _prepare(name: str, generated_corpus: Path, tmp_path: Path) -> tuple[str, Path, Path]:
    """(source, root, target): a private copy of the input to damage, with its mtimes kept."""
    root = tmp_path / "root"
    if name in REAL_INPUTS:
        source, rel = REAL_INPUTS[name]
        target = root / rel
        target.parent.mkdir(parents=True)
        shutil.copy2(require_real_corpus() / rel, target)
        return source, root, target
    source = GENERATED_INPUTS[name]
    original = _generated_file(generated_corpus, source)
    shutil.copytree(generated_corpus / SOURCE_FOLDERS[source], root)
    return source, root, root / original.relative_to(generated_corpus / SOURCE_FOLDERS[source])


# --------------------------------------------------------------------------- lines and faults


def split_lines(data: bytes) -> list[bytes]:
    """Lines with their newlines, as `read_lines` numbers them (only b"\\n" ends a line)."""
    parts = data.split(b"\n")
    return [part + b"\n" for part in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def truncate(line: bytes, rng: random.Random) -> bytes:
    body = line.rstrip()
    return body[: rng.randrange(1, len(body) - 1)] + b"\n"


def flip_bytes(line: bytes, rng: random.Random) -> bytes:
    body = bytearray(line.rstrip(b"\n"))
    for _ in range(rng.randint(1, 3)):
        at = rng.randrange(len(body))
        flipped = body[at] ^ rng.randrange(1, 256)
        body[at] = flipped if flipped != ord("\n") else ord("?")  # a new newline would split the line
    return bytes(body) + b"\n"


def invalid_utf8(line: bytes, rng: random.Random) -> bytes:
    body = line.rstrip(b"\n")
    # Before an ASCII byte is always between characters, so the rest of the line stays valid.
    at = rng.choice([i for i in range(1, len(body)) if body[i] < 0x80])
    return body[:at] + rng.choice((b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\x80")) + body[at:] + b"\n"


def huge_line(line: bytes) -> bytes:
    obj = orjson.loads(line)
    obj["padding"] = "x" * (MAX_LINE_BYTES + 1)  # still valid JSON: only its size is wrong
    return orjson.dumps(obj) + b"\n"


def wrong_type(source: str, line: bytes) -> bytes:
    key, value, _ = WRONG_TYPES[source]
    return orjson.dumps({**orjson.loads(line), key: value}) + b"\n"


def mutate(kind: str, source: str, lines: list[bytes], targets: set[int], rng: random.Random) -> Fuzzed:
    out: list[bytes] = []
    origin: list[int] = []
    for no, line in enumerate(lines, 1):
        out.append(line)
        origin.append(no)
        if no not in targets:
            continue
        if kind in ("duplicate", "huge_line"):
            out.append(line if kind == "duplicate" else huge_line(line))
            origin.append(-no)
        elif kind == "truncate":
            out[-1] = truncate(line, rng)
        elif kind == "flip_bytes":
            out[-1] = flip_bytes(line, rng)
        elif kind == "invalid_utf8":
            out[-1] = invalid_utf8(line, rng)
        elif kind == "wrong_type":
            out[-1] = wrong_type(source, line)
    touched = (
        frozenset(targets)
        if kind in ("truncate", "flip_bytes", "invalid_utf8", "wrong_type")
        else frozenset()
    )
    return Fuzzed(out, origin, touched)


def _fits(kind: str, source: str, line: bytes) -> bool:
    """Whether the fault can be applied to this line (wrong_type needs a record that reads the field)."""
    if not line.endswith(b"\n") or len(line.strip()) < 8:
        return False
    if kind != "wrong_type":
        return True
    obj = orjson.loads(line)
    key, _, record_types = WRONG_TYPES[source]
    return key in obj and (record_types is None or obj.get("type") in record_types)


# --------------------------------------------------------------------------- running


def write(path: Path, data: bytes, mtime_ns: int) -> None:
    """Rewrite the file and put its mtime back: ingestion picks files and days by mtime."""
    path.write_bytes(data)
    os.utime(path, ns=(mtime_ns, mtime_ns))


def _parsed_events(source: str, path: Path) -> list[Event]:
    return [item for item in FORMATS[source].parse(path) if isinstance(item, Event)]


def _content(event: Event) -> Event:
    return event._replace(seq=0)


def independent_lines(
    source: str, path: Path, lines: list[bytes], clean: list[Event], candidates: list[int], want: int
) -> list[int]:
    """The first `want` candidates whose loss leaves every other line's events unchanged."""
    mtime_ns = path.stat().st_mtime_ns
    chosen = []
    try:
        for no in candidates[:MAX_TRIES]:
            write(path, b"".join(b"\n" if i == no else line for i, line in enumerate(lines, 1)), mtime_ns)
            others = Counter(_content(e) for e in _parsed_events(source, path) if e.line_no != no)
            if others == Counter(_content(e) for e in clean if e.line_no != no):
                chosen.append(no)
                if len(chosen) == want:
                    break
    finally:
        write(path, b"".join(lines), mtime_ns)
    return chosen


def ingest(
    source: str, root: Path, target: Path, days: Iterable[str], out: Path
) -> tuple[list[dict], list[dict]]:
    """Events and quarantine rows of `target` over `days`, through ingest_day as raw_sessions runs it."""
    out.mkdir()
    files = [file for file in candidate_files([SourceRoot(source, root)]) if file.path == target]
    assert len(files) == 1, f"{target} is no longer listed under the {source} root"
    events: list[dict] = []
    quarantine: list[dict] = []
    for day in sorted(days):
        events_path, quarantine_path = out / f"{day}.parquet", out / f"q{day}.parquet"
        ingest_day(
            [SourceRoot(source, root)],
            dt.date.fromisoformat(day),
            events_path,
            quarantine_path,
            redactor=REDACTOR,
            files=files,
        )
        events += pq.read_table(events_path).to_pylist()
        quarantine += pq.read_table(quarantine_path).to_pylist()
    return events, quarantine


def by_origin(rows: list[dict], origin: list[int]) -> dict[int, Counter[tuple[Any, ...]]]:
    """Rows grouped by the original line they came from, positional columns left out."""
    grouped: dict[int, Counter[tuple[Any, ...]]] = {}
    for row in rows:
        line_no = row["line_no"]
        orig = origin[line_no - 1] if line_no > 0 else 0
        call_id = row.get("tool_call_id")
        if row["source"] == "own_agent" and call_id and _LINE_SUFFIX.search(call_id):
            row = {**row, "tool_call_id": _LINE_SUFFIX.sub(f"-L{abs(orig)}", call_id)}
        key = tuple(value for name, value in row.items() if name not in POSITIONAL)
        grouped.setdefault(orig, Counter())[key] += 1
    return grouped


# --------------------------------------------------------------------------- the test


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", [*REAL_INPUTS, *GENERATED_INPUTS])
def test_a_fault_costs_only_the_lines_it_touches(
    name: str, kind: str, seed: int, generated_corpus: Path, tmp_path: Path
) -> None:
    source, root, target = _prepare(name, generated_corpus, tmp_path)
    original = target.read_bytes()
    mtime_ns = target.stat().st_mtime_ns
    lines = split_lines(original)
    parsed = _parsed_events(source, target)
    days = {utc_day(e.session_start) for e in parsed if e.session_start is not None}
    days.add(utc_day(mtime_ns // 1000))
    clean_events, clean_quarantine = ingest(source, root, target, days, tmp_path / "clean")
    assert clean_quarantine == [], "the inputs are clean: every quarantine row below is an injected fault"
    assert len(clean_events) == len(parsed)

    rng = random.Random(seed)
    if kind == "empty_file":
        write(target, b"", mtime_ns)
        events, quarantine = ingest(source, root, target, days, tmp_path / "fuzzed")
        # An empty file matches no format: one file-level row on its mtime's day, no events.
        assert events == []
        assert [(q["line_no"], q["reason"]) for q in quarantine] == [(0, UNRECOGNIZED_FORMAT)]
        return

    # Line 1 decides the file's format (see the first-line test below) and, for Codex, an
    # oversize line before the turn_context loses the model (see the head test below).
    first = first_line_after_head(source, lines) if kind == "huge_line" else 2
    candidates = sorted(
        {e.line_no for e in parsed if e.line_no >= first and _fits(kind, source, lines[e.line_no - 1])}
    )
    rng.shuffle(candidates)
    want = 1 if kind == "huge_line" else LINES_PER_FAULT
    targets = set(independent_lines(source, target, lines, parsed, candidates, want))
    assert len(targets) == want, f"only {len(targets)} independent lines in {name} to apply {kind} to"

    fuzzed = mutate(kind, source, lines, targets, rng)
    write(target, b"".join(fuzzed.lines), mtime_ns)
    events, quarantine = ingest(source, root, target, days, tmp_path / "fuzzed")

    clean = by_origin(clean_events, list(range(1, len(lines) + 1)))
    got = by_origin(events, fuzzed.origin)
    # A file-level row (line 0: the file refused whole) maps to 0, which no target is.
    quarantined = Counter(fuzzed.origin[q["line_no"] - 1] if q["line_no"] else 0 for q in quarantine)
    reasons = {fuzzed.origin[q["line_no"] - 1] if q["line_no"] else 0: q["reason"] for q in quarantine}
    untouched = set(range(1, len(lines) + 1)) - fuzzed.touched
    for no in sorted(untouched):
        assert got.get(no) == clean.get(no), (
            f"{name}: untouched line {no} changed after {kind} on {sorted(targets)}"
        )

    if kind == "duplicate":
        # A line written twice gives its events twice (same event_id), deduplication left to the
        # stages that read raw_sessions; but Claude Code's line with a uuid is read once (its IDE
        # extensions re-append a session's lines: claude_code's "Repeats"), counted, no row.
        assert quarantine == []
        read_once = set()
        if source == "claude_code":
            read_once = {no for no in targets if "uuid" in orjson.loads(lines[no - 1])}
        assert {no: got.get(-no) for no in targets} == {
            no: None if no in read_once else clean.get(no) for no in targets
        }
    elif kind == "huge_line":
        assert quarantined == Counter({-no: 1 for no in targets})
        assert set(reasons.values()) == {OVERSIZE_LINE}
        assert set(got) <= untouched
    elif kind == "flip_bytes":
        # A flip can keep the line valid JSON (a changed letter in a text): it is then read as
        # it now reads. A line that no longer parses must be quarantined, once, and give nothing.
        # A flipped digit of a time can make it implausible (year 2926): that line is kept,
        # untimed, beside its implausible_timestamp row.
        unparsable = {no for no in targets if not _parses(fuzzed.lines[fuzzed.origin.index(no)])}
        assert set(quarantined) <= targets and all(count == 1 for count in quarantined.values())
        assert unparsable <= set(quarantined)
        refused = {no for no, reason in reasons.items() if reason != IMPLAUSIBLE_TIMESTAMP}
        assert not refused & set(got)
    else:
        expected = {
            "truncate": {MALFORMED_JSON, INVALID_UTF8},  # a cut can split a multi-byte character
            "invalid_utf8": {INVALID_UTF8},
            "wrong_type": {WRONG_FIELD_TYPE},
        }[kind]
        assert quarantined == Counter(dict.fromkeys(targets, 1)), f"{name}: quarantined {dict(reasons)}"
        assert set(reasons.values()) <= expected
        assert not targets & set(got), "a damaged line still gave events"


def first_line_after_head(source: str, lines: list[bytes]) -> int:
    """The first line an oversize line may follow without hiding what the parser reads up front:
    for Codex, past the first turn_context (its model labels every earlier event)."""
    if source != "codex":
        return 2
    for no, line in enumerate(lines, 1):
        if _parses(line) and orjson.loads(line).get("type") == "turn_context":
            return no
    return 2


def _parses(line: bytes) -> bool:
    try:
        return isinstance(orjson.loads(line), dict)
    except orjson.JSONDecodeError:
        return False


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("name", ["real_claude_short", "real_claude_parser", "generated_claude_code"])
def test_a_wrong_typed_claude_timestamp_costs_only_that_field(
    name: str, seed: int, generated_corpus: Path, tmp_path: Path
) -> None:
    """parse_ts reads an unreadable time as None ("a bad timestamp costs one field, not the row"),
    so `"timestamp": []` is accepted, not quarantined: the line keeps its rows, with ts null."""
    source, root, target = _prepare(name, generated_corpus, tmp_path)
    lines = split_lines(target.read_bytes())
    parsed = _parsed_events(source, target)
    candidates = sorted(
        {e.line_no for e in parsed if e.line_no > 1 and b'"timestamp"' in lines[e.line_no - 1]}
    )
    random.Random(seed).shuffle(candidates)
    targets = set(independent_lines(source, target, lines, parsed, candidates, LINES_PER_FAULT))
    assert len(targets) == LINES_PER_FAULT

    def timestamps_as_arrays(lines: list[bytes]) -> Fuzzed:
        out = [
            orjson.dumps({**orjson.loads(line), "timestamp": []}) + b"\n" if no in targets else line
            for no, line in enumerate(lines, 1)
        ]
        return Fuzzed(out, list(range(1, len(lines) + 1)), frozenset(targets))

    shutil.rmtree(root)
    fuzzed, clean_events, events, quarantine = _clean_and_fuzzed(
        name, generated_corpus, tmp_path, timestamps_as_arrays
    )
    assert quarantine == []
    as_untimed = [{**row, "ts": None} if row["line_no"] in targets else row for row in clean_events]
    assert by_origin(events, fuzzed.origin) == by_origin(as_untimed, fuzzed.origin)


# --------------------------------------------------------------------------- known bugs


def _clean_and_fuzzed(
    name: str, generated_corpus: Path, tmp_path: Path, damage: Callable[[list[bytes]], Fuzzed]
) -> tuple[Fuzzed, list[dict], list[dict], list[dict]]:
    """Ingest an input, apply `damage(lines) -> Fuzzed`, ingest again: the clean events, then the
    fuzzed events and quarantine."""
    source, root, target = _prepare(name, generated_corpus, tmp_path)
    mtime_ns = target.stat().st_mtime_ns
    lines = split_lines(target.read_bytes())
    parsed = _parsed_events(source, target)
    days = {utc_day(e.session_start) for e in parsed if e.session_start is not None}
    days.add(utc_day(mtime_ns // 1000))
    clean_events, _ = ingest(source, root, target, days, tmp_path / "clean")
    fuzzed = damage(lines)
    write(target, b"".join(fuzzed.lines), mtime_ns)
    events, quarantine = ingest(source, root, target, days, tmp_path / "fuzzed")
    return fuzzed, clean_events, events, quarantine


@pytest.mark.parametrize("name", ["real_codex_localpush", "real_codex_codemie", "generated_codex"])
def test_an_oversize_line_in_a_codex_head_costs_only_itself(
    name: str, generated_corpus: Path, tmp_path: Path
) -> None:
    def after_first_line(lines: list[bytes]) -> Fuzzed:
        return mutate("huge_line", "codex", lines, {1}, random.Random(0))

    fuzzed, clean_events, events, quarantine = _clean_and_fuzzed(
        name, generated_corpus, tmp_path, after_first_line
    )
    assert [(q["line_no"], q["reason"]) for q in quarantine] == [(2, OVERSIZE_LINE)]
    clean = by_origin(clean_events, list(range(1, len(fuzzed.lines))))
    got = by_origin(events, fuzzed.origin)
    assert got == clean


@pytest.mark.parametrize(
    "name", [f"generated_{source}" for source in ("claude_code", "codex", "own_agent", "chat_jsonl")]
)
def test_a_damaged_first_line_costs_only_itself(name: str, generated_corpus: Path, tmp_path: Path) -> None:
    def cut_first_line(lines: list[bytes]) -> Fuzzed:
        return Fuzzed(
            [lines[0][: len(lines[0]) // 2] + b"\n", *lines[1:]],
            list(range(1, len(lines) + 1)),
            frozenset({1}),
        )

    _, clean_events, events, quarantine = _clean_and_fuzzed(name, generated_corpus, tmp_path, cut_first_line)
    assert [(q["line_no"], q["reason"]) for q in quarantine] == [(1, MALFORMED_JSON)]
    # Line 1 may carry the session's start or id, so later rows may change; none may go missing.
    per_line = Counter(e["line_no"] for e in events)
    assert per_line == Counter(e["line_no"] for e in clean_events if e["line_no"] != 1)
