"""Action memory: the calls this person made, per repository, workflow family and tool, and a
selector that puts a remembered call in place of a model's answer when the answer's arguments are
not one of them.

A 1-3 B model often picks the right tool and gets an exact argument wrong (the repository's test
command, a path). The person's own history knows the answer. The weekly `action_memory` asset
builds the memory from the training window's decision points, keeping only sessions of the
`train` split (a held-out session never reaches it), and stores it as Parquet and in a SQL table
a serving process can query:

    memory, counts = build_memory({"2026-11-20": decision_rows, ...}, rendered_window_rows)
    write_memory_sql(memory, "sqlite:///.dagster_home/adapters.sqlite", week="2026-11-15")
    remembered_calls("sqlite:///...", repo="ledger-api", tool="run_shell")

One memory row per (repo, family_id, tool, arguments): `arguments` is the canonical JSON of the
call's aim (`MEMORY_KEYS`: the path of a file call, the command of a shell call, the pattern of a
search; the whole arguments of a tool outside the vocabulary), so edits of one file count as one
call and no file content is stored. `apply_patch` is not remembered: its aim is the patch text.
A call without a repository is not remembered (nothing to key it by). `last_seen` is the last
day (the daily partition: the session's start day) the call was made: no clock value, so a rebuild
gives equal rows.

The selector (`select_call`, replay's `selectors` knob `memory`): the model's answer picks the
tool. When its aim is a remembered aim for the case's repository and tool (a path by
`scoring.paths_match`, so `src/app.py` is the remembered `/home/u/repo/src/app.py`), the answer
stands.
Otherwise each remembered call of that repository and tool (a *candidate*) gets a score in [0, 1]

    score = w_agree * agree + w_context * context + w_frequency * frequency + w_family * family

- agree: the candidate does what the model asked for. A shell command: 1 when both have the same
  intent among the verification intents and git_status (`scoring.INTENT_MATCH_CLASSES`: the
  command line is the whole target), 0.5 when both are verifications of other runners (a
  verification step: the repository's own check is wanted), else 0. A path: 1 for the same file
  name, 0.5 for the same extension, else 0. A search pattern: 1 when equal ignoring case. A tool
  outside the vocabulary: `scoring.argument_shape`.
- context: 1 when the candidate's aim is, of all candidates, the one the case's history mentions
  last (the file the history just read, for an edit); 0.5 when mentioned earlier; else 0.
- frequency: the candidate's calls over the most any candidate has (the repository's usual one).
- family: 1 when it was made in the case's workflow family.

Weights (`WEIGHTS`): (0.4, 0.3, 0.2, 0.1) for every tool but run_shell, which uses (0.5, 0, 0.3,
0.2): a command the history just ran is rarely the next one. The best candidate (ties: more calls,
then the smaller arguments JSON) is taken when its score reaches `memory_threshold` (0.6 by default:
a shell command of another intent class, or a path of another kind, never passes on frequency and
family alone). The taken call is the model's arguments with the aim's keys replaced by the
remembered ones (an edit keeps the model's old and new text). Everything is a pure function of the
case and the memory: the same inputs select the same calls.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson
import pandas as pd
import pyarrow as pa
import sqlalchemy as sa

from trajectory_pipeline.config import knob
from trajectory_pipeline.evaluation.scoring import (
    INTENT_MATCH_CLASSES,
    argument_shape,
    fold_whitespace,
    normalize_path,
    paths_match,
)
from trajectory_pipeline.mining.verification import VERIFICATION_INTENTS, command_intent
from trajectory_pipeline.schema import canonical_json

TRAIN = "train"
SQL_TABLE = "action_memory"
# The keys of a canonical call that say where it is aimed: what the memory keeps of a call.
MEMORY_KEYS: dict[str, tuple[str, ...]] = {
    "read_file": ("file_path",),
    "list_directory": ("directory",),
    "edit_file": ("file_path",),
    "write_file": ("file_path",),
    "glob": ("pattern", "path"),
    "grep_files": ("pattern", "path", "glob"),
    "run_shell": ("command",),
}
NOT_REMEMBERED = frozenset({"apply_patch"})
PATH_TOOLS = frozenset({"read_file", "list_directory", "edit_file", "write_file"})
# (agree, context, frequency, family); see the module docstring.
WEIGHTS: dict[str, tuple[float, float, float, float]] = {"run_shell": (0.5, 0.0, 0.3, 0.2)}
DEFAULT_WEIGHTS = (0.4, 0.3, 0.2, 0.1)

MEMORY_SCHEMA = pa.schema(
    [
        ("repo", pa.string()),
        ("family_id", pa.string()),
        ("tool", pa.string()),  # canonical tool name
        ("arguments", pa.large_string()),  # canonical JSON of the call's aim (MEMORY_KEYS)
        ("action_class", pa.string()),  # the most frequent action class of those calls
        ("calls", pa.int64()),
        ("sessions", pa.int64()),
        ("first_seen", pa.string()),  # the first day (YYYY-MM-DD) with the call
        ("last_seen", pa.string()),  # the last day with the call
    ]
)
MEMORY_COLUMNS = tuple(MEMORY_SCHEMA.names)
_TABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")


@dataclass(frozen=True)
class MemoryStoreConfig:
    """Where the action memory's SQL copy goes."""

    sql_url: str = knob(
        "", "SQLAlchemy URL of the memory's SQL table; empty: the adapter registry's database."
    )
    sql_table: str = knob(SQL_TABLE, "Table that holds the memory, one set of rows per week.")

    def __post_init__(self) -> None:
        if not _TABLE_NAME.fullmatch(self.sql_table):
            raise ValueError(
                f"sql_table must be a plain SQL name (letters, digits, _), got {self.sql_table!r}"
            )


DECISION_COLUMNS = ("session_id", "repo", "family_id", "target_name", "target_arguments", "action_class")


# --- building --------------------------------------------------------------------------------


def remembered_arguments(tool: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
    """What the memory keeps of a canonical call: its aim, paths normalized, commands folded."""
    keys = MEMORY_KEYS.get(tool)
    if keys is None:
        return dict(arguments)
    kept: dict[str, Any] = {}
    for key in keys:
        value = arguments.get(key)
        if not isinstance(value, str):
            continue
        if tool == "run_shell":
            kept[key] = fold_whitespace(value)
        elif key in ("file_path", "directory", "path"):
            kept[key] = normalize_path(value)
        else:
            kept[key] = value
    return kept


def train_sessions(rendered: pd.DataFrame) -> set[str]:
    """Sessions of the window's `train` split, minus any session with a row in another split."""
    if rendered.empty:
        return set()
    split = rendered["split"].astype(str)
    sessions = rendered["session_id"].astype(str)
    return set(sessions[split == TRAIN]) - set(sessions[split != TRAIN])


def build_memory(
    decisions_by_day: Mapping[str, pd.DataFrame], rendered: pd.DataFrame
) -> tuple[pd.DataFrame, dict[str, int]]:
    """The memory of the window: decision points (by day) of its train sessions only, and counts
    of what was kept and left out (`held_out`: calls of sessions outside the train split)."""
    allowed = train_sessions(rendered)
    counts = dict.fromkeys(("decisions", "held_out", "no_repo", "not_remembered", "remembered"), 0)
    groups: dict[tuple[str, str, str, str], dict[str, Any]] = {}
    for day in sorted(decisions_by_day):
        frame = decisions_by_day[day]
        if frame.empty:
            continue
        missing = set(DECISION_COLUMNS) - set(frame.columns)
        if missing:
            raise ValueError(f"decision points of {day} lack the columns {sorted(missing)}")
        columns = [frame[name].astype(object).where(frame[name].notna(), None) for name in DECISION_COLUMNS]
        for session, repo, family, tool, arguments, action in zip(*columns, strict=True):
            counts["decisions"] += 1
            if str(session) not in allowed:
                counts["held_out"] += 1
                continue
            if not repo:
                counts["no_repo"] += 1
                continue
            if tool in NOT_REMEMBERED:
                counts["not_remembered"] += 1
                continue
            parsed = orjson.loads(arguments) if arguments else {}
            aim = remembered_arguments(str(tool), parsed if isinstance(parsed, dict) else {})
            if not aim:
                counts["not_remembered"] += 1
                continue
            key = (str(repo), str(family or ""), str(tool), canonical_json(aim))
            group = groups.setdefault(
                key, {"calls": 0, "sessions": set(), "actions": {}, "first": day, "last": day}
            )
            group["calls"] += 1
            group["sessions"].add(str(session))
            group["actions"][action] = group["actions"].get(action, 0) + 1
            group["last"] = day
            counts["remembered"] += 1
    rows = [
        {
            "repo": repo,
            "family_id": family or None,
            "tool": tool,
            "arguments": arguments,
            "action_class": min(g["actions"].items(), key=lambda kv: (-kv[1], str(kv[0])))[0],
            "calls": g["calls"],
            "sessions": len(g["sessions"]),
            "first_seen": g["first"],
            "last_seen": g["last"],
        }
        for (repo, family, tool, arguments), g in sorted(groups.items())
    ]
    frame = pd.DataFrame(rows, columns=list(MEMORY_COLUMNS))
    return frame.astype({"calls": "int64", "sessions": "int64"}), counts


# --- SQL ---------------------------------------------------------------------------------------


def _table(metadata: sa.MetaData, name: str) -> sa.Table:
    return sa.Table(
        name,
        metadata,
        sa.Column("week", sa.String(10), primary_key=True),
        sa.Column("repo", sa.String(500), primary_key=True),
        sa.Column("family_id", sa.String(64), primary_key=True),  # "" for none
        sa.Column("tool", sa.String(200), primary_key=True),
        sa.Column("arguments_hash", sa.String(64), primary_key=True),
        sa.Column("arguments", sa.Text, nullable=False),
        sa.Column("action_class", sa.String(40)),
        sa.Column("calls", sa.Integer, nullable=False),
        sa.Column("sessions", sa.Integer, nullable=False),
        sa.Column("first_seen", sa.String(10)),
        sa.Column("last_seen", sa.String(10)),
        sa.Index(f"ix_{name}_lookup", "repo", "tool", "week"),
    )


def _engine(url: str) -> sa.engine.Engine:
    from trajectory_pipeline.training.registry import make_engine

    return make_engine(url)


def write_memory_sql(memory: pd.DataFrame, url: str, week: str, table: str = SQL_TABLE) -> int:
    """Replace the week's rows of the SQL table (created when missing) in one transaction; the
    number of rows written. Other weeks' rows stay, so a serving process reads the latest week."""
    metadata = sa.MetaData()
    target = _table(metadata, table)
    engine = _engine(url)
    try:
        with engine.begin() as conn:
            metadata.create_all(conn, checkfirst=True)
            conn.execute(sa.delete(target).where(target.c.week == week))
            rows = [
                {
                    "week": week,
                    "repo": row["repo"],
                    "family_id": row["family_id"] or "",
                    "tool": row["tool"],
                    "arguments_hash": hashlib.sha256(str(row["arguments"]).encode()).hexdigest(),
                    "arguments": row["arguments"],
                    "action_class": row["action_class"],
                    "calls": int(row["calls"]),
                    "sessions": int(row["sessions"]),
                    "first_seen": row["first_seen"],
                    "last_seen": row["last_seen"],
                }
                for row in memory.to_dict("records")
            ]
            if rows:
                conn.execute(sa.insert(target), rows)
    finally:
        engine.dispose()
    return len(memory)


def remembered_calls(
    url: str, repo: str, tool: str | None = None, week: str | None = None, table: str = SQL_TABLE
) -> list[dict[str, Any]]:
    """What a serving process asks: the remembered calls of a repository (and tool), of `week`, else
    the latest week stored, most frequent first; `arguments` as a dict, families summed."""
    metadata = sa.MetaData()
    source = _table(metadata, table)
    engine = _engine(url)
    try:
        with engine.connect() as conn:
            if not sa.inspect(conn).has_table(table):
                return []
            if week is None:
                week = conn.execute(sa.select(sa.func.max(source.c.week))).scalar()
                if week is None:
                    return []
            query = sa.select(source).where(source.c.week == week, source.c.repo == repo)
            if tool is not None:
                query = query.where(source.c.tool == tool)
            found: dict[tuple[str, str], dict[str, Any]] = {}
            for row in conn.execute(query).mappings():
                entry = found.setdefault(
                    (row["tool"], row["arguments"]),
                    {
                        "tool": row["tool"],
                        "arguments": orjson.loads(row["arguments"]),
                        "calls": 0,
                        "last_seen": row["last_seen"],
                    },
                )
                entry["calls"] += int(row["calls"])
                entry["last_seen"] = max(entry["last_seen"] or "", row["last_seen"] or "") or None
    finally:
        engine.dispose()
    return sorted(found.values(), key=lambda e: (-e["calls"], e["tool"], canonical_json(e["arguments"])))


# --- selecting -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Remembered:
    """One remembered call of a repository and tool, its families summed."""

    tool: str
    arguments: dict[str, Any]
    key: str  # canonical JSON of arguments
    calls: int
    families: frozenset[str]
    action_class: str | None


@dataclass(frozen=True)
class Selection:
    """The call the selector scores, and how it got there."""

    name: str
    arguments: dict[str, Any]
    from_memory: bool
    candidates: tuple[Remembered, ...]  # the remembered calls of the repository and tool
    score: float | None  # the taken (or best rejected) candidate's score; None without candidates


class MemoryIndex:
    """The memory frame, indexed by (repo, tool), with the repository of each workflow family (to
    place a case whose rendered row names no repository)."""

    def __init__(self, memory: pd.DataFrame) -> None:
        grouped: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}
        self.repo_of_family: dict[str, str] = {}
        for row in memory.to_dict("records") if not memory.empty else []:
            repo, tool, key = str(row["repo"]), str(row["tool"]), str(row["arguments"])
            family = row["family_id"] if isinstance(row["family_id"], str) else ""
            entry = grouped.setdefault((repo, tool), {}).setdefault(
                key, {"calls": 0, "families": set(), "actions": {}}
            )
            entry["calls"] += int(row["calls"])
            if family:
                entry["families"].add(family)
                self.repo_of_family[family] = repo
            action = row.get("action_class")
            entry["actions"][action] = entry["actions"].get(action, 0) + int(row["calls"])
        self._calls: dict[tuple[str, str], tuple[Remembered, ...]] = {
            where: tuple(
                Remembered(
                    tool=where[1],
                    arguments=orjson.loads(key),
                    key=key,
                    calls=entry["calls"],
                    families=frozenset(entry["families"]),
                    action_class=min(entry["actions"].items(), key=lambda kv: (-kv[1], str(kv[0])))[0],
                )
                for key, entry in sorted(calls.items())
            )
            for where, calls in grouped.items()
        }

    def __len__(self) -> int:
        return sum(len(calls) for calls in self._calls.values())

    def calls(self, repo: str | None, tool: str) -> tuple[Remembered, ...]:
        return self._calls.get((repo, tool), ()) if repo else ()

    def repo_of(self, repo: str | None, family_id: str | None) -> str | None:
        """The case's repository: its own, else its family's (families are per repository)."""
        if repo:
            return repo
        return self.repo_of_family.get(family_id) if family_id else None


def history_text(messages: Sequence[Mapping[str, Any]]) -> str:
    """The history as one text, in order: message contents and the arguments of earlier calls."""
    parts: list[str] = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
        elif content is not None:
            parts.append(canonical_json(content))
        for call in message.get("tool_calls") or ():
            function = call.get("function", call) if isinstance(call, dict) else {}
            arguments = function.get("arguments")
            parts.append(arguments if isinstance(arguments, str) else canonical_json(arguments))
    return "\n".join(parts)


def _aim(tool: str, arguments: Mapping[str, Any]) -> str | None:
    keys = MEMORY_KEYS.get(tool)
    if not keys:
        return None
    value = arguments.get(keys[0])
    return value if isinstance(value, str) else None


def _mention(text: str, aim: str | None, tool: str) -> int:
    """Where the history last mentions the aim (-1: never); a path by its last two components when
    the whole of it is not there (histories hold absolute paths, memory relative ones, or back)."""
    if not aim:
        return -1
    found = text.rfind(aim)
    if found < 0 and tool in PATH_TOOLS:
        parts = [part for part in aim.split("/") if part]
        if len(parts) > 2:
            found = text.rfind("/".join(parts[-2:]))
    return found


def _agree(tool: str, mine: Mapping[str, Any], theirs: Remembered) -> float:
    if tool == "run_shell":
        a, b = _aim(tool, mine), _aim(tool, theirs.arguments)
        if a is None or b is None:
            return 0.0
        ia, ib = command_intent(a), command_intent(b)
        if ia is not None and ia == ib and ia in INTENT_MATCH_CLASSES:
            return 1.0
        return 0.5 if ia in VERIFICATION_INTENTS and ib in VERIFICATION_INTENTS else 0.0
    if tool in PATH_TOOLS:
        a, b = _aim(tool, mine), _aim(tool, theirs.arguments)
        if a is None or b is None:
            return 0.0
        name_a, name_b = os.path.basename(normalize_path(a)), os.path.basename(normalize_path(b))
        if name_a and name_a == name_b:
            return 1.0
        ext_a, ext_b = os.path.splitext(name_a)[1], os.path.splitext(name_b)[1]
        return 0.5 if ext_a and ext_a == ext_b and tool != "list_directory" else 0.0
    if tool in MEMORY_KEYS:
        a, b = _aim(tool, mine), _aim(tool, theirs.arguments)
        return 1.0 if a is not None and b is not None and a.strip().lower() == b.strip().lower() else 0.0
    return argument_shape(mine, theirs.arguments)


def candidate_scores(
    tool: str,
    arguments: Mapping[str, Any],
    candidates: Sequence[Remembered],
    history: str,
    family_id: str | None,
) -> list[float]:
    """The score of each candidate (module docstring), in the candidates' order."""
    if not candidates:
        return []
    w_agree, w_context, w_frequency, w_family = WEIGHTS.get(tool, DEFAULT_WEIGHTS)
    most = max(c.calls for c in candidates)
    mentions = [_mention(history, _aim(tool, c.arguments), tool) for c in candidates]
    latest = max(mentions)
    scores = []
    for candidate, mention in zip(candidates, mentions, strict=True):
        context = 0.0 if mention < 0 else 1.0 if mention == latest else 0.5
        score = (
            w_agree * _agree(tool, arguments, candidate)
            + w_context * context
            + w_frequency * candidate.calls / most
            + w_family * (family_id is not None and family_id in candidate.families)
        )
        scores.append(round(score, 9))  # no float noise between platforms at the threshold
    return scores


def is_remembered(tool: str, arguments: Mapping[str, Any], candidates: Sequence[Remembered]) -> bool:
    """The answer's aim is one the memory holds for the repository and tool."""
    mine = canonical_json(remembered_arguments(tool, arguments))
    if tool in MEMORY_KEYS:
        aim = _aim(tool, remembered_arguments(tool, arguments))
        if aim is None:
            return False
        if tool in PATH_TOOLS:  # `src/app.py` is the remembered `/home/u/repo/src/app.py`
            return any(paths_match(aim, _aim(tool, c.arguments) or "") for c in candidates)
        return any(_aim(tool, c.arguments) == aim for c in candidates)
    return any(c.key == mine for c in candidates)


def with_memory(tool: str, arguments: Mapping[str, Any], candidate: Remembered) -> dict[str, Any]:
    """The model's arguments aimed where the remembered call was (a tool outside the vocabulary:
    the remembered arguments)."""
    if tool not in MEMORY_KEYS:
        return dict(candidate.arguments)
    kept = {k: v for k, v in arguments.items() if k not in MEMORY_KEYS[tool]}
    return {**kept, **candidate.arguments}


def select_call(
    index: MemoryIndex,
    repo: str | None,
    family_id: str | None,
    messages: Sequence[Mapping[str, Any]],
    tool: str,
    arguments: Mapping[str, Any],
    threshold: float,
) -> Selection:
    """The memory selector over one canonical answer (module docstring)."""
    candidates = index.calls(index.repo_of(repo, family_id), tool)
    own = Selection(tool, dict(arguments), False, candidates, None)
    if not candidates or tool in NOT_REMEMBERED or is_remembered(tool, arguments, candidates):
        return own
    scores = candidate_scores(tool, arguments, candidates, history_text(messages), family_id)
    best = min(range(len(candidates)), key=lambda i: (-scores[i], -candidates[i].calls, candidates[i].key))
    if scores[best] < threshold:
        return Selection(tool, dict(arguments), False, candidates, scores[best])
    return Selection(tool, with_memory(tool, arguments, candidates[best]), True, candidates, scores[best])


# --- replay rows -------------------------------------------------------------------------------


def memory_rows(
    own: pd.DataFrame, cases: Sequence[Any], memory: MemoryIndex, threshold: float
) -> pd.DataFrame:
    """The `memory` selector's rows beside the model's own (`none`) rows: the same answers, each
    first call put through `select_call` and scored again with the scorer. `candidates` is the
    number of remembered calls weighed; `oracle` says whether the answer's call or one of them
    passes. A case's context (repository, family, history) comes from its `EvalCase`."""
    from trajectory_pipeline.evaluation.schema import MEMORY
    from trajectory_pipeline.evaluation.scoring import score_call

    by_id = {case.decision_id: case for case in cases}
    rows = []
    for row in own.to_dict("records"):
        case = by_id[row["decision_id"]]
        row = {
            **row,
            "selector": MEMORY,
            "candidates": 0,
            "from_memory": False,
            "oracle": bool(row["passed"]),
        }
        name = row["predicted_name"]
        if isinstance(name, str):
            arguments = orjson.loads(row["predicted_arguments"] or "{}")
            chosen = select_call(memory, case.repo, case.family_id, case.messages, name, arguments, threshold)
            oracle = bool(row["passed"]) or any(
                score_call(
                    (name, with_memory(name, arguments, c)),
                    case.target_name,
                    case.target_arguments,
                    case.source,
                ).passed
                for c in chosen.candidates
            )
            row.update(candidates=len(chosen.candidates), oracle=oracle)
            if chosen.from_memory:
                score = score_call(
                    (chosen.name, chosen.arguments), case.target_name, case.target_arguments, case.source
                )
                row.update(dataclasses.asdict(score), from_memory=True)
        rows.append(row)
    return pd.DataFrame(rows, columns=list(own.columns))
