"""Every kind of unreadable line is quarantined with its reason, and its neighbours still load."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from trajectory_pipeline.ingest.parsers import lines
from trajectory_pipeline.ingest.parsers.lines import (
    MAX_LINE_BYTES,
    JsonLine,
    _head_objects_by_line,
    head_objects,
    read_json_lines,
)
from trajectory_pipeline.schema import BadLine

GOOD = b'{"n": %d}\n'


def _write(tmp_path: Path, *lines: bytes) -> Path:
    path = tmp_path / "f.jsonl"
    path.write_bytes(b"".join(lines))
    return path


def test_every_bad_line_is_quarantined_and_neighbours_survive(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        GOOD % 1,
        b'{"n": 2, "broken": \n',  # malformed JSON
        b'{"text": "caf\xe9"}\n',  # Latin-1 byte: invalid UTF-8
        GOOD % 3,
        b"\x00\x01\x02binary\xff\xfe\n",  # binary junk
        b"[1, 2, 3]\n",  # valid JSON, not an object
        b'{"big": "' + b"x" * 300 + b'"}\n',  # over the cap below
        b"\n",  # blank lines are not errors
        GOOD % 4,
        b'{"n": 5, "cut',  # truncated last line (no newline)
    )
    items = list(read_json_lines(path, "test", max_line_bytes=200))
    good = [item.obj["n"] for item in items if isinstance(item, JsonLine)]
    bad = {item.line_no: item.reason for item in items if isinstance(item, BadLine)}
    assert good == [1, 3, 4]
    assert bad == {
        2: "malformed_json",
        3: "invalid_utf8",
        5: "binary_junk",
        6: "not_an_object",
        7: "oversize_line",
        10: "truncated_line",
    }


def test_oversize_line_is_consumed_without_losing_the_next_line(tmp_path: Path) -> None:
    path = _write(tmp_path, b'{"huge": "' + b"y" * 5_000_000 + b'"}\n', GOOD % 9)
    items = list(read_json_lines(path, "test", max_line_bytes=1024))
    assert isinstance(items[0], BadLine) and items[0].reason == "oversize_line"
    assert items[0].byte_len == 5_000_000 + 13
    assert len(items[0].excerpt) <= 2_000  # cut to 200 after redaction, at ingestion
    assert isinstance(items[1], JsonLine) and items[1].obj == {"n": 9} and items[1].line_no == 2


def test_complete_last_line_without_newline_is_fine(tmp_path: Path) -> None:
    path = _write(tmp_path, GOOD % 1, b'{"n": 2}')
    assert [item.obj["n"] for item in read_json_lines(path, "t") if isinstance(item, JsonLine)] == [1, 2]


def test_head_objects_skips_unreadable_lines(tmp_path: Path) -> None:
    path = _write(tmp_path, b"junk\n", GOOD % 1, GOOD % 2)
    assert [obj["n"] for obj in head_objects(path, max_lines=3)] == [1, 2]


def _damaged_lines(seed: int) -> bytes:
    """Lines of every shape the readers must agree on: short, long, blank, broken, unterminated."""
    rng = random.Random(seed)
    pieces = []
    for n in range(rng.randrange(1, 40)):
        shape = rng.randrange(6)
        if shape == 0:
            pieces.append(GOOD % n)
        elif shape == 1:
            pieces.append(b'{"pad": "%s"}\n' % (b"x" * rng.choice([10, 290, 4090, 5000, 9000, 70000])))
        elif shape == 2:
            pieces.append(
                rng.choice([b"\n", b"   \n", b"[1, 2]\n", b"\x00\x01\n", b"\xff\xfe\n", b'{"n": 1\n'])
            )
        else:
            pieces.append(GOOD % n)
    body = b"".join(pieces)
    return body[: rng.randrange(len(body) + 1)] if rng.random() < 0.5 else body


@pytest.mark.parametrize("seed", range(40))
def test_lines_do_not_depend_on_the_block_sizes(
    tmp_path: Path, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `head_only` readers start with small blocks; planning and parsing must see the same lines.
    path = _write(tmp_path, _damaged_lines(seed))
    for cap in (300, 5000, MAX_LINE_BYTES):
        whole = list(read_json_lines(path, "x", cap))
        for first_block in (1, 7, 4096):
            monkeypatch.setattr(lines, "_HEAD_BLOCK", first_block)
            assert list(read_json_lines(path, "x", cap, head_only=True)) == whole


@pytest.mark.parametrize("seed", range(40))
def test_head_objects_reads_as_the_line_by_line_reader(tmp_path: Path, seed: int) -> None:
    path = _write(tmp_path, _damaged_lines(seed))
    for max_lines, max_bytes in ((50, 4 * 1024 * 1024), (3, 100), (10, 5000), (50, 80_000)):
        assert list(head_objects(path, max_lines, max_bytes)) == list(
            _head_objects_by_line(path, max_lines, max_bytes)
        )


def test_non_finite_numbers_are_read_as_null_and_reported_as_a_repair(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        b'{"n": 1, "score": NaN, "range": [Infinity, -Infinity]}\n',
        b'{"n": 2, "text": "NaN", "broken": }\n',  # the word in a string: still malformed
        b'{"n": 3, "score": NaN, "text": "half \\ud83d"}\n',  # both repairs
        b'{"n": 4, "score": NaN, "text": "caf\xe9"}\n',  # not UTF-8 either
        GOOD % 5,
    )
    items = list(read_json_lines(path, "own_agent"))
    found = [(i.line_no, i.reason) if isinstance(i, BadLine) else (i.line_no, i.obj) for i in items]
    assert found == [
        (1, lines.NON_FINITE_NUMBER),
        (1, {"n": 1, "score": None, "range": [None, None]}),
        (2, lines.MALFORMED_JSON),
        (3, lines.NON_FINITE_NUMBER),
        (3, {"n": 3, "score": None, "text": "half \ufffd"}),
        (4, lines.INVALID_UTF8),
        (5, {"n": 5}),
    ]
    assert "3 non-finite number(s) (-Infinity, Infinity, NaN) read as null" in items[0].excerpt
