"""A day's partition holds exactly the sessions that started that day: whole, redacted, nothing else."""

import dataclasses
import datetime as dt
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from trajectory_pipeline.ingest.days import (
    SourceRoot,
    SourceUnreadableError,
    candidate_files,
    ingest_day,
    ingest_days,
    matching_files,
    path_date,
)
from trajectory_pipeline.ingest.formats import FORMATS
from trajectory_pipeline.schema import EXCERPT_CHARS, TEXT_CAP_CHARS, BadLine, Event, parse_ts

DAY = dt.date(2026, 11, 20)
AWS_KEY = "AKIA" + "Q7" * 8  # built here so the file itself holds no key-shaped string


def claude_line(session: str, ts: str, text: str, n: int) -> str:
    return json.dumps(
        {
            "type": "user",
            "sessionId": session,
            "uuid": f"{session}-{n}",
            "parentUuid": None,
            "isSidechain": False,
            "timestamp": ts,
            "cwd": "/home/dana/src/app",
            "message": {"role": "user", "content": text},
        }
    )


def write_claude(root: Path, session: str, stamps: list[str], text: str = "fix the tests") -> Path:
    path = root / "proj" / f"{session}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(claude_line(session, ts, text, n) + "\n" for n, ts in enumerate(stamps)))
    last = (parse_ts(stamps[-1]) or 0) / 1e6
    os.utime(path, (last, last))
    return path


def run(tmp_path: Path, roots: list[SourceRoot], day: dt.date = DAY) -> tuple[object, list[dict], list[dict]]:
    events, quarantine = tmp_path / f"events-{day}.parquet", tmp_path / f"quarantine-{day}.parquet"
    stats = ingest_day(roots, day, events, quarantine)
    return stats, pq.read_table(events).to_pylist(), pq.read_table(quarantine).to_pylist()


def test_a_session_crossing_midnight_stays_whole_in_its_start_day(tmp_path: Path) -> None:
    root = tmp_path / "claude"
    write_claude(root, "night", ["2026-11-20T23:50:00Z", "2026-11-21T00:10:00Z"])
    write_claude(root, "next", ["2026-11-21T09:00:00Z", "2026-11-21T09:05:00Z"])
    roots = [SourceRoot("claude_code", root)]
    stats, rows, _ = run(tmp_path, roots, DAY)
    assert [(r["session_id"], r["line_no"]) for r in rows] == [("night", 1), ("night", 2)]
    assert stats.sessions == 1
    _, rows_next, _ = run(tmp_path, roots, DAY + dt.timedelta(days=1))
    assert {r["session_id"] for r in rows_next} == {"next"}


def test_files_that_cannot_hold_the_day_are_skipped_and_counted(tmp_path: Path) -> None:
    root = tmp_path / "claude"
    write_claude(root, "old", ["2026-11-18T10:00:00Z"])  # last written before the day
    write_claude(root, "later", ["2026-11-22T10:00:00Z"])  # starts after the day
    write_claude(root, "today", ["2026-11-20T10:00:00Z"])
    codex = tmp_path / "codex" / "2026" / "11" / "25"
    codex.mkdir(parents=True)
    meta = {"timestamp": "2026-11-25T10:00:00Z", "type": "session_meta", "payload": {"id": "x"}}
    (codex / "rollout-2026-11-25T10-00-00-x.jsonl").write_text(json.dumps(meta) + "\n")  # path date days away
    stats, rows, _ = run(tmp_path, [SourceRoot("claude_code", root), SourceRoot("codex", tmp_path / "codex")])
    assert {r["session_id"] for r in rows} == {"today"}
    assert stats.files_read == 1
    assert dict(stats.files_skipped) == {"modified_before_day": 1, "starts_after_day": 1, "path_date": 1}


def test_a_chat_export_is_read_on_the_days_its_conversations_start_and_its_last_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its head bounds nothing, so the whole file is looked at once: a range reads it on those days
    only (once per pass, however many of them the pass holds), and every other day counts it as
    skipped."""
    root = tmp_path / "chats"
    root.mkdir()
    lines = [
        {
            "id": f"c{day}",
            "timestamp": f"2026-11-{day}T10:00:00Z",
            "messages": [{"role": "user", "content": "hi"}],
        }
        for day in (16, 20)
    ]
    path = root / "export.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    last = parse_ts("2026-11-23T12:00:00Z") / 1e6
    os.utime(path, (last, last))
    parses: list[Path] = []
    chat = FORMATS["chat_jsonl"]

    def counted(path: Path, max_line_bytes: int) -> Iterator[Event | BadLine]:
        parses.append(path)
        return chat.parse(path, max_line_bytes=max_line_bytes)

    monkeypatch.setitem(FORMATS, "chat_jsonl", dataclasses.replace(chat, parse=counted))
    days = [dt.date(2026, 11, day) for day in range(15, 26)]
    outputs = {day: (tmp_path / f"e-{day}", tmp_path / f"q-{day}") for day in days}
    stats = ingest_days([SourceRoot("chat_jsonl", root)], outputs, chunk_days=7)
    read = {16: 1, 20: 1, 23: 1, 24: 1}  # 23: its last write; 24: the day of slack after it
    assert {day.day: stats[day].files_read for day in days if stats[day].files_read} == read
    skipped = {"no_session_starts": 1}
    assert {day.day for day in days if stats[day].files_skipped == skipped} == {15, 17, 18, 19, 21, 22}
    assert {day.day for day in days if stats[day].files_skipped == {"modified_before_day": 1}} == {25}
    assert {day.day: stats[day].rows for day in days if stats[day].rows} == {16: 1, 20: 1}
    assert len(parses) == 2, "one parse in each of the two passes (days 15-21 and 22-25)"


def test_a_file_in_the_wrong_folder_is_reported_and_parsed_by_its_own_parser(tmp_path: Path) -> None:
    claude_root = tmp_path / "chat-root-by-mistake"
    write_claude(claude_root, "s1", ["2026-11-20T10:00:00Z"])
    stats, rows, quarantine = run(tmp_path, [SourceRoot("chat_jsonl", claude_root)])
    assert {r["source"] for r in rows} == {"claude_code"}
    assert len(stats.misassigned_files) == 1 and "looks like claude_code" in stats.misassigned_files[0]
    assert [q["reason"] for q in quarantine] == ["wrong_source_folder"]


def test_an_unrecognized_file_is_quarantined_not_guessed(tmp_path: Path) -> None:
    root = tmp_path / "chat"
    root.mkdir()
    path = root / "notes.jsonl"
    path.write_text('{"hello": "world"}\n')
    stamp = dt.datetime(2026, 11, 20, 12, tzinfo=dt.UTC).timestamp()
    os.utime(path, (stamp, stamp))
    _, rows, quarantine = run(tmp_path, [SourceRoot("chat_jsonl", root)])
    assert rows == []
    assert [(q["reason"], q["line_no"]) for q in quarantine] == [("unrecognized_format", 0)]


def test_secrets_are_redacted_before_texts_and_excerpts_are_cut(tmp_path: Path) -> None:
    root = tmp_path / "claude"
    # The key straddles both cuts: the text cap and the quarantine excerpt.
    long_text = "x" * (TEXT_CAP_CHARS - 10) + " " + AWS_KEY + " tail"
    path = write_claude(root, "s", ["2026-11-20T10:00:00Z"], text=long_text)
    with path.open("a") as handle:
        handle.write('{"type": "user", "broken": "' + "y" * (EXCERPT_CHARS - 30) + " " + AWS_KEY + "\n")
    stats, rows, quarantine = run(tmp_path, [SourceRoot("claude_code", root)])
    text = rows[0]["text"]
    assert rows[0]["text_truncated"] and len(text) <= TEXT_CAP_CHARS
    assert "AKIA" not in text and "[REDACTED" in text
    assert rows[0]["cwd"] == "/home/<user>/src/app"
    assert quarantine[0]["reason"] == "malformed_json"
    assert "AKIA" not in quarantine[0]["excerpt"] and len(quarantine[0]["excerpt"]) <= EXCERPT_CHARS
    assert stats.redactions["aws_access_key"] == 2


def test_same_inputs_give_identical_files(tmp_path: Path) -> None:
    root = tmp_path / "claude"
    for n in range(3):
        write_claude(root, f"s{n}", [f"2026-11-20T1{n}:00:00Z", f"2026-11-20T1{n}:30:00Z"])
    roots = [SourceRoot("claude_code", root)]
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir(), second.mkdir()
    ingest_day(roots, DAY, first / "e.parquet", first / "q.parquet")
    ingest_day(roots, DAY, second / "e.parquet", second / "q.parquet")
    assert pq.read_table(first / "e.parquet").equals(pq.read_table(second / "e.parquet"))


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("sessions/2026/11/20/rollout-2026-11-20T10-00-00-abc.jsonl", dt.date(2026, 11, 20)),
        ("logs/session_2026-11-19.jsonl", dt.date(2026, 11, 19)),
        ("chats/session-2025-12-01T21-45-5b959dae.json", dt.date(2025, 12, 1)),
        ("projects/-home-me-app/0b1c.jsonl", None),
        ("x/2026-13-45.jsonl", None),
    ],
)
def test_path_date(path: str, expected: dt.date | None) -> None:
    assert path_date(Path(path)) == expected


def test_naive_local_times_after_the_mtime_are_still_read(tmp_path: Path) -> None:
    # An agent in Tokyo writes 08:00 local without a zone (read as 08:00 UTC) at 23:05 UTC the day before.
    logs = tmp_path / "logs"
    logs.mkdir()
    path = logs / "session_2026-11-21.jsonl"
    line = {"type": "message", "role": "user", "content": "fix it", "timestamp": "2026-11-21T08:00:00"}
    path.write_text(json.dumps(line) + "\n")
    stamp = dt.datetime(2026, 11, 20, 23, 5, tzinfo=dt.UTC).timestamp()
    os.utime(path, (stamp, stamp))
    _, rows, _ = run(tmp_path, [SourceRoot("own_agent", logs)], dt.date(2026, 11, 21))
    assert [r["text"] for r in rows] == ["fix it"]


def test_a_misplaced_file_is_skipped_by_its_own_formats_rules(tmp_path: Path) -> None:
    # Chat lines are not in time order: the Claude rule (first line decides) would skip day 20.
    root = tmp_path / "claude"
    root.mkdir()
    path = root / "export.jsonl"
    lines = [
        {"id": "b", "timestamp": "2026-11-21T09:00:00Z", "messages": [{"role": "user", "content": "later"}]},
        {"id": "a", "timestamp": "2026-11-20T09:00:00Z", "messages": [{"role": "user", "content": "first"}]},
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    _, rows, _ = run(tmp_path, [SourceRoot("claude_code", root)], DAY)
    assert {r["session_id"] for r in rows} == {"a"}


def test_a_folder_that_cannot_be_listed_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # CI runs as root, where chmod 000 does not stop a listing, so the refusal is simulated.
    (tmp_path / "secret-project").mkdir()
    real_scandir = os.scandir

    def scandir(folder: str) -> object:
        if folder.endswith("secret-project"):
            raise PermissionError(13, "Permission denied", folder)
        return real_scandir(folder)

    monkeypatch.setattr("trajectory_pipeline.ingest.days.os.scandir", scandir)
    with pytest.raises(SourceUnreadableError, match=r"cannot list .*secret-project"):
        candidate_files([SourceRoot("claude_code", tmp_path)])


def test_a_vanished_file_is_quarantined_and_its_neighbours_load(tmp_path: Path) -> None:
    root = tmp_path / "claude"
    write_claude(root, "ok", ["2026-11-20T10:00:00Z"])
    link = root / "proj" / "gone.jsonl"
    link.symlink_to(root / "proj" / "deleted-meanwhile.jsonl")
    stats, rows, _ = run(tmp_path, [SourceRoot("claude_code", root)])
    assert {r["session_id"] for r in rows} == {"ok"}
    assert stats.files_skipped["unreadable_file"] == 1
    # The file-level row lands once, in the partition of the day the file was last touched.
    touched = dt.datetime.fromtimestamp(link.lstat().st_mtime, dt.UTC).date()
    _, _, quarantine = run(tmp_path, [SourceRoot("claude_code", root)], touched)
    assert [(q["reason"], q["line_no"]) for q in quarantine] == [("unreadable_file", 0)]


def test_user_names_in_paths_are_redacted(tmp_path: Path) -> None:
    # Claude Code names each project folder after its path: -home-dana-src-app.
    root = tmp_path / "projects"
    path = write_claude(root, "s", ["2026-11-20T10:00:00Z"])
    path.parent.rename(root / "-home-dana-src-app")
    _, rows, _ = run(tmp_path, [SourceRoot("claude_code", root)])
    assert rows[0]["source_path"].endswith("/projects/-home-<user>-src-app/s.jsonl")


def test_files_are_listed_in_path_order_without_following_linked_folders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Path order compares part by part: "a/z.jsonl" before "a-b/x.jsonl" and "a.jsonl", though
    # as whole strings "-" and "." sort before "/".
    for name in ("a/z.jsonl", "a-b/x.jsonl", "a.jsonl", "a/b/c.jsonl", "B/q.jsonl", "a/notes.txt"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("{}\n")
    (tmp_path / "linked").symlink_to(tmp_path / "a", target_is_directory=True)
    listed = matching_files(SourceRoot("claude_code", tmp_path))
    assert listed == sorted(listed, key=Path) and "linked" not in "".join(listed)
    assert [os.path.relpath(p, tmp_path) for p in listed] == [
        "B/q.jsonl",
        "a/b/c.jsonl",
        "a/z.jsonl",
        "a-b/x.jsonl",
        "a.jsonl",
    ]
    monkeypatch.chdir(tmp_path)
    assert matching_files(SourceRoot("claude_code", Path("."))) == [
        os.path.relpath(p, tmp_path) for p in listed
    ]
