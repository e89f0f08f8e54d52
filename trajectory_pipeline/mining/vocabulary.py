"""The canonical tool vocabulary: every source's tool calls under one set of names and keys.

Decision points and replay scoring compare tool calls across sources, so each call is
mapped onto the eight canonical tools (docs/design.md, "Canonical tool vocabulary"), with the
source's own name and arguments kept beside:

    from trajectory_pipeline.mining.vocabulary import canonicalize, missing_required
    call = canonicalize("claude_code", "Read", '{"file_path": "src/app.py", "limit": 40}')
    call.name, call.arguments   # ("read_file", {"file_path": "src/app.py", "limit": 40})
    missing_required(call)      # ()

The tables are pinned by tests/mining/test_vocabulary.py (`pytest tests/mining/test_vocabulary.py`), which
also runs every tool call of the real transcripts and of a generated sample corpus through them.

How the table works. `TABLES[source][tool name]` is either a `Rule` (the canonical tool, and
for each canonical key the source keys that may hold it, first present wins; the canonical
name itself is always tried first) or a chooser, a small function for a tool whose canonical
form depends on its arguments. Keys no rule names are kept as they are, so nothing is dropped
silently; the only keys consumed are the ones that decided the mapping (noted below). A tool
the table does not name keeps its own name and arguments with `known=False`.

Canonical optional keys, where a source has the same idea under another name:
read_file offset / limit; glob path; grep_files path / glob (Gemini's `include`); edit_file
replace_all; run_shell workdir (Codex `workdir`, local_shell `working_directory`, Gemini
`directory`), timeout_ms (Claude's Bash `timeout`, which is in milliseconds), description;
apply_patch workdir.

Decisions, per source:
- Claude Code: Read, LS, Glob, Grep, Edit, Write, Bash, and NotebookRead (a read of a file)
  map directly. MultiEdit becomes edit_file with its first edit's old_string / new_string /
  replace_all promoted to canonical keys and the remaining edits kept, in order, under
  `edits` (absent when there was one edit), so the call stays one decisive edit with nothing
  lost. NotebookEdit keeps its own name: it replaces a whole cell by id, with no old text.
  Task, TodoWrite, WebFetch, WebSearch, AskUserQuestion, ExitPlanMode... keep their names.
- Codex: shell / shell_command / exec_command / local_shell / container.exec become
  run_shell with `command` as one string: an argv list `[bash|sh|zsh, -lc|-c, SCRIPT]` is
  unwrapped to SCRIPT, any other argv is joined with `shlex.join`. apply_patch (the custom
  tool's `input`, or a function's `input` / `patch`) becomes apply_patch{patch_text}, and so
  does a shell command that is nothing but `apply_patch <<'EOF' ... EOF` (optionally after
  `cd DIR &&`, which becomes workdir) or the argv `["apply_patch", PATCH]`; this holds for
  every source's run_shell. local_shell's `type: "exec"` is consumed. write_stdin (polls a
  running command), update_plan, view_image, web_search keep their names.
- Own agent and chat JSONL: home-made tools, so one table of common names and keys serves
  both (read_file{path}, list_dir / list_directory{path}, grep / search_files{pattern, path},
  edit_file / replace{path, old_text, new_text}, write_file{path, content}, bash /
  run_command{command}...).
- Gemini CLI: read_file, list_directory, glob, search_file_content, replace, write_file and
  run_shell_command map directly (older `absolute_path`, newer `dir_path` included);
  read_many_files, write_todos, delegate_to_agent, web_fetch... keep their names.
- SWE-agent: bash → run_shell; open → read_file (its `line_number` is the centre of a
  window, not an offset, so it keeps its name); find_file → glob{pattern: "**/" + file_name,
  path: dir} (find_file searches the tree recursively); search_file / search_dir →
  grep_files{pattern: search_term, path}. str_replace_editor by its `command`, which is
  consumed: view → read_file, or list_directory when the path ends in `/` or its last part
  has no dot (a guess: the editor lists directories, and the log does not say which the path
  is); create → write_file; str_replace → edit_file; insert and undo_edit keep the name
  str_replace_editor. `edit` (line-range or search/replace in the open file, which it does not
  name), `create` (an empty file), goto, scroll_*, submit keep their names. Text-action
  trajectories (SWE-agent 0.x) reach us as bash calls whose command is the action; when its
  first word is one of these commands (`open path 293`, `find_file name`, `edit 1:3\\n...
  end_of_edit`, `submit`...) it is read as that command with the function-calling keys.
- aider: search_replace → edit_file; an empty SEARCH section is aider's way to create a file,
  so that block becomes write_file{file_path, content: the REPLACE text}.

`missing_required` reports required keys that are absent or empty. new_string and content
may be empty strings (deleting text, writing an empty file), but must be present.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import orjson

from trajectory_pipeline.ingest.stores import vocabulary_of

# docs/design.md: canonical tool → required arguments.
CANONICAL_TOOLS: dict[str, tuple[str, ...]] = {
    "read_file": ("file_path",),
    "list_directory": ("directory",),
    "glob": ("pattern",),
    "grep_files": ("pattern",),
    "edit_file": ("file_path", "old_string", "new_string"),
    "write_file": ("file_path", "content"),
    "apply_patch": ("patch_text",),
    "run_shell": ("command",),
}

# Required keys whose empty string is a real value: deleting text, writing an empty file.
MAY_BE_EMPTY = frozenset({"new_string", "content"})

Args = dict[str, Any]


class CanonicalCall(NamedTuple):
    name: str  # canonical name, or the source's own name when unknown
    arguments: dict[str, Any]  # canonical keys (or the source's own arguments when unknown)
    source_name: str
    source_arguments: dict[str, Any]
    known: bool  # whether the tool maps onto the canonical vocabulary


@dataclass(frozen=True)
class Rule:
    """One source tool → one canonical tool: canonical key ← the source keys that may hold it."""

    tool: str
    keys: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.tool not in CANONICAL_TOOLS:
            raise ValueError(f"Rule tool must be one of {sorted(CANONICAL_TOOLS)}, got {self.tool!r}")

    def apply(self, args: Args) -> Args:
        out: Args = {}
        used: set[str] = set()
        for canonical, aliases in self.keys.items():
            for key in (canonical, *aliases):
                if key in args and key not in used:
                    out[canonical] = args[key]
                    used.add(key)
                    break
        for key, value in args.items():
            if key in used:
                continue
            # A leftover source key that collides with a canonical key filled from an alias.
            while key in out:
                key = f"source_{key}"
            out[key] = value
        return out


# A chooser picks the mapping from the arguments: a Rule, another entry to resolve, or a name
# (str) under which the call stays unknown; with the arguments that mapping should see.
Chooser = Callable[[Args], tuple["Rule | Chooser | str", Args]]
Entry = Rule | Chooser


# --- run_shell: one command string, or apply_patch in disguise ---------------------------------

_SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh"})
_PATCH_TOOLS = frozenset({"apply_patch", "applypatch"})
_HEREDOC_PATCH = re.compile(
    r"\A\s*(?:cd\s+(?P<cd>'[^']*'|\"[^\"]*\"|[^\s&;|]+)\s*&&\s*)?"
    r"(?:apply_patch|applypatch)\s*<<-?\s*(?P<q>['\"]?)(?P<tag>\w+)(?P=q)[ \t]*\n"
    r"(?P<body>.*?)\n?[ \t]*(?P=tag)\s*\Z",
    re.DOTALL,
)


def shell_command_text(command: object) -> object:
    """A command as one string: `[bash, -lc, SCRIPT]` → SCRIPT, other argv → shlex.join; else as is."""
    if not isinstance(command, list) or not command or not all(isinstance(a, str) for a in command):
        return command
    if (
        len(command) >= 3
        and posixpath.basename(command[0]) in _SHELLS
        and all(flag.startswith("-") for flag in command[1:-1])
        and any("c" in flag.lstrip("-") for flag in command[1:-1])
    ):
        return command[-1]
    return shlex.join(command)


def _patch_call(arguments: Args, raw_command: object) -> Args | None:
    """apply_patch arguments when the command is only an apply_patch invocation, else None."""
    patch: str | None = None
    cd: str | None = None
    if (
        isinstance(raw_command, list)
        and len(raw_command) == 2
        and all(isinstance(a, str) for a in raw_command)
        and posixpath.basename(raw_command[0]) in _PATCH_TOOLS
    ):
        patch = raw_command[1]
    elif isinstance(command := arguments.get("command"), str) and (match := _HEREDOC_PATCH.match(command)):
        patch = match.group("body")
        if match.group("cd"):
            cd = shlex.split(match.group("cd"))[0]
    if patch is None:
        return None
    out: Args = {"patch_text": patch}
    workdir = arguments.get("workdir")
    if cd is not None:
        workdir = posixpath.join(workdir, cd) if isinstance(workdir, str) else cd
    if workdir is not None:
        out["workdir"] = workdir
    out.update((k, v) for k, v in arguments.items() if k not in ("command", "workdir"))
    return out


def _finish_shell(arguments: Args) -> tuple[str, Args]:
    raw = arguments.get("command")
    arguments = {**arguments, "command": shell_command_text(raw)} if "command" in arguments else arguments
    patch = _patch_call(arguments, raw)
    return ("apply_patch", patch) if patch is not None else ("run_shell", arguments)


# --- Claude Code -----------------------------------------------------------------------------

_EDIT = Rule("edit_file", {"file_path": (), "old_string": (), "new_string": (), "replace_all": ()})


def _multi_edit(args: Args) -> tuple[Entry | str, Args]:
    edits = args.get("edits")
    if not isinstance(edits, list) or not edits or not isinstance(edits[0], dict):
        return _EDIT, args  # nothing to promote: the call shows its missing keys
    first, rest = edits[0], edits[1:]
    out = {k: v for k, v in args.items() if k != "edits"}
    out.update(first)
    if rest:
        out["edits"] = rest
    return _EDIT, out


CLAUDE_CODE: dict[str, Entry] = {
    "Read": Rule("read_file", {"file_path": (), "offset": (), "limit": ()}),
    "NotebookRead": Rule("read_file", {"file_path": ("notebook_path",)}),
    "LS": Rule("list_directory", {"directory": ("path",)}),
    "Glob": Rule("glob", {"pattern": (), "path": ()}),
    "Grep": Rule("grep_files", {"pattern": (), "path": (), "glob": ()}),
    "Edit": _EDIT,
    "MultiEdit": _multi_edit,
    "Write": Rule("write_file", {"file_path": (), "content": ()}),
    "Bash": Rule("run_shell", {"command": (), "timeout_ms": ("timeout",), "description": ()}),
}


# --- Codex -----------------------------------------------------------------------------------


def _local_shell(args: Args) -> tuple[Entry | str, Args]:
    rule = Rule("run_shell", {"command": (), "workdir": ("working_directory",), "timeout_ms": ()})
    if args.get("type") == "exec":
        args = {k: v for k, v in args.items() if k != "type"}
    return rule, args


CODEX: dict[str, Entry] = {
    "shell": Rule("run_shell", {"command": (), "workdir": (), "timeout_ms": ()}),
    "shell_command": Rule("run_shell", {"command": (), "workdir": (), "timeout_ms": ()}),
    "exec_command": Rule("run_shell", {"command": ("cmd",), "workdir": ()}),
    "container.exec": Rule("run_shell", {"command": ("cmd",), "workdir": (), "timeout_ms": ()}),
    "local_shell": _local_shell,
    "apply_patch": Rule("apply_patch", {"patch_text": ("input", "patch")}),
}


# --- own agent and chat JSONL: home-made tools -----------------------------------------------

_PATH = ("path", "file", "filename", "filepath", "target_file", "absolute_path")
_READ = Rule("read_file", {"file_path": _PATH, "offset": (), "limit": ()})
_LIST = Rule("list_directory", {"directory": ("path", "dir", "dir_path", "folder")})
_GLOB = Rule("glob", {"pattern": ("glob",), "path": ("dir", "directory")})
_GREP = Rule(
    "grep_files",
    {"pattern": ("query", "regex", "search_term"), "path": ("dir", "directory"), "glob": ("include",)},
)
_EDIT_ANY = Rule(
    "edit_file",
    {
        "file_path": _PATH,
        "old_string": ("old_text", "old_str", "old", "search"),
        "new_string": ("new_text", "new_str", "new", "replace"),
        "replace_all": (),
    },
)
_WRITE = Rule("write_file", {"file_path": _PATH, "content": ("contents", "text", "file_text")})
_PATCH = Rule("apply_patch", {"patch_text": ("patch", "input", "diff")})
_SHELL = Rule("run_shell", {"command": ("cmd", "script"), "workdir": ("cwd", "working_directory")})

HOME_MADE: dict[str, Entry] = {
    **dict.fromkeys(("read_file", "read", "view_file", "open_file", "cat"), _READ),
    **dict.fromkeys(("list_dir", "list_directory", "list_files", "ls"), _LIST),
    **dict.fromkeys(("glob", "find_files", "glob_files"), _GLOB),
    **dict.fromkeys(("grep", "grep_files", "search_files", "grep_search", "search_code", "rg"), _GREP),
    **dict.fromkeys(("edit_file", "replace", "str_replace", "replace_in_file", "search_replace"), _EDIT_ANY),
    **dict.fromkeys(("write_file", "create_file", "write"), _WRITE),
    **dict.fromkeys(("apply_patch", "patch"), _PATCH),
    **dict.fromkeys(
        ("bash", "shell", "sh", "run_command", "run_shell", "run_shell_command", "execute_command"), _SHELL
    ),
}


# --- Gemini CLI ------------------------------------------------------------------------------

GEMINI_CLI: dict[str, Entry] = {
    "read_file": Rule("read_file", {"file_path": ("absolute_path", "path"), "offset": (), "limit": ()}),
    "list_directory": Rule("list_directory", {"directory": ("path", "dir_path")}),
    "glob": Rule("glob", {"pattern": (), "path": ("dir_path",)}),
    "search_file_content": Rule("grep_files", {"pattern": (), "path": ("dir_path",), "glob": ("include",)}),
    "replace": _EDIT,
    "write_file": Rule("write_file", {"file_path": ("absolute_path",), "content": ()}),
    "run_shell_command": Rule(
        "run_shell", {"command": (), "workdir": ("directory", "dir_path"), "description": ()}
    ),
}


# --- SWE-agent -------------------------------------------------------------------------------


def _find_file(args: Args) -> tuple[Entry | str, Args]:
    out = {k: v for k, v in args.items() if k != "file_name"}
    name = args.get("file_name")
    if isinstance(name, str) and name:
        out["pattern"] = name if name.startswith("**/") else f"**/{name}"
    elif "file_name" in args:
        out["file_name"] = name
    return Rule("glob", {"pattern": (), "path": ("dir",)}), out


def _looks_like_directory(path: object) -> bool:
    return isinstance(path, str) and (path.endswith("/") or "." not in posixpath.basename(path))


def _str_replace_editor(args: Args) -> tuple[Entry | str, Args]:
    command = args.get("command")
    rest = {k: v for k, v in args.items() if k != "command"}
    if command == "view":
        if _looks_like_directory(args.get("path")):
            return Rule("list_directory", {"directory": ("path",)}), rest
        return Rule("read_file", {"file_path": ("path",)}), rest
    if command == "create":
        return Rule("write_file", {"file_path": ("path",), "content": ("file_text",)}), rest
    if command == "str_replace":
        return Rule(
            "edit_file", {"file_path": ("path",), "old_string": ("old_str",), "new_string": ("new_str",)}
        ), rest
    return "str_replace_editor", args


# SWE-agent 0.x text commands without a body → their positional parameters, named as the
# function-calling tools name them.
_SWE_COMMANDS: dict[str, tuple[str, ...]] = {
    "open": ("path", "line_number"),
    "create": ("filename",),
    "find_file": ("file_name", "dir"),
    "search_dir": ("search_term", "dir"),
    "search_file": ("search_term", "file"),
    "goto": ("line_number",),
    "scroll_up": (),
    "scroll_down": (),
    "submit": (),
}


def _int_or_text(text: str) -> int | str:
    return int(text) if text.isdigit() else text


def _swe_text_action(command: str) -> tuple[str, Args] | None:
    """A SWE-agent 0.x text action (`open path 12`, `edit 3:5\\n...\\nend_of_edit`) as name and arguments."""
    first, _, body = command.strip().partition("\n")
    try:
        words = shlex.split(first)
    except ValueError:
        return None
    if not words:
        return None
    name, params = words[0], words[1:]
    if name == "edit" and len(params) == 1 and (lines := re.fullmatch(r"(\d+):(\d+)", params[0])):
        text = body.removesuffix("end_of_edit").removesuffix("\n")
        return name, {"start_line": int(lines[1]), "end_line": int(lines[2]), "replacement_text": text}
    if body:
        return None  # only edit carries a body
    keys = _SWE_COMMANDS.get(name)
    if keys is None or len(params) > len(keys) or (keys and not params):
        return None
    return name, {key: _int_or_text(value) for key, value in zip(keys, params, strict=False)}


def _swe_bash(args: Args) -> tuple[Entry | str, Args]:
    command = args.get("command")
    action = _swe_text_action(command) if isinstance(command, str) and set(args) == {"command"} else None
    if action is None:
        return Rule("run_shell", {"command": ()}), args
    name, parsed = action
    return SWE_AGENT.get(name, name), parsed


SWE_AGENT: dict[str, Entry] = {
    "bash": _swe_bash,
    "str_replace_editor": _str_replace_editor,
    "open": Rule("read_file", {"file_path": ("path",)}),
    "find_file": _find_file,
    "search_file": Rule("grep_files", {"pattern": ("search_term",), "path": ("file",)}),
    "search_dir": Rule("grep_files", {"pattern": ("search_term",), "path": ("dir",)}),
}


# --- aider -----------------------------------------------------------------------------------


def _search_replace(args: Args) -> tuple[Entry | str, Args]:
    if args.get("old_string") == "":
        rest = {k: v for k, v in args.items() if k != "old_string"}
        return Rule("write_file", {"file_path": (), "content": ("new_string",)}), rest
    return _EDIT, args


AIDER: dict[str, Entry] = {"search_replace": _search_replace}


# One table per tool family, named by each format's descriptor (`VOCABULARY` in its parser module).
TABLES: dict[str, dict[str, Entry]] = {
    "claude_code": CLAUDE_CODE,
    "codex": CODEX,
    "home_made": HOME_MADE,
    "gemini_cli": GEMINI_CLI,
    "swe_agent": SWE_AGENT,
    "aider": AIDER,
}


# --- the API ---------------------------------------------------------------------------------


def parse_tool_input(tool_input: str | dict[str, Any] | None) -> Args:
    """raw_sessions' tool_input as a dict: None or blank → {}; not a JSON object → {"raw": text}."""
    if tool_input is None:
        return {}
    if isinstance(tool_input, dict):
        return dict(tool_input)
    if not isinstance(tool_input, str):
        raise TypeError(f"tool_input must be a JSON string, a dict or None, got {type(tool_input).__name__}")
    if not tool_input.strip():
        return {}
    try:
        parsed = orjson.loads(tool_input)
    except orjson.JSONDecodeError:
        return {"raw": tool_input}
    return parsed if isinstance(parsed, dict) else {"raw": tool_input}


def _resolve(entry: Entry, args: Args) -> tuple[Rule | str, Args]:
    target: Rule | Chooser | str = entry
    while not isinstance(target, Rule | str):
        target, args = target(args)
    return target, args


def canonicalize(source: str, tool_name: str, tool_input: str | dict[str, Any] | None) -> CanonicalCall:
    """The call in the canonical vocabulary, with the source's name and arguments kept beside it."""
    table = TABLES[vocabulary_of(source)]
    source_arguments = parse_tool_input(tool_input)
    entry = table.get(tool_name)
    if entry is None:
        return CanonicalCall(tool_name, dict(source_arguments), tool_name, source_arguments, False)
    target, args = _resolve(entry, source_arguments)
    if isinstance(target, str):
        return CanonicalCall(target, dict(args), tool_name, source_arguments, False)
    name, arguments = target.tool, target.apply(args)
    if name == "run_shell":
        name, arguments = _finish_shell(arguments)
    return CanonicalCall(name, arguments, tool_name, source_arguments, True)


def _is_missing(key: str, value: object) -> bool:
    if value is None:
        return True
    if isinstance(value, str):
        return key not in MAY_BE_EMPTY and not value.strip()
    if isinstance(value, list | dict):
        return not value
    return False


def missing_required(call: CanonicalCall) -> tuple[str, ...]:
    """The canonical required keys that are absent or empty in the call's arguments; () for unknown tools."""
    if not call.known:
        return ()
    required = CANONICAL_TOOLS.get(call.name, ())
    return tuple(key for key in required if _is_missing(key, call.arguments.get(key)))
