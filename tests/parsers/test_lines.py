"""Every kind of unreadable line is quarantined with its reason, and its neighbours still load."""

from __future__ import annotations

from pathlib import Path

from trajectory_pipeline.parsers.lines import JsonLine, head_objects, read_json_lines
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
