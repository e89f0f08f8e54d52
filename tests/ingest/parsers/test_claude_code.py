"""The Claude Code parser reads every real transcript in the corpus exactly as counted by hand.

Why: Claude Code's format drifted a lot between 1.0.89 and 2.1.39 (string vs block content,
system lines with and without subtype, two sub-agent layouts, Bedrock ids). The counts
below were taken from the raw JSON with an independent script, so a parser change that
loses a tool call, an error flag or a sub-agent's session shows up here. The synthetic
tables pin the rules the real files do not exercise (images, unknown and mistyped lines, 2.x metadata
entries, IDE notes, queued prompts, slash commands, lines written twice).

    .venv/bin/pytest tests/ingest/parsers/test_claude_code.py
"""

from __future__ import annotations

import functools
import itertools
import json
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from trajectory_pipeline.ingest.parsers import claude_code
from trajectory_pipeline.ingest.parsers.lines import file_mtime_us, read_head
from trajectory_pipeline.schema import (
    IMPLAUSIBLE_TIMESTAMP,
    MALFORMED_JSON,
    REPAIR_REASONS,
    REPEATED_LINE,
    UNKNOWN_RECORD_TYPE,
    WRONG_FIELD_TYPE,
    BadLine,
    Event,
    parse_ts,
)

SPOTTER_SESSION = "4d5611e5-241a-462a-8d15-5122611a9569"
TMP_PRIVATE_SESSION = "4c2ddfdc-b619-4525-8d03-1950fb1b0257"
TURN_2_SESSION = "e9fb405b-169f-40eb-9396-7e75076f045d"


class Expected(NamedTuple):
    session_id: str
    tool_calls: int
    tool_results: int
    linked: int  # results whose tool_call_id matches a call in the same file
    errors: int
    interrupted: int
    agent_id: str | None  # set for sub-agent files, whose every event is a sidechain event


REAL_FILES: dict[str, Expected] = {
    "spotter/4d5611e5-241a-462a-8d15-5122611a9569.jsonl": Expected(
        SPOTTER_SESSION, 150, 150, 150, 5, 0, None
    ),
    "spotter/4d5611e5-241a-462a-8d15-5122611a9569/subagents/agent-a2898e3.jsonl": Expected(
        SPOTTER_SESSION, 33, 33, 33, 8, 0, "a2898e3"
    ),
    "spotter/4d5611e5-241a-462a-8d15-5122611a9569/subagents/agent-acompact-e1f845.jsonl": Expected(
        SPOTTER_SESSION, 0, 0, 0, 0, 0, "acompact-e1f845"
    ),
    "spotter/short.jsonl": Expected("55604662-cf2a-4331-851a-ec234028f8ca", 2, 2, 2, 2, 1, None),
    "spotter/tool_heavy.jsonl": Expected("d6e0bada-1959-4eec-a9d2-0bfade768d8f", 6, 6, 6, 0, 2, None),
    "spotter/subagent.jsonl": Expected("491e126e-1e71-469c-ade2-fcc8af567c74", 16, 16, 16, 0, 1, None),
    "codemie-code/session-9eda1058.jsonl": Expected(
        "9eda1058-9706-484a-b992-d03f9cfa2546", 3, 3, 3, 1, 1, None
    ),
    "codemie-code/session-196820da.jsonl": Expected(
        "196820da-1026-4b6f-a513-a6aae42da1a6", 65, 65, 65, 2, 0, None
    ),
    "codemie-code/session-624a4a58.jsonl": Expected(
        "624a4a58-b34c-462d-a70d-13421c8125a8", 48, 48, 48, 0, 3, None
    ),
    "codemie-code/-tmp-private/4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl": Expected(
        TMP_PRIVATE_SESSION, 6, 6, 6, 0, 0, None
    ),
    "codemie-code/-tmp-private/agent-36541525.jsonl": Expected(
        TMP_PRIVATE_SESSION, 0, 0, 0, 0, 0, "36541525"
    ),
    "codemie-code/-tmp-private/agent-50243ee8.jsonl": Expected(
        TMP_PRIVATE_SESSION, 0, 0, 0, 0, 0, "50243ee8"
    ),
    "codemie-code/incremental-subagents/turn-2.jsonl": Expected(TURN_2_SESSION, 14, 14, 14, 0, 0, None),
    "codemie-code/incremental-subagents/turn-2/subagents/agent-a485154.jsonl": Expected(
        TURN_2_SESSION, 20, 20, 20, 1, 0, "a485154"
    ),
    # A 17-line prefix of a longer file: the fifth call's result was cut off.
    "claude-parser/3a7770b4-aba3-46dd-b677-8fc2d71d4e06.jsonl": Expected(
        "3a7770b4-aba3-46dd-b677-8fc2d71d4e06", 5, 4, 4, 2, 0, None
    ),
    # Holds one `summary` line and nothing else, so the file name is the session id.
    "claude-parser/4762e53b-7ca8-4464-9eac-d1816c343c50.jsonl": Expected(
        "4762e53b-7ca8-4464-9eac-d1816c343c50", 0, 0, 0, 0, 0, None
    ),
}

# Sub-agent file → its parent session's file: their session_start must be equal.
SUBAGENT_PARENTS = {
    "spotter/4d5611e5-241a-462a-8d15-5122611a9569/subagents/agent-a2898e3.jsonl": (
        "spotter/4d5611e5-241a-462a-8d15-5122611a9569.jsonl"
    ),
    "spotter/4d5611e5-241a-462a-8d15-5122611a9569/subagents/agent-acompact-e1f845.jsonl": (
        "spotter/4d5611e5-241a-462a-8d15-5122611a9569.jsonl"
    ),
    "codemie-code/-tmp-private/agent-36541525.jsonl": (
        "codemie-code/-tmp-private/4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl"
    ),
    "codemie-code/-tmp-private/agent-50243ee8.jsonl": (
        "codemie-code/-tmp-private/4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl"
    ),
    "codemie-code/incremental-subagents/turn-2/subagents/agent-a485154.jsonl": (
        "codemie-code/incremental-subagents/turn-2.jsonl"
    ),
}

# The first `timestamp` in each main file (the spotter one is a SessionStart hook's progress line).
MAIN_STARTS = {
    "spotter/4d5611e5-241a-462a-8d15-5122611a9569.jsonl": "2026-02-12T16:02:23.545Z",
    "codemie-code/-tmp-private/4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl": "2025-12-10T19:37:45.343Z",
    "codemie-code/incremental-subagents/turn-2.jsonl": "2026-01-14T19:20:03.207Z",
    "codemie-code/session-9eda1058.jsonl": "2026-01-11T09:53:23.575Z",
    "claude-parser/3a7770b4-aba3-46dd-b677-8fc2d71d4e06.jsonl": "2025-08-24T04:16:32.053Z",
}


@functools.cache
def _parse_cached(path: Path) -> tuple[list[Event], list[BadLine]]:
    items = list(claude_code.parse(path))
    return [i for i in items if isinstance(i, Event)], [i for i in items if isinstance(i, BadLine)]


def _real(real_corpus: Path, name: str) -> tuple[list[Event], list[BadLine]]:
    return _parse_cached(real_corpus / "claude-code" / name)


# ---------------------------------------------------------------- the real corpus


def test_the_table_covers_every_real_claude_file(real_corpus: Path) -> None:
    on_disk = {
        p.relative_to(real_corpus / "claude-code").as_posix()
        for p in real_corpus.glob("claude-code/**/*.jsonl")
    }
    assert on_disk == set(REAL_FILES)


@pytest.mark.parametrize("name", REAL_FILES)
def test_real_file_counts(real_corpus: Path, name: str) -> None:
    expected = REAL_FILES[name]
    events, bad = _real(real_corpus, name)
    calls = {e.tool_call_id for e in events if e.kind == "tool_call"}
    results = [e for e in events if e.kind == "tool_result"]
    assert bad == []
    assert {e.session_id for e in events} == {expected.session_id}  # one session per file
    assert len({e.session_start for e in events}) == 1
    assert len(calls) == sum(e.kind == "tool_call" for e in events) == expected.tool_calls
    assert len(results) == expected.tool_results
    assert sum(r.tool_call_id in calls for r in results) == expected.linked
    assert sum(r.is_error is True for r in results) == expected.errors
    assert sum(e.interrupted for e in events if e.role == "user") == expected.interrupted
    assert all(e.is_sidechain is (expected.agent_id is not None) for e in events)
    assert {e.agent_id for e in events} == {expected.agent_id}
    assert [e.seq for e in events] == list(range(len(events)))


@pytest.mark.parametrize(("subagent", "parent"), SUBAGENT_PARENTS.items())
def test_subagent_belongs_to_its_parent_session(real_corpus: Path, subagent: str, parent: str) -> None:
    sub_events, _ = _real(real_corpus, subagent)
    parent_events, _ = _real(real_corpus, parent)
    assert sub_events[0].session_id == parent_events[0].session_id
    assert sub_events[0].session_start == parent_events[0].session_start
    assert (
        claude_code.earliest_start(real_corpus / "claude-code" / subagent) == parent_events[0].session_start
    )


@pytest.mark.parametrize(("name", "first_timestamp"), MAIN_STARTS.items())
def test_main_file_starts_at_its_first_timestamp(real_corpus: Path, name: str, first_timestamp: str) -> None:
    events, _ = _real(real_corpus, name)
    assert events[0].session_start == parse_ts(first_timestamp)
    assert claude_code.earliest_start(real_corpus / "claude-code" / name) == parse_ts(first_timestamp)


def test_warmup_agents_ran_before_their_parents_first_line(real_corpus: Path) -> None:
    """The 2.0.64 "Warmup" agents start 8 s before the parent's first line, yet take its start."""
    events, _ = _real(real_corpus, "codemie-code/-tmp-private/agent-36541525.jsonl")
    assert events[0].ts == parse_ts("2025-12-10T19:37:37.159Z")
    assert events[0].session_start == parse_ts("2025-12-10T19:37:45.343Z")


@pytest.mark.parametrize(
    ("name", "exit_codes"),
    [
        ("spotter/4d5611e5-241a-462a-8d15-5122611a9569.jsonl", [1, 128]),
        ("codemie-code/session-196820da.jsonl", [1, 1]),
        ("spotter/short.jsonl", []),  # both errors are rejected tool uses, not exits
    ],
)
def test_real_exit_codes(real_corpus: Path, name: str, exit_codes: list[int]) -> None:
    events, _ = _real(real_corpus, name)
    assert [e.exit_code for e in events if e.exit_code is not None] == exit_codes


def test_real_interruption_and_rejection(real_corpus: Path) -> None:
    events, _ = _real(real_corpus, "codemie-code/session-9eda1058.jsonl")
    interrupted = [e for e in events if e.interrupted]
    assert [(e.line_no, e.role, e.kind, e.text) for e in interrupted] == [
        (22, "user", "message", "[Request interrupted by user for tool use]")
    ]
    rejected = [e for e in events if e.is_error]
    assert [(e.line_no, (e.text or "").startswith("The user doesn't want to proceed")) for e in rejected] == [
        (21, True)
    ]


def test_real_meta_lines(real_corpus: Path) -> None:
    events, _ = _real(real_corpus, "codemie-code/session-624a4a58.jsonl")
    meta = {e.line_no: (e.text or "")[:22] for e in events if e.kind == "meta"}
    # caveat (isMeta), /clear command, its stdout, compact_boundary, compaction summary
    assert meta == {
        2: "Caveat: The messages b",
        3: "<command-name>/clear</",
        4: "<local-command-stdout>",
        158: "Conversation compacted",
        159: "This session is being ",
    }
    assert all(e.role == "system" for e in events if e.kind == "meta")


def test_real_plugin_command_is_the_persons_request(real_corpus: Path) -> None:
    """spotter's subagent.jsonl opens with `/handgemacht:create-beads <the task>`: the only place the
    person's words are (the next line is the command's expansion, isMeta)."""
    events, _ = _real(real_corpus, "spotter/subagent.jsonl")
    first, expansion = events[:2]
    text = first.text or ""
    assert (first.line_no, first.role, first.kind) == (4, "user", "message")
    assert "<command-name>/handgemacht:create-beads</command-name>" in text
    assert "websearch to learn how to fastest setup credo" in text
    assert (expansion.line_no, expansion.role, expansion.kind) == (5, "system", "meta")


def test_real_summary_lines_belong_to_the_file_session(real_corpus: Path) -> None:
    events, _ = _real(real_corpus, "codemie-code/session-9eda1058.jsonl")
    summaries = [e for e in events if e.kind == "meta" and e.ts is None]
    assert [e.line_no for e in summaries] == [3, 4, 5, 6, *range(8, 20)]
    assert all(e.parent_id and e.session_id == "9eda1058-9706-484a-b992-d03f9cfa2546" for e in summaries)


def test_summary_only_file_falls_back_to_the_file_mtime(real_corpus: Path) -> None:
    path = real_corpus / "claude-code/claude-parser/4762e53b-7ca8-4464-9eac-d1816c343c50.jsonl"
    events, _ = _parse_cached(path)
    assert [(e.kind, e.text) for e in events] == [("meta", "Git File Recovery After Accidental Deletion")]
    assert events[0].session_start == file_mtime_us(path) == claude_code.earliest_start(path)


def test_real_fields(real_corpus: Path) -> None:
    events, _ = _real(real_corpus, "codemie-code/-tmp-private/agent-50243ee8.jsonl")
    reply = events[1]
    assert reply.model == "converse/jp.anthropic.claude-haiku-4-5-20251001-v1:0"
    assert (reply.cwd, reply.repo, reply.git_branch) == ("/tmp/private", "private", "analytics-v2")
    assert reply.parent_id == events[0].event_id


def test_every_real_claude_file_sniffs_as_claude(real_corpus: Path) -> None:
    for path in real_corpus.glob("claude-code/**/*.jsonl"):
        assert claude_code.sniff(path, read_head(path)), path


def test_no_other_real_file_sniffs_as_claude(real_corpus: Path) -> None:
    others = [p for p in real_corpus.rglob("*") if p.is_file() and "claude-code" not in p.parts]
    assert len(others) >= 8
    assert [p for p in others if claude_code.sniff(p, read_head(p))] == []


# ---------------------------------------------------------------- synthetic lines

SID = "11111111-2222-3333-4444-555555555555"


_UUIDS = itertools.count()


def _line(
    kind: str = "user", content: Any = None, ts: str | None = "2026-03-01T10:00:00Z", **extra: Any
) -> dict:
    """A line as Claude Code writes it: content goes in `message` for user/assistant, on top for system."""
    obj: dict[str, Any] = {"type": kind, "sessionId": SID, "cwd": "/work/repo", "uuid": f"u{next(_UUIDS)}"}
    if ts is not None:
        obj["timestamp"] = ts
    if kind in ("user", "assistant"):
        obj["message"] = {"role": kind, "content": "hi" if content is None else content}
    elif content is not None:
        obj["content"] = content
    return obj | extra


def _summary(text: Any) -> dict:
    return {"type": "summary", "summary": text, "leafUuid": "leaf-1"}


def _write(path: Path, *lines: dict | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = [line if isinstance(line, bytes) else json.dumps(line).encode() for line in lines]
    path.write_bytes(b"\n".join(raw) + b"\n")
    return path


def _events(tmp_path: Path, *lines: dict | bytes) -> list[Event | BadLine]:
    return list(claude_code.parse(_write(tmp_path / f"{SID}.jsonl", *lines)))


def _only(items: list[Event | BadLine]) -> Event:
    assert len(items) == 1 and isinstance(items[0], Event), items
    return items[0]


def _only_events(items: list[Event | BadLine]) -> list[Event]:
    events = [i for i in items if isinstance(i, Event)]
    assert events == items, items
    return events


IMAGE = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0"}}
IDE_NOTE = (
    "<ide_opened_file>The user opened the file /work/repo/a.py in the IDE. "
    "This may or may not be related to the current task.</ide_opened_file>"
)
IDE_SELECTION = (
    "<ide_selection>The user selected the lines 1 to 2 from /work/repo/a.py:\nx = 1\n\n"
    "This may or may not be related to the current task.</ide_selection>"
)
# Slash commands as Claude Code 2.x writes them: a prompt command opens with <command-message>, a
# local one with <command-name>, and a skill the model invoked is named without the slash.
PLUGIN_COMMAND = (
    "<command-message>handgemacht:create-beads</command-message>\n"
    "<command-name>/handgemacht:create-beads</command-name>\n"
    "<command-args>set up credo and dialyzer</command-args>"
)
INIT_COMMAND = (
    "<command-message>init is analyzing your codebase…</command-message>\n<command-name>/init</command-name>"
)
MODEL_COMMAND = (
    "<command-name>/model</command-name>\n            <command-message>model</command-message>\n"
    "            <command-args>opus</command-args>"
)
SKILL_LOADING = (
    '<command-message>The "pdf" skill is loading</command-message>\n<command-name>pdf</command-name>'
)


def _queued(prompt: Any, **extra: Any) -> dict:
    """A queued_command attachment: a prompt typed while the agent was busy."""
    return {"type": "queued_command", "prompt": prompt, "commandMode": "prompt"} | extra


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (_line(content=[IMAGE]), ("user", "message", "[image]")),
        (
            _line(
                content=[
                    {
                        "type": "tool_result",
                        "tool_use_id": "t1",
                        "content": [{"type": "text", "text": "a"}, IMAGE],
                    }
                ]
            ),
            ("tool", "tool_result", "a\n[image]"),
        ),
        (
            _line("assistant", [{"type": "thinking", "thinking": "hmm", "signature": "x"}]),
            ("assistant", "reasoning", "hmm"),
        ),
        (
            _line("assistant", [{"type": "redacted_thinking", "data": "x"}]),
            ("assistant", "reasoning", "[redacted thinking]"),
        ),
        (_line("assistant", "plain string reply"), ("assistant", "message", "plain string reply")),
        (
            _line("assistant", [{"type": "text", "text": "API Error: 500"}], isApiErrorMessage=True),
            ("assistant", "error", "API Error: 500"),
        ),
        (_line(content="do it", isMeta=True), ("system", "meta", "do it")),
        (
            _line(content="<command-name>/clear</command-name>"),
            ("system", "meta", "<command-name>/clear</command-name>"),
        ),
        (_line(content="summary so far", isCompactSummary=True), ("system", "meta", "summary so far")),
        (
            _line("system", content="Running \x1b[1mPostToolUse:Bash\x1b[22m...", level="info"),
            ("system", "meta", "Running PostToolUse:Bash..."),
        ),
        (_line("system", subtype="turn_duration", durationMs=5), ("system", "meta", "[turn_duration]")),
        (_line("system", subtype="api_error", level="error"), ("system", "error", "[api_error]")),
        (_summary("Fixing tests"), ("system", "meta", "Fixing tests")),
        (
            _line("attachment", attachment={"type": "queued_command", "prompt": "also push"}),
            ("user", "message", "also push"),
        ),
        (
            _line("attachment", attachment={"type": "hook_additional_context", "content": ["a", "b"]}),
            ("system", "meta", "a\nb"),
        ),
        # The IDE extensions' note of the open file, alone in its block: context, not a request.
        (_line(content=[{"type": "text", "text": IDE_NOTE}]), ("system", "meta", IDE_NOTE)),
        (_line(content=f"{IDE_NOTE}\nfix the bug"), ("user", "message", f"{IDE_NOTE}\nfix the bug")),
        (_line(content=[{"type": "text", "text": IDE_SELECTION}]), ("user", "message", IDE_SELECTION)),
        # A typed slash command that sends a prompt is the person's request; a local one is not.
        (_line(content=PLUGIN_COMMAND), ("user", "message", PLUGIN_COMMAND)),
        (_line(content=INIT_COMMAND), ("user", "message", INIT_COMMAND)),
        (_line(content=MODEL_COMMAND), ("system", "meta", MODEL_COMMAND)),
        (_line(content=SKILL_LOADING), ("system", "meta", SKILL_LOADING)),  # the model invoked it
        (_line(content=PLUGIN_COMMAND, isMeta=True), ("system", "meta", PLUGIN_COMMAND)),
        (
            _line("attachment", attachment=_queued([{"type": "text", "text": "also push"}])),
            ("user", "message", "also push"),
        ),
        (
            _line("attachment", attachment=_queued("also push", origin={"kind": "human"})),
            ("user", "message", "also push"),
        ),
        (
            _line("attachment", attachment=_queued("run the linter", origin={"kind": "peer"})),
            ("system", "meta", "run the linter"),
        ),
    ],
)
def test_line_becomes(tmp_path: Path, line: dict, expected: tuple[str, str, str]) -> None:
    got = _only(_events(tmp_path, line))
    assert (got.role, got.kind, got.text) == expected


@pytest.mark.parametrize(
    "content",
    [
        "[Request interrupted by user]",
        "[Request interrupted by user for tool use]",
        [{"type": "text", "text": "[Request interrupted by user for tool use]"}],
    ],
)
def test_interruption(tmp_path: Path, content: Any) -> None:
    got = _only(_events(tmp_path, _line(content=content)))
    assert (got.role, got.kind, got.interrupted) == ("user", "message", True)


def test_tool_call_fields(tmp_path: Path) -> None:
    block = {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls", "b": [1, 2]}}
    got = _only(_events(tmp_path, _line("assistant", [block], isSidechain=True, agentId="abc")))
    assert (got.kind, got.tool_name, got.tool_call_id) == ("tool_call", "Bash", "toolu_1")
    assert got.tool_input == '{"b":[1,2],"command":"ls"}'
    assert (got.is_sidechain, got.agent_id, got.repo) == (True, "abc", "repo")


def _result(content: Any, is_error: bool | None = None, tool_use_result: Any = None) -> dict:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": "toolu_1", "content": content}
    if is_error is not None:
        block["is_error"] = is_error
    extra = {} if tool_use_result is None else {"toolUseResult": tool_use_result}
    return _line(content=[block], **extra)


@pytest.mark.parametrize(
    ("line", "is_error", "exit_code"),
    [
        (_result("Exit code 2\nboom", is_error=True), True, 2),
        (
            _result([{"type": "text", "text": "no such file"}], tool_use_result="Error: Exit code 127\nnope"),
            True,
            127,
        ),
        (
            _result(
                "<tool_use_error>File does not exist.</tool_use_error>", True, "Error: File does not exist."
            ),
            True,
            None,
        ),
        (_result("Exit code 2 is mentioned in fine output", is_error=False), False, None),
        (_result("ok", tool_use_result={"stdout": "ok", "stderr": "", "interrupted": False}), False, None),
    ],
)
def test_tool_result_errors_and_exit_codes(
    tmp_path: Path, line: dict, is_error: bool, exit_code: int | None
) -> None:
    got = _only(_events(tmp_path, line))
    assert (got.role, got.kind, got.tool_call_id) == ("tool", "tool_result", "toolu_1")
    assert (got.is_error, got.exit_code) == (is_error, exit_code)


def test_one_line_may_hold_several_events(tmp_path: Path) -> None:
    blocks = [
        {"type": "text", "text": "Let me look."},
        {"type": "tool_use", "id": "a", "name": "Read", "input": {}},
    ]
    items = _only_events(_events(tmp_path, _line(content="go"), _line("assistant", blocks)))
    assert [(e.line_no, e.seq, e.kind) for e in items] == [
        (1, 0, "message"),
        (2, 1, "message"),
        (2, 2, "tool_call"),
    ]


def test_ide_note_before_the_prompt_is_not_the_request(tmp_path: Path) -> None:
    """The VS Code and JetBrains extensions write the note as a block of its own before the prompt."""
    blocks = [{"type": "text", "text": IDE_NOTE}, {"type": "text", "text": "fix it"}]
    items = _only_events(_events(tmp_path, _line(content=blocks)))
    assert [(e.role, e.kind, e.text) for e in items] == [
        ("system", "meta", IDE_NOTE),
        ("user", "message", "fix it"),
    ]


def test_queued_prompt_in_blocks_gives_the_persons_text(tmp_path: Path) -> None:
    """2.1.x writes a prompt typed mid-turn as content blocks, always so when it holds an image."""
    prompt = [{"type": "text", "text": "[Image #2] why is this offline?"}, IMAGE]
    line = _line("attachment", attachment=_queued(prompt, origin={"kind": "human"}))
    items = _only_events(_events(tmp_path, line))
    assert [(e.role, e.kind, e.text) for e in items] == [
        ("user", "message", "[Image #2] why is this offline?"),
        ("user", "message", "[image]"),
    ]


@pytest.mark.parametrize(
    "line",
    [
        _line(message="a string, not an object"),
        _line(content=42),
        _line(content=["a bare string block"]),
        _line("assistant", [{"type": "tool_use", "id": 7, "name": "Bash", "input": {}}]),
        _line("assistant", [{"type": "tool_use", "id": "t", "name": "Bash", "input": "ls"}]),
        _line(content=[{"type": "tool_result", "tool_use_id": "t", "content": 3}]),
        _line(content="hi", cwd=["not", "a", "path"]),
        _line("system", content={"not": "text"}),
        _summary(5),
        _line("attachment", attachment="nope"),
        _line("attachment", attachment=_queued([{"type": "text", "text": 5}])),
    ],
)
def test_wrong_field_type_is_quarantined(tmp_path: Path, line: dict) -> None:
    items = _events(tmp_path, _line(content="before"), line, _line(content="after"))
    bad = [i for i in items if isinstance(i, BadLine)]
    assert [(b.line_no, b.reason, b.session_id) for b in bad] == [(2, WRONG_FIELD_TYPE, SID)]
    assert [i.text for i in items if isinstance(i, Event)] == ["before", "after"]


def test_unknown_type_is_quarantined_and_neighbours_load(tmp_path: Path) -> None:
    items = _events(
        tmp_path, _line(content="one"), _line("mystery-record"), {"no": "type"}, _line(content="two")
    )
    bad = [(i.line_no, i.reason, i.session_id, i.session_start) for i in items if isinstance(i, BadLine)]
    start = parse_ts("2026-03-01T10:00:00Z")
    assert bad == [(2, UNKNOWN_RECORD_TYPE, SID, start), (3, UNKNOWN_RECORD_TYPE, SID, start)]
    assert [i.text for i in items if isinstance(i, Event)] == ["one", "two"]


def test_unreadable_line_passes_through_with_its_session(tmp_path: Path) -> None:
    items = _events(tmp_path, _line(content="one"), b'{"type": "user", "broken', _line(content="two"))
    bad = items[1]
    assert isinstance(bad, BadLine)
    assert (bad.reason, bad.session_id, bad.session_start) == (
        MALFORMED_JSON,
        SID,
        parse_ts("2026-03-01T10:00:00Z"),
    )


@pytest.mark.parametrize("kind", sorted(claude_code.BOOKKEEPING_TYPES))
def test_bookkeeping_lines_make_no_events_and_no_quarantine(tmp_path: Path, kind: str) -> None:
    assert _events(tmp_path, _line(kind, data={"type": "hook_progress"}, operation="enqueue")) == []


@pytest.mark.parametrize(
    "line",
    [
        {"type": "agent-color", "agentColor": "purple", "sessionId": SID},
        {"type": "agent-setting", "agentSetting": "builder", "sessionId": SID},
        {"type": "attribution-snapshot", "messageId": "u1", "surface": "cli", "fileStates": {}},
        {"type": "worktree-state", "sessionId": SID, "worktreeSession": {"worktreePath": "/tmp/wt"}},
        {"type": "speculation-accept", "timestamp": "2026-03-01T10:00:05Z", "timeSavedMs": 1200},
        {"type": "content-replacement", "sessionId": SID, "replacements": [{"toolUseId": "t1"}]},
        {"type": "marble-origami-commit", "sessionId": SID, "collapseId": "1", "summary": "x"},
        {"type": "marble-origami-snapshot", "sessionId": SID, "staged": [], "armed": False},
        {"type": "task-summary", "sessionId": SID, "summary": "doing x", "timestamp": "2026-03-01T10:00:03Z"},
        {"type": "cost-state", "sessionId": SID, "totalCostUSD": 0.19, "totalDuration": 922_536},
    ],
)
def test_claude_2x_metadata_entries_are_bookkeeping(tmp_path: Path, line: dict) -> None:
    """Titles, UI, cost and resume state written beside the conversation are no bad input."""
    items = _events(tmp_path, _line(content="one"), line, _line(content="two"))
    assert [i for i in items if isinstance(i, BadLine)] == []
    assert [i.text for i in items if isinstance(i, Event)] == ["one", "two"]


def test_a_line_written_again_is_read_once(tmp_path: Path) -> None:
    """Reopening VS Code re-appends a session's lines, the same but for context fields (#56196)."""
    first = _line(content="fix the bug", uuid="u1", ts="2026-04-23T07:25:00Z", parentUuid=None)
    reply = _line("assistant", "done", uuid="a1", ts="2026-04-23T07:25:36.857Z", parentUuid="u1")
    read = _events(
        tmp_path,
        first,
        reply,
        _line(content="now add tests", uuid="u2", ts="2026-04-23T08:00:00Z"),
        first | {"cwd": "/work"},
        reply | {"cwd": "/work"},
        _line(content="thanks", uuid="u3", ts="2026-04-23T09:00:00Z"),
    )
    assert [(i.line_no, i.seq, i.text, i.cwd) for i in read if isinstance(i, Event)] == [
        (1, 0, "fix the bug", "/work/repo"),
        (2, 1, "done", "/work/repo"),
        (3, 2, "now add tests", "/work/repo"),
        (6, 3, "thanks", "/work/repo"),
    ]
    # counted (a repair: ingestion writes no row for it), never silently gone
    assert [(i.line_no, i.reason) for i in read if isinstance(i, BadLine)] == [
        (4, REPEATED_LINE),
        (5, REPEATED_LINE),
    ]
    assert REPEATED_LINE in REPAIR_REASONS


def test_a_repeated_line_with_an_implausible_time_is_reported_once(tmp_path: Path) -> None:
    line = _line(content="hi", uuid="u1", ts="1970-01-01T00:00:00Z")
    items = _events(tmp_path, _line(content="start"), line, line)
    assert [(i.line_no, i.reason if isinstance(i, BadLine) else i.text) for i in items] == [
        (1, "start"),
        (2, IMPLAUSIBLE_TIMESTAMP),
        (2, "hi"),
        (3, REPEATED_LINE),
    ]


@pytest.mark.parametrize(
    "again",
    [
        {"timestamp": "2026-03-01T10:00:05Z"},  # 2.1.27 wrote saved_hook_context entries under one uuid
        {"message": {"role": "user", "content": "another text"}},
        {"sessionId": "99999999-2222-3333-4444-555555555555"},
    ],
)
def test_lines_sharing_a_uuid_but_not_their_content_are_all_read(tmp_path: Path, again: dict) -> None:
    line = _line(content="hi", uuid="u1")
    items = _events(tmp_path, line, line | again)
    assert len(items) == 2 and all(isinstance(i, Event) for i in items)


def test_events_before_the_first_timestamp_carry_the_start(tmp_path: Path) -> None:
    items = _events(
        tmp_path,
        _summary("Earlier work"),
        _line(content="no clock yet", ts=None),
        _line(content="now", ts="2026-03-01T23:59:59Z"),
        _line(content="after midnight", ts="2026-03-02T00:00:01Z"),
    )
    assert {i.session_start for i in items} == {parse_ts("2026-03-01T23:59:59Z")}


def test_a_file_holding_two_sessions_keeps_them_apart(tmp_path: Path) -> None:
    other = "99999999-2222-3333-4444-555555555555"
    items = _events(
        tmp_path,
        _line(content="first", ts="2026-03-01T10:00:00Z"),
        _line(content="second", ts="2026-03-05T10:00:00Z", sessionId=other),
        _summary("title"),
    )
    assert [(i.session_id, i.session_start) for i in items] == [
        (SID, parse_ts("2026-03-01T10:00:00Z")),
        (other, parse_ts("2026-03-05T10:00:00Z")),
        (other, parse_ts("2026-03-05T10:00:00Z")),
    ]


@pytest.mark.parametrize(
    ("subagent", "parent"),
    [
        (f"{SID}/subagents/agent-a1b2c3d.jsonl", f"{SID}.jsonl"),  # 2.1 layout
        ("agent-1a2b3c4d.jsonl", f"{SID}.jsonl"),  # 2.0 layout, beside the session
        (f"{SID}/subagents/agent-a1b2c3d.jsonl", None),  # parent not on disk: own first timestamp
    ],
)
def test_subagent_takes_the_parent_start(tmp_path: Path, subagent: str, parent: str | None) -> None:
    if parent is not None:
        _write(tmp_path / parent, _line(content="parent", ts="2026-03-01T09:00:00Z"))
    sub = _write(
        tmp_path / subagent,
        _line(content="task", ts="2026-03-01T09:30:00Z", isSidechain=True, agentId="a1b2c3d"),
    )
    expected = parse_ts("2026-03-01T09:00:00Z" if parent else "2026-03-01T09:30:00Z")
    got = _only(list(claude_code.parse(sub)))
    assert (got.session_id, got.session_start, got.is_sidechain) == (SID, expected, True)
    assert claude_code.earliest_start(sub) == expected


@pytest.mark.parametrize(
    ("head", "expected"),
    [
        (json.dumps(_line(parentUuid=None, isSidechain=False)).encode() + b"\n", True),
        (b'{"type":"summary","summary":"Fix","leafUuid":"x"}\n', True),
        (b'{"type":"file-history-snapshot","messageId":"m","snapshot":{}}\n', True),
        (b'{"type":"queue-operation","operation":"dequeue","sessionId":"s","timestamp":"t"}\n', True),
        (
            b'{"parentUuid":null,"isSidechain":false,"sessionId":"s","message":{"content":"' + b"x" * 70_000,
            True,
        ),
        (b'{"timestamp":"t","type":"session_meta","payload":{"id":"x","cwd":"/r"}}\n', False),
        (b'{"timestamp":"t","type":"response_item","payload":{"type":"message"}}\n', False),
        (b'{"messages":[{"role":"user","content":"hi"}]}\n', False),
        (b'{"type":"message","role":"user","content":"hi"}\n{"type":"tool_call","name":"bash"}\n', False),
        (b'{"type":"user","role":"user","content":"hi","timestamp":"t"}\n', False),
        (b"", False),
    ],
)
def test_sniff(tmp_path: Path, head: bytes, expected: bool) -> None:
    assert claude_code.sniff(tmp_path / "f.jsonl", head[:65_536]) is expected
