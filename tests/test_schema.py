"""The shared record helpers decide partitions and ids, so their edge cases are pinned here."""

from __future__ import annotations

import pytest

from trajectory_pipeline.schema import (
    EVENT_SCHEMA,
    Event,
    canonical_json,
    cap_text,
    parse_ts,
    repo_name,
    utc_day,
)


@pytest.mark.parametrize(
    ("value", "expected_day"),
    [
        ("2026-11-20T23:59:59.999Z", "2026-11-20"),
        ("2026-11-21T00:30:00+02:00", "2026-11-20"),  # offsets are converted to UTC
        ("2026-11-20T10:00:00", "2026-11-20"),  # naive is read as UTC
        (1_795_132_800, "2026-11-20"),  # epoch seconds
        (1_795_132_800_000, "2026-11-20"),  # epoch milliseconds
    ],
)
def test_parse_ts_lands_on_the_utc_day(value: object, expected_day: str) -> None:
    micros = parse_ts(value)
    assert micros is not None
    assert utc_day(micros) == expected_day


@pytest.mark.parametrize("value", [None, "", "yesterday", True, {"t": 1}, [1]])
def test_parse_ts_refuses_what_is_not_a_time(value: object) -> None:
    assert parse_ts(value) is None


def test_canonical_json_is_order_independent() -> None:
    assert canonical_json({"b": 1, "a": [1, {"d": 2, "c": 3}]}) == canonical_json(
        {"a": [1, {"c": 3, "d": 2}], "b": 1}
    )
    assert canonical_json({"path": "ü"}) == '{"path":"ü"}'


def test_cap_text_keeps_head_and_tail_and_flags_the_cut() -> None:
    assert cap_text("abc", cap=5) == ("abc", False)
    assert cap_text(None) == (None, False)
    log = "collecting ...\n" + "x" * 50_000 + "\n=== 3 failed, 12 passed in 1.2s ==="
    capped, cut = cap_text(log, cap=1_000)
    assert cut and len(capped) == 1_000
    assert capped.startswith("collecting ...") and capped.endswith("3 failed, 12 passed in 1.2s ===")
    assert "characters omitted" in capped


def test_schema_matches_the_record() -> None:
    assert tuple(EVENT_SCHEMA.names) == Event._fields


@pytest.mark.parametrize(
    ("cwd", "remote", "expected"),
    [
        ("/home/me/src/spotter", None, "spotter"),
        ("/home/me/src/spotter/", None, "spotter"),
        ("C:\\Users\\me\\api", None, "api"),
        ("/x", "git@github.com:org/widget.git", "widget"),
        ("/x", "https://github.com/org/widget", "widget"),
        (None, None, None),
    ],
)
def test_repo_name(cwd: str | None, remote: str | None, expected: str | None) -> None:
    assert repo_name(cwd, remote) == expected


def test_canonical_json_writes_integers_beyond_64_bits() -> None:
    # a model's answer can hold one ("limit": 99999999999999999999); scoring must not crash on it
    assert canonical_json({"b": 10**20, "a": [1, "é"]}) == '{"a":[1,"é"],"b":100000000000000000000}'
