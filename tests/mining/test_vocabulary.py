"""Why this exists: decision points, their audits and replay scoring all read tool calls through
the canonical vocabulary, so a wrong rename (a path under the wrong key, an argv list left
unjoined, a patch hidden in a shell heredoc) would silently mislabel training targets. These
tables pin each source's mapping; the corpus tests run every call of the real transcripts and
of a generated sample corpus through it and pin how many are known, unknown, and incomplete.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.conftest import REAL_FOLDERS
from trajectory_pipeline.ingest.days import SourceRoot, candidate_files
from trajectory_pipeline.ingest.formats import FORMATS
from trajectory_pipeline.mining.vocabulary import (
    CANONICAL_TOOLS,
    CanonicalCall,
    canonicalize,
    missing_required,
    shell_command_text,
)
from trajectory_pipeline.sample.corpus import CorpusSpec, generate_corpus
from trajectory_pipeline.schema import Event

PATCH = "*** Begin Patch\n*** Update File: a.py\n@@\n-x = 1\n+x = 2\n*** End Patch"

Row = tuple[str, dict[str, Any] | None, str, dict[str, Any]]


def check(
    source: str, tool: str, tool_input: dict[str, Any] | None, name: str, arguments: dict[str, Any]
) -> None:
    # Feed the canonical JSON string raw_sessions stores, not the dict.
    stored = None if tool_input is None else orjson.dumps(tool_input).decode()
    call = canonicalize(source, tool, stored)
    assert (call.name, call.arguments) == (name, arguments)
    assert call.known is (name in CANONICAL_TOOLS)
    assert (call.source_name, call.source_arguments) == (tool, tool_input or {})
    assert missing_required(call) == ()


CLAUDE_CODE: list[Row] = [
    ("Read", {"file_path": "/r/a.py"}, "read_file", {"file_path": "/r/a.py"}),
    (
        "Read",
        {"file_path": "/r/a.py", "offset": 98, "limit": 30},
        "read_file",
        {"file_path": "/r/a.py", "offset": 98, "limit": 30},
    ),
    (
        "LS",
        {"path": "/r/src", "ignore": ["*.pyc"]},
        "list_directory",
        {"directory": "/r/src", "ignore": ["*.pyc"]},
    ),
    ("Glob", {"pattern": "**/*.ts", "path": "/r/src"}, "glob", {"pattern": "**/*.ts", "path": "/r/src"}),
    (
        "Grep",
        {"pattern": "def main", "path": "/r", "glob": "*.py", "output_mode": "content", "-n": True},
        "grep_files",
        {"pattern": "def main", "path": "/r", "glob": "*.py", "output_mode": "content", "-n": True},
    ),
    (
        "Edit",
        {"file_path": "/r/a.py", "old_string": "x = 1", "new_string": "x = 2", "replace_all": True},
        "edit_file",
        {"file_path": "/r/a.py", "old_string": "x = 1", "new_string": "x = 2", "replace_all": True},
    ),
    # Deleting text: an empty new_string is a real value, not a missing one.
    (
        "Edit",
        {"file_path": "/r/a.py", "old_string": "import os\n", "new_string": ""},
        "edit_file",
        {"file_path": "/r/a.py", "old_string": "import os\n", "new_string": ""},
    ),
    (
        "MultiEdit",
        {
            "file_path": "/r/a.py",
            "edits": [
                {"old_string": "a", "new_string": "b", "replace_all": True},
                {"old_string": "c", "new_string": "d"},
            ],
        },
        "edit_file",
        {
            "file_path": "/r/a.py",
            "old_string": "a",
            "new_string": "b",
            "replace_all": True,
            "edits": [{"old_string": "c", "new_string": "d"}],
        },
    ),
    (
        "MultiEdit",
        {"file_path": "/r/a.py", "edits": [{"old_string": "a", "new_string": "b"}]},
        "edit_file",
        {"file_path": "/r/a.py", "old_string": "a", "new_string": "b"},
    ),
    ("Write", {"file_path": "/r/b.py", "content": ""}, "write_file", {"file_path": "/r/b.py", "content": ""}),
    (
        "Bash",
        {"command": "pytest -q", "description": "Run tests", "timeout": 60000, "run_in_background": False},
        "run_shell",
        {"command": "pytest -q", "description": "Run tests", "timeout_ms": 60000, "run_in_background": False},
    ),
    ("NotebookRead", {"notebook_path": "/r/n.ipynb"}, "read_file", {"file_path": "/r/n.ipynb"}),
    (
        "NotebookEdit",
        {"notebook_path": "/r/n.ipynb", "cell_id": "c1", "new_source": "x = 1"},
        "NotebookEdit",
        {"notebook_path": "/r/n.ipynb", "cell_id": "c1", "new_source": "x = 1"},
    ),
    (
        "Task",
        {"description": "Explore", "prompt": "Find the router", "subagent_type": "Explore"},
        "Task",
        {"description": "Explore", "prompt": "Find the router", "subagent_type": "Explore"},
    ),
    ("TodoWrite", {"todos": []}, "TodoWrite", {"todos": []}),
    (
        "WebFetch",
        {"url": "https://x.test", "prompt": "p"},
        "WebFetch",
        {"url": "https://x.test", "prompt": "p"},
    ),
    ("WebSearch", {"query": "credo"}, "WebSearch", {"query": "credo"}),
    ("ExitPlanMode", None, "ExitPlanMode", {}),
]

CODEX: list[Row] = [
    (
        "shell",
        {"command": ["bash", "-lc", "pytest -q"], "workdir": "/r", "timeout_ms": 120000},
        "run_shell",
        {"command": "pytest -q", "workdir": "/r", "timeout_ms": 120000},
    ),
    ("shell", {"command": ["rg", "-n", "def main", "src"]}, "run_shell", {"command": "rg -n 'def main' src"}),
    ("shell", {"command": "ls -la"}, "run_shell", {"command": "ls -la"}),
    (
        "exec_command",
        {"cmd": "uv run pytest", "workdir": "/r", "yield_time_ms": 1000, "max_output_tokens": 12000},
        "run_shell",
        {"command": "uv run pytest", "workdir": "/r", "yield_time_ms": 1000, "max_output_tokens": 12000},
    ),
    (
        "shell_command",
        {"command": "git status", "workdir": "/r"},
        "run_shell",
        {"command": "git status", "workdir": "/r"},
    ),
    (
        "local_shell",
        {"type": "exec", "command": ["bash", "-lc", "make test"], "working_directory": "/r", "timeout_ms": 5},
        "run_shell",
        {"command": "make test", "workdir": "/r", "timeout_ms": 5},
    ),
    ("container.exec", {"cmd": ["git", "diff", "--check"]}, "run_shell", {"command": "git diff --check"}),
    ("apply_patch", {"input": PATCH}, "apply_patch", {"patch_text": PATCH}),
    ("apply_patch", {"patch": PATCH}, "apply_patch", {"patch_text": PATCH}),
    (
        "write_stdin",
        {"chars": "", "session_id": 48230, "yield_time_ms": 1000},
        "write_stdin",
        {"chars": "", "session_id": 48230, "yield_time_ms": 1000},
    ),
    (
        "update_plan",
        {"plan": [{"step": "s", "status": "completed"}]},
        "update_plan",
        {"plan": [{"step": "s", "status": "completed"}]},
    ),
    ("view_image", {"path": "/r/shot.png"}, "view_image", {"path": "/r/shot.png"}),
    ("web_search", {"query": "opencode"}, "web_search", {"query": "opencode"}),
]

OWN_AGENT: list[Row] = [
    ("bash", {"command": "npm test"}, "run_shell", {"command": "npm test"}),
    ("read_file", {"path": "src/app.py"}, "read_file", {"file_path": "src/app.py"}),
    (
        "write_file",
        {"path": "src/app.py", "content": "x = 2\n"},
        "write_file",
        {"file_path": "src/app.py", "content": "x = 2\n"},
    ),
    (
        "grep",
        {"pattern": "formatMoney(", "path": "src"},
        "grep_files",
        {"pattern": "formatMoney(", "path": "src"},
    ),
    ("list_dir", {"path": "internal"}, "list_directory", {"directory": "internal"}),
    (
        "edit_file",
        {"path": "a.py", "old_text": "x = 1", "new_text": "x = 2"},
        "edit_file",
        {"file_path": "a.py", "old_string": "x = 1", "new_string": "x = 2"},
    ),
    (
        "replace",
        {"file": "a.py", "search": "x = 1", "replace": "x = 2"},
        "edit_file",
        {"file_path": "a.py", "old_string": "x = 1", "new_string": "x = 2"},
    ),
    ("glob", {"pattern": "src/**/*.py", "dir": "."}, "glob", {"pattern": "src/**/*.py", "path": "."}),
    (
        "run_command",
        {"cmd": ["cargo", "test"], "cwd": "/r"},
        "run_shell",
        {"command": "cargo test", "workdir": "/r"},
    ),
    ("apply_patch", {"patch": PATCH}, "apply_patch", {"patch_text": PATCH}),
    # A key the table does not name rides along; a second path key is kept, not lost.
    (
        "read_file",
        {"path": "a.py", "file_path": "b.py", "encoding": "utf-8"},
        "read_file",
        {"file_path": "b.py", "path": "a.py", "encoding": "utf-8"},
    ),
    ("remember", {"note": "n"}, "remember", {"note": "n"}),
]

CHAT_JSONL: list[Row] = [
    ("read_file", {"path": "pyproject.toml"}, "read_file", {"file_path": "pyproject.toml"}),
    ("list_directory", {"path": "internal"}, "list_directory", {"directory": "internal"}),
    (
        "search_files",
        {"pattern": "elapsed", "path": "src"},
        "grep_files",
        {"pattern": "elapsed", "path": "src"},
    ),
    (
        "edit_file",
        {"path": "pyproject.toml", "old_text": "a", "new_text": "b"},
        "edit_file",
        {"file_path": "pyproject.toml", "old_string": "a", "new_string": "b"},
    ),
    ("write_file", {"path": "t.ts", "content": "x"}, "write_file", {"file_path": "t.ts", "content": "x"}),
    ("run_command", {"command": "uv run pytest"}, "run_shell", {"command": "uv run pytest"}),
]

GEMINI_CLI: list[Row] = [
    ("read_file", {"absolute_path": "/r/a.txt"}, "read_file", {"file_path": "/r/a.txt"}),
    (
        "read_file",
        {"file_path": "/r/a.txt", "offset": 10, "limit": 5},
        "read_file",
        {"file_path": "/r/a.txt", "offset": 10, "limit": 5},
    ),
    ("list_directory", {"dir_path": "/r/"}, "list_directory", {"directory": "/r/"}),
    ("list_directory", {"path": "/r/"}, "list_directory", {"directory": "/r/"}),
    ("glob", {"pattern": "**/*.md", "dir_path": "/r"}, "glob", {"pattern": "**/*.md", "path": "/r"}),
    (
        "search_file_content",
        {"pattern": "CredentialStore", "include": "*.ts"},
        "grep_files",
        {"pattern": "CredentialStore", "glob": "*.ts"},
    ),
    (
        "replace",
        {"file_path": "/r/a.txt", "old_string": "a", "new_string": "b", "instruction": "shorten"},
        "edit_file",
        {"file_path": "/r/a.txt", "old_string": "a", "new_string": "b", "instruction": "shorten"},
    ),
    (
        "write_file",
        {"file_path": "/r/b.txt", "content": "x"},
        "write_file",
        {"file_path": "/r/b.txt", "content": "x"},
    ),
    (
        "run_shell_command",
        {"command": "npm test", "directory": "pkg", "description": "Run tests"},
        "run_shell",
        {"command": "npm test", "workdir": "pkg", "description": "Run tests"},
    ),
    ("read_many_files", {"paths": ["a", "b"]}, "read_many_files", {"paths": ["a", "b"]}),
]

SWE_AGENT: list[Row] = [
    ("bash", {"command": "python reproduce.py"}, "run_shell", {"command": "python reproduce.py"}),
    (
        "open",
        {"path": "src/f.py", "line_number": 1474},
        "read_file",
        {"file_path": "src/f.py", "line_number": 1474},
    ),
    (
        "find_file",
        {"file_name": "fields.py", "dir": "src"},
        "glob",
        {"pattern": "**/fields.py", "path": "src"},
    ),
    (
        "search_dir",
        {"search_term": "TimeDelta", "dir": "src"},
        "grep_files",
        {"pattern": "TimeDelta", "path": "src"},
    ),
    (
        "search_file",
        {"search_term": "round", "file": "f.py"},
        "grep_files",
        {"pattern": "round", "path": "f.py"},
    ),
    (
        "str_replace_editor",
        {"command": "view", "path": "/testbed/src/f.py", "view_range": [1, 20]},
        "read_file",
        {"file_path": "/testbed/src/f.py", "view_range": [1, 20]},
    ),
    (
        "str_replace_editor",
        {"command": "view", "path": "/testbed"},
        "list_directory",
        {"directory": "/testbed"},
    ),
    (
        "str_replace_editor",
        {"command": "create", "path": "/testbed/r.py", "file_text": "print(1)\n"},
        "write_file",
        {"file_path": "/testbed/r.py", "content": "print(1)\n"},
    ),
    (
        "str_replace_editor",
        {"command": "str_replace", "path": "/testbed/f.py", "old_str": "a", "new_str": "b"},
        "edit_file",
        {"file_path": "/testbed/f.py", "old_string": "a", "new_string": "b"},
    ),
    (
        "str_replace_editor",
        {"command": "insert", "path": "/testbed/f.py", "insert_line": 3, "new_str": "b"},
        "str_replace_editor",
        {"command": "insert", "path": "/testbed/f.py", "insert_line": 3, "new_str": "b"},
    ),
    (
        "edit",
        {"start_line": 1, "end_line": 1, "replacement_text": "x"},
        "edit",
        {"start_line": 1, "end_line": 1, "replacement_text": "x"},
    ),
    ("create", {"filename": "reproduce.py"}, "create", {"filename": "reproduce.py"}),
    ("submit", None, "submit", {}),
    # Text actions (SWE-agent 0.x) arrive as bash calls and are read as the command they name.
    (
        "bash",
        {"command": "open pkg/numpy_handler.py 293"},
        "read_file",
        {"file_path": "pkg/numpy_handler.py", "line_number": 293},
    ),
    ("bash", {"command": 'find_file "numpy_handler.py"'}, "glob", {"pattern": "**/numpy_handler.py"}),
    ("bash", {"command": "search_dir 'def f' src"}, "grep_files", {"pattern": "def f", "path": "src"}),
    (
        "bash",
        {"command": "edit 287:295\n    x = 1\n    y = 2\nend_of_edit"},
        "edit",
        {"start_line": 287, "end_line": 295, "replacement_text": "    x = 1\n    y = 2"},
    ),
    ("bash", {"command": "create reproduce_bug.py"}, "create", {"filename": "reproduce_bug.py"}),
    ("bash", {"command": "submit"}, "submit", {}),
    ("bash", {"command": "goto 120"}, "goto", {"line_number": 120}),
]

AIDER: list[Row] = [
    (
        "search_replace",
        {"file_path": "m.sh", "old_string": "# 5.", "new_string": "# 6."},
        "edit_file",
        {"file_path": "m.sh", "old_string": "# 5.", "new_string": "# 6."},
    ),
    # An empty SEARCH section is how aider creates a file.
    (
        "search_replace",
        {"file_path": "m.py", "old_string": "", "new_string": "print(1)\n"},
        "write_file",
        {"file_path": "m.py", "content": "print(1)\n"},
    ),
]


@pytest.mark.parametrize(("tool", "tool_input", "name", "arguments"), CLAUDE_CODE)
def test_claude_code(
    tool: str, tool_input: dict[str, Any] | None, name: str, arguments: dict[str, Any]
) -> None:
    check("claude_code", tool, tool_input, name, arguments)


@pytest.mark.parametrize(("tool", "tool_input", "name", "arguments"), CODEX)
def test_codex(tool: str, tool_input: dict[str, Any] | None, name: str, arguments: dict[str, Any]) -> None:
    check("codex", tool, tool_input, name, arguments)


@pytest.mark.parametrize(("tool", "tool_input", "name", "arguments"), OWN_AGENT)
def test_own_agent(
    tool: str, tool_input: dict[str, Any] | None, name: str, arguments: dict[str, Any]
) -> None:
    check("own_agent", tool, tool_input, name, arguments)


@pytest.mark.parametrize(("tool", "tool_input", "name", "arguments"), CHAT_JSONL)
def test_chat_jsonl(
    tool: str, tool_input: dict[str, Any] | None, name: str, arguments: dict[str, Any]
) -> None:
    check("chat_jsonl", tool, tool_input, name, arguments)


@pytest.mark.parametrize(("tool", "tool_input", "name", "arguments"), GEMINI_CLI)
def test_gemini_cli(
    tool: str, tool_input: dict[str, Any] | None, name: str, arguments: dict[str, Any]
) -> None:
    check("gemini_cli", tool, tool_input, name, arguments)


@pytest.mark.parametrize(("tool", "tool_input", "name", "arguments"), SWE_AGENT)
def test_swe_agent(
    tool: str, tool_input: dict[str, Any] | None, name: str, arguments: dict[str, Any]
) -> None:
    check("swe_agent", tool, tool_input, name, arguments)


@pytest.mark.parametrize(("tool", "tool_input", "name", "arguments"), AIDER)
def test_aider(tool: str, tool_input: dict[str, Any] | None, name: str, arguments: dict[str, Any]) -> None:
    check("aider", tool, tool_input, name, arguments)


@pytest.mark.parametrize(
    ("argv", "text"),
    [
        (["bash", "-lc", "pytest -q"], "pytest -q"),
        (["sh", "-c", "cd pkg && npm test"], "cd pkg && npm test"),
        (["/bin/zsh", "-l", "-c", "make"], "make"),
        (["bash", "script.sh"], "bash script.sh"),  # a script file, not -c: stays argv
        (["bash", "-lc"], "bash -lc"),
        (["rg", "-n", "a b", "src"], "rg -n 'a b' src"),
        (["git", "status"], "git status"),
        ("already a string", "already a string"),
        ([], []),
    ],
)
def test_shell_argv_becomes_one_command(argv: object, text: object) -> None:
    assert shell_command_text(argv) == text


@pytest.mark.parametrize(
    ("tool_input", "arguments"),
    [
        ({"command": ["bash", "-lc", f"apply_patch <<'EOF'\n{PATCH}\nEOF\n"]}, {"patch_text": PATCH}),
        (
            {"command": ["bash", "-lc", f'cd pkg && apply_patch <<"PATCH"\n{PATCH}\nPATCH'], "workdir": "/r"},
            {"patch_text": PATCH, "workdir": "/r/pkg"},
        ),
        ({"command": ["apply_patch", PATCH], "workdir": "/r"}, {"patch_text": PATCH, "workdir": "/r"}),
        (
            {"command": f"applypatch <<EOF\n{PATCH}\nEOF", "timeout_ms": 5},
            {"patch_text": PATCH, "timeout_ms": 5},
        ),
    ],
)
def test_shell_that_only_applies_a_patch_is_apply_patch(
    tool_input: dict[str, Any], arguments: dict[str, Any]
) -> None:
    call = canonicalize("codex", "shell", tool_input)
    assert (call.name, call.arguments, call.known) == ("apply_patch", arguments, True)
    assert call.source_name == "shell"


def test_heredoc_patch_from_exec_command_and_other_sources() -> None:
    assert (
        canonicalize("codex", "exec_command", {"cmd": f"apply_patch <<'EOF'\n{PATCH}\nEOF"}).name
        == "apply_patch"
    )
    assert (
        canonicalize("claude_code", "Bash", {"command": f"apply_patch <<'EOF'\n{PATCH}\nEOF"}).name
        == "apply_patch"
    )


@pytest.mark.parametrize(
    "command",
    [
        f"apply_patch <<'EOF'\n{PATCH}\nEOF\npytest -q",  # more work after the patch
        "git apply fix.patch",
        "cat apply_patch.md",
    ],
)
def test_shell_that_does_more_than_a_patch_stays_run_shell(command: str) -> None:
    call = canonicalize("codex", "shell", {"command": ["bash", "-lc", command]})
    assert (call.name, call.arguments) == ("run_shell", {"command": command})


def test_unknown_tool_keeps_its_name_and_arguments() -> None:
    stored = '{"server":"github","q":"x"}'
    call = canonicalize("claude_code", "mcp__github__search", stored)
    assert call == CanonicalCall(
        "mcp__github__search",
        {"server": "github", "q": "x"},
        "mcp__github__search",
        {"server": "github", "q": "x"},
        False,
    )
    assert missing_required(call) == ()


@pytest.mark.parametrize("stored", ["{not json", "[1, 2]", '"ls -la"'])
def test_text_that_is_not_a_json_object_is_kept_raw(stored: str) -> None:
    call = canonicalize("claude_code", "Bash", stored)
    assert (call.name, call.known) == ("run_shell", True)
    assert call.arguments == call.source_arguments == {"raw": stored}
    assert missing_required(call) == ("command",)
    unknown = canonicalize("codex", "write_stdin", stored)
    assert unknown.arguments == {"raw": stored}


@pytest.mark.parametrize("stored", [None, "", "  "])
def test_no_input_is_no_arguments(stored: str | None) -> None:
    call = canonicalize("swe_agent", "submit", stored)
    assert (call.arguments, call.source_arguments) == ({}, {})


def test_a_dict_input_is_not_changed_in_place() -> None:
    tool_input = {"path": "a.py"}
    call = canonicalize("own_agent", "read_file", tool_input)
    assert call.arguments == {"file_path": "a.py"}
    assert tool_input == call.source_arguments == {"path": "a.py"}


def test_unknown_source_is_refused() -> None:
    with pytest.raises(ValueError, match=r"source must be one of .*got 'cursor'"):
        canonicalize("cursor", "read_file", None)


@pytest.mark.parametrize(
    ("source", "tool", "tool_input", "missing"),
    [
        ("claude_code", "Read", {}, ("file_path",)),
        ("claude_code", "Read", {"file_path": "  "}, ("file_path",)),
        ("claude_code", "Edit", {"file_path": "a.py", "old_string": "", "new_string": ""}, ("old_string",)),
        ("claude_code", "Edit", {"file_path": "a.py"}, ("old_string", "new_string")),
        ("claude_code", "Write", {"file_path": "a.py", "content": None}, ("content",)),
        ("claude_code", "MultiEdit", {"file_path": "a.py", "edits": []}, ("old_string", "new_string")),
        ("claude_code", "Grep", {"pattern": "", "path": "src"}, ("pattern",)),
        ("codex", "shell", {"command": []}, ("command",)),
        ("codex", "exec_command", {"raw": "[REDACTED_ARGUMENTS len=153 sha=23291271]"}, ("command",)),
        ("codex", "apply_patch", {"input": None}, ("patch_text",)),
        ("own_agent", "list_dir", {}, ("directory",)),
        ("swe_agent", "find_file", {"file_name": ""}, ("pattern",)),
        ("codex", "write_stdin", {}, ()),
    ],
)
def test_missing_required(
    source: str, tool: str, tool_input: dict[str, Any], missing: tuple[str, ...]
) -> None:
    assert missing_required(canonicalize(source, tool, tool_input)) == missing


def _calls(roots: list[SourceRoot]) -> list[tuple[Event, CanonicalCall]]:
    calls = []
    for file in candidate_files(roots):
        for item in FORMATS[file.source].parse(file.path):
            if isinstance(item, Event) and item.kind == "tool_call":
                assert item.tool_name is not None
                calls.append((item, canonicalize(item.source, item.tool_name, item.tool_input)))
    return calls


def test_every_real_tool_call(real_corpus: Path) -> None:
    calls = _calls([SourceRoot(source, real_corpus / folder) for source, folder in REAL_FOLDERS.items()])
    known = Counter((event.source, call.name) for event, call in calls if call.known)
    unknown = Counter((event.source, call.name) for event, call in calls if not call.known)
    assert known == {
        ("claude_code", "run_shell"): 136,
        ("claude_code", "read_file"): 93,
        ("claude_code", "edit_file"): 56,
        ("claude_code", "grep_files"): 21,
        ("claude_code", "glob"): 20,
        ("claude_code", "write_file"): 16,
        ("codex", "run_shell"): 118,  # exec_command 115, shell 3
        ("codex", "apply_patch"): 25,
        ("gemini_cli", "read_file"): 13,
        ("gemini_cli", "write_file"): 4,
        ("gemini_cli", "list_directory"): 1,
        ("gemini_cli", "grep_files"): 1,
        ("gemini_cli", "edit_file"): 1,
        ("swe_agent", "run_shell"): 8,
        ("swe_agent", "read_file"): 3,  # one of them the text action `open ... 293`
        ("swe_agent", "glob"): 3,  # find_file, one as a text action
        ("aider", "edit_file"): 6,
        ("aider", "write_file"): 2,  # two files created from an empty SEARCH
    }
    assert unknown == {
        ("claude_code", "TodoWrite"): 9,
        ("claude_code", "WebSearch"): 6,
        ("claude_code", "Task"): 5,
        ("claude_code", "AskUserQuestion"): 2,
        ("claude_code", "WebFetch"): 2,
        ("claude_code", "ExitPlanMode"): 1,
        ("claude_code", "TaskOutput"): 1,
        ("codex", "write_stdin"): 63,
        ("codex", "update_plan"): 4,
        ("codex", "web_search"): 4,
        ("gemini_cli", "write_todos"): 3,
        ("gemini_cli", "delegate_to_agent"): 1,
        ("swe_agent", "edit"): 9,  # line-range edits of the open file, 5 of them text actions
        ("swe_agent", "submit"): 3,
        ("swe_agent", "create"): 2,
    }
    # Incomplete calls: only localpush's exec_commands, whose arguments the origin replaced
    # with a marker before publishing (SOURCES.md), so there is no command to recover.
    incomplete = [(event, call) for event, call in calls if missing_required(call)]
    assert len(incomplete) == 72
    for event, call in incomplete:
        assert "/localpush/" in event.source_path
        assert (call.source_name, missing_required(call)) == ("exec_command", ("command",))
        assert list(call.arguments) == ["raw"]
        assert call.arguments["raw"].startswith("[REDACTED_ARGUMENTS len=")
    # The older Codex `shell` calls were argv lists; they arrive as one unwrapped string.
    shells = [call.arguments["command"] for event, call in calls if call.source_name == "shell"]
    assert shells and all(isinstance(command, str) and not command.startswith("bash") for command in shells)


def test_every_sample_corpus_tool_call(tmp_path: Path) -> None:
    generate_corpus(tmp_path, CorpusSpec(days=2, sessions_per_day=4, malformed_lines=False))
    folders = {"claude_code": "claude", "codex": "codex", "own_agent": "agent_logs", "chat_jsonl": "chat"}
    calls = _calls([SourceRoot(source, tmp_path / folder) for source, folder in folders.items()])
    assert {event.source for event, _ in calls} == set(folders)
    # Every call the generator writes is canonical except sub-agent launches and stdin polls.
    unknown = {(event.source, call.name) for event, call in calls if not call.known}
    assert unknown <= {("claude_code", "Task"), ("codex", "write_stdin")}
    assert [call for _, call in calls if missing_required(call)] == []
    assert {"read_file", "grep_files", "edit_file", "write_file", "apply_patch", "run_shell"} <= {
        call.name for _, call in calls
    }
