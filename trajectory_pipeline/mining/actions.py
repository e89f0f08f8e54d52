"""What kind of action a tool call is, and what mining learned about each call.

`action_class` puts a canonical call in one of five classes (inspect / edit /
patch / verification / other); the workflow shape of an attempt and the labels
of a decision point are both built from it. `CallInfo` is one assistant tool
call of an attempt as mining annotates it; decision points reuse those
annotations rather than recomputing them.
"""

from __future__ import annotations

from typing import NamedTuple

from trajectory_pipeline.mining.verification import VERIFICATION_INTENTS, command_intent
from trajectory_pipeline.mining.vocabulary import CanonicalCall

ACTION_CLASSES = ("inspect", "edit", "patch", "verification", "other")
INSPECT_TOOLS = frozenset({"read_file", "list_directory", "glob", "grep_files"})
EDIT_TOOLS = frozenset({"edit_file", "write_file"})
DECISIVE_TOOLS = frozenset({"edit_file", "write_file", "apply_patch", "run_shell"})
# Shell intents that only look at the workspace.
INSPECT_INTENTS = frozenset({"git_status", "git_diff", "git_log", "list", "read", "search"})


def shell_command(call: CanonicalCall) -> str:
    command = call.arguments.get("command")
    return command if isinstance(command, str) else ""


def action_class(call: CanonicalCall) -> str:
    """inspect / edit / patch / verification / other."""
    if call.name in INSPECT_TOOLS:
        return "inspect"
    if call.name in EDIT_TOOLS:
        return "edit"
    if call.name == "apply_patch":
        return "patch"
    if call.name == "run_shell":
        intent = command_intent(shell_command(call))
        if intent in VERIFICATION_INTENTS:
            return "verification"
        if intent in INSPECT_INTENTS:
            return "inspect"
    return "other"


def is_decisive(call: CanonicalCall) -> bool:
    """Calls that change or run something (edit, write, patch, shell): the decisions that matter most."""
    return call.name in DECISIVE_TOOLS


class CallInfo(NamedTuple):
    """One assistant tool call of an attempt, with its result and its guard context."""

    ordinal: int  # position of the tool_call event in order_session_events order
    call: CanonicalCall
    action_class: str
    decisive: bool
    tool_call_id: str | None
    is_sidechain: bool
    result_ordinal: int | None  # the linked tool_result event, when there is one
    result_text: str | None
    is_error: bool  # the result says the call failed (or was refused)
    verification_intent: str | None  # for verification calls: pytest, npm_test, ...
    verification_outcome: str | None  # passed / failed / unknown, for verification calls
    guard_denied: bool  # a person, hook or sandbox refused this call
    first_action: bool  # the first tool call of the attempt
    after_guard: bool  # the previous call of the attempt was refused by a guard
    guard_recovery: bool  # after a guard, and a different action from the refused one
    repeated_inspection_after_guard: bool  # after a guard, an inspection already made before it
