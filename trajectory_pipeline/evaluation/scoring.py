"""Scoring one predicted tool call against the real one, and pass^k over repeated samples.

The replay eval asks a model for the next tool call at a real decision point; `answers.py`
parses its answer and this module scores the first call against the target, which is already
in the canonical vocabulary (docs/design.md#scoring). Usage:

    from trajectory_pipeline.evaluation.scoring import pass_at_k_table, pass_hat_k, score_call
    score = score_call(("Read", {"file_path": "./src/app.py"}), "read_file",
                       {"file_path": "/home/u/repo/src/app.py"}, source="claude_code")
    score.passed, score.exact_match, score.failure             # (True, False, None)
    pass_hat_k(n=4, c=2, k=2)                                   # 1/6
    pass_at_k_table({"d1": [True, True], "d2": [True, False]})  # {1: 0.75, 2: 0.5}

Tests: `pytest tests/evaluation/test_scoring.py`.

The prediction is mapped into the canonical vocabulary with `canonicalize(source, ...)`, since
a model imitating the source agent may say `Read`, `Bash` or `shell`. A canonical name stays
as it is (the source's key aliases are mapped where its table knows the name, exactly as the
target was); a name no table knows keeps its name and arguments.

The columns of a Score (named as in eval_schema.EVAL_RESULT_SCHEMA):
- name_match: the canonical names are equal.
- required_present: every required argument of the *target's* tool is present, non-empty
  (`new_string` and `content` may be "") and text, as all canonical required arguments are.
- target_match: with the names equal, the call is aimed where the target was. read_file,
  list_directory, edit_file, write_file: `paths_match` on the path. glob, grep_files: the
  pattern equal (surrounding whitespace aside). run_shell: `commands_match`. apply_patch: the
  files the patches touch match one to one by `paths_match` (the patch texts, whitespace
  folded, when neither names a file). A tool outside the vocabulary: canonical JSON equal.
  An edit_file whose old_string equals its new_string matches no target.
- exact_match: the names equal and the arguments' canonical JSON byte-equal; no path or
  whitespace normalization, so `./src/a.py` for `src/a.py` is a target match, not exact.
- arg_shape: `argument_shape`, in 0..1, whatever the names.
- param_names_match (RoTBench's parameter identification): the names match, every required key
  of the tool is present, and no key falls outside the tool's known keys (required, the
  canonical optional ones in OPTIONAL_KEYS, and whatever keys the target itself holds). For a
  tool outside the vocabulary, the key sets are equal.
- param_values_match (RoTBench's content filling): param_names_match, and every target
  argument is in the prediction with an equal value: path keys after `normalize_path` (equal,
  not suffix), run_shell's command after whitespace folding, anything else by canonical JSON.
  The three RoTBench stages are cumulative, as in RoTBench.
- passed: name_match, required_present and target_match, and an edit_file changes something.
- failure: None when passed, else the first of FAILURES that applies.

Paths. `./`, `.` components, duplicate and trailing slashes are dropped; then two paths match
when one's components end the other's (`src/app.py` and `app.py` match `/home/u/repo/src/app.py`,
`xapp.py` does not), a relative path must end an absolute one, two absolute paths must be equal,
and `.` (or "") matches only itself: it names no file.

Shell commands match when equal after folding whitespace runs to one space (inside quotes too),
or when both have the same `command_intent` among INTENT_MATCH_CLASSES: the verification
classes and git_status, whose command line names the whole target. Inspection classes (read,
list, search, git_diff, git_log) and side effects (install, git_commit...) name their target in
the arguments, so sharing the class is not enough: `cat a.py` is not `cat b.py`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from trajectory_pipeline.ingest.formats import SOURCES
from trajectory_pipeline.mining.verification import VERIFICATION_INTENTS, command_intent
from trajectory_pipeline.mining.vocabulary import (
    CANONICAL_TOOLS,
    CanonicalCall,
    canonicalize,
    missing_required,
)
from trajectory_pipeline.schema import canonical_json

# BFCL-like failure reasons, in precedence order: a failed call gets the first that applies.
FAILURES: tuple[str, ...] = (
    "no_call_parsed",  # the answer held no tool call the parser could read (prose, broken JSON)
    "wrong_tool",  # the first call's canonical name is not the target's
    "missing_required_argument",  # a required argument of the target's tool is absent or empty
    "wrong_argument_type",  # a required argument is present but not text
    "edit_no_change",  # an edit_file whose old_string equals its new_string: a no-op
    "wrong_target",  # the right tool, filled in, aimed elsewhere: path, files, pattern, command
)

# Canonical optional keys (vocabulary.py's docstring); `edits` holds MultiEdit's later edits.
OPTIONAL_KEYS: dict[str, frozenset[str]] = {
    "read_file": frozenset({"offset", "limit"}),
    "list_directory": frozenset(),
    "glob": frozenset({"path"}),
    "grep_files": frozenset({"path", "glob"}),
    "edit_file": frozenset({"replace_all", "edits"}),
    "write_file": frozenset(),
    "apply_patch": frozenset({"workdir"}),
    "run_shell": frozenset({"workdir", "timeout_ms", "description"}),
}
PATH_KEYS = frozenset({"file_path", "directory", "path", "workdir"})
# The argument that says where a canonical call is aimed.
_TARGET_KEY = {
    "read_file": "file_path",
    "list_directory": "directory",
    "edit_file": "file_path",
    "write_file": "file_path",
    "glob": "pattern",
    "grep_files": "pattern",
    "run_shell": "command",
    "apply_patch": "patch_text",
}
INTENT_MATCH_CLASSES: frozenset[str] = VERIFICATION_INTENTS | {"git_status"}


@dataclass(frozen=True)
class Score:
    """One predicted call scored against its target; fields are eval_schema's columns."""

    predicted_name: str | None  # canonical name of the first call; None when none was parsed
    predicted_arguments: str | None  # canonical JSON
    name_match: bool
    required_present: bool
    target_match: bool
    exact_match: bool
    arg_shape: float
    param_names_match: bool
    param_values_match: bool
    passed: bool
    failure: str | None


NO_CALL = Score(None, None, False, False, False, False, 0.0, False, False, False, "no_call_parsed")


def score_call(
    predicted: tuple[str, dict[str, Any]] | None,
    target_name: str,
    target_arguments: dict[str, Any],
    source: str,
) -> Score:
    """Score the first predicted call (name, arguments), or None when none was parsed."""
    if source not in SOURCES:
        raise ValueError(f"source must be one of {list(SOURCES)}, got {source!r}")
    if not isinstance(target_arguments, dict):
        raise TypeError(f"target_arguments must be a dict, got {type(target_arguments).__name__}")
    if predicted is None:
        return NO_CALL
    name, raw_arguments = predicted
    if not isinstance(name, str) or not isinstance(raw_arguments, dict):
        raise TypeError(
            f"predicted must be (name: str, arguments: dict), got "
            f"({type(name).__name__}, {type(raw_arguments).__name__})"
        )
    call = canonicalize(source, name, raw_arguments)
    arguments = call.arguments
    name_match = call.name == target_name

    required = CANONICAL_TOOLS.get(target_name, ())
    as_target = CanonicalCall(target_name, arguments, name, raw_arguments, target_name in CANONICAL_TOOLS)
    missing = missing_required(as_target)
    mistyped = [key for key in required if key not in missing and not isinstance(arguments[key], str)]
    no_change = (
        name_match
        and target_name == "edit_file"
        and arguments.get("old_string") == arguments.get("new_string")
    )
    # docs/design.md#scoring: an edit_file hits its target only when it changes something.
    target_match = name_match and not no_change and _target_match(target_name, arguments, target_arguments)

    keys, target_keys = set(arguments), set(target_arguments)
    if target_name in CANONICAL_TOOLS:
        known = set(required) | OPTIONAL_KEYS[target_name] | target_keys
        names_ok = set(required) <= keys <= known
    else:
        names_ok = keys == target_keys
    param_names_match = name_match and names_ok
    param_values_match = param_names_match and all(
        key in arguments and _value_equal(target_name, key, arguments[key], value)
        for key, value in target_arguments.items()
    )

    failure: str | None = None
    if not name_match:
        failure = "wrong_tool"
    elif missing:
        failure = "missing_required_argument"
    elif mistyped:
        failure = "wrong_argument_type"
    elif no_change:
        failure = "edit_no_change"
    elif not target_match:
        failure = "wrong_target"
    return Score(
        predicted_name=call.name,
        predicted_arguments=canonical_json(arguments),
        name_match=name_match,
        required_present=not missing and not mistyped,
        target_match=target_match,
        exact_match=name_match and canonical_json(arguments) == canonical_json(target_arguments),
        arg_shape=argument_shape(arguments, target_arguments),
        param_names_match=param_names_match,
        param_values_match=param_values_match,
        passed=failure is None,
        failure=failure,
    )


def _target_match(tool: str, predicted: Mapping[str, Any], target: Mapping[str, Any]) -> bool:
    if tool not in CANONICAL_TOOLS:
        return canonical_json(predicted) == canonical_json(target)
    key = _TARGET_KEY[tool]
    mine, theirs = predicted.get(key), target.get(key)
    if not isinstance(mine, str) or not isinstance(theirs, str):
        return False
    if tool == "run_shell":
        return commands_match(mine, theirs)
    if tool == "apply_patch":
        return patches_match(mine, theirs)
    if tool in ("glob", "grep_files"):
        return mine.strip() == theirs.strip()
    return paths_match(mine, theirs)


def _value_equal(tool: str, key: str, mine: object, theirs: object) -> bool:
    if isinstance(mine, str) and isinstance(theirs, str) and tool in CANONICAL_TOOLS:
        if key in PATH_KEYS:
            return normalize_path(mine) == normalize_path(theirs)
        if tool == "run_shell" and key == "command":
            return fold_whitespace(mine) == fold_whitespace(theirs)
    return canonical_json(mine) == canonical_json(theirs)


# --- paths, commands, patches ----------------------------------------------------------------


def _components(path: str) -> tuple[bool, tuple[str, ...]]:
    path = path.strip()
    return path.startswith("/"), tuple(part for part in path.split("/") if part not in ("", "."))


def normalize_path(path: str) -> str:
    """`./src//app.py/` → `src/app.py`; `/a/./b` → `/a/b`; `./` → `.`. `..` is kept as written."""
    absolute, parts = _components(path)
    text = "/".join(parts)
    return "/" + text if absolute else text or "."


def _ends_with(longer: tuple[str, ...], shorter: tuple[str, ...]) -> bool:
    return len(shorter) <= len(longer) and longer[len(longer) - len(shorter) :] == shorter


def paths_match(predicted: str, target: str) -> bool:
    """Equal after normalize_path, or one's components end the other's (see the module docstring)."""
    mine_absolute, mine = _components(predicted)
    theirs_absolute, theirs = _components(target)
    if not mine or not theirs or (mine_absolute and theirs_absolute):
        return (mine_absolute, mine) == (theirs_absolute, theirs)
    if mine_absolute:
        return _ends_with(mine, theirs)
    if theirs_absolute:
        return _ends_with(theirs, mine)
    return _ends_with(mine, theirs) or _ends_with(theirs, mine)


def fold_whitespace(text: str) -> str:
    return " ".join(text.split())


def commands_match(predicted: str, target: str) -> bool:
    """Equal after whitespace folding, or of the same intent class in INTENT_MATCH_CLASSES."""
    if fold_whitespace(predicted) == fold_whitespace(target):
        return True
    intent = command_intent(predicted)
    return intent in INTENT_MATCH_CLASSES and intent == command_intent(target)


_PATCH_FILE = re.compile(r"^\*\*\* (?:Update File|Add File|Delete File|Move to): *(.+?)\s*$", re.MULTILINE)
_DIFF_HEADER = re.compile(r"^--- (.+)\r?\n\+\+\+ (.+)$", re.MULTILINE)


def patch_files(patch: str) -> frozenset[str]:
    """The normalized paths a patch touches: apply_patch `*** ... File:` lines, or unified diff headers."""
    files = set(_PATCH_FILE.findall(patch))
    for old, new in _DIFF_HEADER.findall(patch):
        for header, prefix in ((old, "a/"), (new, "b/")):
            path = header.split("\t")[0].strip()
            if path != "/dev/null":
                files.add(path.removeprefix(prefix))
    return frozenset(normalize_path(path) for path in files)


def patches_match(predicted: str, target: str) -> bool:
    """Each file one patch touches matches a file the other touches; the texts when neither names one."""
    mine, theirs = patch_files(predicted), patch_files(target)
    if not mine and not theirs:
        return fold_whitespace(predicted) == fold_whitespace(target)
    return all(any(paths_match(m, t) for t in theirs) for m in mine) and all(
        any(paths_match(m, t) for m in mine) for t in theirs
    )


# --- argument shape --------------------------------------------------------------------------


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):  # before int: bool is an int subclass
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, list | tuple):
        return "array"
    return "object" if isinstance(value, dict) else type(value).__name__


def argument_shape(predicted: Mapping[str, Any], target: Mapping[str, Any]) -> float:
    """(Jaccard of the key sets + share of shared keys whose JSON types agree) / 2.

    1.0 when both are empty; the type share is 0 when no key is shared.
    """
    mine, theirs = set(predicted), set(target)
    if not mine and not theirs:
        return 1.0
    shared = mine & theirs
    jaccard = len(shared) / len(mine | theirs)
    agree = sum(_json_type(predicted[k]) == _json_type(target[k]) for k in shared)
    return (jaccard + (agree / len(shared) if shared else 0.0)) / 2


# --- pass^k ----------------------------------------------------------------------------------


def pass_hat_k(n: int, c: int, k: int) -> float:
    """tau-bench's unbiased pass^k: the chance that k of n samples, c of them passing, all pass."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"pass^k needs 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")
    return math.comb(c, k) / math.comb(n, k)


def pass_at_k_table(
    passed: Mapping[Any, Sequence[bool]] | pd.Series, ks: Iterable[int] | None = None
) -> dict[int, float]:
    """pass^k (all k samples pass; not pass@k) averaged over cases, for each k in ks.

    `passed` maps each case to its samples' pass flags, e.g. for one model and lane:
    `frame.groupby("decision_id")["passed"].agg(list)`. ks defaults to 1 .. the fewest samples
    any case has; a k above that is an error, since pass^k is undefined for that case.
    """
    counts: list[tuple[int, int]] = []
    for case, samples in passed.items():
        if len(samples) == 0:
            raise ValueError(f"every case needs at least one sample, but case {case!r} has none")
        counts.append((len(samples), sum(bool(flag) for flag in samples)))
    if not counts:
        raise ValueError("pass^k needs at least one case, got none")
    fewest = min(n for n, _ in counts)
    chosen = range(1, fewest + 1) if ks is None else sorted(set(ks))
    for k in chosen:
        if not 1 <= k <= fewest:
            raise ValueError(f"k must be between 1 and the fewest samples of any case ({fewest}), got {k}")
    return {k: sum(pass_hat_k(n, c, k) for n, c in counts) / len(counts) for k in chosen}
