"""A decision's history as a compact state, for models with small context windows.

`RenderConfig.history = "state_summary"` renders, instead of the raw history, two messages: the
system prompt as it was, and one user message holding the task and the state the agent is in:

    Task: add a --verbose flag to the cli

    State so far:
    - tool calls made: 4
    - last call: run_shell `pytest -q`
    - files read: src/cli.py, tests/test_cli.py
    - files edited: src/cli.py
    - last command: `pytest -q` (failed); its output ends: "1 failed, 3 passed in 0.12s"
    - guard denials: 1; the last: run_shell `git push --force`: "The user doesn't want to proceed"
    - the user added: "use click, not argparse"

Read from the history's canonical calls and results: files as `files_inspected` and
`files_edited` read them (`attempts.call_files`; refused calls left out), in order of first
mention, the most recent `MAX_FILES` kept; the last call (what comes next depends on it most:
a verification follows an edit), refused or not; the last `run_shell` call with its outcome (a
verification's by its runner output, `verification.command_outcome`, else `ran`) and the last
non-empty line of its output; the guard denials (results that say a person, hook, sandbox or
policy refused the call, `attempts.is_guard_denial`) and the last one; the latest user message
after the instruction. Lines with nothing to say are left out; with no call yet the state says
so. The same history always gives the same text; the target is not touched.

    messages = state_summary(decision_point_messages)   # [system, user]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from trajectory_pipeline.mining.attempts import call_files, is_guard_denial
from trajectory_pipeline.mining.verification import command_intent, command_outcome
from trajectory_pipeline.mining.vocabulary import CanonicalCall

Message = dict[str, Any]

MAX_FILES = 20  # per list; older ones are counted, not named
MAX_QUOTE = 160  # characters of a quoted output line, refusal or message


def _quote(text: str) -> str:
    line = " ".join(text.split())
    if len(line) > MAX_QUOTE:
        line = line[: MAX_QUOTE - 3] + "..."
    return '"' + line.replace('"', "'") + '"'


def _last_line(text: str) -> str:
    for line in reversed(text.splitlines()):
        if line.strip():
            return line
    return ""


def _listed(paths: Sequence[str]) -> str:
    if not paths:
        return "none"
    shown = list(paths[-MAX_FILES:])
    more = len(paths) - len(shown)
    return ", ".join(shown) + (f" (and {more} earlier)" if more else "")


def _call_text(name: str, arguments: dict[str, Any]) -> str:
    command = arguments.get("command")
    if name == "run_shell" and isinstance(command, str):
        return f"run_shell `{' '.join(command.split())[:MAX_QUOTE]}`"
    path = arguments.get("file_path") or arguments.get("directory") or arguments.get("pattern")
    return f"{name} {path}" if isinstance(path, str) else name


def state_text(messages: Sequence[Message]) -> str:
    """The user message's text: the task and the state (see the module docstring)."""
    instruction = str(messages[1].get("content") or "") if len(messages) > 1 else ""
    results = {
        message.get("tool_call_id"): str(message.get("content") or "")
        for message in messages[2:]
        if message.get("role") == "tool"
    }
    calls = 0
    read: dict[str, None] = {}
    edited: dict[str, None] = {}
    last_command: tuple[str, str | None] | None = None
    last_call = ""
    denials: list[str] = []
    later_user: str | None = None
    for message in messages[2:]:
        role = message.get("role")
        if role == "user" and message.get("content"):
            later_user = str(message["content"])
        if role != "assistant":
            continue
        for call in message.get("tool_calls") or []:
            calls += 1
            name, arguments = str(call.get("name")), dict(call.get("arguments") or {})
            result = results.get(call.get("id"))
            last_call = _call_text(name, arguments)
            if result is not None and is_guard_denial(result):
                denials.append(f"{_call_text(name, arguments)}: {_quote(_last_line(result[:400]) or result)}")
                continue
            inspected, changed = call_files(CanonicalCall(name, arguments, name, arguments, True))
            for path in inspected:
                read.pop(path, None)
                read[path] = None
            for path in changed:
                edited.pop(path, None)
                edited[path] = None
            command = arguments.get("command")
            if name == "run_shell" and isinstance(command, str):
                last_command = (command, result)
    lines = [f"Task: {instruction}", ""]
    if not calls:
        lines.append("State so far: no tool call made yet.")
    else:
        lines += ["State so far:", f"- tool calls made: {calls}", f"- last call: {last_call}"]
        lines.append(f"- files read: {_listed(list(read))}")
        lines.append(f"- files edited: {_listed(list(edited))}")
        if last_command is not None:
            command, output = last_command
            if output is None:
                outcome = "no result"
            else:
                intent = command_intent(command)
                found = command_outcome(intent, None, None, output, command=command)
                outcome = found if found != "unknown" else "ran"
            line = f"- last command: `{' '.join(command.split())[:MAX_QUOTE]}` ({outcome})"
            if output and _last_line(output):
                line += f"; its output ends: {_quote(_last_line(output))}"
            lines.append(line)
        if denials:
            lines.append(f"- guard denials: {len(denials)}; the last: {denials[-1]}")
    if later_user is not None:
        lines.append(f"- the user added: {_quote(later_user)}")
    return "\n".join(lines)


def state_summary(messages: Sequence[Message]) -> list[Message]:
    """The history as [its system prompt, one user message with the task and the state]."""
    system = (
        messages[0] if messages and messages[0].get("role") == "system" else {"role": "system", "content": ""}
    )
    return [dict(system), {"role": "user", "content": state_text(messages)}]
