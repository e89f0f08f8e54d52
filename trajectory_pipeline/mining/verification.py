"""Shell command intents and verification outcomes: is this shell call a test run, and did it pass?

Mining needs to know, for every shell call in a transcript, whether it checked the work (tests,
type checks, linters...) and whether that check passed: an attempt is gold only when a verification
after its last edit passed. Replay scoring (docs/design.md#scoring) also counts two shell commands as the same
target when they share an intent class. Both ask this module:

    from trajectory_pipeline.mining.verification import command_intent, command_outcome, is_verification

    command_intent("cd api && FOO=1 timeout 60 uv run pytest -q | tail -20")  # "pytest"
    command_intent("cat pytest.ini")                                         # "read"
    command_outcome("pytest", 0, None, "1 failed, 3 passed in 0.41s", command="pytest -q | tail")
    # "failed": the pipe gave tail's exit status, so the runner's own summary decides

Intent classes. Verification: pytest (also tox, nox, hatch test), unittest (also nose2 and
`manage.py test`, which run on unittest), npm_test (npm/pnpm/yarn/bun test, test scripts, jest,
vitest, mocha, playwright test, deno test), node_test, cargo_test, go_test, mix_test (Elixir; the
real transcripts are full of `mix test`), make_test (make/just/task test, check, ci), typecheck (tsc
with or without --noEmit, since agents run it to check types; mypy, pyright, cargo check, mix
dialyzer), lint (ruff check, flake8, eslint, golangci-lint, cargo
clippy, go vet, mix credo, pre-commit run), format_check (ruff format --check, black --check,
prettier --check, cargo fmt --check, gofmt -l, mix format --check-formatted), git_diff_check and
build (cargo/go build, npm run build, tsc --build, mix compile, plain `make`). Build counts as
verification: compiling is an executable check that the change is at least well-formed, and in
compiled languages it is often the only one an agent runs; it is the weakest class, so mining can
weigh it below tests. Other classes: git_status, git_diff, git_log (log, show), git_commit,
git_push, list (ls, tree), read (cat, head, tail, less, nl, `sed -n`), search (grep, rg, find, fd,
git grep), install (pip/uv/poetry/npm/pnpm/yarn/cargo/go/mix dependency commands) and format
(formatters that rewrite files). Anything else is None.

How a command line is read. It is tokenized with `shlex` in punctuation mode, so quoted text stays
one word and `&&`, `||`, `;`, `|`, `&`, newlines and redirections are operators; unbalanced quotes
are closed (or dropped) and the line is read again, and heredoc bodies are removed first so a file
written with `cat <<EOF` is not read as commands. Each simple command then loses what does not
change its intent: `VAR=value` assignments, `sudo`, `env`, `timeout 60`, `nice`, `time`, `xargs`...,
tool runners (`uv run`, `poetry run`, `npx`, `pnpm exec`, `bundle exec`...), `python -m` (the
module is the tool), `bash -lc '...'` (the script is read the same way) and the directory of the
program (`.venv/bin/pytest`, `./node_modules/.bin/jest`). Only the program and its subcommand or
flags decide, so a command that merely mentions a tool is not that tool: `cat pytest.ini` reads,
`grep -r pytest .` searches, `pip install pytest` installs, `git commit -m "make test pass"`
commits, and `echo "run npm test"` or `vim tests/test_x.py` are None. Reading commands whose output
goes to a file (`cat > notes.md`) are writes, so None.

Chains. In a pipeline the first stage that has an intent speaks for it (`pytest | tail` is pytest,
`cat log | grep x` is read); downstream stages are filters. Across `&&`, `||`, `;` and newlines,
the most significant intent wins: any verification (tests > typecheck > lint > format_check >
git_diff_check > build; the last of equals), else a side effect (git_push > git_commit > install >
format), else the first inspection. So `ruff check . && pytest` is pytest,
`git add -A && git commit -m x` is git_commit and `cd web && ls` is list.

Outcomes. A recorded exit code wins: 0 is passed, anything else failed. It is only trusted when the
verification's own status reaches it, which `command_outcome` can check when given the command: not
when a later pipeline stage or a `;`/`||`/`&` after it sets the status (`pytest | tail`,
`pytest || true`), unless `set -o pipefail` is on. Without a trusted exit code, `is_error` True means
failed; otherwise the runner's output decides (any failure line wins over pass lines: pytest,
unittest, jest/vitest, mocha, playwright, bun, node --test/TAP, cargo and nextest, go,
mix/credo/dialyzer, mypy, ruff, pyright, tsc, eslint, golangci-lint, black/ruff format/prettier/
cargo fmt, tox, deno, make, npm). Then a trusted `is_error` False, which sources record only when
they know (Claude Code sets it from the exit code), means passed: many checks succeed silently
(`eslint .`, `tsc --noEmit`, `go vet`); not for a command sent to the background, whose "no
error" only says it started. Else unknown. Of a long output only the first 4,000 and the last
12,000 characters are read: runners print their first errors at the start and their summary at
the end, and it bounds the cost of a 30 KB `pytest -v` log to about a millisecond. Output is read
for verification intents only; for other intents the exit code or is_error says whether the
command itself succeeded.

Everything is pure and cheap: parsing is cached per distinct command line (`functools.lru_cache`),
since a corpus repeats the same few hundred commands millions of times.
"""

from __future__ import annotations

import functools
import re
import shlex
from collections.abc import Callable, Sequence
from typing import NamedTuple

PASSED = "passed"
FAILED = "failed"
UNKNOWN = "unknown"
OUTCOMES: tuple[str, ...] = (PASSED, FAILED, UNKNOWN)

# Higher wins when a chain holds several verifications.
_VERIFICATION_RANK: dict[str, int] = {
    **dict.fromkeys(
        (
            "pytest",
            "unittest",
            "npm_test",
            "node_test",
            "cargo_test",
            "go_test",
            "mix_test",
            "make_test",
        ),
        6,
    ),
    "typecheck": 5,
    "lint": 4,
    "format_check": 3,
    "git_diff_check": 2,
    "build": 1,
}
VERIFICATION_INTENTS: frozenset[str] = frozenset(_VERIFICATION_RANK)
# Commands that change something outrank inspections when a chain holds no verification.
_SIDE_EFFECT_RANK: dict[str, int] = {"git_push": 4, "git_commit": 3, "install": 2, "format": 1}
_INSPECTIONS = frozenset({"git_status", "git_diff", "git_log", "list", "read", "search"})
INTENTS: frozenset[str] = VERIFICATION_INTENTS | frozenset(_SIDE_EFFECT_RANK) | _INSPECTIONS


# --------------------------------------------------------------------------- tokenizing


class _Stage(NamedTuple):
    argv: tuple[str, ...]
    writes_file: bool  # stdout goes to a file (`cat > notes.md`)


class _Pipeline(NamedTuple):
    stages: tuple[_Stage, ...]
    connector: str | None  # what follows it: "&&", "||", ";", "&", or None at the end


class _Simple(NamedTuple):
    intent: str | None
    reliable: bool = True  # False when a nested script (`bash -c '... | tail'`) masks the status


class _Analysis(NamedTuple):
    intent: str | None
    exit_status_reliable: bool  # the chosen command's exit status is the whole line's


_NOTHING = _Simple(None)
_OPERATOR_CHARS = "();<>|&\n"
_HEREDOC = re.compile(r"(?<!<)<<-?\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\1")
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\+?=")
_QUOTING = re.compile(r"['\"\\\\]")
_PLAIN_TOKEN = re.compile(r"[();<>|&\n]+|[^ \t\r();<>|&\n]+")
_LONG_COMMAND = 4_000  # longer lines (file-writing heredocs, scripts) are parsed but not cached


def _strip_heredocs(command: str) -> str:
    """Drop heredoc bodies: their lines are data (a file's content), not commands."""
    out: list[str] = []
    pos = 0
    while (match := _HEREDOC.search(command, pos)) is not None:
        line_end = command.find("\n", match.end())
        if line_end < 0:
            break
        delimiter = match.group(2)
        cursor = line_end + 1
        body_end = len(command)
        while cursor < len(command):
            next_end = command.find("\n", cursor)
            stop = len(command) if next_end < 0 else next_end
            if command[cursor:stop].strip() == delimiter:
                body_end = stop
                break
            cursor = stop + 1
        out.append(command[:line_end])
        command = command[body_end:]
        pos = 0
    out.append(command)
    return "".join(out)


def _lex(command: str) -> list[str]:
    lexer = shlex.shlex(command, posix=True, punctuation_chars=_OPERATOR_CHARS)
    lexer.whitespace = " \t\r"  # newlines separate commands, so they are operators
    lexer.whitespace_split = True
    lexer.commenters = ""  # `#` only starts a comment at a word's start; handled below
    return list(lexer)


def _tokens(command: str) -> list[str]:
    command = command.replace("\\\n", " ")
    if "<<" in command:
        command = _strip_heredocs(command)
    if not _QUOTING.search(command):
        # without quotes or escapes shlex's punctuation mode is exactly this split, at a tenth the cost
        return _PLAIN_TOKEN.findall(command)
    try:
        return _lex(command)
    except ValueError:  # unbalanced quote or a trailing backslash
        pass
    for closing in ('"', "'"):
        try:
            return _lex(command + closing)
        except ValueError:
            continue
    return _lex(command.replace('"', " ").replace("'", " ").rstrip("\\"))


def _is_operator(token: str) -> bool:
    return bool(token) and all(char in _OPERATOR_CHARS for char in token)


def _split_operators(token: str) -> list[str]:
    ops: list[str] = []
    i = 0
    while i < len(token):
        pair = token[i : i + 2]
        if pair in ("&&", "||", "|&", ";;"):
            ops.append(pair)
            i += 2
        else:
            ops.append(token[i])
            i += 1
    return ops


def _pipelines(command: str) -> list[_Pipeline]:
    tokens = _tokens(command)
    pipelines: list[_Pipeline] = []
    stages: list[_Stage] = []
    argv: list[str] = []
    writes = False
    comment = False

    def end_stage() -> None:
        nonlocal argv, writes, comment
        if argv:
            stages.append(_Stage(tuple(argv), writes))
        argv, writes, comment = [], False, False

    def end_pipeline(connector: str) -> None:
        nonlocal stages
        end_stage()
        if stages:
            pipelines.append(_Pipeline(tuple(stages), connector))
        stages = []

    i = 0
    while i < len(tokens):
        token = tokens[i]
        i += 1
        if not _is_operator(token):
            if comment:
                continue
            if token.startswith("#"):
                comment = True  # the rest of the line is a comment
            else:
                argv.append(token)
            continue
        if "<" in token or ">" in token:
            fd = argv.pop() if argv and argv[-1].isdigit() else ""
            target = ""
            if i < len(tokens) and not _is_operator(tokens[i]):
                target = tokens[i]
                i += 1
            if (
                ">" in token
                and not token.endswith("&")
                and fd != "2"
                and target
                and not target.startswith("/dev/")
            ):
                writes = True
            continue
        for op in _split_operators(token):
            if op in ("|", "|&"):
                end_stage()
            elif op in ("(", ")"):
                end_stage()  # a subshell's status is its last command's: keep the pipeline open
            else:
                end_pipeline({"&&": "&&", "||": "||", "&": "&"}.get(op, ";"))
    end_stage()
    if stages:
        pipelines.append(_Pipeline(tuple(stages), None))
    elif pipelines and pipelines[-1].connector != "&":
        pipelines[-1] = pipelines[-1]._replace(connector=None)  # a trailing `;` ends nothing
    return pipelines


# --------------------------------------------------------------------------- classifying


def _program(word: str) -> str:
    name = word.rsplit("/", 1)[-1].removesuffix(".exe")
    if name == "py" or (name.startswith("python") and name[6:].replace(".", "").isdigit()):
        return "python"
    if name.startswith("pip") and name[3:].replace(".", "").isdigit():
        return "pip"
    return name


def _first_positional(args: Sequence[str], value_options: frozenset[str] = frozenset()) -> int | None:
    """Index of the first argument that is not an option (skipping the values options take)."""
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            return i + 1 if i + 1 < len(args) else None
        if arg in value_options:
            i += 2
        elif arg.startswith("-") and arg != "-":
            i += 1
        else:
            return i
    return None


def _rest(args: Sequence[str], value_options: frozenset[str] = frozenset()) -> Sequence[str]:
    start = _first_positional(args, value_options)
    return () if start is None else args[start:]


def _at(args: Sequence[str], index: int) -> str:
    return args[index] if index < len(args) else ""


def _options(*names: str) -> frozenset[str]:
    return frozenset(names)


def _has(args: Sequence[str], *flags: str) -> bool:
    return any(arg in flags or arg.split("=", 1)[0] in flags for arg in args)


_HELP = frozenset({"--help", "--version"})

# Prefix commands that run the rest of the line: value-taking options, then positionals to skip.
_PREFIXES: dict[str, tuple[frozenset[str], int]] = {
    "sudo": (_options("-u", "-g", "-p", "-C", "-D", "-h", "-r", "-t", "-U", "--user", "--group"), 0),
    "doas": (_options("-u", "-C"), 0),
    "env": (_options("-u", "--unset", "-C", "--chdir"), 0),
    "timeout": (_options("-s", "--signal", "-k", "--kill-after"), 1),
    "gtimeout": (_options("-s", "--signal", "-k", "--kill-after"), 1),
    "nice": (_options("-n", "--adjustment"), 0),
    "ionice": (_options("-c", "-n", "-p"), 0),
    "nohup": (frozenset(), 0),
    "time": (_options("-f", "--format", "-o", "--output"), 0),
    "exec": (_options("-a"), 0),
    "stdbuf": (_options("-i", "-o", "-e"), 0),
    "unbuffer": (frozenset(), 0),
    "chronic": (frozenset(), 0),
    "caffeinate": (frozenset(), 0),
    "xvfb-run": (_options("-s", "--server-args", "-n", "--server-num", "-e", "-f", "-w"), 0),
    "xargs": (_options("-n", "-I", "-L", "-P", "-d", "-s", "-a", "-E", "--max-args", "--max-procs"), 0),
    "watch": (_options("-n", "--interval"), 0),
    "pnpx": (_options("-p", "--package"), 0),
    "bunx": (_options("-p", "--package"), 0),
    "uvx": (_options("--from", "--with", "--python", "-p", "--with-requirements", "--index-url"), 0),
    "nyc": (_options("--reporter", "-r", "--include", "-n", "--exclude", "-x"), 0),
    "c8": (_options("--reporter", "-r", "--include", "-n", "--exclude", "-x", "-o", "--reports-dir"), 0),
    "dotenv": (_options("-e", "-f", "-v", "-c"), 0),
}
_SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh"})
_SHELL_VALUE_OPTIONS = _options("-o", "+o", "-O", "+O")

# Programs whose name alone is the intent.
_CONSTANT: dict[str, str] = {
    **dict.fromkeys(("pytest", "py.test", "pytest-3", "tox", "nox"), "pytest"),
    **dict.fromkeys(("unittest", "nose2"), "unittest"),
    **dict.fromkeys(("jest", "vitest", "mocha", "ava", "jasmine", "karma"), "npm_test"),
    **dict.fromkeys(
        ("mypy", "dmypy", "pyright", "basedpyright", "pytype", "vue-tsc", "svelte-check"), "typecheck"
    ),
    **dict.fromkeys(
        (
            "flake8",
            "pylint",
            "eslint",
            "staticcheck",
            "shellcheck",
            "hadolint",
            "rubocop",
            "stylelint",
            "markdownlint",
            "yamllint",
            "actionlint",
            "oxlint",
            "codespell",
            "pyflakes",
            "pycodestyle",
            "pydocstyle",
            "bandit",
            "vulture",
            "golint",
            "revive",
        ),
        "lint",
    ),
    **dict.fromkeys(("ls", "tree", "eza", "exa", "lsd"), "list"),
    **dict.fromkeys(("cat", "head", "tail", "less", "more", "bat", "batcat", "nl"), "read"),
    **dict.fromkeys(("grep", "egrep", "fgrep", "rg", "ag", "ack", "fd", "fdfind", "locate"), "search"),
}

# Tools whose first positional argument (the subcommand) decides.
_SUBCOMMANDS: dict[str, tuple[frozenset[str], dict[str, str]]] = {
    "cargo": (
        _options("-C", "--color", "-Z", "--config"),
        {
            **dict.fromkeys(("test", "t", "nextest", "tarpaulin", "llvm-cov"), "cargo_test"),
            **dict.fromkeys(("check", "c"), "typecheck"),
            "clippy": "lint",
            **dict.fromkeys(("build", "b"), "build"),
            **dict.fromkeys(("fetch", "add", "install", "update"), "install"),
        },
    ),
    "go": (
        frozenset(),
        {
            "test": "go_test",
            "vet": "lint",
            "build": "build",
            "fmt": "format",
            **dict.fromkeys(("get", "install"), "install"),
        },
    ),
    "golangci-lint": (frozenset(), {"run": "lint"}),
    "playwright": (frozenset(), {"test": "npm_test"}),
    "cypress": (frozenset(), {"run": "npm_test"}),
    "ng": (frozenset(), {"test": "npm_test", "lint": "lint", "build": "build"}),
    "react-scripts": (frozenset(), {"test": "npm_test", "build": "build"}),
    "next": (frozenset(), {"lint": "lint", "build": "build"}),
    "biome": (frozenset(), {"lint": "lint", "check": "lint", "ci": "lint", "format": "format"}),
    "pre-commit": (frozenset(), {"run": "lint"}),
    "pyre": (frozenset(), {"check": "typecheck"}),
    "ty": (frozenset(), {"check": "typecheck"}),
    "pip": (frozenset(), dict.fromkeys(("install", "download"), "install")),
    "gem": (frozenset(), {"install": "install"}),
    "brew": (frozenset(), {"install": "install"}),
    "apt": (frozenset(), {"install": "install"}),
    "apt-get": (frozenset(), {"install": "install"}),
    "composer": (frozenset(), dict.fromkeys(("install", "require"), "install")),
    "bundle": (frozenset(), {"install": "install"}),
    "poetry": (
        _options("-C", "--directory", "-P", "--project"),
        dict.fromkeys(("install", "add", "update", "lock", "sync"), "install"),
    ),
    "pipenv": (frozenset(), dict.fromkeys(("install", "sync"), "install")),
    "pdm": (frozenset(), dict.fromkeys(("install", "add", "sync", "update"), "install")),
    "rye": (frozenset(), {"sync": "install", "add": "install", "test": "pytest", "lint": "lint"}),
    "hatch": (frozenset(), {"test": "pytest"}),
    "conda": (frozenset(), dict.fromkeys(("install", "create"), "install")),
    "mamba": (frozenset(), dict.fromkeys(("install", "create"), "install")),
    "micromamba": (frozenset(), dict.fromkeys(("install", "create"), "install")),
    "pipx": (frozenset(), {"install": "install"}),
}

# `poetry run X`, `bundle exec X`...: the tool runs X in its environment, so X decides.
_RUNNERS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "poetry": (frozenset({"run"}), frozenset()),
    "pipenv": (frozenset({"run"}), frozenset()),
    "pdm": (frozenset({"run"}), frozenset()),
    "rye": (frozenset({"run"}), frozenset()),
    "hatch": (frozenset({"run"}), frozenset()),
    "bundle": (frozenset({"exec"}), frozenset()),
    "pipx": (frozenset({"run"}), _options("--spec", "--python")),
    "conda": (frozenset({"run"}), _options("-n", "--name", "-p", "--prefix", "--cwd")),
    "mamba": (frozenset({"run"}), _options("-n", "--name", "-p", "--prefix", "--cwd")),
    "micromamba": (frozenset({"run"}), _options("-n", "--name", "-p", "--prefix", "--cwd")),
    "mise": (frozenset({"exec", "x"}), _options("-C", "--cd")),
    "asdf": (frozenset({"exec"}), frozenset()),
}
# Runners whose `run NAME` may be a project script rather than a program (hatch/pdm scripts).
_SCRIPT_RUNNERS = frozenset({"hatch", "pdm", "rye"})

_PYTHON_VALUE_OPTIONS = _options("-W", "-X", "-Q")
_PYTHON_MODULES = frozenset(
    {
        "pytest",
        "unittest",
        "nose2",
        "mypy",
        "ruff",
        "black",
        "isort",
        "flake8",
        "pylint",
        "pyright",
        "pip",
        "tox",
        "nox",
        "coverage",
        "pyflakes",
        "pycodestyle",
        "bandit",
    }
)
_JS_VALUE_OPTIONS = _options("--prefix", "-w", "--workspace", "-C", "--dir", "--filter", "-F", "--cwd")
_UV_VALUE_OPTIONS = _options(
    "--directory",
    "--project",
    "--cache-dir",
    "--config-file",
    "--with",
    "--with-editable",
    "--with-requirements",
    "--python",
    "-p",
    "--package",
    "--extra",
    "--group",
    "--only-group",
    "--no-group",
    "--env-file",
    "--index",
    "--default-index",
    "--index-url",
    "--extra-index-url",
    "--find-links",
    "-f",
)
_MAKE_VALUE_OPTIONS = _options(
    "-C", "-f", "--file", "--directory", "-I", "-l", "-o", "-W", "--justfile", "-d"
)
_MAKE_DRY_RUN = _options("-n", "--dry-run", "--just-print", "--recon", "-q", "--question", "-p")
_GIT_VALUE_OPTIONS = _options("-C", "-c", "--git-dir", "--work-tree", "--namespace")
_GIT: dict[str, str] = {
    "status": "git_status",
    "diff": "git_diff",
    **dict.fromkeys(("log", "show", "shortlog", "reflog"), "git_log"),
    "commit": "git_commit",
    "push": "git_push",
    "grep": "search",
    "ls-files": "list",
}


def _script_intent(name: str, test_intent: str) -> str | None:
    """The intent of a project script or make target by its name (`test:unit`, `lint`, `format:check`)."""
    words = name.lower().replace(":", " ").replace("-", " ").replace("_", " ").replace(".", " ").split()
    if not words:
        return None
    head, vocabulary = words[0], set(words)
    if head in {"test", "tests", "spec", "e2e", "unit", "integration", "coverage", "jest", "vitest", "mocha"}:
        return test_intent
    if vocabulary & {"typecheck", "tsc", "types", "typing", "mypy", "pyright"} or name in ("type-check",):
        return "typecheck"
    if vocabulary & {"format", "fmt", "prettier", "black"}:
        return "format_check" if vocabulary & {"check", "verify", "ci"} else "format"
    if head in {"lint", "eslint", "clippy", "credo", "ruff", "flake8", "vet"} or "lint" in vocabulary:
        return "lint"
    if head in {"build", "compile"}:
        return "build"
    if head in {"install", "deps", "setup", "bootstrap"}:
        return "install"
    if words[-1] in {"test", "tests"}:  # unit-test, e2e_test
        return test_intent
    return None


def _best(intents: Sequence[str | None]) -> str | None:
    """The chain rule: highest verification (the last of equals), else highest side effect, else the
    first inspection."""
    verifications = [i for i in intents if i in VERIFICATION_INTENTS]
    if verifications:
        return max(reversed(verifications), key=_VERIFICATION_RANK.__getitem__)
    effects = [i for i in intents if i in _SIDE_EFFECT_RANK]
    if effects:
        return max(effects, key=_SIDE_EFFECT_RANK.__getitem__)
    return next((i for i in intents if i is not None), None)


def _python(args: Sequence[str], value_options: frozenset[str] = _PYTHON_VALUE_OPTIONS) -> _Simple:
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "-m" or (arg.startswith("-m") and not arg.startswith("--")):
            module = arg[2:] or (args[i + 1] if i + 1 < len(args) else "")
            rest = args[i + 1 :] if arg[2:] else args[i + 2 :]
            return _module(module, rest)
        if arg == "-c":
            return _NOTHING
        if arg in value_options:
            i += 2
        elif arg.startswith("-"):
            i += 1
        else:
            # a script: only Django's test runner is a known verification
            is_manage = arg.rsplit("/", 1)[-1] == "manage.py"
            return _Simple("unittest" if is_manage and _at(args, i + 1) == "test" else None)
    return _NOTHING


def _module(module: str, rest: Sequence[str]) -> _Simple:
    if module == "build":
        return _Simple("build")
    if module == "django" and _at(rest, 0) == "test":
        return _Simple("unittest")
    if module in _PYTHON_MODULES:
        return _argv_intent((module, *rest))
    return _NOTHING


def _coverage(args: Sequence[str]) -> _Simple:
    if _at(args, 0) == "run":
        options = _PYTHON_VALUE_OPTIONS | _options("--source", "--include", "--omit", "--rcfile", "--context")
        return _python(args[1:], options)
    return _NOTHING


def _uv(args: Sequence[str]) -> _Simple:
    i = _first_positional(args, _UV_VALUE_OPTIONS)
    if i is None:
        return _NOTHING
    sub, rest = args[i], args[i + 1 :]
    if sub == "run":
        for j, arg in enumerate(rest):  # `uv run -m pytest`
            if arg in ("-m", "--module"):
                return _module(rest[j + 1], rest[j + 2 :]) if j + 1 < len(rest) else _NOTHING
            if not arg.startswith("-"):
                break
        return _argv_intent(_rest(rest, _UV_VALUE_OPTIONS))
    if sub in ("sync", "add", "lock") or (sub == "pip" and _at(rest, 0) in ("install", "sync")):
        return _Simple("install")
    if sub == "tool" and _at(rest, 0) == "run":
        return _argv_intent(_rest(rest[1:], _UV_VALUE_OPTIONS))
    if sub == "tool" and _at(rest, 0) == "install":
        return _Simple("install")
    if sub == "build":
        return _Simple("build")
    return _NOTHING


def _js(tool: str, args: Sequence[str]) -> _Simple:
    """npm, pnpm, yarn and bun: test and script commands, installs, and exec."""
    i = _first_positional(args, _JS_VALUE_OPTIONS)
    if i is None:  # bare `yarn` installs
        return _Simple("install" if tool == "yarn" and not _has(args, *_HELP) else None)
    sub, rest = args[i], args[i + 1 :]
    if sub in ("test", "t", "tst"):
        return _Simple("npm_test")
    if sub in ("install", "i", "ci", "add", "isntall", "in"):
        return _Simple("install")
    if sub in ("run", "run-script", "rum", "urn"):
        name = _rest(rest, _JS_VALUE_OPTIONS)
        if not name:
            return _NOTHING
        return _Simple(_script_intent(name[0], "npm_test"))
    if sub in ("exec", "x", "dlx"):
        return _argv_intent(_rest(rest, _options("-p", "--package", "-c", "--call")))
    if tool == "yarn" and sub == "workspace":
        return _js(tool, rest[1:])
    if tool == "bun" and sub == "build":
        return _Simple("build")
    if tool == "npm":
        return _NOTHING  # npm runs no script by its bare name (except test/start)
    # pnpm, yarn and bun run scripts and local binaries by their bare names
    script = _script_intent(sub, "npm_test")
    return _Simple(script) if script is not None else _argv_intent(args[i:])


def _npx(args: Sequence[str]) -> _Simple:
    for j, arg in enumerate(args):
        if arg in ("-c", "--call") and j + 1 < len(args):
            return _Simple(*_analyze(args[j + 1]))
    return _argv_intent(_rest(args, _options("-p", "--package", "--node-options")))


def _node(args: Sequence[str]) -> _Simple:
    value_options = _options("-r", "--require", "--import", "--loader", "--test-reporter", "-e", "--eval")
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--test":
            return _Simple("node_test")
        if arg == "--run" and i + 1 < len(args):
            return _Simple(_script_intent(args[i + 1], "npm_test"))
        if arg in ("-e", "--eval", "-p", "--print"):
            return _NOTHING
        if not arg.startswith("-"):
            return _NOTHING  # a script: its own arguments follow
        i += 2 if arg in value_options else 1
    return _NOTHING


def _make(tool: str, args: Sequence[str]) -> _Simple:
    targets: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in _MAKE_DRY_RUN:
            return _NOTHING
        if arg in _MAKE_VALUE_OPTIONS:
            i += 2
            continue
        if arg == "--set" and tool == "just":  # `just --set NAME VALUE`
            i += 3
            continue
        if not arg.startswith("-") and "=" not in arg and not arg.isdigit():
            targets.append(arg)
        i += 1
    if not targets:
        return _Simple("build" if tool in ("make", "gmake") else None)
    intents: list[str | None] = []
    for target in targets:
        if target in ("check", "ci", "tests", "test", "unittest", "verify"):
            intents.append("make_test")
        elif target == "all":
            intents.append("build")
        else:
            intents.append(_script_intent(target, "make_test"))
    return _Simple(_best(intents))


def _git(args: Sequence[str]) -> _Simple:
    i = _first_positional(args, _GIT_VALUE_OPTIONS)
    if i is None:
        return _NOTHING
    intent = _GIT.get(args[i])
    if intent == "git_diff" and _has(args[i + 1 :], "--check"):
        return _Simple("git_diff_check")
    return _Simple(intent)


def _ruff(args: Sequence[str]) -> _Simple:
    i = _first_positional(args)
    sub = args[i] if i is not None else ""
    if sub == "format":
        return _Simple("format_check" if _has(args, "--check", "--diff") else "format")
    if sub in ("rule", "clean", "config", "linter", "version", "server", "analyze"):
        return _NOTHING
    return _Simple("lint")  # `ruff check`, and the old `ruff .` / `ruff --fix src`


def _formatter(
    check_flags: tuple[str, ...], write_flags: tuple[str, ...] = ()
) -> Callable[[Sequence[str]], _Simple]:
    """A formatter: checking with one of `check_flags`, rewriting otherwise (or only with `write_flags`)."""

    def classify(args: Sequence[str]) -> _Simple:
        if _has(args, *check_flags):
            return _Simple("format_check")
        if not write_flags or _has(args, *write_flags):
            return _Simple("format")
        return _NOTHING

    return classify


def _mix(args: Sequence[str]) -> _Simple:
    sub = _at(args, 0)
    if sub == "format":
        return _Simple("format_check" if _has(args, "--check-formatted") else "format")
    table = {
        "test": "mix_test",
        "credo": "lint",
        "dialyzer": "typecheck",
        "compile": "build",
        "deps.get": "install",
    }
    return _Simple(table.get(sub))


def _deno(args: Sequence[str]) -> _Simple:
    sub = _at(args, 0)
    if sub == "fmt":
        return _Simple("format_check" if _has(args, "--check") else "format")
    return _Simple({"test": "npm_test", "lint": "lint", "check": "typecheck"}.get(sub))


def _go(args: Sequence[str]) -> _Simple:
    if _at(args, 0) == "mod":
        return _Simple("install" if _at(args, 1) in ("download", "tidy") else None)
    return _subcommand("go", args)


def _cargo(args: Sequence[str]) -> _Simple:
    args = [arg for arg in args if not arg.startswith("+")]  # `cargo +nightly fmt`
    i = _first_positional(args, _SUBCOMMANDS["cargo"][0])
    if i is not None and args[i] == "fmt":
        return _Simple("format_check" if _has(args, "--check") else "format")
    return _subcommand("cargo", args)


def _subcommand(tool: str, args: Sequence[str]) -> _Simple:
    value_options, table = _SUBCOMMANDS[tool]
    i = _first_positional(args, value_options)
    return _Simple(None if i is None else table.get(args[i]))


def _runner(tool: str, args: Sequence[str]) -> _Simple:
    subs, value_options = _RUNNERS[tool]
    i = _first_positional(args, _SUBCOMMANDS.get(tool, (frozenset(), {}))[0])
    if i is None or args[i] not in subs:
        return _subcommand(tool, args) if tool in _SUBCOMMANDS else _NOTHING
    rest = _rest(args[i + 1 :], value_options)
    found = _argv_intent(rest)
    if found.intent is None and rest and tool in _SCRIPT_RUNNERS:
        return _Simple(_script_intent(rest[0], "pytest"))  # hatch `test`, `types:check`
    return found


def _shell(args: Sequence[str]) -> _Simple:
    """`bash -lc 'script'`: the script is read like a command line of its own."""
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in _SHELL_VALUE_OPTIONS:
            i += 2
            continue
        if not arg.startswith(("-", "+")):
            return _NOTHING  # a script file
        if not arg.startswith("--") and "c" in arg[1:]:
            return _Simple(*_analyze(args[i + 1])) if i + 1 < len(args) else _NOTHING
        i += 2 if not arg.startswith("--") and arg[-1] in "oO" else 1  # `-euo pipefail`
    return _NOTHING


def _sed(args: Sequence[str]) -> _Simple:
    in_place = any(arg.startswith(("-i", "--in-place")) for arg in args)
    quiet = any(
        arg == "--quiet" or (arg.startswith("-") and not arg.startswith("--") and "n" in arg) for arg in args
    )
    return _Simple("read" if quiet and not in_place else None)


def _find(args: Sequence[str]) -> _Simple:
    return _Simple(None if "-delete" in args else "search")


def _gofmt(args: Sequence[str]) -> _Simple:
    if "-w" in args:
        return _Simple("format")
    return _Simple("format_check" if _has(args, "-l", "-d") else None)


def _tsc(args: Sequence[str]) -> _Simple:
    # `tsc` emits only when the project lets it; agents run it to check types either way
    return _Simple("build" if _has(args, "-b", "--build") else "typecheck")


# Plain subcommand tables first; tools with special cases override them below.
_HANDLERS: dict[str, Callable[[Sequence[str]], _Simple]] = {
    **{tool: functools.partial(_subcommand, tool) for tool in _SUBCOMMANDS},
    **{tool: functools.partial(_runner, tool) for tool in _RUNNERS},
    "python": _python,
    "coverage": _coverage,
    "uv": _uv,
    **{tool: functools.partial(_js, tool) for tool in ("npm", "pnpm", "yarn", "bun")},
    "npx": _npx,
    "node": _node,
    "nodejs": _node,
    **{tool: functools.partial(_make, tool) for tool in ("make", "gmake", "just", "task")},
    "git": _git,
    "ruff": _ruff,
    "black": _formatter(("--check", "--diff")),
    "isort": _formatter(("--check", "--check-only", "-c", "--diff")),
    "prettier": _formatter(("--check", "-c", "--list-different", "-l"), ("--write", "-w")),
    "rustfmt": _formatter(("--check",)),
    "gofmt": _gofmt,
    "goimports": _gofmt,
    "tsc": _tsc,
    "mix": _mix,
    "deno": _deno,
    "go": _go,
    "cargo": _cargo,
    "sed": _sed,
    "find": _find,
    "eval": lambda args: _Simple(*_analyze(" ".join(args))),
    "nix-shell": lambda args: next(
        (_Simple(*_analyze(args[j + 1])) for j, a in enumerate(args[:-1]) if a in ("--run", "--command")),
        _NOTHING,
    ),
    **dict.fromkeys(_SHELLS, _shell),
}


_LIST_ONLY = ("--collect-only", "--co", "--listTests", "--list-tests", "--list")


def _argv_intent(argv: Sequence[str]) -> _Simple:
    """The intent of one simple command, given as its words."""
    i = 0
    while i < len(argv):
        word = argv[i]
        if _ASSIGNMENT.match(word):
            i += 1
            continue
        program = _program(word)
        prefix = _PREFIXES.get(program)
        if prefix is None:
            break
        value_options, positionals = prefix
        start = _first_positional(argv[i + 1 :], value_options)
        if start is None:
            return _NOTHING
        i += 1 + start + positionals
    else:
        return _NOTHING
    program, args = _program(argv[i]), argv[i + 1 :]
    if program == "command":
        return _NOTHING if _has(args, "-v", "-V") else _argv_intent(args)
    handler = _HANDLERS.get(program)
    found = handler(args) if handler is not None else _Simple(_CONSTANT.get(program))
    if found.intent in VERIFICATION_INTENTS and (_has(args, *_HELP) or _at(args, 0) in ("-h", "-V")):
        return _NOTHING  # `pytest --version` asks about the tool, it checks nothing
    if found.intent in VERIFICATION_INTENTS and _has(args, *_LIST_ONLY):
        return _Simple("list")  # `pytest --collect-only`, `jest --listTests` list tests, they run none
    return found


def _stage_intent(stage: _Stage) -> _Simple:
    found = _argv_intent(stage.argv)
    if stage.writes_file and found.intent in _INSPECTIONS:
        return _NOTHING  # `cat > notes.md`, `ls > files.txt` write a file
    return found


def _analyze_uncached(command: str) -> _Analysis:
    pipelines = _pipelines(command)
    pipefail = any(
        _at(stage.argv, 0) == "set" and "pipefail" in stage.argv for p in pipelines for stage in p.stages
    )
    backgrounded = pipelines[-1].connector == "&" if pipelines else False
    candidates: list[tuple[str, bool]] = []
    for index, pipeline in enumerate(pipelines):
        # the first stage with an intent speaks for the pipeline; later stages are filters
        found, position = next(
            (
                (f, k)
                for k, stage in enumerate(pipeline.stages)
                if (f := _stage_intent(stage)).intent is not None
            ),
            (_NOTHING, 0),
        )
        if found.intent is None:
            continue
        last_stage = position == len(pipeline.stages) - 1
        # the line's status is this command's only if every later connector is `&&`
        later = [p.connector for p in pipelines[index:-1]]
        reliable = (
            found.reliable and (last_stage or pipefail) and not backgrounded and all(c == "&&" for c in later)
        )
        candidates.append((found.intent, reliable))
    intent = _best([intent for intent, _ in candidates])
    if intent is None:
        return _Analysis(None, True)
    # the last of equals: in `pytest a; pytest b` the second one's status is the line's
    reliable = next(r for i, r in reversed(candidates) if i == intent)
    return _Analysis(intent, reliable)


@functools.lru_cache(maxsize=32_768)
def _analyze_cached(command: str) -> _Analysis:
    return _analyze_uncached(command)


def _analyze(command: str) -> _Analysis:
    if len(command) > _LONG_COMMAND:
        return _analyze_uncached(command)
    return _analyze_cached(command)


def command_intent(command: str) -> str | None:
    """The intent class of a shell command line (see the module docstring), or None."""
    return _analyze(command.strip()).intent


def is_verification(command: str) -> bool:
    """Whether the command line runs a verification: tests, type check, lint, format check, build."""
    return command_intent(command) in VERIFICATION_INTENTS


def exit_status_reliable(command: str) -> bool:
    """Whether the line's exit status is its main command's (not a later pipe stage's or `|| true`'s)."""
    return _analyze(command.strip()).exit_status_reliable


# --------------------------------------------------------------------------- runner output

# A command sent to the background: "no error" means it started, not that it passed.
_STILL_RUNNING = re.compile(
    r"^(?:Command running in background with ID|Process running with session ID)", re.M
)
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")
_COUNT = re.compile(r"(\d+) (\w+)")
Verdict = str | None


def _pytest_tally(m: re.Match[str]) -> Verdict:
    counts: dict[str, int] = {}
    for number, word in _COUNT.findall(m.group(1)):
        counts[word.rstrip("s") if word.startswith("error") else word] = int(number)
    if counts.get("failed", 0) or counts.get("error", 0):
        return FAILED
    if any(counts.get(word, 0) for word in ("passed", "xfailed", "xpassed", "skipped")):
        return PASSED
    return FAILED  # only deselected: no tests ran


def _failed_or_passed(m: re.Match[str]) -> Verdict:
    body = m.group("body")
    if re.search(r"\b[1-9]\d* (?:failed|failing|errors?|timed out)\b", body):
        return FAILED
    if re.search(r"\b[1-9]\d* (?:passed|passing)\b", body):
        return PASSED
    return None


def _count_is_failure(group: int = 1) -> Callable[[re.Match[str]], Verdict]:
    return lambda m: FAILED if int(m.group(group)) > 0 else PASSED


def _positive_fails(m: re.Match[str]) -> Verdict:
    return FAILED if int(m.group(1)) > 0 else None


def _positive_passes(m: re.Match[str]) -> Verdict:
    return PASSED if int(m.group(1)) > 0 else None


def _ruff_found(m: re.Match[str]) -> Verdict:
    if re.search(r"\(\d+ fixed, 0 remaining\)", m.group(2)):
        return PASSED  # `ruff check --fix` fixed everything it found
    return FAILED if int(m.group(1)) > 0 else PASSED


def _always(verdict: str) -> Callable[[re.Match[str]], Verdict]:
    return lambda m: verdict


_M = re.MULTILINE
_HEAD_CHARS, _TAIL_CHARS = 4_000, 12_000  # how much of a long output is read


class _Rule(NamedTuple):
    """A runner's summary line and what it means. `needles` are substrings of which every match
    holds one on its first line: a rule is tried only where one of them occurs, from the first line
    that holds one, so a 30 KB output is scanned by the few rules that can match it, near the
    lines they can match (a `^` pattern costs a step per character it is tried at)."""

    needles: tuple[str, ...]
    pattern: re.Pattern[str]
    judge: Callable[[re.Match[str]], Verdict]


def _rule(needles: str | tuple[str, ...], pattern: str, judge: Callable[[re.Match[str]], Verdict]) -> _Rule:
    return _Rule((needles,) if isinstance(needles, str) else needles, re.compile(pattern, _M), judge)


_PYTEST_WORDS = ("passed", "failed", "error", "skipped", "xfail", "xpass", "warning", "deselected", "rerun")
# A failure anywhere wins over passes; no match at all is unknown.
_RUNNER_RULES: tuple[_Rule, ...] = (
    # pytest: "=== 1 failed, 3 passed in 0.42s ===" / "3 passed, 1 warning in 0.1s"
    _rule(
        _PYTEST_WORDS,
        r"^[= ]*(\d+ (?:failed|passed|errors?|skipped|xfailed|xpassed|warnings?|deselected|rerun)"
        r"(?:, \d+ \w+)*) in \d+(?:\.\d+)?s\b",
        _pytest_tally,
    ),
    _rule("no tests ran", r"^[= ]*no tests ran\b", _always(FAILED)),
    _rule("Interrupted:", r"^(?:!+ )?Interrupted: \d+ errors? during collection", _always(FAILED)),
    # unittest / Django: "Ran 5 tests in 0.003s\n\nOK" or "FAILED (failures=1)"
    _rule(
        "Ran ",
        r"^Ran (\d+) tests? in \S+\s+(OK|FAILED|NO TESTS RAN)\b",
        lambda m: PASSED if m.group(2) == "OK" and m.group(1) != "0" else FAILED,
    ),
    # jest "Tests:  1 failed, 2 passed, 3 total"; vitest " Test Files  1 failed | 2 passed (3)"
    _rule("Test", r"^[ \t]*(?:Tests|Test Files|Test Suites):?[ \t]+(?P<body>.*\d.*)$", _failed_or_passed),
    # cargo nextest "Summary [ 0.2s] 5 tests run: 4 passed, 1 failed"
    _rule(" run: ", r"\d+ tests? run: (?P<body>.*)$", _failed_or_passed),
    # mocha "  3 passing (12ms)" / "  1 failing"; playwright "  2 passed (3.1s)" / "  1 failed"
    _rule("fail", r"^[ \t]+(\d+) (?:failing|failed)(?: \([\d.]+m?s\))?[ \t]*$", _positive_fails),
    _rule("pass", r"^[ \t]+(\d+) (?:passing|passed)(?: \([\d.]+m?s\))?[ \t]*$", _positive_passes),
    # bun test " 5 pass" / " 1 fail"
    _rule(" fail", r"^[ \t]*(\d+) fail[ \t]*$", _positive_fails),
    _rule(" pass", r"^[ \t]*(\d+) pass[ \t]*$", _positive_passes),
    # node --test: TAP "# fail 0" or the spec reporter's "ℹ fail 0"; TAP "not ok 3 - name"
    _rule(" fail ", r"^[#ℹ] fail (\d+)[ \t]*$", _count_is_failure()),
    _rule("not ok ", r"^not ok \d+\b", _always(FAILED)),
    # deno "ok | 5 passed | 0 failed (20ms)"
    _rule(" | ", r"^(ok|FAILED) \| \d+ passed", lambda m: PASSED if m.group(1) == "ok" else FAILED),
    # cargo "test result: ok. 4 passed; ..." / "test result: FAILED."; compile errors; build success
    _rule(
        "test result: ", r"^test result: (ok|FAILED)\.", lambda m: PASSED if m.group(1) == "ok" else FAILED
    ),
    _rule("error", r"^error(?:\[E\d+\])?: ", _always(FAILED)),
    _rule("Finished ", r"^[ \t]*Finished (?:`\w+` profile|\w+ \[)", _always(PASSED)),
    _rule("Diff in ", r"^Diff in \S", _always(FAILED)),  # cargo fmt --check
    # go "ok  \tpkg\t0.01s" / "--- FAIL: TestX" / "FAIL\tpkg" / "FAIL"; panics
    _rule("ok", r"^ok\s+\S+\s+(?:\(cached\)|[\d.]+s)", _always(PASSED)),
    _rule("FAIL", r"^(?:--- )?FAIL(?::|\s|$)", _always(FAILED)),
    _rule("panic: ", r"^panic: ", _always(FAILED)),
    # mix test "14 doctests, 410 tests, 0 failures"; credo; dialyzer; Mix errors
    _rule(
        " failure",
        r"^(?:\d+ doctests?, )?(?:\d+ propert(?:y|ies), )?\d+ tests?, (\d+) failures?",
        _count_is_failure(),
    ),
    _rule("mods/funs", r"mods/funs, found no issues", _always(PASSED)),
    _rule("mods/funs", r"mods/funs, found \d+", _always(FAILED)),
    _rule("done (", r"^done \(passed successfully\)", _always(PASSED)),
    _rule("done (", r"^done \(warnings were emitted\)", _always(FAILED)),
    _rule("** (Mix)", r"^\*\* \(Mix\) ", _always(FAILED)),
    # mypy "Success: no issues found"; mypy/ruff/tsc "Found 3 errors ..."; ruff "All checks passed!"
    _rule("Success: ", r"^Success: no issues found", _always(PASSED)),
    _rule("Found ", r"^Found (\d+) errors?\b(.*)$", _ruff_found),
    _rule("All checks passed!", r"^All checks passed!", _always(PASSED)),
    # pyright "0 errors, 0 warnings, 0 informations"; tsc "error TS2322:"
    _rule(
        " warning",
        r"^[ \t]*(\d+) errors?, \d+ warnings?, \d+ (?:informations?|infos?|notes?)\b",
        _count_is_failure(),
    ),
    _rule("error TS", r"\berror TS\d+:", _always(FAILED)),
    # eslint "✖ 3 problems (2 errors, 1 warning)"; golangci-lint "0 issues." / "3 issues:"
    _rule(" problem", r"^[ \t]*[✖×xX] \d+ problems? \((\d+) errors?", _count_is_failure()),
    _rule(" issue", r"^(\d+) issues?[.:]?[ \t]*$", _count_is_failure()),
    # black / ruff format / prettier
    _rule("would be reformatted", r"\b(\d+) files? would be reformatted", _positive_fails),
    _rule(("would reformat ", "Oh no! "), r"^would reformat |^Oh no! ", _always(FAILED)),
    _rule(
        ("already formatted", "left unchanged", "All done!"),
        r"files? (?:already formatted|would be left unchanged)|^All done!",
        _always(PASSED),
    ),
    _rule("Code style issues found", r"Code style issues found", _always(FAILED)),
    _rule("All matched files", r"^All matched files use Prettier code style!", _always(PASSED)),
    # tox
    _rule("congratulations", r"^[ \t]*congratulations :\)", _always(PASSED)),
    _rule(
        ("evaluation failed", "commands failed"),
        r"^[ \t]*evaluation failed :\(|commands failed",
        _always(FAILED),
    ),
    # make, npm, yarn, pnpm reporting a failed step
    _rule("*** ", r"^g?make(?:\[\d+\])?: \*\*\* ", _always(FAILED)),
    _rule(
        ("npm ERR!", "npm error", "error Command failed", "ELIFECYCLE", "ERR_PNPM_"),
        r"^npm (?:ERR!|error) |^error Command failed with exit code|ELIFECYCLE|ERR_PNPM_",
        _always(FAILED),
    ),
)


def runner_outcome(output: str | None) -> str | None:
    """passed or failed as the runner's own output reports it, or None when nothing is recognized."""
    if not output:
        return None
    if len(output) > _HEAD_CHARS + _TAIL_CHARS:
        # runners print their first errors at the start and their summary at the end
        output = output[:_HEAD_CHARS] + "\n" + output[-_TAIL_CHARS:]
    if "\x1b" in output:
        output = _ANSI.sub("", output)
    passed = False
    find = output.find
    for rule in _RUNNER_RULES:
        if len(rule.needles) == 1:
            first = find(rule.needles[0])
        else:
            first = min([at for at in map(find, rule.needles) if at >= 0], default=-1)
        if first < 0:
            continue
        # no match starts before the line of the first needle (see _Rule)
        for match in rule.pattern.finditer(output, output.rfind("\n", 0, first) + 1):
            verdict = rule.judge(match)
            if verdict == FAILED:
                return FAILED
            passed = passed or verdict == PASSED
    return PASSED if passed else None


def command_outcome(
    intent: str | None,
    exit_code: int | None,
    is_error: bool | None,
    output: str | None,
    *,
    command: str | None = None,
) -> str:
    """passed / failed / unknown for one shell call (rules in the module docstring).

    `command`, when given, tells whether the exit code is the verification's own: in
    `pytest -q | tail -20` it is tail's, so the runner's output decides instead.
    """
    if intent not in VERIFICATION_INTENTS:
        if exit_code is not None:
            return PASSED if exit_code == 0 else FAILED
        return UNKNOWN if is_error is None else (FAILED if is_error else PASSED)
    trusted = command is None or exit_status_reliable(command)
    if trusted and exit_code is not None:
        return PASSED if exit_code == 0 else FAILED
    if trusted and is_error:
        return FAILED
    reported = runner_outcome(output)
    if reported is not None:
        return reported
    if (exit_code is not None and exit_code != 0) or is_error:
        return FAILED  # a failure status is a failure even when the pipeline muddles it
    if trusted and is_error is False and not (output and _STILL_RUNNING.search(output)):
        return PASSED  # recorded as no error (Claude Code: exit 0), e.g. a silent `eslint .`
    return UNKNOWN
