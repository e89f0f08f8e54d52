"""SWE-agent trajectories load as one session each, with every call linked to its observation.

Why this exists: `.traj` files come in two action formats (OpenAI tool calls, and
0.x text actions answered by the next user message), carry worked demonstrations
that are not the run's own work, reuse call ids in replayed demonstrations, and
have no timestamps. These tests pin the counts of the real published files
(counted independently from the raw JSON) and the handling of broken input, and,
on files built as the agents write them, RetryAgent's attempts (each read once),
mini-swe-agent's `.traj.json`, extended thinking and the harness's own replies.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from fnmatch import fnmatch
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
            # every call answered: 0.x never adds the final `submit`'s observation (the patch) to
            # history, so it is taken from the last trajectory step
            "results": 12,
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


def _events(path: Path) -> list[Event]:
    """The events of a file that gives no quarantine rows."""
    events, bad = _split(list(swe_agent.parse(path)))
    assert bad == []
    return events


def _bad_lines(path: Path) -> list[BadLine]:
    """The quarantine rows of a file that gives no events."""
    events, bad = _split(list(swe_agent.parse(path)))
    assert events == []
    return bad


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
    events = _events(real_corpus / FOLDER / "pydicom__pydicom-1458.traj")
    assert 2 not in {e.line_no for e in events}
    assert [e.line_no for e in events if e.role == "user"] == [3]


def test_text_action_becomes_bash_call_answered_by_next_message(real_corpus: Path) -> None:
    events = _events(real_corpus / FOLDER / "pydicom__pydicom-1458.traj")
    call, result = (e for e in events if e.line_no in (4, 5) and e.kind != "message")
    assert call.tool_input == '{"command":"create reproduce_bug.py"}'
    assert (result.role, result.tool_call_id, result.tool_name) == ("tool", call.tool_call_id, "bash")
    assert (result.text or "").startswith("[File: /pydicom__pydicom/reproduce_bug.py (1 lines total)]")


def test_reused_call_ids_are_made_unique(real_corpus: Path) -> None:
    events = _events(real_corpus / FOLDER / "marshmallow-code__marshmallow-1867.traj")
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
    ids = [_events(path)[0].session_id for path in paths]
    assert ids[0] != ids[1]
    nested = tmp_path / "gpt4__run" / "django__django-11099" / "django__django-11099.traj"
    nested.parent.mkdir()
    _write(nested.parent, doc)
    assert _events(nested)[0].session_id == ids[0]  # 1.x layout, same run folder


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
    [bad] = _bad_lines(_write(tmp_path, body))
    assert (bad.reason, bad.line_no, bad.source) == (reason, 0, "swe_agent")


def test_file_over_the_cap_is_refused_unread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _write(tmp_path, {"history": [{"role": "user", "content": "x" * 500}]})
    monkeypatch.setattr(swe_agent, "MAX_FILE_BYTES", 200)
    [bad] = _bad_lines(path)
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
    events = _events(_write(tmp_path, doc, "whatever.traj"))
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
    (event,) = _events(_write(tmp_path, doc, "run.traj"))
    assert event.repo == repo


def test_sniff_rejects_chat_jsonl_and_other_json() -> None:
    assert not swe_agent.sniff(Path("a.jsonl"), b'{"messages": [{"role": "user", "content": "hi"}]}\n')
    assert not swe_agent.sniff(Path("a.json"), b'{"history": [{"role": "user", "parts": [{"text": "hi"}]}]}')
    assert swe_agent.sniff(Path("a.traj"), b'{\n  "trajectory": [\n    {\n      "action": "ls",')


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:8]


def _lines(events: list[Event]) -> list[tuple[int, str, str, str | None, str | None]]:
    return [(e.line_no, e.role, e.kind, e.tool_call_id or e.tool_input, e.text) for e in events]


# ---------------------------------------------------------------- the final observation of 0.x


def test_last_submit_is_answered_by_the_last_trajectory_step(real_corpus: Path) -> None:
    """0.x adds an observation to history only when it next queries the model: the final
    `submit`'s (the run's patch) is only in the last trajectory step, which ran the same command."""
    path = real_corpus / FOLDER / "pydicom__pydicom-1458.traj"
    last_step = orjson.loads(path.read_bytes())["trajectory"][-1]
    submit, patch, exit_status = _events(path)[-3:]
    assert (submit.kind, submit.tool_input) == ("tool_call", '{"command":"submit"}')
    assert (patch.role, patch.kind, patch.tool_name) == ("tool", "tool_result", "bash")
    assert patch.tool_call_id == submit.tool_call_id
    assert patch.text == last_step["observation"]
    assert (patch.text or "").lstrip().startswith("diff --git a/pydicom/pixel_data_handlers/numpy_handler.py")
    assert (patch.line_no, exit_status.line_no, exit_status.text) == (27, 28, "submitted")  # 26 messages


@pytest.mark.parametrize(("last_action", "answered"), [("submit", True), ("ls", False)])
def test_last_step_answers_only_the_command_it_ran(tmp_path: Path, last_action: str, answered: bool) -> None:
    history = [
        {"role": "user", "content": "fix it"},
        {"role": "assistant", "content": "done", "thought": "done", "action": "submit\n"},
    ]
    steps = [{"action": f"{last_action}\n", "observation": "diff --git a/x b/x"}]
    events = _events(_write(tmp_path, {"history": history, "trajectory": steps}))
    results = [(e.line_no, e.tool_call_id, e.text) for e in events if e.kind == "tool_result"]
    call_id = next(e.tool_call_id for e in events if e.kind == "tool_call")
    assert results == ([(3, call_id, "diff --git a/x b/x")] if answered else [])


# ---------------------------------------------------------------- extended thinking


def test_extended_thinking_becomes_reasoning(tmp_path: Path) -> None:
    """SWE-agent 1.x keeps litellm's `thinking_blocks` on history messages and `reasoning_content`
    on trajectory steps."""
    history = [
        {"role": "user", "content": "fix it", "message_type": "observation"},
        {
            "role": "assistant",
            "content": "Let me look.",
            "thought": "Let me look.",
            "action": "ls",
            "tool_calls": [_fc_call("toolu_1")],
            "message_type": "action",
            "thinking_blocks": [
                {"type": "thinking", "thinking": "List the repository first.", "signature": "abc"},
                {"type": "redacted_thinking", "data": "EmwKAhgBEgy3"},
            ],
        },
        {"role": "tool", "content": "a.py", "tool_call_ids": ["toolu_1"], "message_type": "observation"},
        {"role": "assistant", "content": "x", "thought": "x", "action": "ls", "thinking_blocks": []},
    ]
    events = _events(_write(tmp_path, {"history": history}))
    assert [(e.line_no, e.role, e.kind, e.text) for e in events if e.line_no in (2, 4)][:4] == [
        (2, "assistant", "reasoning", "List the repository first."),
        (2, "assistant", "reasoning", "[redacted thinking]"),  # as claude_code gives it
        (2, "assistant", "message", "Let me look."),
        (2, "assistant", "tool_call", None),
    ]
    assert [e.kind for e in events if e.line_no == 4] == ["message", "tool_call"]

    steps = [{"thought": "look", "action": "ls", "observation": "a.py", "reasoning_content": "List first."}]
    events = _events(_write(tmp_path, {"trajectory": steps}, "steps.traj"))
    assert [(e.role, e.kind, e.text) for e in events][:2] == [
        ("assistant", "reasoning", "List first."),
        ("assistant", "message", "look"),
    ]


# ---------------------------------------------------------------- the harness's own replies


@pytest.mark.parametrize("marked", [True, False])
def test_reply_to_a_step_that_ran_nothing_is_not_an_instruction(tmp_path: Path, marked: bool) -> None:
    """After an error exit, SWE-agent 1.x writes a step with no action itself and answers it
    (`Exited (autosubmitted)`); a user message there would start a new task downstream. Only 1.x
    marks its steps (`message_type`): an unmarked history may be a chat, where it is a message."""
    stamp = (lambda kind: {"message_type": kind}) if marked else (lambda kind: {})
    history = [
        {"role": "system", "content": "s", **stamp("system_prompt")},
        {"role": "user", "content": "fix it", **stamp("observation")},
        {
            "role": "assistant",
            "content": "x",
            "thought": "look",
            "tool_calls": [_fc_call("c1")],
            **stamp("action"),
        },
        {"role": "tool", "content": "a.py", "tool_call_ids": ["c1"], **stamp("observation")},
        {"role": "assistant", "content": "Exit due to cost limit", "action": "", **stamp("action")},
        {"role": "user", "content": "Observation: Exited (autosubmitted)", **stamp("observation")},
    ]
    doc = {"history": history, "info": {"exit_status": "submitted (exit_cost)"}}
    events = _events(_write(tmp_path, doc))
    assert [(e.line_no, e.role, e.kind, e.text) for e in events][-3:] == [
        (5, "assistant", "message", "Exit due to cost limit"),
        (
            6,
            "system" if marked else "user",
            "meta" if marked else "message",
            "Observation: Exited (autosubmitted)",
        ),
        (7, "system", "meta", "submitted (exit_cost)"),
    ]


# ---------------------------------------------------------------- mini-swe-agent


def _mini(messages: list[Any], version: str, fmt: str, **config: Any) -> dict[str, Any]:
    """A trajectory as mini-swe-agent's `save_traj` (1.x) or `DefaultAgent.save` (2.x) writes it."""
    info = {
        "exit_status": "Submitted",
        "submission": "diff --git a/x b/x",
        "model_stats": {"instance_cost": 0.02, "api_calls": 3},
        "mini_version": version,
        "config": {
            "agent": {"step_limit": 0},
            "model": {"model_name": "anthropic/claude-sonnet-4"},
            **config,
        },
    }
    return {"info": info, "messages": messages, "trajectory_format": fmt}


def _mini_file(tmp_path: Path, doc: dict[str, Any], instance: str = "django__django-11099") -> Path:
    path = tmp_path / "mini_run" / instance / f"{instance}.traj.json"
    path.parent.mkdir(parents=True)
    path.write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2))
    return path


def test_mini_swe_agent_1_text_actions(tmp_path: Path) -> None:
    """mini 1.x runs the one ```bash block of a response (none, or several: it runs nothing and
    answers with a format error) and answers with a user message, the submission included."""
    messages = [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "<pr_description>fix</pr_description>"},
        {"role": "assistant", "content": "THOUGHT: look\n\n```bash\nls -la\n```"},
        {"role": "user", "content": "<returncode>0</returncode>\n<output>\nsetup.py\n</output>"},
        {"role": "assistant", "content": "THOUGHT: both\n\n```bash\nls\n```\n\n```bash\npwd\n```"},
        {"role": "user", "content": "Please always provide EXACTLY ONE action in triple backticks."},
        {"role": "assistant", "content": "Submit.\n```bash\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n```"},
        {"role": "user", "content": "diff --git a/x b/x"},
        {"role": "user", "content": ""},  # LimitsExceeded's, empty
    ]
    path = _mini_file(tmp_path, _mini(messages, "1.9.0", "mini-swe-agent-1"))
    assert any(fnmatch(path.name, glob.removeprefix("**/")) for glob in FORMATS["swe_agent"].globs)
    assert detect_source(path) == "swe_agent"
    events, bad = _split(list(swe_agent.parse(path)))
    assert bad == []
    sid = f"django__django-11099@{_hash('mini_run/django__django-11099.traj.json')}"
    assert _lines(events) == [
        (1, "system", "message", None, "You are a helpful assistant."),
        (2, "user", "message", None, "<pr_description>fix</pr_description>"),
        (3, "assistant", "message", None, messages[2]["content"]),
        (3, "assistant", "tool_call", f"{sid}:3", None),
        (4, "tool", "tool_result", f"{sid}:3", messages[3]["content"]),
        (5, "assistant", "message", None, messages[4]["content"]),
        (6, "system", "meta", None, "Please always provide EXACTLY ONE action in triple backticks."),
        (7, "assistant", "message", None, messages[6]["content"]),
        (7, "assistant", "tool_call", f"{sid}:7", None),
        (8, "tool", "tool_result", f"{sid}:7", "diff --git a/x b/x"),
        (10, "system", "meta", None, "Submitted"),
    ]
    calls = [e.tool_input for e in events if e.kind == "tool_call"]
    assert calls == ['{"command":"ls -la"}', '{"command":"echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"}']
    assert {e.session_id for e in events} == {sid}
    assert {e.repo for e in events} == {"django"}
    assert {e.model for e in events if e.role == "assistant"} == {"anthropic/claude-sonnet-4"}


def test_mini_swe_agent_1_unclosed_fences_after_the_action_do_not_count(tmp_path: Path) -> None:
    """Opening fences with no closing one after them match nothing, as for mini's own regex: the
    block before them is the action. Thousands of them (odd model output) parse at once, not by
    scanning the rest of the text again from each."""
    reply = "THOUGHT: look\n```bash\nls\n```\n" + "```bash\nnever closed " * 5_000
    messages = [{"role": "user", "content": "fix"}, {"role": "assistant", "content": reply}]
    events, _ = _split(
        list(swe_agent.parse(_mini_file(tmp_path, _mini(messages, "1.9.0", "mini-swe-agent-1"))))
    )
    assert [e.tool_input for e in events if e.kind == "tool_call"] == ['{"command":"ls"}']


def test_mini_swe_agent_1_action_regex_is_the_runs_own(tmp_path: Path) -> None:
    messages = [
        {"role": "user", "content": "fix"},
        {"role": "assistant", "content": "```sh\nls\n```"},
        {"role": "user", "content": "a.py"},
    ]
    config = {"agent": {"action_regex": r"```sh\s*\n(.*?)\n```"}}
    events = _events(_mini_file(tmp_path, _mini(messages, "1.9.0", "mini-swe-agent-1", **config)))
    assert [(e.kind, e.tool_input) for e in events if e.kind.startswith("tool")] == [
        ("tool_call", '{"command":"ls"}'),
        ("tool_result", None),
    ]


def test_mini_swe_agent_2_tool_calls_thinking_and_exit(tmp_path: Path) -> None:
    """mini 2.x keeps litellm's messages whole (`reasoning_content` and `thinking_blocks`: the same
    thinking twice), marks its format errors, and ends with a `role: exit` message: the
    submission, raised while the submitting command ran, so that command's result."""
    submit = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git diff --cached"
    messages = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "task"},
        {
            "role": "user",
            "content": "Format error: no tool call",
            "extra": {"interrupt_type": "FormatError", "model_response": "hmm"},
        },
        {
            "role": "assistant",
            "content": "Look.",
            "reasoning_content": "List first.",
            "thinking_blocks": [{"type": "thinking", "thinking": "List first.", "signature": "s"}],
            "tool_calls": [_fc_call("call_1")],
            "extra": {"actions": [{"command": "ls", "tool_call_id": "call_1"}]},
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "<returncode>0</returncode>", "extra": {}},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [_fc_call("call_2", arguments=orjson.dumps({"command": submit}).decode())],
            "extra": {"actions": [{"command": submit, "tool_call_id": "call_2"}]},
        },
        {"role": "exit", "content": "diff --git a/x b/x", "extra": {"exit_status": "Submitted"}},
    ]
    events = _events(_mini_file(tmp_path, _mini(messages, "2.1.0", "mini-swe-agent-1.1")))
    assert _lines(events) == [
        (1, "system", "message", None, "sys"),
        (2, "user", "message", None, "task"),
        (3, "system", "meta", None, "Format error: no tool call"),
        (4, "assistant", "reasoning", None, "List first."),
        (4, "assistant", "message", None, "Look."),
        (4, "assistant", "tool_call", "call_1", None),
        (5, "tool", "tool_result", "call_1", "<returncode>0</returncode>"),
        (6, "assistant", "tool_call", "call_2", None),
        (7, "tool", "tool_result", "call_2", "diff --git a/x b/x"),
        (8, "system", "meta", None, "Submitted"),
    ]


def test_mini_swe_agent_2_text_action_is_the_parsed_one(tmp_path: Path) -> None:
    """mini 2.x's text actions are in `extra.actions` (its regex is the model's, not 1.x's
    ```bash); an `exit` with no command running only repeats `info.exit_status`."""
    messages = [
        {"role": "user", "content": "task"},
        {
            "role": "assistant",
            "content": "```mswea_bash_command\nls\n```",
            "extra": {"actions": [{"command": "ls"}]},
        },
        {"role": "user", "content": "<returncode>0</returncode>", "extra": {"returncode": 0}},
        {"role": "exit", "content": "LimitsExceeded", "extra": {"exit_status": "LimitsExceeded"}},
    ]
    doc = _mini(messages, "2.1.0", "mini-swe-agent-1.1")
    doc["info"]["exit_status"] = "LimitsExceeded"
    events = _events(_mini_file(tmp_path, doc))
    assert [(e.line_no, e.kind, e.tool_input or e.text) for e in events] == [
        (1, "message", "task"),
        (2, "message", "```mswea_bash_command\nls\n```"),
        (2, "tool_call", '{"command":"ls"}'),
        (3, "tool_result", "<returncode>0</returncode>"),
        (5, "meta", "LimitsExceeded"),
    ]


def test_mini_swe_agent_sniffs_with_a_long_patch_before_its_markers(tmp_path: Path) -> None:
    """1.x writes `info.submission` (the patch) before `mini_version`: a long patch pushes every
    mini key out of the head; the `.traj.json` name and `info` first still tell it."""
    messages = [{"role": "user", "content": "task"}]
    doc = _mini(messages, "1.9.0", "mini-swe-agent-1")
    doc["info"]["submission"] = "diff --git a/x b/x\n" + "+x\n" * 40_000
    path = _mini_file(tmp_path, doc)
    head = read_head(path)
    assert b"mini_version" not in head and b"messages" not in head
    assert swe_agent.sniff(path, head)
    assert not swe_agent.sniff(path.with_name("x.json"), head)
    assert swe_agent.sniff(Path("a.json"), b'{"info": {"mini_version": "2.1.0", "exit_status": "Submitted"')
    assert swe_agent.sniff(Path("a.json"), b'{"messages": [], "trajectory_format": "mini-swe-agent-1"}')


# ---------------------------------------------------------------- RetryAgent


def _attempt(label: str) -> dict[str, Any]:
    """One attempt as SWE-agent 1.x's `DefaultAgent.get_trajectory_data` gives it (RetryAgent sets
    no `replay_config` on its attempts' agents)."""
    return {
        "trajectory": [{"action": "ls", "observation": "a.py", "thought": label, "response": label}],
        "history": [
            {"role": "system", "content": "s", "agent": "main", "message_type": "system_prompt"},
            {"role": "user", "content": "fix it", "agent": "main", "message_type": "observation"},
            {
                "role": "assistant",
                "content": label,
                "thought": label,
                "action": "ls",
                "message_type": "action",
            },
            {"role": "user", "content": "a.py", "agent": "main", "message_type": "observation"},
        ],
        "info": {"exit_status": "submitted", "submission": "diff"},
        "replay_config": None,
        "environment": "main",
    }


def _retry_run(tmp_path: Path, run: str, attempts: int, best: bool, own_files: range) -> Path:
    """RetryAgent's files: `<id>.traj` (its `attempts`, and a copy of the best once chosen) and
    each attempt's own `attempt_<n>/<id>.traj`, of which `own_files` are kept."""
    folder = tmp_path / run / "django__django-11099"
    data: dict[str, Any] = {"attempts": [_attempt(f"attempt {i}") for i in range(attempts)]}
    if best:
        data |= _attempt(f"attempt {attempts - 1}")
        data["info"] = {**data["info"], "best_attempt_idx": attempts - 1}
    for index in own_files:
        _own_attempt_file(folder, index)
    folder.mkdir(parents=True, exist_ok=True)
    return _write(folder, data)


def _own_attempt_file(folder: Path, index: int) -> Path:
    (folder / f"attempt_{index}").mkdir(parents=True)
    return _write(folder / f"attempt_{index}", _attempt(f"attempt {index}"))


def _sessions(path: Path) -> dict[str, list[str]]:
    """Per session, the texts of its assistant messages."""
    out: dict[str, list[str]] = {}
    for event in swe_agent.parse(path):
        assert isinstance(event, Event)
        if event.kind == "message" and event.role == "assistant":
            out.setdefault(event.session_id, []).append(event.text or "")
    return out


def test_retry_agent_attempts_are_each_read_once(tmp_path: Path) -> None:
    """Every attempt is one session, read from its own file when that is on disk, else from the
    top-level file; the top-level copy of the best attempt is never read (it repeats one)."""
    top = _retry_run(tmp_path, "run", attempts=2, best=True, own_files=range(1))
    assert detect_source(top) == "swe_agent"
    from_top = _sessions(top)
    assert list(from_top.values()) == [["attempt 1"]]  # attempt 0 is read from its own file
    assert list(_sessions(top.parent / "attempt_0" / top.name).values()) == [["attempt 0"]]
    own = _own_attempt_file(top.parent, 1)
    assert _sessions(own) == from_top  # the same session, whichever file gives it
    assert _sessions(top) == {}  # every attempt on disk: nothing left to read here


def test_retry_agent_top_level_file_alone_gives_every_attempt(tmp_path: Path) -> None:
    """A copy keeping only the top-level file (a published run): each attempt once, best or not."""
    top = _retry_run(tmp_path, "run", attempts=2, best=True, own_files=range(0))
    events = _events(top)
    texts = _sessions(top)
    assert list(texts.values()) == [["attempt 0"], ["attempt 1"]]
    assert list(texts) == [f"django__django-11099@{_hash(f'run/attempt_{i}/{top.name}')}" for i in range(2)]
    assert [e.seq for e in events] == list(range(len(events)))  # positions in the file
    assert {e.source_path for e in events} == {str(top)}
    exits = [e.text for e in events if e.kind == "meta"]
    assert exits == ["submitted", "submitted"]
    (tmp_path / "published").mkdir()
    flat = _write(tmp_path / "published", orjson.loads(top.read_bytes()), top.name)  # <run>/<id>.traj
    assert list(_sessions(flat)) == [
        f"django__django-11099@{_hash(f'published/attempt_{i}/{top.name}')}" for i in range(2)
    ]


def test_retry_agent_mid_run_file(tmp_path: Path) -> None:
    """Saved after every step, the top-level file holds only the attempts already ended: none
    during the first, whose own file is read."""
    top = _retry_run(tmp_path, "run", attempts=0, best=False, own_files=range(1))
    assert top.read_bytes().startswith(b'{\n  "attempts": []')
    assert detect_source(top) == "swe_agent"
    assert list(swe_agent.parse(top)) == []
    top = _retry_run(tmp_path, "run2", attempts=1, best=False, own_files=range(0))
    assert list(_sessions(top).values()) == [["attempt 0"]]


def test_retry_agent_attempts_of_two_runs_get_two_sessions(tmp_path: Path) -> None:
    """RetryAgent's attempt folder is not the run folder: the run is two levels up."""
    name = "django__django-11099.traj"
    layouts = {
        f"gpt4__run/{name}": f"gpt4__run/{name}",  # 0.x
        f"gpt4__run/django__django-11099/{name}": f"gpt4__run/{name}",  # 1.x: same run, same session
        f"gpt4__run/django__django-11099/attempt_0/{name}": f"gpt4__run/attempt_0/{name}",
        f"gpt4__run/django__django-11099/attempt_1/{name}": f"gpt4__run/attempt_1/{name}",
        f"claude__run/django__django-11099/attempt_0/{name}": f"claude__run/attempt_0/{name}",
        f"gpt4__run/attempt_0/{name}": f"attempt_0/{name}",  # a run folder so named: as before
    }
    doc = {"history": [{"role": "user", "content": "fix it"}]}
    for relative, hashed in layouts.items():
        path = tmp_path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        (event,) = _events(_write(path.parent, doc))
        assert event.session_id == f"django__django-11099@{_hash(hashed)}", relative
