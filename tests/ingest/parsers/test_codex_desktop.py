"""Codex Desktop rollouts: prompts recorded only as `event_msg` / `user_message`, and MCP tools
named by a `namespace`.

Why this exists: a new user's Codex Desktop rollout gave 0 attempts from 38 tool calls, because
its prompts were only in `user_message` events, which the parser skipped as echoes of response
items; and its MCP calls (`"namespace": "mcp__<server>__", "name": "js"`) were stored as a bare
`js`. The rollouts here are written for these tests in those shapes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from tests.ingest import transcripts as tx
from trajectory_pipeline.evaluation.scoring import score_call
from trajectory_pipeline.ingest.parsers import codex
from trajectory_pipeline.mining.attempts import mine_trajectories
from trajectory_pipeline.mining.vocabulary import canonicalize
from trajectory_pipeline.schema import Event


def event_msg(kind: str, seconds: float, **payload: Any) -> dict[str, Any]:
    return tx.codex_line("event_msg", {"type": kind, **payload}, seconds)


def echo(text: str, seconds: float, **extra: Any) -> dict[str, Any]:
    """The `user_message` event codex writes for a prompt."""
    return event_msg("user_message", seconds, **({"message": text, "images": [], "local_images": []} | extra))


def desktop_turn(prompt: str, start: float, calls: int) -> list[dict[str, Any]]:
    """One turn as Codex Desktop writes it: the prompt only as a user_message event."""
    turn = [
        event_msg("task_started", start),
        tx.codex_line("turn_context", {"cwd": f"{tx.HOME}/src/app", "model": "gpt-5-codex"}, start),
        echo(prompt, start + 0.1),
        tx.codex_line(
            "response_item", {"type": "reasoning", "summary": [], "encrypted_content": "x"}, start + 1
        ),
    ]
    for n in range(calls):
        call_id = f"call_{start:.0f}_{n}"
        at = start + 2 + n
        turn.append(tx.codex_call(call_id, "exec_command", f'{{"cmd": "rg -n f{n} src"}}', at))
        turn.append(tx.codex_output(call_id, f"Process exited with code 0\nsrc/app.py:{n}: f{n}", at + 0.5))
    turn.append(event_msg("task_complete", start + 2 + calls))
    return turn


def events_of(path: Path) -> list[Event]:
    return [item for item in codex.parse(path) if isinstance(item, Event)]


def prompts(events: list[Event]) -> list[tuple[int, str | None]]:
    return [(e.line_no, e.text) for e in events if e.role == "user" and e.kind == "message"]


def test_prompts_recorded_only_as_user_message_events_give_attempts(tmp_path: Path) -> None:
    records = [
        tx.codex_meta(),
        *desktop_turn("find every f", 10, 30),
        *desktop_turn("and the g ones", 100, 8),
    ]
    path = tx.write(tmp_path, "codex", records)
    events = events_of(path)
    assert [text for _, text in prompts(events)] == ["find every f", "and the g ones"]
    assert sum(e.kind == "tool_call" for e in events) == 38
    attempts = mine_trajectories(pd.DataFrame(events))
    assert list(attempts["instruction"]) == ["find every f", "and the g ones"]
    assert list(attempts["tool_calls"]) == [30, 8]


def test_a_prompt_in_both_places_is_counted_once_in_either_order(tmp_path: Path) -> None:
    records = [
        tx.codex_meta(),
        tx.codex_user("first, as codex CLI writes it", 1),
        echo("first, as codex CLI writes it", 1.1),
        tx.codex_call("c1", "shell", '{"command": ["ls"]}', 2),
        tx.codex_output("c1", "Exit code: 0\napp.py", 3),
        echo("second, its echo written first", 10),
        tx.codex_user("second, its echo written first", 10.1),
        tx.codex_call("c2", "shell", '{"command": ["ls"]}', 11),
        tx.codex_output("c2", "Exit code: 0\napp.py", 12),
        echo("third, only the echo", 20),
        tx.codex_call("c3", "shell", '{"command": ["ls"]}', 21),
    ]
    path = tx.write(tmp_path, "codex", records)
    assert prompts(events_of(path)) == [
        (2, "first, as codex CLI writes it"),
        (6, "second, its echo written first"),
        (10, "third, only the echo"),
    ]


def test_a_prompt_without_an_echo_does_not_swallow_a_later_echo_only_prompt(tmp_path: Path) -> None:
    """An older codex wrote no user_message: its prompts stay unpaired until the agent acts."""
    records = [
        tx.codex_meta(),
        tx.codex_user("from before user_message existed", 1),
        tx.codex_call("c1", "shell", '{"command": ["ls"]}', 2),
        echo("a later prompt, echo only", 10),
    ]
    path = tx.write(tmp_path, "codex", records)
    assert [text for _, text in prompts(events_of(path))] == [
        "from before user_message existed",
        "a later prompt, echo only",
    ]


def test_an_echo_with_images_keeps_their_places(tmp_path: Path) -> None:
    records = [tx.codex_meta(), echo("what is on this screen?", 1, images=["data:image/png;base64,AAAA"])]
    path = tx.write(tmp_path, "codex", records)
    assert [text for _, text in prompts(events_of(path))] == ["what is on this screen?\n[image]"]


def test_a_namespaced_mcp_call_keeps_its_full_name(tmp_path: Path) -> None:
    records = [
        tx.codex_meta(),
        tx.codex_user("evaluate it in node", 1),
        tx.codex_call("m1", "js", '{"code": "1 + 1"}', 2, namespace="mcp__node_repl__"),
        tx.codex_output("m1", "2", 3),
        tx.codex_call("m2", "get_me", "{}", 4, namespace="mcp__github"),
        tx.codex_output("m2", '{"login": "dana"}', 5),
        tx.codex_call("m3", "mcp__github__get_me", "{}", 6, namespace="mcp__github"),
        tx.codex_call("s1", "exec_command", '{"cmd": "ls"}', 7),
    ]
    path = tx.write(tmp_path, "codex", records)
    events = events_of(path)
    calls = [(e.kind, e.tool_name) for e in events if e.kind in ("tool_call", "tool_result")]
    assert calls == [
        ("tool_call", "mcp__node_repl__js"),
        ("tool_result", "mcp__node_repl__js"),
        ("tool_call", "mcp__github__get_me"),
        ("tool_result", "mcp__github__get_me"),
        ("tool_call", "mcp__github__get_me"),
        ("tool_call", "exec_command"),
    ]
    # The vocabulary keeps an MCP tool's name (it is no canonical tool) and still maps the built-in one.
    mcp = canonicalize("codex", "mcp__node_repl__js", '{"code": "1 + 1"}')
    assert (mcp.name, mcp.known, mcp.arguments) == ("mcp__node_repl__js", False, {"code": "1 + 1"})
    assert canonicalize("codex", "exec_command", '{"cmd": "ls"}').name == "run_shell"
    # Scoring: the same MCP call passes, the bare name of the old parser does not.
    assert score_call(
        ("mcp__node_repl__js", {"code": "1 + 1"}), mcp.name, mcp.arguments, source="codex"
    ).passed
    assert not score_call(("js", {"code": "1 + 1"}), mcp.name, mcp.arguments, source="codex").passed
    attempts = mine_trajectories(pd.DataFrame(events))
    assert list(attempts["tools_used"][0]) == ["mcp__node_repl__js", "mcp__github__get_me", "run_shell"]


def test_qualified_names() -> None:
    assert codex.qualified_name(None, "js") == "js"
    assert codex.qualified_name("mcp__s__", "js") == "mcp__s__js"
    assert codex.qualified_name("mcp__s", "js") == "mcp__s__js"
    assert codex.qualified_name("mcp__s", "mcp__s__js") == "mcp__s__js"
