"""Why this exists: chat-format JSONL (one OpenAI-style conversation per line) has no real
samples in the corpus, so these synthetic tables pin what the parser promises: tool calls
with string or object arguments linked to their results, in the shapes OpenAI's, Anthropic's and
other servers' exports give them, ids that dedupe copies and stay stable (and row numbers that
merge nothing), the session-start fallbacks, a broken line costing only itself, and a sniffer
that does not mistake SWE-agent trajectories, Claude Code or Codex files for chat.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import orjson
import pytest

from trajectory_pipeline.ingest.parsers import chat_jsonl
from trajectory_pipeline.ingest.parsers.lines import read_head
from trajectory_pipeline.schema import (
    MALFORMED_JSON,
    UNKNOWN_RECORD_TYPE,
    WRONG_FIELD_TYPE,
    BadLine,
    Event,
    canonical_json,
    parse_ts,
)

TS = "2025-06-01T12:00:00Z"


def conversation(arguments: Any = '{"path": "src/app.py"}', **extra: Any) -> dict[str, Any]:
    return {
        "messages": [
            {"role": "system", "content": "You are a coding agent."},
            {"role": "user", "content": "Fix the failing test."},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "read_file", "arguments": arguments},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "def main(): ..."},
            {"role": "assistant", "content": [{"type": "text", "text": "Found it."}]},
        ],
        **extra,
    }


def write(tmp_path: Path, records: list[dict[str, Any] | str], name: str = "chats.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join((r if isinstance(r, str) else orjson.dumps(r).decode()) + "\n" for r in records))
    return path


def parse(path: Path) -> tuple[list[Event], list[BadLine]]:
    items = list(chat_jsonl.parse(path))
    return [i for i in items if isinstance(i, Event)], [i for i in items if isinstance(i, BadLine)]


def test_a_conversation(tmp_path: Path) -> None:
    events, bad = parse(write(tmp_path, [conversation(id="conv-7", timestamp=TS, model="gpt-4o")]))
    assert bad == []
    assert [(e.seq, e.kind, e.role) for e in events] == [
        (0, "meta", "system"),
        (1, "message", "user"),
        (2, "tool_call", "assistant"),
        (3, "tool_result", "tool"),
        (4, "message", "assistant"),
    ]
    call, result = events[2], events[3]
    assert (call.tool_name, call.tool_call_id, call.tool_input) == (
        "read_file",
        "call_1",
        '{"path":"src/app.py"}',
    )
    assert (result.tool_name, result.tool_call_id, result.text) == ("read_file", "call_1", "def main(): ...")
    assert events[4].text == "Found it."
    assert {(e.session_id, e.session_start, e.ts, e.line_no, e.model) for e in events} == {
        ("conv-7", parse_ts(TS), parse_ts(TS), 1, "gpt-4o")
    }


@pytest.mark.parametrize(
    ("arguments", "tool_input"),
    [
        ('{"path": "src/app.py"}', '{"path":"src/app.py"}'),
        ({"path": "src/app.py"}, '{"path":"src/app.py"}'),
        ("src/app.py", '{"raw":"src/app.py"}'),
        ("", "{}"),
        (None, "{}"),
    ],
)
def test_arguments_as_string_or_object(tmp_path: Path, arguments: Any, tool_input: str) -> None:
    events, _ = parse(write(tmp_path, [conversation(arguments)]))
    assert next(e for e in events if e.kind == "tool_call").tool_input == tool_input


def test_content_parts_and_legacy_function_calls(tmp_path: Path) -> None:
    record = {
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "what is this?"}, {"type": "image_url"}]},
            {"role": "assistant", "content": None, "function_call": {"name": "lookup", "arguments": "{}"}},
            {"role": "function", "name": "lookup", "content": "a cat"},
            {"role": "assistant", "reasoning_content": "It is a cat.", "content": "A cat."},
        ],
        "tools": [{"type": "function", "function": {"name": "lookup"}}],
    }
    events, _ = parse(write(tmp_path, [record]))
    assert [(e.kind, e.text, e.tool_name) for e in events] == [
        ("meta", canonical_json({"tools": record["tools"]}), None),
        ("message", "what is this?\n[image]", None),
        ("tool_call", None, "lookup"),
        ("tool_result", "a cat", "lookup"),
        ("reasoning", "It is a cat.", None),
        ("message", "A cat.", None),
    ]


def fields(events: list[Event]) -> list[tuple[Any, ...]]:
    return [(e.role, e.kind, e.text, e.tool_name, e.tool_call_id, e.tool_input, e.is_error) for e in events]


def test_anthropic_messages_blocks(tmp_path: Path) -> None:
    """An Anthropic Messages conversation: calls, results and thinking are content blocks, a result
    sits in a user message, and the system prompt beside the messages. Read as parts, the calls were
    `[tool_use]` markers and the results words of the user."""
    prompt = "You are a coding agent working in /home/me/src/app."
    record = {
        "model": "claude-sonnet-4",
        "system": [{"type": "text", "text": prompt, "cache_control": {"type": "ephemeral"}}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "Run the tests."}]},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "Run pytest first.", "signature": "c2ln"},
                    {"type": "text", "text": "Running them."},
                    {"type": "tool_use", "id": "toolu_1", "name": "bash", "input": {"command": "pytest -q"}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_1",
                        "content": [{"type": "text", "text": "1 failed"}],
                        "is_error": True,
                    },
                    {"type": "text", "text": "Fix it."},
                ],
            },
            {
                "role": "assistant",
                "content": [
                    {"type": "redacted_thinking", "data": "RW5jcnlwdGVk"},
                    {"type": "tool_use", "id": "toolu_2", "name": "edit", "input": {"path": "app.py"}},
                ],
            },
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_2", "content": "ok"}]},
        ],
    }
    events, bad = parse(write(tmp_path, [record]))
    assert bad == []
    assert fields(events) == [
        ("system", "meta", prompt, None, None, None, None),
        ("user", "message", "Run the tests.", None, None, None, None),
        ("assistant", "reasoning", "Run pytest first.", None, None, None, None),
        ("assistant", "message", "Running them.", None, None, None, None),
        ("assistant", "tool_call", None, "bash", "toolu_1", '{"command":"pytest -q"}', None),
        ("tool", "tool_result", "1 failed", "bash", "toolu_1", None, True),
        ("user", "message", "Fix it.", None, None, None, None),
        ("assistant", "reasoning", "[redacted thinking]", None, None, None, None),
        ("assistant", "tool_call", None, "edit", "toolu_2", '{"path":"app.py"}', None),
        ("tool", "tool_result", "ok", "edit", "toolu_2", None, False),
    ]
    assert {(e.cwd, e.repo, e.model) for e in events} == {("/home/me/src/app", "app", "claude-sonnet-4")}


def test_custom_tool_calls(tmp_path: Path) -> None:
    """OpenAI custom tools (GPT-5's freeform apply_patch) take free text: such a call once
    quarantined its whole conversation for a missing `function.name`."""
    patch = "*** Begin Patch\n*** Update File: app.py\n*** End Patch\n"
    call = {"id": "call_p", "type": "custom", "custom": {"name": "apply_patch", "input": patch}}
    record = {
        "messages": [
            {"role": "user", "content": "Patch app.py."},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "call_p", "content": "Done."},
        ]
    }
    events, bad = parse(write(tmp_path, [record]))
    assert bad == []
    assert fields(events)[1:] == [
        ("assistant", "tool_call", None, "apply_patch", "call_p", canonical_json({"input": patch}), None),
        ("tool", "tool_result", "Done.", "apply_patch", "call_p", None, None),
    ]


@pytest.mark.parametrize(
    ("extra", "reasoning"),
    [
        ({"reasoning": "Think first."}, ["Think first."]),  # vLLM's newer name, OpenRouter's
        ({"reasoning_content": "Think first.", "reasoning": "Think first."}, ["Think first."]),  # once
        ({"reasoning": {"effort": "high"}}, []),  # not a text: no reasoning, and no quarantine
    ],
)
def test_reasoning_under_either_name(tmp_path: Path, extra: dict[str, Any], reasoning: list[str]) -> None:
    record = {"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a", **extra}]}
    events, bad = parse(write(tmp_path, [record]))
    assert bad == []
    assert [e.text for e in events if e.kind == "reasoning"] == reasoning
    assert events[-1].text == "a"


def test_a_refusal_is_the_reply(tmp_path: Path) -> None:
    refusal = {"role": "assistant", "content": None, "refusal": "I can't help with that."}
    events, _ = parse(write(tmp_path, [{"messages": [{"role": "user", "content": "Do harm."}, refusal]}]))
    assert [(e.role, e.kind, e.text) for e in events][1:] == [
        ("assistant", "message", "I can't help with that.")
    ]


def test_ipython_role_is_tool_output(tmp_path: Path) -> None:
    """Llama 3.x chats give a tool's output the role `ipython`."""
    call = {"type": "function", "function": {"name": "bash", "arguments": {"command": "ls"}}}
    record = {
        "messages": [
            {"role": "user", "content": "What is here?"},
            {"role": "assistant", "content": "", "tool_calls": [call]},
            {"role": "ipython", "content": "app.py"},
            {"role": "assistant", "content": "app.py."},
        ]
    }
    events, bad = parse(write(tmp_path, [record]))
    assert bad == []
    assert [(e.role, e.kind, e.text) for e in events][1:] == [
        ("assistant", "tool_call", None),
        ("tool", "tool_result", "app.py"),
        ("assistant", "message", "app.py."),
    ]


def test_one_part_content_and_integer_call_ids(tmp_path: Path) -> None:
    """A content given as its one part, and calls numbered rather than named, mean what a list of
    parts and a string id mean: neither may cost the conversation."""
    call = {"id": 7, "type": "function", "function": {"name": "read_file", "arguments": "{}"}}
    record = {
        "messages": [
            {"role": "user", "content": {"type": "text", "text": "Read it."}},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": 7, "content": {"type": "text", "text": "def main(): ..."}},
        ]
    }
    events, bad = parse(write(tmp_path, [record]))
    assert bad == []
    assert [(e.kind, e.text, e.tool_name, e.tool_call_id) for e in events] == [
        ("message", "Read it.", None, None),
        ("tool_call", None, "read_file", "7"),
        ("tool_result", "def main(): ...", "read_file", "7"),
    ]


def test_session_ids(tmp_path: Path) -> None:
    record = conversation()
    numbered = conversation(id=42)
    first = write(tmp_path, [record, numbered, conversation(session_id="s-9")], "a.jsonl")
    copy = write(tmp_path, [record], "b.jsonl")
    ids = [list(dict.fromkeys(e.session_id for e in parse(path)[0])) for path in (first, copy, first)]

    def digest(line: dict[str, Any]) -> str:
        return hashlib.sha256(canonical_json(line).encode()).hexdigest()[:16]

    # An integer id was once the session id ("42"); it is a row number, named by its content now
    # (test_row_numbers_name_no_session).
    assert ids[0] == [digest(record), digest(numbered), "s-9"]
    assert ids[1] == [digest(record)], "a copy of a conversation gets the same id"
    assert ids[2] == ids[0], "stable across runs"


@pytest.mark.parametrize("row", [0, "0"])
def test_row_numbers_name_no_session(tmp_path: Path, row: int | str) -> None:
    """Exports number their conversations 0, 1, ... (a dataframe's index, as a number or as text):
    two files' conversation 0 are different conversations, and must not merge into one session."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    one = write(tmp_path / "a", [conversation(id=row), conversation(id=1)])
    other = write(tmp_path / "b", [with_system("You are another agent.", id=row)])
    copy = write(tmp_path / "b", [conversation(id=row), conversation(id=1)], "copy.jsonl")
    ids = [list(dict.fromkeys(e.session_id for e in parse(path)[0])) for path in (one, other, copy)]
    assert len(set(ids[0])) == 2 and ids[1][0] not in ids[0], "no two conversations share an id"
    assert ids[2] == ids[0], "a copy of the file still dedupes"
    assert str(row) not in {*ids[0], *ids[1]}


@pytest.mark.parametrize(
    ("extra", "name", "start"),
    [
        ({"timestamp": TS}, "chats.jsonl", parse_ts(TS)),
        ({"created_at": 1748779200}, "chats.jsonl", parse_ts(TS)),
        ({"metadata": {"timestamp": TS}}, "export_2024-01-31.jsonl", parse_ts(TS)),
        ({}, "export_2024-01-31.jsonl", parse_ts("2024-01-31T00:00:00+00:00")),
        ({"timestamp": "not a time"}, "chats.jsonl", 1_750_000_000_000_000),
    ],
)
def test_session_start(tmp_path: Path, extra: dict[str, Any], name: str, start: int) -> None:
    path = write(tmp_path, [conversation(**extra)], name)
    os.utime(path, (1_750_000_000, 1_750_000_000))  # last written 2025-06-15, after the conversations
    events, _ = parse(path)
    assert {e.session_start for e in events} == {start}


def with_system(prompt: Any, **extra: Any) -> dict[str, Any]:
    record = conversation(**extra)
    record["messages"][0] = {"role": "system", "content": prompt}
    return record


@pytest.mark.parametrize(
    ("record", "cwd", "repo"),
    [
        (
            with_system("You are a coding assistant working in /home/dana/src/edge-proxy (go). Run tests."),
            "/home/dana/src/edge-proxy",
            "edge-proxy",
        ),
        (
            with_system([{"type": "text", "text": "Working directory: /srv/app.\nIs a git repo: yes"}]),
            "/srv/app",
            "app",
        ),
        (with_system("<environment_context>\n <cwd>/Users/ann/shop</cwd>\n"), "/Users/ann/shop", "shop"),
        (with_system("Working in /srv/app", cwd="/work/tiles"), "/work/tiles", "tiles"),
        (conversation(metadata={"cwd": "/work/tiles"}), "/work/tiles", "tiles"),
        (with_system("You are working in the current repository."), None, None),
        (conversation(), None, None),
        (with_system("You are working in /home/dana"), "/home/dana", None),
        ({"system": "Working directory: /srv/api", **conversation()}, "/srv/api", "api"),  # Anthropic's
        # a top-level system prompt that names no folder leaves the messages' own to tell
        ({"system": "You are an agent.", **with_system("Working directory: /srv/app")}, "/srv/app", "app"),
    ],
)
def test_cwd_and_repo_from_the_line_or_its_system_prompt(
    tmp_path: Path, record: dict[str, Any], cwd: str | None, repo: str | None
) -> None:
    """Chat exports keep no cwd field as agents' own logs do; the prompt naming the folder is what
    tells which repository's habits a session shows."""
    events, bad = parse(write(tmp_path, [record]))
    assert bad == []
    assert {(e.cwd, e.repo) for e in events} == {(cwd, repo)}


def test_malformed_line_in_the_middle(tmp_path: Path) -> None:
    path = write(tmp_path, [conversation(id="a"), '{"messages": [', conversation(id="b"), "{oops"])
    os.utime(path, (1_700_000_000, 1_700_000_000))
    events, bad = parse(path)
    assert [(e.session_id, e.line_no) for e in events if e.seq in (0, 4, 5, 9)] == [
        ("a", 1),
        ("a", 1),
        ("b", 3),
        ("b", 3),
    ]
    assert [e.seq for e in events] == list(range(10))
    assert [(b.line_no, b.reason, b.session_id) for b in bad] == [
        (2, MALFORMED_JSON, "b"),
        (4, MALFORMED_JSON, None),
    ]
    assert bad[1].session_start == 1_700_000_000_000_000


@pytest.mark.parametrize(
    ("record", "reason"),
    [
        ({"id": "x", "messages": "hello"}, WRONG_FIELD_TYPE),
        ({"id": "x", "messages": [{"role": "user", "content": 5}]}, WRONG_FIELD_TYPE),
        ({"id": "x", "messages": ["hello"]}, WRONG_FIELD_TYPE),
        (
            {"id": "x", "messages": [{"role": "assistant", "tool_calls": [{"id": "c", "function": {}}]}]},
            WRONG_FIELD_TYPE,
        ),
        ({"id": "x", "messages": [{"role": "narrator", "content": "Once"}]}, UNKNOWN_RECORD_TYPE),
        ({"id": "x", "messages": [{"role": "user", "content": {"size": 3}}]}, WRONG_FIELD_TYPE),  # no part
        (  # a call without its tool's name
            {"id": "x", "messages": [{"role": "assistant", "content": [{"type": "tool_use"}]}]},
            WRONG_FIELD_TYPE,
        ),
        ({"id": "x", "system": 5, "messages": []}, WRONG_FIELD_TYPE),
        ({"id": "x", "prompt": "hi", "completion": "hello"}, UNKNOWN_RECORD_TYPE),
    ],
)
def test_broken_conversations_are_quarantined_whole(
    tmp_path: Path, record: dict[str, Any], reason: str
) -> None:
    broken = {**record}
    if isinstance(broken.get("messages"), list):
        broken["messages"] = [{"role": "user", "content": "fine"}, *broken["messages"]]
    events, bad = parse(write(tmp_path, [conversation(id="a"), broken, conversation(id="c")]))
    assert [(b.line_no, b.reason, b.session_id) for b in bad] == [(2, reason, "x")]
    assert {e.line_no for e in events} == {1, 3}, "no event of the broken line gets out"


def test_sniff(tmp_path: Path, real_corpus: Path) -> None:
    chat = write(tmp_path, [conversation(), conversation()])
    assert chat_jsonl.sniff(chat, read_head(chat))
    long = write(tmp_path, [conversation(arguments="x" * 100_000)], "long.jsonl")
    head = read_head(long)
    assert len(head) < long.stat().st_size and chat_jsonl.sniff(long, head)
    # Anthropic's system prompt, or the tool specs, may come before the messages, and be long.
    specs = [{"type": "function", "function": {"name": f"t{i}", "description": "x" * 200}} for i in range(20)]
    for first in ({"system": "You are a coding agent. " * 400}, {"tools": specs}):
        late = write(tmp_path, [{**first, **conversation(arguments="x" * 100_000)}], "late.jsonl")
        assert len(read_head(late)) < late.stat().st_size and chat_jsonl.sniff(late, read_head(late)), first
    for folder in ("swe-agent", "gemini-cli", "codex", "claude-code"):
        for path in (real_corpus / folder).rglob("*.*"):
            assert not chat_jsonl.sniff(path, read_head(path)), path


def test_earliest_start_is_unknown(tmp_path: Path) -> None:
    assert chat_jsonl.earliest_start(write(tmp_path, [conversation(timestamp=TS)])) is None


def test_session_starts_hold_every_start_parse_gives(tmp_path: Path) -> None:
    """A range reads a chat file only on the days of `session_starts` (and its last write's): every
    start a session or a quarantined line gets must be among them."""
    records: list[dict[str, Any] | str] = [
        conversation(id="a", timestamp="2025-05-02T10:00:00Z"),
        "{oops",  # quarantined with the next session
        conversation(id="b", created_at=1_746_500_000),  # 2025-05-06
        conversation(id="c"),  # no time: the file's date
        conversation(id="d", timestamp="1999-01-01T00:00:00Z"),  # not believed: the file's date
        {"id": "e", "timestamp": "2025-05-09T08:00:00Z", "messages": []},  # broken, with its own time
        conversation(id="f", metadata={"timestamp": "2025-05-03T23:59:59Z"}),
        "[trailing",  # no session after it: the file's start
    ]
    path = write(tmp_path, records, "export_2025-05-01.jsonl")
    os.utime(path, (1_747_000_000, 1_747_000_000))  # last written 2025-05-11
    events, bad = parse(path)
    items: list[Event | BadLine] = [*events, *bad]
    given = {item.session_start for item in items if item.session_start is not None}
    starts = chat_jsonl.session_starts(path)
    assert given <= starts
    assert {start // 86_400_000_000 for start in given} == {start // 86_400_000_000 for start in starts}
    midnights = [parse_ts(f"2025-05-{d:02d}T00:00:00Z") for d in (1, 2, 3, 6, 9)]
    day = {midnight // 86_400_000_000 for midnight in midnights if midnight is not None}
    assert {start // 86_400_000_000 for start in starts} == day


def test_session_starts_read_lines_as_parse_does(tmp_path: Path) -> None:
    """Lines longer than the limit are quarantined, not sessions: neither their time counts."""
    long = conversation(id="long", timestamp="2025-05-04T10:00:00Z", arguments="x" * 5_000)
    path = write(tmp_path, [conversation(id="a", timestamp=TS), long], "chats.jsonl")
    os.utime(path, (1_750_000_000, 1_750_000_000))
    assert parse_ts("2025-05-04T10:00:00Z") in chat_jsonl.session_starts(path)
    assert chat_jsonl.session_starts(path, max_line_bytes=2_000) == {parse_ts(TS), 1_750_000_000_000_000}
