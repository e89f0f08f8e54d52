"""SWE-agent trajectories load as one session each, with every call linked to its observation.

Why this exists: `.traj` files come in two action formats (OpenAI tool calls, and
0.x text actions answered by the next user message), carry worked demonstrations
that are not the run's own work, reuse call ids in replayed demonstrations, and
have no timestamps. These tests pin the counts of the real published files
(counted independently from the raw JSON) and the handling of broken input.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest

from trajectory_pipeline.ingest.formats import FORMATS, detect_source
from trajectory_pipeline.ingest.parsers import swe_agent
from trajectory_pipeline.ingest.parsers.lines import file_mtime_us, read_head
from trajectory_pipeline.schema import UNKNOWN_RECORD_TYPE, WRONG_FIELD_TYPE, BadLine, Event

FOLDER = "swe-agent/SWE-agent"

REAL = [
    pytest.param(
        "pydicom__pydicom-1458.traj",
        {
            "instance": "pydicom__pydicom-1458",
            "repo": "pydicom",
            "model": None,
            "system": 1,
            "user": 1,
            "assistant_text": 12,
            "tools": {"bash": 12},  # text actions: create, edit x5, python x2, find_file, open, rm, submit
            "results": 11,  # the final `submit` has no observation in history
            "exit": "submitted",
        },
        id="pydicom-text-actions",
    ),
    pytest.param(
        "marshmallow-code__marshmallow-1867.traj",
        {
            "instance": "marshmallow-code__marshmallow-1867",
            "repo": "marshmallow",
            "model": "gpt-4o",
            "system": 1,
            "user": 1,
            "assistant_text": 11,
            "tools": {"bash": 4, "edit": 3, "create": 1, "find_file": 1, "open": 1, "submit": 1},
            "results": 11,
            "exit": "submitted",
        },
        id="marshmallow-function-calling",
    ),
    pytest.param(
        "function_calling_simple.traj",
        {
            "instance": "function_calling_simple",
            "repo": None,
            "model": None,
            "system": 1,
            "user": 1,
            "assistant_text": 5,
            "tools": {"find_file": 1, "open": 1, "edit": 1, "bash": 1, "submit": 1},
            "results": 5,
            "exit": None,
        },
        id="history-only",
    ),
]


def _split(items: list[Event | BadLine]) -> tuple[list[Event], list[BadLine]]:
    return [i for i in items if isinstance(i, Event)], [i for i in items if isinstance(i, BadLine)]


def _write(tmp_path: Path, doc: Any, name: str = "django__django-11099.traj") -> Path:
    path = tmp_path / name
    path.write_bytes(doc if isinstance(doc, bytes) else orjson.dumps(doc, option=orjson.OPT_INDENT_2))
    return path


def _fc_call(call_id: str, name: str = "bash", arguments: str = '{"command": "ls"}') -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


@pytest.mark.parametrize(("name", "facts"), REAL)
def test_real_trajectory_facts(real_corpus: Path, name: str, facts: dict[str, Any]) -> None:
    path = real_corpus / FOLDER / name
    events, bad = _split(list(swe_agent.parse(path)))
    assert bad == []
    kinds = Counter((e.role, e.kind) for e in events)
    calls = [e for e in events if e.kind == "tool_call"]
    results = [e for e in events if e.kind == "tool_result"]
    assert kinds[("system", "message")] == facts["system"]
    assert kinds[("user", "message")] == facts["user"]
    assert kinds[("assistant", "message")] == facts["assistant_text"]
    assert Counter(e.tool_name for e in calls) == facts["tools"]
    assert len(results) == facts["results"]
    assert len({e.tool_call_id for e in calls}) == len(calls)  # unique even where the file reuses ids
    assert {e.tool_call_id for e in results} <= {e.tool_call_id for e in calls}
    assert len({e.tool_call_id for e in results}) == len(results)
    assert [e.is_error for e in results] == [None] * len(results)
    exits = [e.text for e in events if e.kind == "meta"]
    assert exits == ([facts["exit"]] if facts["exit"] else [])
    assert len({e.session_id for e in events}) == 1
    assert events[0].session_id.startswith(facts["instance"] + "@")
    assert {e.repo for e in events} == {facts["repo"]}
    assert {e.model for e in events if e.role == "assistant"} == {facts["model"]}
    assert {e.session_start for e in events} == {file_mtime_us(path)}
    assert {e.ts for e in events} == {None}
    assert [e.seq for e in events] == list(range(len(events)))


def test_demonstration_is_skipped(real_corpus: Path) -> None:
    """History message 2 of the pydicom run is a worked example (`is_demo`), not the run's work."""
    events = list(swe_agent.parse(real_corpus / FOLDER / "pydicom__pydicom-1458.traj"))
    assert 2 not in {e.line_no for e in events}
    assert [e.line_no for e in events if e.role == "user"] == [3]


def test_text_action_becomes_bash_call_answered_by_next_message(real_corpus: Path) -> None:
    events = list(swe_agent.parse(real_corpus / FOLDER / "pydicom__pydicom-1458.traj"))
    call, result = (e for e in events if e.line_no in (4, 5) and e.kind != "message")
    assert call.tool_input == '{"command":"create reproduce_bug.py"}'
    assert (result.role, result.tool_call_id, result.tool_name) == ("tool", call.tool_call_id, "bash")
    assert result.text.startswith("[File: /pydicom__pydicom/reproduce_bug.py (1 lines total)]")


def test_reused_call_ids_are_made_unique(real_corpus: Path) -> None:
    events = list(swe_agent.parse(real_corpus / FOLDER / "marshmallow-code__marshmallow-1867.traj"))
    ids = [e.tool_call_id for e in events if e.kind == "tool_call"]
    assert ids.count("call_5iDdbOYybq7L19vqXmR0DPaU") == 1
    assert "call_5iDdbOYybq7L19vqXmR0DPaU#4" in ids
    pairs = [(e.tool_call_id, e.kind) for e in events if e.tool_call_id is not None]
    assert all(pairs[i][0] == pairs[i + 1][0] for i in range(0, len(pairs), 2))


@pytest.mark.parametrize("name", [p.values[0] for p in REAL])
def test_real_trajectory_sniffs_as_swe_agent_only(real_corpus: Path, name: str) -> None:
    path = real_corpus / FOLDER / name
    head = read_head(path)
    assert [source for source, spec in FORMATS.items() if spec.sniff(path, head)] == ["swe_agent"]
    assert detect_source(path) == "swe_agent"


def test_other_sources_real_files_do_not_sniff_as_swe_agent(real_corpus: Path) -> None:
    others = [p for p in real_corpus.rglob("*") if p.is_file() and not p.is_relative_to(real_corpus / FOLDER)]
    assert len(others) > 20
    assert [p for p in others if swe_agent.sniff(p, read_head(p))] == []


def test_earliest_start_is_the_mtime(tmp_path: Path) -> None:
    path = _write(tmp_path, {"history": []})
    assert swe_agent.earliest_start(path) == file_mtime_us(path)


def test_same_instance_in_two_runs_gets_two_sessions(tmp_path: Path) -> None:
    doc = {"history": [{"role": "user", "content": "fix it"}]}
    paths = [tmp_path / run / "django__django-11099.traj" for run in ("gpt4__run", "claude__run")]
    for path in paths:
        path.parent.mkdir()
        _write(path.parent, doc)
    ids = [next(iter(swe_agent.parse(path))).session_id for path in paths]
    assert ids[0] != ids[1]
    nested = tmp_path / "gpt4__run" / "django__django-11099" / "django__django-11099.traj"
    nested.parent.mkdir()
    _write(nested.parent, doc)
    assert next(iter(swe_agent.parse(nested))).session_id == ids[0]  # 1.x layout, same run folder


def test_bad_messages_are_quarantined_and_neighbours_load(tmp_path: Path) -> None:
    history = [
        {"role": "user", "content": "fix it"},
        "not a message",
        {"role": "assistant", "content": 3},
        {"role": "assistant", "content": "x", "tool_calls": {"id": "a"}},
        {"role": "assistant", "content": "x", "tool_calls": [{"id": "a", "function": "bash"}]},
        {"role": "critic", "content": "x"},
        {"role": "assistant", "content": "let me look", "tool_calls": [_fc_call("c1")]},
        {"role": "tool", "content": "a.py", "tool_call_ids": ["c1"]},
    ]
    events, bad = _split(list(swe_agent.parse(_write(tmp_path, {"history": history}))))
    assert [(b.line_no, b.reason) for b in bad] == [
        (2, WRONG_FIELD_TYPE),
        (3, WRONG_FIELD_TYPE),
        (4, WRONG_FIELD_TYPE),
        (5, WRONG_FIELD_TYPE),
        (6, UNKNOWN_RECORD_TYPE),
    ]
    assert all(b.session_id == events[0].session_id for b in bad)
    assert [(e.line_no, e.kind, e.tool_call_id) for e in events] == [
        (1, "message", None),
        (7, "message", None),
        (7, "tool_call", "c1"),
        (8, "tool_result", "c1"),
    ]


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        pytest.param(b'{"history": [{"role": "user", "content": "fix', "truncated_file", id="truncated"),
        pytest.param(b'{"history": [}', "malformed_json", id="malformed"),
        pytest.param(b'{"history": "\xfe"}', "invalid_utf8", id="invalid-utf8"),
        pytest.param(b'"a string"', "not_an_object", id="string"),
    ],
)
def test_unreadable_file_is_one_bad_line(tmp_path: Path, body: bytes, reason: str) -> None:
    [bad] = list(swe_agent.parse(_write(tmp_path, body)))
    assert (bad.reason, bad.line_no, bad.source) == (reason, 0, "swe_agent")


def test_file_over_the_cap_is_refused_unread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _write(tmp_path, {"history": [{"role": "user", "content": "x" * 500}]})
    monkeypatch.setattr(swe_agent, "MAX_FILE_BYTES", 200)
    [bad] = list(swe_agent.parse(path))
    assert (bad.reason, bad.line_no) == ("file_too_large", 0)


def test_trajectory_steps_are_the_fallback_without_history(tmp_path: Path) -> None:
    doc = {
        "trajectory": [
            {"thought": "look around", "action": "ls\n", "observation": "a.py"},
            {"thought": "done", "action": "", "observation": None},
            "junk",
        ],
        "info": {"exit_status": "exit_cost"},
    }
    events, bad = _split(list(swe_agent.parse(_write(tmp_path, doc))))
    assert [(b.line_no, b.reason) for b in bad] == [(3, WRONG_FIELD_TYPE)]
    assert [(e.line_no, e.kind, e.tool_input, e.text) for e in events] == [
        (1, "message", None, "look around"),
        (1, "tool_call", '{"command":"ls"}', None),
        (1, "tool_result", None, "a.py"),
        (2, "message", None, "done"),
        (4, "meta", None, "exit_cost"),
    ]


def test_replay_config_as_string_gives_model_and_github_repo(tmp_path: Path) -> None:
    config = {
        "agent": {"model": {"name": "claude-3-5-sonnet"}},
        "env": {"repo": {"github_url": "https://github.com/SWE-agent/test-repo"}},
        "problem_statement": {"id": "issue-7"},
    }
    doc = {
        "history": [
            {"role": "user", "content": [{"type": "text", "text": "fix"}, {"type": "text", "text": "it"}]},
            {
                "role": "assistant",
                "content": "",
                "thought": "t",
                "tool_calls": [_fc_call("c", "open", "not json")],
            },
            {"role": "tool", "content": "opened", "tool_call_ids": ["other-id"]},
        ],
        "replay_config": orjson.dumps(config).decode(),
    }
    events = list(swe_agent.parse(_write(tmp_path, doc, "whatever.traj")))
    assert {e.repo for e in events} == {"test-repo"}
    assert events[0].session_id.startswith("issue-7@")
    assert events[0].text == "fix\nit"
    call, result = events[2], events[3]
    assert (call.model, call.tool_input) == ("claude-3-5-sonnet", '"not json"')
    assert result.tool_call_id == call.tool_call_id == "c"  # the only waiting call, though the id differs


@pytest.mark.parametrize(
    ("instance", "github_url", "repo"),
    [
        ("scikit-learn__scikit-learn-10297", None, "scikit-learn"),
        ("sympy__sympy-20590", "https://github.com/someone/fork", "sympy"),  # the instance id wins
        ("issue-7", "git@github.com:SWE-agent/test-repo.git", "test-repo"),
        ("issue-7", None, None),
    ],
)
def test_repo_is_the_short_name_other_sources_use(
    tmp_path: Path, instance: str, github_url: str | None, repo: str | None
) -> None:
    config: dict[str, Any] = {"problem_statement": {"id": instance}}
    if github_url is not None:
        config["env"] = {"repo": {"github_url": github_url}}
    doc = {"history": [{"role": "user", "content": "fix it"}], "replay_config": config}
    (event,) = swe_agent.parse(_write(tmp_path, doc, "run.traj"))
    assert event.repo == repo


def test_sniff_rejects_chat_jsonl_and_other_json() -> None:
    assert not swe_agent.sniff(Path("a.jsonl"), b'{"messages": [{"role": "user", "content": "hi"}]}\n')
    assert not swe_agent.sniff(Path("a.json"), b'{"history": [{"role": "user", "parts": [{"text": "hi"}]}]}')
    assert swe_agent.sniff(Path("a.traj"), b'{\n  "trajectory": [\n    {\n      "action": "ls",')
