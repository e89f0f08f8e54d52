"""Why this exists: the Codex parser is the only source with two live shapes (codex 0.77
`shell` calls with JSON-wrapped outputs, 0.125 exec_command/write_stdin whose exit codes
arrive later in exec_command_end). These tests pin concrete facts of the four real rollouts
(counted independently with a plain json script), so a change that loses calls, results,
exit codes or links shows up as a wrong number, plus synthetic files for damaged input, for
the legacy rollout shape (a bare session header, then bare response items) of mid-2025, and
for newer shapes the real rollouts lack: polls that carry a command's only exit code, forks
that copy their parent's rollout, sub-agent rollouts, /review findings and hook prompts
injected as user text, MCP failures, and response items such as tool_search_call.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import orjson
import pytest

from trajectory_pipeline.ingest.parsers import chat_jsonl, codex, own_agent
from trajectory_pipeline.ingest.parsers.lines import read_head
from trajectory_pipeline.schema import (
    MALFORMED_JSON,
    UNKNOWN_RECORD_TYPE,
    WRONG_FIELD_TYPE,
    BadLine,
    Event,
    parse_ts,
)

OLD = "codex/codemie-code/rollout-2026-01-02T18-39-45-019b7f94-51b4-7593-922e-ba12b5b73b52.jsonl"
NEW = "codex/codemie-code/rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl"
LONG = "codex/localpush/rollout-2026-02-23T12-40-23-019c8a4c-ed82-79a1-aa28-7738fc5ab61a.jsonl"
DANGLING = "codex/localpush/rollout-2026-02-23T13-19-38-019c8a70-dda7-7f33-98ea-f30553347322.jsonl"


class Facts(NamedTuple):
    session_id: str
    cwd: str
    repo: str
    git_branch: str
    model: str
    calls_by_tool: dict[str, int]
    results: int
    exit_codes: int
    nonzero_exits: int
    reasoning: int
    user_messages: int


FACTS = {
    OLD: Facts(
        "019b7f94-51b4-7593-922e-ba12b5b73b52",
        "/Users/Nikita_Levyankov/repos/EPMCDME/codemie-ai/codemie-code",
        "codemie-code",
        "codex",
        "gpt-5-1-codex-2025-11-13",
        {"shell": 3},
        results=3,
        exit_codes=3,
        nonzero_exits=0,
        reasoning=3,
        user_messages=1,
    ),
    NEW: Facts(
        "019e1625-789d-76c0-80ab-3724b5ddb799",
        "/Users/Sample_User/repos/codemie-ai/codemie-code",
        "codemie-code",
        "feat/codex-agent-plugin",
        "gpt-5.5",
        # 99 function_call + 3 custom apply_patch + 3 web_search_call
        {"exec_command": 43, "write_stdin": 54, "update_plan": 2, "apply_patch": 3, "web_search": 3},
        results=102,
        exit_codes=46,  # 43 from exec_command_end, 3 from apply_patch output metadata
        nonzero_exits=4,
        reasoning=25,
        user_messages=2,
    ),
    LONG: Facts(
        "019c8a4c-ed82-79a1-aa28-7738fc5ab61a",
        "/redacted/path/fa3f7eaace",
        "5d14a88c6f",
        "main",
        "gpt-5.3-codex",
        {"exec_command": 71, "write_stdin": 9, "update_plan": 2, "apply_patch": 22, "web_search": 1},
        results=104,
        exit_codes=0,  # sanitized: outputs redacted and no exec_command_end lines
        nonzero_exits=0,
        reasoning=69,
        user_messages=10,  # redacted text, so injected AGENTS.md context cannot be told apart
    ),
    DANGLING: Facts(
        "019c8a70-dda7-7f33-98ea-f30553347322",
        "/redacted/path/da0ba47443",
        "d18f1190d0",
        "main",
        "gpt-5.3-codex",
        {"exec_command": 1},
        results=0,
        exit_codes=0,
        nonzero_exits=0,
        reasoning=1,
        user_messages=4,
    ),
}


@pytest.fixture(scope="module")
def rollouts(real_corpus: Path) -> dict[str, list[Event | BadLine]]:
    return {name: list(codex.parse(real_corpus / name)) for name in FACTS}


def events_of(items: list[Event | BadLine]) -> list[Event]:
    return [item for item in items if isinstance(item, Event)]


def count(events: list[Event], **fields: Any) -> int:
    return sum(all(getattr(e, key) == value for key, value in fields.items()) for e in events)


def loads(value: str | None) -> Any:
    """An event's JSON field (`tool_input`), which the test expects to be there."""
    assert value is not None
    return orjson.loads(value)


@pytest.mark.parametrize("name", FACTS)
def test_real_rollout_facts(rollouts: dict[str, list[Event | BadLine]], name: str) -> None:
    facts = FACTS[name]
    items = rollouts[name]
    events = events_of(items)
    assert len(events) == len(items), "no real rollout line should be quarantined"
    assert {e.session_id for e in events} == {facts.session_id}
    assert {(e.cwd, e.repo, e.git_branch) for e in events} == {(facts.cwd, facts.repo, facts.git_branch)}
    assert {e.model for e in events} == {facts.model}
    calls = [e for e in events if e.kind == "tool_call"]
    assert {tool: count(calls, tool_name=tool) for tool in facts.calls_by_tool} == facts.calls_by_tool
    assert len(calls) == sum(facts.calls_by_tool.values())
    results = [e for e in events if e.kind == "tool_result"]
    assert len(results) == facts.results
    assert sum(e.exit_code is not None for e in results) == facts.exit_codes
    assert sum(e.exit_code not in (None, 0) for e in results) == facts.nonzero_exits
    assert count(events, kind="reasoning", role="assistant") == facts.reasoning
    assert count(events, kind="message", role="user") == facts.user_messages


@pytest.mark.parametrize("name", FACTS)
def test_order_and_session_start(
    rollouts: dict[str, list[Event | BadLine]], real_corpus: Path, name: str
) -> None:
    events = events_of(rollouts[name])
    assert [e.seq for e in events] == list(range(len(events)))
    assert [e.line_no for e in events] == sorted(e.line_no for e in events)
    start = codex.earliest_start(real_corpus / name)
    assert {e.session_start for e in events} == {start}
    assert start == min(e.ts for e in events if e.ts is not None)
    first = orjson.loads((real_corpus / name).read_bytes().split(b"\n", 1)[0])
    assert start == parse_ts(first["payload"]["timestamp"]), "a session starts when codex created it"


@pytest.mark.parametrize("name", FACTS)
def test_every_result_follows_its_call(rollouts: dict[str, list[Event | BadLine]], name: str) -> None:
    calls: dict[str, Event] = {}
    for e in events_of(rollouts[name]):
        if e.kind == "tool_call" and e.tool_call_id is not None:
            calls[e.tool_call_id] = e
        elif e.kind == "tool_result":
            call = calls[e.tool_call_id or ""]
            assert (call.tool_name, call.seq < e.seq) == (e.tool_name, True)


def test_failed_commands_carry_exit_codes_from_exec_command_end(
    rollouts: dict[str, list[Event | BadLine]],
) -> None:
    results = [e for e in events_of(rollouts[NEW]) if e.kind == "tool_result"]
    failed = {e.tool_call_id: (e.tool_name, e.exit_code) for e in results if e.is_error}
    assert failed == {
        "call_NqXBF7JK4NH5M85YXgojxxmC": ("exec_command", 2),
        "call_wAmN401U7zKVZ9wF0d5rGwMP": ("exec_command", 1),
        "call_Rl3vKwoQD6TG9Xyz55hzx2jV": ("exec_command", 1),
        "call_nTBN3WDXOZcJOBB6UsOQHpni": ("exec_command", 1),  # npm test ... : a failed verification
    }
    by_tool = {tool: [e for e in results if e.tool_name == tool] for tool in ("exec_command", "write_stdin")}
    assert all(e.exit_code is not None for e in by_tool["exec_command"])
    # The polls report the same exits; counting them too would double every failure.
    assert all(e.exit_code is None and e.is_error is None for e in by_tool["write_stdin"])
    patches = [e for e in results if e.tool_name == "apply_patch"]
    assert [(e.exit_code, e.is_error) for e in patches] == [(0, False)] * 3


def test_old_shell_shape(rollouts: dict[str, list[Event | BadLine]]) -> None:
    events = events_of(rollouts[OLD])
    call = next(e for e in events if e.kind == "tool_call")
    assert loads(call.tool_input)["command"] == ["bash", "-lc", "ls"]
    result = next(e for e in events if e.kind == "tool_result")
    assert (result.text or "").startswith("_bmad\n_bmad-output\n"), "the JSON wrapper is unwrapped"
    assert (result.exit_code, result.is_error) == (0, False)
    meta = [(e.text or "").split("\n", 1)[0] for e in events if e.kind == "meta"]
    assert meta[0] == "## Skills", "session_meta instructions"
    assert [text.split(" ")[0] for text in meta[1:]] == ["#", "<environment_context>"]


def test_injected_context_is_not_a_user_instruction(rollouts: dict[str, list[Event | BadLine]]) -> None:
    events = events_of(rollouts[NEW])
    prompts = [e.text for e in events if e.kind == "message" and e.role == "user"]
    assert prompts == ["show tools", "let's update the defailt context compart to 90 in env var"]
    meta = [(e.text or "").split("\n", 1)[0] for e in events if e.kind == "meta"]
    assert meta[0].startswith("You are Codex")  # base_instructions from session_meta
    assert meta[1:] == [
        "<permissions instructions>",
        "# AGENTS.md instructions for /Users/Sample_User/repos/codemie-ai/codemie-code",
    ]
    assert count(events, kind="message", role="assistant") == 13, "agent_message duplicates are not counted"


def test_reasoning_text(rollouts: dict[str, list[Event | BadLine]]) -> None:
    texts = [e.text for e in events_of(rollouts[OLD]) if e.kind == "reasoning"]
    assert texts[:2] == [codex.ENCRYPTED_REASONING] * 2
    assert (texts[2] or "").startswith("**Clarifying documentation instructions**")
    new = {e.text for e in events_of(rollouts[NEW]) if e.kind == "reasoning"}
    assert new == {codex.ENCRYPTED_REASONING}


def test_dangling_call_has_no_result(rollouts: dict[str, list[Event | BadLine]]) -> None:
    events = events_of(rollouts[DANGLING])
    assert [(e.kind, e.tool_call_id) for e in events if e.tool_call_id] == [
        ("tool_call", "call_UtYwHmwWekzvq83m8Rb9K8jJ")
    ]
    assert loads(events[-1].tool_input) == {"raw": "[REDACTED_ARGUMENTS len=456 sha=df6be51a]"}


def test_sniff_real_files(real_corpus: Path) -> None:
    codex_files = sorted((real_corpus / "codex").rglob("*.jsonl"))
    claude_files = sorted((real_corpus / "claude-code").rglob("*.jsonl"))
    assert len(codex_files) == 4 and len(claude_files) == 16
    for path in codex_files:
        head = read_head(path)
        assert codex.sniff(path, head), path
        assert not own_agent.sniff(path, head) and not chat_jsonl.sniff(path, head), path
    for path in claude_files:
        assert not codex.sniff(path, read_head(path)), path


# --- synthetic rollouts -----------------------------------------------------------------------

T0 = "2026-03-01T10:00:00.000Z"


def line(kind: str, payload: dict[str, Any], ts: str = T0) -> dict[str, Any]:
    return {"timestamp": ts, "type": kind, "payload": payload}


def write(path: Path, records: Sequence[dict[str, Any] | str]) -> Path:
    text = "".join((r if isinstance(r, str) else orjson.dumps(r).decode()) + "\n" for r in records)
    path.write_text(text)
    return path


META = line("session_meta", {"id": "sess-1", "timestamp": T0, "cwd": "/work/app", "git": {"branch": "dev"}})


def call(call_id: str, name: str = "exec_command", arguments: str = '{"cmd": "pytest"}') -> dict[str, Any]:
    return line(
        "response_item", {"type": "function_call", "name": name, "arguments": arguments, "call_id": call_id}
    )


def output(call_id: str, text: str) -> dict[str, Any]:
    return line("response_item", {"type": "function_call_output", "call_id": call_id, "output": text})


def end(call_id: str, exit_code: int) -> dict[str, Any]:
    return line("event_msg", {"type": "exec_command_end", "call_id": call_id, "exit_code": exit_code})


def test_bad_lines_are_quarantined_and_neighbours_kept(tmp_path: Path) -> None:
    path = write(
        tmp_path / "rollout-x.jsonl",
        [
            META,
            call("c1", arguments="not json {"),
            '{"timestamp": "2026-03-01T10:00:01Z", "type": "response_item", "payload": {',
            line("mystery", {}),
            line("response_item", {"type": "function_call", "name": 7, "call_id": "c2"}),
            line("response_item", {"type": "hologram"}),
            output("c1", "Exit code: 0\nWall time: 0.1 seconds\nOutput:\nok"),
            line("event_msg", {"type": "error", "message": "stream disconnected"}),
            line("event_msg", {"type": "turn_aborted", "reason": "interrupted"}),
        ],
    )
    items = list(codex.parse(path))
    bad = [(b.line_no, b.reason) for b in items if isinstance(b, BadLine)]
    assert bad == [
        (3, MALFORMED_JSON),
        (4, UNKNOWN_RECORD_TYPE),
        (5, WRONG_FIELD_TYPE),
        (6, UNKNOWN_RECORD_TYPE),
    ]
    assert {(b.session_id, b.session_start) for b in items if isinstance(b, BadLine)} == {
        ("sess-1", parse_ts(T0))
    }
    events = events_of(items)
    assert [(e.kind, e.line_no) for e in events] == [
        ("meta", 1),
        ("tool_call", 2),
        ("tool_result", 7),
        ("error", 8),
        ("meta", 9),
    ]
    assert loads(events[1].tool_input) == {"raw": "not json {"}
    assert (events[2].exit_code, events[2].is_error) == (0, False)
    assert (events[2].text or "").endswith("ok")
    assert events[4].interrupted and not events[3].interrupted
    assert {(e.repo, e.git_branch) for e in events} == {("app", "dev")}


@pytest.mark.parametrize(
    ("records", "expected"),
    [
        pytest.param(
            [
                call("c1"),
                output("c1", "Process running with session ID 7\nOutput:\n"),
                call("p", "write_stdin"),
                output("p", "Process exited with code 3\n"),
                end("c1", 3),
            ],
            {"c1": 3, "p": None},
            id="end-after-result",
        ),
        pytest.param(
            [call("c1"), end("c1", 2), output("c1", "no header here")],
            {"c1": 2},
            id="end-before-result",
        ),
        pytest.param(
            [call("c1"), output("c1", "Process running with session ID 7\n"), call("c2")],
            {"c1": None},
            id="end-never-comes",
        ),
        pytest.param(
            # Newer codex persists no exec_command_end: the poll that saw the exit has the code.
            [
                call("c1"),
                output("c1", "Chunk ID: a1\nProcess running with session ID 7\nOutput:\n"),
                call("c2"),
                output("c2", "Process running with session ID 8\n"),
                call("p1", "write_stdin", '{"session_id": 7, "chars": ""}'),
                output("p1", "Process running with session ID 7\nOutput:\n..."),
                call("p2", "write_stdin", '{"session_id": 8, "chars": ""}'),
                output("p2", "Process exited with code 0\n"),
                call("p3", "write_stdin", '{"session_id": 7, "chars": ""}'),
                output(
                    "p3", "Chunk ID: a3\nWall time: 9 seconds\nProcess exited with code 2\nOutput:\nFAILED"
                ),
            ],
            {"c1": 2, "c2": 0, "p1": None, "p2": None, "p3": None},
            id="poll-sees-the-exit",
        ),
    ],
)
def test_exit_codes_reach_the_launching_call(
    tmp_path: Path, records: list[dict[str, Any]], expected: dict[str, int | None]
) -> None:
    items = list(codex.parse(write(tmp_path / "rollout-x.jsonl", [META, *records])))
    events = events_of(items)
    assert len(events) == len(items)
    assert [e.seq for e in events] == list(range(len(events))), "held results keep file order"
    results = {e.tool_call_id: e.exit_code for e in events if e.kind == "tool_result"}
    assert results == expected


def test_hold_is_bounded(tmp_path: Path) -> None:
    filler = [line("response_item", {"type": "message", "role": "assistant", "content": "…"})] * 300
    records = [META, call("c1"), output("c1", "Process running with session ID 7\n"), *filler, end("c1", 1)]
    events = events_of(list(codex.parse(write(tmp_path / "rollout-x.jsonl", records))))
    assert len(events) == 303
    assert next(e for e in events if e.kind == "tool_result").exit_code is None, (
        "released unsettled at the cap"
    )


def test_session_from_file_name_when_meta_is_missing(tmp_path: Path) -> None:
    uuid = "019c0000-aaaa-7bbb-8ccc-123456789abc"
    path = write(tmp_path / f"rollout-2026-03-01T11-00-00-{uuid}.jsonl", [call("c1")])
    (event,) = codex.parse(path)
    assert (event.session_id, event.session_start) == (uuid, parse_ts(T0))


def test_sniff_a_session_meta_longer_than_the_head(tmp_path: Path) -> None:
    meta = line("session_meta", {"id": "s", "instructions": "x" * 100_000})
    path = write(tmp_path / "rollout-x.jsonl", [meta])
    head = read_head(path)
    assert len(head) < path.stat().st_size
    assert codex.sniff(path, head)


# --- newer shapes: forks, sub-agents, injected prompts, MCP errors, new response items ----------

CHILD = "019e5c03-1e99-7000-8000-000000000001"  # UUIDv7s: the fork is newer than its parent's turn
PARENT = "019e5b00-0000-7000-8000-000000000001"
PARENT_TURN = "019e5b00-0001-7000-8000-000000000001"
CHILD_TURN = "019e5c03-2000-7000-8000-000000000001"


def message(role: str, text: str) -> dict[str, Any]:
    kind = "output_text" if role == "assistant" else "input_text"
    return line("response_item", {"type": "message", "role": role, "content": [{"type": kind, "text": text}]})


def turn(turn_id: str) -> list[dict[str, Any]]:
    return [
        line("event_msg", {"type": "task_started", "turn_id": turn_id}),
        line("turn_context", {"turn_id": turn_id, "cwd": "/repo", "model": "gpt-5.5"}),
    ]


def fork_rollout(tmp_path: Path, child: str, parent_turn: str, **meta: Any) -> Path:
    """A fork's rollout as codex writes it: its own session_meta, then a copy of its parent's
    rollout (session_meta, a turn with a prompt and a call), then its own turn."""
    return write(
        tmp_path / f"rollout-2026-03-01T10-00-05-{child}.jsonl",
        [
            line(
                "session_meta",
                {"id": child, "forked_from_id": PARENT, "timestamp": T0, "cwd": "/repo", **meta},
            ),
            line("session_meta", {"id": PARENT, "timestamp": T0, "cwd": "/repo", "source": "cli"}),
            *turn(parent_turn),
            message("user", "fix the bug"),
            call("call_parent", arguments='{"cmd": "ls"}'),
            output("call_parent", "Process exited with code 0\nOutput:\na"),
            *turn(CHILD_TURN),
            message("user", "check tests"),
            call("call_child"),
            output("call_child", "Process exited with code 0\nOutput:\nok"),
            message("assistant", "tests pass"),
        ],
    )


def test_fork_skips_its_copy_of_the_parent(tmp_path: Path) -> None:
    items = list(codex.parse(fork_rollout(tmp_path, CHILD, PARENT_TURN)))
    events = events_of(items)
    assert len(events) == len(items)
    assert [(e.line_no, e.kind) for e in events] == [
        (1, "meta"),  # the fork's own session_meta
        (10, "message"),
        (11, "tool_call"),
        (12, "tool_result"),
        (13, "message"),
    ], "the parent's session_meta and turn (lines 2-7) are the parent's file's events"
    assert {e.session_id for e in events} == {CHILD}
    assert [e.seq for e in events] == list(range(len(events)))


def test_a_fork_copy_no_turn_of_the_fork_ends_is_read_after_all(tmp_path: Path) -> None:
    """A fork whose own turn never opens with a task_started (a writer that does not persist it, a
    first turn cut short): the skipped lines are read at the end of the file, not lost."""
    path = write(
        tmp_path / f"rollout-2026-03-01T10-00-05-{CHILD}.jsonl",
        [
            line("session_meta", {"id": CHILD, "forked_from_id": PARENT, "timestamp": T0, "cwd": "/repo"}),
            line("session_meta", {"id": PARENT, "timestamp": T0, "cwd": "/repo", "source": "cli"}),
            *turn(PARENT_TURN),
            message("user", "fix the bug"),
            message("user", "check tests"),
            message("assistant", "tests pass"),
        ],
    )
    events = events_of(list(codex.parse(path)))
    assert [(e.line_no, e.kind, e.text) for e in events if e.kind == "message"] == [
        (5, "message", "fix the bug"),
        (6, "message", "check tests"),
        (7, "message", "tests pass"),
    ]
    assert [e.seq for e in events] == list(range(len(events)))


@pytest.mark.parametrize(
    ("child", "parent_turn"),
    [
        pytest.param("sess-fork", PARENT_TURN, id="fork-id-not-uuid7"),
        pytest.param(CHILD, "turn-1", id="turn-id-not-uuid7"),
    ],
)
def test_fork_copy_is_kept_when_ids_cannot_be_compared(tmp_path: Path, child: str, parent_turn: str) -> None:
    events = events_of(list(codex.parse(fork_rollout(tmp_path, child, parent_turn))))
    prompts = [e.text for e in events if e.kind == "message" and e.role == "user"]
    assert prompts == ["fix the bug", "check tests"], "better the parent's turn twice than the fork's lost"


@pytest.mark.parametrize(
    ("meta", "sidechain"),
    [
        pytest.param(
            {"source": {"subagent": {"thread_spawn": {"parent_thread_id": PARENT, "depth": 1}}}},
            True,
            id="thread-spawn",
        ),
        pytest.param({"source": {"subagent": "review"}}, True, id="review"),
        pytest.param({"source": "cli", "thread_source": "subagent"}, True, id="thread-source"),
        pytest.param({"source": "cli", "thread_source": "user"}, False, id="main-thread"),
    ],
)
def test_sub_agent_rollouts_are_sidechains(tmp_path: Path, meta: dict[str, Any], sidechain: bool) -> None:
    records = [
        line("session_meta", {"id": CHILD, "timestamp": T0, "cwd": "/repo", **meta}),
        message("user", "check tests"),
        call("c1"),
        output("c1", "Process exited with code 0\n"),
    ]
    events = events_of(list(codex.parse(write(tmp_path / "rollout-x.jsonl", records))))
    assert len(events) == 4
    expected = (True, CHILD) if sidechain else (False, None)
    assert {(e.is_sidechain, e.agent_id) for e in events} == {expected}


def test_review_findings_and_hook_prompts_are_not_user_instructions(tmp_path: Path) -> None:
    review = (
        "<user_action>\n  <context>User initiated a review task.</context>\n  <action>review</action>\n"
        "  <results>\n  [P1] Null deref in foo.py:12\n  </results>\n  </user_action>"
    )
    hook = '<hook_prompt hook_run_id="stop:1">Run the tests before you stop.</hook_prompt>'
    records = [
        META,
        message("user", "add a null check to foo"),
        message("assistant", "done"),
        message("user", review),
        line("event_msg", {"type": "user_message", "message": review}),
        message("assistant", "Review found 1 issue."),
        message("user", hook),
        message("assistant", "Running them."),
        message("user", "fix finding 1"),
    ]
    events = events_of(list(codex.parse(write(tmp_path / "rollout-x.jsonl", records))))
    prompts = [e.text for e in events if e.kind == "message" and e.role == "user"]
    assert prompts == ["add a null check to foo", "fix finding 1"]
    assert [e.text for e in events if e.kind == "meta" and e.role == "system"][1:] == [review, hook]


@pytest.mark.parametrize(
    ("result", "is_error"),
    [
        pytest.param({"Err": "tool call failed: connection refused"}, True, id="err"),
        pytest.param(
            {"Ok": {"content": [{"type": "text", "text": "Not Found"}], "isError": True}}, True, id="is-error"
        ),
        pytest.param({"Ok": {"content": [{"type": "text", "text": "#1"}], "isError": False}}, False, id="ok"),
        pytest.param({"Ok": {"content": []}}, False, id="ok-without-flag"),
        pytest.param(None, None, id="no-result"),
    ],
)
def test_mcp_tool_call_end_flags_the_result(
    tmp_path: Path, result: dict[str, Any] | None, is_error: bool | None
) -> None:
    records = [
        META,
        call("m1", "mcp__github__get_issue", '{"n": 1}'),
        line("event_msg", {"type": "mcp_tool_call_end", "call_id": "m1", "result": result}),
        output("m1", "Not Found"),
    ]
    events = events_of(list(codex.parse(write(tmp_path / "rollout-x.jsonl", records))))
    (result_event,) = [e for e in events if e.kind == "tool_result"]
    assert (result_event.tool_name, result_event.exit_code, result_event.is_error) == (
        "mcp__github__get_issue",
        None,
        is_error,
    )


def test_newer_response_items(tmp_path: Path) -> None:
    def item(kind: str, **payload: Any) -> dict[str, Any]:
        return line("response_item", {"type": kind, **payload})

    calendar = {
        "type": "namespace",
        "name": "mcp__calendar__",
        "tools": [{"type": "function", "name": "create"}],
    }
    records = [
        META,
        message("user", "book a meeting"),
        item("additional_tools", role="developer", tools=[{"type": "function", "name": "x"}]),
        item(
            "tool_search_call", call_id="ts1", execution="client", arguments={"query": "calendar", "limit": 5}
        ),
        item("tool_search_output", call_id="ts1", status="completed", execution="client", tools=[calendar]),
        item("function_call", name="create", namespace="mcp__calendar__", arguments="{}", call_id="c1"),
        item(
            "agent_message",
            author="/root",
            recipient="/root/worker",
            content=[{"type": "input_text", "text": "go"}],
        ),
        item("context_compaction", encrypted_content="gAAA"),
    ]
    items = list(codex.parse(write(tmp_path / "rollout-x.jsonl", records)))
    events = events_of(items)
    assert len(events) == len(items), "none quarantined"
    assert [(e.line_no, e.role, e.kind, e.tool_name) for e in events[2:]] == [
        (4, "assistant", "tool_call", "tool_search"),
        (5, "tool", "tool_result", "tool_search"),
        (6, "assistant", "tool_call", "mcp__calendar__create"),
        (7, "system", "meta", None),
        (8, "system", "meta", None),
    ]
    search, loaded, _, handoff, compaction = events[2:]
    assert (loads(search.tool_input), search.tool_call_id) == (
        {"query": "calendar", "limit": 5},
        "ts1",
    )
    assert (loaded.text, loaded.tool_call_id) == ("mcp__calendar__create", "ts1"), "named as its call is"
    assert handoff.text == "[agent message /root -> /root/worker]\ngo"
    assert compaction.text == "[encrypted compaction summary]"


# --- legacy rollouts (codex-rs before the wrapped lines, mid-2025) --------------------------------

LEGACY_ID = "5973b6c0-94b8-487b-a530-2aeb6098ae0e"
LEGACY_T0 = "2025-05-07T17:24:21.123Z"
LEGACY_HEADER = {
    "id": LEGACY_ID,
    "timestamp": LEGACY_T0,
    "instructions": "Be terse.",
    "git": {"commit_hash": "abc123", "branch": "main", "repository_url": "git@github.com:acme/widgets.git"},
}


def legacy_rollout(tmp_path: Path) -> Path:
    shell_output = {"output": "1 failed", "metadata": {"exit_code": 1, "duration_seconds": 0.5}}
    return write(
        tmp_path / f"rollout-2025-05-07T17-24-21-{LEGACY_ID}.jsonl",
        [
            LEGACY_HEADER,
            {"record_type": "state"},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "run the tests"}]},
            {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Run pytest."}]},
            {
                "type": "function_call",
                "name": "shell",
                "arguments": '{"command": ["bash", "-lc", "pytest"]}',
                "call_id": "call_1",
            },
            {
                "type": "function_call_output",
                "call_id": "call_1",
                "output": orjson.dumps(shell_output).decode(),
            },
            {"record_type": "state", "previous_response_id": "resp_1"},
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "One fails."}],
            },
            {"type": "hologram"},
            {"type": "function_call", "name": 7, "call_id": "call_2"},
        ],
    )


def test_legacy_rollout_reads_like_the_wrapped_one(tmp_path: Path) -> None:
    path = legacy_rollout(tmp_path)
    assert codex.sniff(path, read_head(path))
    assert not own_agent.sniff(path, read_head(path)) and not chat_jsonl.sniff(path, read_head(path))
    items = list(codex.parse(path))
    events = events_of(items)
    assert [(e.line_no, e.role, e.kind, e.text) for e in events] == [
        (1, "system", "meta", "Be terse."),
        (3, "user", "message", "run the tests"),
        (4, "assistant", "reasoning", "Run pytest."),
        (5, "assistant", "tool_call", None),
        (6, "tool", "tool_result", "1 failed"),
        (8, "assistant", "message", "One fails."),
    ]
    start = parse_ts(LEGACY_T0)
    assert codex.earliest_start(path) == start
    assert {(e.session_id, e.session_start, e.repo, e.git_branch, e.model) for e in events} == {
        (LEGACY_ID, start, "widgets", "main", None)
    }
    assert [e.ts for e in events] == [start] + [None] * 5, "only the header is timed"
    call, result = events[3], events[4]
    assert (call.tool_name, loads(call.tool_input)) == (
        "shell",
        {"command": ["bash", "-lc", "pytest"]},
    )
    assert (result.tool_name, result.tool_call_id, result.exit_code, result.is_error) == (
        "shell",
        "call_1",
        1,
        True,
    )
    bad = [item for item in items if isinstance(item, BadLine)]
    assert [(b.line_no, b.reason, b.session_id) for b in bad] == [
        (9, UNKNOWN_RECORD_TYPE, LEGACY_ID),
        (10, WRONG_FIELD_TYPE, LEGACY_ID),
    ]
    assert bad[1].excerpt.startswith("name: expected a string, got number"), "no payload. on a bare line"


@pytest.mark.parametrize(
    ("first_line", "is_codex"),
    [
        pytest.param({**LEGACY_HEADER, "instructions": "x" * 100_000}, True, id="header-longer-than-head"),
        pytest.param({"id": LEGACY_ID, "timestamp": LEGACY_T0, "instructions": None}, True, id="bare-header"),
        pytest.param({**LEGACY_HEADER, "id": "not-a-uuid"}, False, id="id-not-a-uuid"),
        pytest.param(
            {"id": LEGACY_ID, "timestamp": LEGACY_T0, "messages": [{"role": "user", "content": "hi"}]},
            False,
            id="chat-line-with-id-and-time",
        ),
    ],
)
def test_sniff_legacy_header(tmp_path: Path, first_line: dict[str, Any], is_codex: bool) -> None:
    path = write(tmp_path / "rollout-x.jsonl", [first_line])
    assert codex.sniff(path, read_head(path)) is is_codex
