"""Small transcripts of the four main JSON-lines formats, written for these tests, and a way to
ingest them the way `raw_sessions` does.

Each builder gives the records of one session (or, for chat JSONL, of two conversations) that start
at `T0`; `faulty(source, record)` puts one more record among them, so a test can check that the
record costs itself alone.

    path = write(root, "claude_code", claude_records())
    stats, rows, bad = ingest(tmp_path, {"claude_code": root})
"""

from __future__ import annotations

import datetime as dt
import os
import re
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pyarrow.parquet as pq

from trajectory_pipeline.ingest.days import IngestStats, SourceRoot, ingest_days

T0 = dt.datetime(2026, 3, 10, 9, 0, tzinfo=dt.UTC)
CLAUDE_SESSION = "6f1c2a90-1111-4c1e-9d7a-2b5e0c3d4f10"
CODEX_SESSION = "019d0000-aaaa-7bbb-8ccc-0123456789ab"
HOME = "/home/dana"


def at(seconds: float) -> str:
    return (T0 + dt.timedelta(seconds=seconds)).isoformat().replace("+00:00", "Z")


def deep(levels: int) -> dict[str, Any]:
    """An object nested `levels` levels deep."""
    value: dict[str, Any] = {"leaf": 1}
    for _ in range(levels - 1):
        value = {"a": value}
    return value


_DEEP = re.compile(rb'"@@deep:(\d+)@@"')


def deep_marker(levels: int) -> str:
    """Stands for `deep(levels)` in a record: `encode` writes it out as text, which no JSON writer
    could (they recurse)."""
    return f"@@deep:{levels}@@"


def _deep_text(match: re.Match[bytes]) -> bytes:
    levels = int(match.group(1))
    return b'{"a":' * (levels - 1) + b'{"leaf":1}' + b"}" * (levels - 1)


# ---------------------------------------------------------------- Claude Code


def claude_user(n: int, text: str, seconds: float, **extra: Any) -> dict[str, Any]:
    return {
        "parentUuid": None,
        "isSidechain": False,
        "type": "user",
        "sessionId": CLAUDE_SESSION,
        "uuid": f"u-{n}",
        "timestamp": at(seconds),
        "cwd": f"{HOME}/src/app",
        "version": "2.1.39",
        "gitBranch": "main",
        "message": {"role": "user", "content": text},
        **extra,
    }


def claude_call(n: int, call_id: str, tool: str, tool_input: Any, seconds: float) -> dict[str, Any]:
    block = {"type": "tool_use", "id": call_id, "name": tool, "input": tool_input}
    return {
        **claude_user(n, "", seconds),
        "type": "assistant",
        "message": {"role": "assistant", "model": "claude-x", "content": [block]},
    }


def claude_result(n: int, call_id: str, text: str, seconds: float, is_error: bool = False) -> dict[str, Any]:
    block = {"type": "tool_result", "tool_use_id": call_id, "content": text, "is_error": is_error}
    return {**claude_user(n, "", seconds), "message": {"role": "user", "content": [block]}}


def claude_records() -> list[dict[str, Any]]:
    return [
        claude_user(0, "fix the failing test", 0),
        claude_call(1, "toolu_1", "Bash", {"command": "pytest -q"}, 5),
        claude_result(2, "toolu_1", "1 failed", 9, is_error=True),
        claude_call(3, "toolu_2", "Read", {"file_path": "app.py"}, 12),
        claude_result(4, "toolu_2", "def f(): ...", 13),
    ]


# ---------------------------------------------------------------- Codex


def codex_line(kind: str, payload: dict[str, Any], seconds: float) -> dict[str, Any]:
    return {"timestamp": at(seconds), "type": kind, "payload": payload}


def codex_meta(**git: Any) -> dict[str, Any]:
    payload = {"id": CODEX_SESSION, "timestamp": at(0), "cwd": f"{HOME}/src/app", "instructions": "be useful"}
    if git:
        payload["git"] = git
    return codex_line("session_meta", payload, 0)


def codex_user(text: str, seconds: float) -> dict[str, Any]:
    content = [{"type": "input_text", "text": text}]
    return codex_line("response_item", {"type": "message", "role": "user", "content": content}, seconds)


def codex_call(call_id: str, name: str, arguments: Any, seconds: float, **extra: Any) -> dict[str, Any]:
    payload = {"type": "function_call", "name": name, "arguments": arguments, "call_id": call_id, **extra}
    return codex_line("response_item", payload, seconds)


def codex_output(call_id: str, output: str, seconds: float) -> dict[str, Any]:
    return codex_line(
        "response_item", {"type": "function_call_output", "call_id": call_id, "output": output}, seconds
    )


def codex_records() -> list[dict[str, Any]]:
    return [
        codex_meta(),
        codex_user("fix the failing test", 1),
        codex_call("call_1", "shell", '{"command": ["bash", "-lc", "pytest -q"]}', 5),
        codex_output("call_1", "Exit code: 1\n1 failed", 9),
        codex_call("call_2", "shell", '{"command": ["bash", "-lc", "cat app.py"]}', 12),
        codex_output("call_2", "Exit code: 0\ndef f(): ...", 13),
    ]


# ---------------------------------------------------------------- own agent


def own_message(role: str, text: str, seconds: float) -> dict[str, Any]:
    return {"type": "message", "role": role, "content": text, "timestamp": at(seconds)}


def own_tool(tool: str, args: Any, result: Any, seconds: float) -> dict[str, Any]:
    return {"type": "tool_call", "tool": tool, "args": args, "result": result, "timestamp": at(seconds)}


def own_records() -> list[dict[str, Any]]:
    return [
        own_message("user", "fix the failing test", 0),
        own_tool("bash", {"command": "pytest -q"}, {"exit_code": 1, "output": "1 failed"}, 5),
        own_tool("read_file", {"path": "app.py"}, "def f(): ...", 12),
        own_message("timmy", "Found it.", 15),
    ]


# ---------------------------------------------------------------- chat JSONL


def chat_record(conversation_id: str, seconds: float, arguments: Any = None) -> dict[str, Any]:
    arguments = '{"path": "app.py"}' if arguments is None else arguments
    call = {
        "id": f"{conversation_id}-c1",
        "type": "function",
        "function": {"name": "read_file", "arguments": arguments},
    }
    return {
        "id": conversation_id,
        "timestamp": at(seconds),
        "messages": [
            {"role": "user", "content": "what does app.py do?"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"{conversation_id}-c1", "content": "def f(): ..."},
            {"role": "assistant", "content": "It defines f."},
        ],
    }


def chat_records() -> list[dict[str, Any]]:
    return [chat_record("conv-1", 0), chat_record("conv-2", 60)]


BUILDERS = {
    "claude_code": claude_records,
    "codex": codex_records,
    "own_agent": own_records,
    "chat_jsonl": chat_records,
}
NAMES = {
    "claude_code": f"proj/{CLAUDE_SESSION}.jsonl",
    "codex": f"2026/03/10/rollout-2026-03-10T09-00-00-{CODEX_SESSION}.jsonl",
    "own_agent": "session_2026-03-10.jsonl",
    "chat_jsonl": "chats.jsonl",
}


def deep_input_record(source: str, levels: int) -> dict[str, Any]:
    """A tool call of the format whose input is nested `levels` deep."""
    value = deep_marker(levels)
    if source == "claude_code":
        return claude_call(9, "toolu_deep", "Bash", value, 7)
    if source == "codex":
        return codex_call("call_deep", "shell", value, 7)
    if source == "own_agent":
        return own_tool("bash", value, "ok", 7)
    return chat_record("conv-deep", 30, arguments=value)


def timed_record(source: str, stamp: object) -> dict[str, Any]:
    """A user message of the format whose `timestamp` is `stamp`."""
    if source == "claude_code":
        return {**claude_user(9, "also check the docs", 7), "timestamp": stamp}
    if source == "codex":
        return {**codex_user("also check the docs", 7), "timestamp": stamp}
    if source == "own_agent":
        return {**own_message("user", "also check the docs", 7), "timestamp": stamp}
    return {**chat_record("conv-odd", 30), "timestamp": stamp}


def faulty(source: str, record: dict[str, Any] | str, at_line: int = 3) -> list[dict[str, Any] | str]:
    """The format's records with `record` put in as line `at_line` (1-based)."""
    records: list[dict[str, Any] | str] = list(BUILDERS[source]())
    records.insert(at_line - 1, record)
    return records


def encode(records: list[dict[str, Any] | str]) -> bytes:
    lines = ((r.encode() if isinstance(r, str) else orjson.dumps(r)) for r in records)
    return b"".join(_DEEP.sub(_deep_text, line) + b"\n" for line in lines)


def write(
    root: Path,
    source: str,
    records: list[dict[str, Any] | str],
    name: str | None = None,
    *,
    prefix: bytes = b"",
    mtime: dt.datetime = T0 + dt.timedelta(hours=1),
) -> Path:
    path = root / (name or NAMES[source])
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(prefix + encode(records))
    os.utime(path, (mtime.timestamp(), mtime.timestamp()))
    return path


def ingest(
    tmp_path: Path,
    roots: dict[str, Path] | list[tuple[str, Path]],
    days: list[dt.date] | None = None,
) -> tuple[IngestStats, list[dict[str, Any]], list[dict[str, Any]]]:
    """Ingest the days (by default the three around T0) as `raw_sessions` does, all at once: the
    merged stats, and every day's event and quarantine rows."""
    days = days or [T0.date() + dt.timedelta(days=k) for k in (-1, 0, 1)]
    out = tmp_path / "out"
    out.mkdir(exist_ok=True)
    outputs = {day: (out / f"events-{day}.parquet", out / f"quarantine-{day}.parquet") for day in days}
    pairs = list(roots.items()) if isinstance(roots, dict) else roots
    by_day = ingest_days([SourceRoot(source, root) for source, root in pairs], outputs)
    rows: list[dict[str, Any]] = []
    bad: list[dict[str, Any]] = []
    merged = IngestStats("all")
    for day, (events_path, quarantine_path) in outputs.items():
        rows += pq.read_table(events_path).to_pylist()
        bad += pq.read_table(quarantine_path).to_pylist()
        stats = by_day[day]
        merged.rows += stats.rows
        merged.quarantined.update(stats.quarantined)
        merged.repaired.update(stats.repaired)
        merged.duplicate_events += stats.duplicate_events
        merged.misassigned_files += stats.misassigned_files
        merged.sessions_by_source.update(stats.sessions_by_source)
    return merged, rows, bad


def content(rows: list[dict[str, Any]]) -> Counter[tuple[Any, ...]]:
    """What the rows say, less where they sit in their file: comparable across two versions of it."""
    return Counter(
        (r["session_id"], r["role"], r["kind"], r["text"], r["tool_name"], r["tool_input"]) for r in rows
    )
