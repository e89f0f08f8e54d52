"""Where transcripts are read from: one root folder per agent format.

Each root has a default (the folder the tool itself writes to) and can be set
in run config, or by an environment variable when the definitions load:

| field            | default               | environment variable          |
| ---------------- | --------------------- | ----------------------------- |
| claude_code_root | ~/.claude/projects    | TRAJECTORY_CLAUDE_CODE_ROOT   |
| codex_root       | ~/.codex/sessions     | TRAJECTORY_CODEX_ROOT         |
| own_agent_root   | ~/.agent/logs         | TRAJECTORY_OWN_AGENT_ROOT     |
| chat_jsonl_root  | ~/.agent/chats        | TRAJECTORY_CHAT_JSONL_ROOT    |
| gemini_cli_root  | ~/.gemini/tmp         | TRAJECTORY_GEMINI_CLI_ROOT    |
| swe_agent_root   | (none)                | TRAJECTORY_SWE_AGENT_ROOT     |
| aider_root       | (none)                | TRAJECTORY_AIDER_ROOT         |

An empty value turns a source off. A root that does not exist is skipped with a
log line (most people run one or two of these agents); a root that exists but
cannot be read is an error, since silently skipping it would lose data.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import dagster as dg
from pydantic import Field

from trajectory_pipeline.ingest.days import SourceRoot

ENV_PREFIX = "TRAJECTORY_"
DEFAULT_ROOTS: dict[str, str] = {
    "claude_code": "~/.claude/projects",
    "codex": "~/.codex/sessions",
    "own_agent": "~/.agent/logs",
    "chat_jsonl": "~/.agent/chats",
    "gemini_cli": "~/.gemini/tmp",
    "swe_agent": "",
    "aider": "",
}


def _root_field(source: str, what: str) -> Any:
    env = f"{ENV_PREFIX}{source.upper()}_ROOT"
    return Field(
        default=os.environ.get(env, DEFAULT_ROOTS[source]),
        description=f"Folder holding {what}. Empty turns the source off. Default from ${env}.",
    )


class SessionSources(dg.ConfigurableResource):
    """The root folders that hold each agent's transcripts."""

    claude_code_root: str = _root_field(
        "claude_code", "Claude Code project folders (<project>/<session>.jsonl)"
    )
    codex_root: str = _root_field("codex", "Codex CLI rollouts (YYYY/MM/DD/rollout-*.jsonl)")
    own_agent_root: str = _root_field("own_agent", "your own agent's daily logs (session_YYYY-MM-DD.jsonl)")
    chat_jsonl_root: str = _root_field("chat_jsonl", 'chat-format JSONL files ({"messages": [...]} per line)')
    gemini_cli_root: str = _root_field("gemini_cli", "Gemini CLI chats (<hash>/chats/session-*.json)")
    swe_agent_root: str = _root_field("swe_agent", "SWE-agent trajectories (*.traj)")
    aider_root: str = _root_field("aider", "repositories holding .aider.chat.history.md files")

    def configured(self) -> dict[str, str]:
        return {source: getattr(self, f"{source}_root") for source in DEFAULT_ROOTS}

    def roots(self, log: logging.Logger | dg.DagsterLogManager | None = None) -> list[SourceRoot]:
        """The roots to read, checked: missing ones skipped with a log line, unreadable ones an error."""
        found = []
        for source, configured in self.configured().items():
            if not configured:
                continue
            root = Path(configured).expanduser()
            if not root.exists():
                if log is not None:
                    log.info(f"{source}: {root} does not exist, skipping this source")
                continue
            if not root.is_dir():
                raise dg.Failure(
                    f"{source}_root {root} is a file, not a folder. Point it at the folder that holds "
                    f"the {source} transcripts, or set it to an empty string to turn the source off."
                )
            try:
                with os.scandir(root):
                    pass
            except PermissionError as err:
                raise dg.Failure(
                    f"{source}_root {root} exists but cannot be read ({err.strerror}). Give this user "
                    "read access to it, or set the root to an empty string to turn the source off."
                ) from None
            found.append(SourceRoot(source, root))
        return found
