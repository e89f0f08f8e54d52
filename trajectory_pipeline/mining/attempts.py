"""Mining task attempts out of raw_sessions: one row per attempt, its signals, a tier and a score.

An attempt is a real user instruction and the agent's work until the next one (or the session's
end). For each attempt this records what the agent did (tool calls in the canonical vocabulary,
files inspected and edited, verification commands and their outcomes), what went wrong (errors,
guard denials and what came next, interruptions, corrections), a quality tier with the reasons,
a numeric quality in [0, 1] and a workflow family id. The `mined_trajectories` asset is a thin
wrapper around `mine_trajectories`; decision-point extraction reuses `annotate_attempts`:

    from trajectory_pipeline.mining.attempts import MiningConfig, TRAJECTORY_SCHEMA, mine_trajectories
    attempts = mine_trajectories(pd.read_parquet("data/warehouse/raw_sessions/2026-11-20.parquet"))
    table = pa.Table.from_pandas(attempts, schema=TRAJECTORY_SCHEMA, preserve_index=False)

Attempts (positions are `order_session_events` ordinals):
- An instruction is a user message that is not a sub-agent's prompt (`is_sidechain`), not an
  interruption notice, not a tool result and not injected context (parsers mark that `meta`).
  User messages with no agent activity between them (Codex's AGENTS.md and prompt, Claude's text
  and image blocks, aider's `/ask` then the question) are one instruction, joined by blank lines.
- Events before a session's first instruction (system prompts, sub-agent warm-ups) belong to no
  attempt: nobody asked for anything yet. A session without an instruction has no attempts.
- Sub-agent events fall in the attempt whose span holds them (events are in time order) and are
  counted in `sidechain_events`; their calls are part of the attempt's work.

Signals, and the heuristics behind them:
- Errors: tool results flagged `is_error` or with a non-zero exit code (or, where a source
  records neither, a result that opens with "Error", "Exit code N", "Traceback"...), and error
  events, except the notice an agent log writes right after a failed result, which is the same
  error. An error is resolved by a later successful tool result; one still open at the end is
  `unresolved_error_at_end`.
- Guard denials: a result that says a person, hook, sandbox or policy refused the call (Claude
  Code's "The user doesn't want to proceed with this tool use", "PreToolUse:Bash hook error",
  2.x's "PreToolUse:Bash hook blocking error from command: ..." and "Execution stopped by
  PreToolUse hook", Codex's "rejected by user" and "failed in sandbox", "DENIED:", "blocked by
  policy", "the user declined"...), or a call that a refusal notice names: a system event whose
  `tool_call_id` is the call's and whose text is such a refusal (the parser makes one of Claude
  Code 2.x's hook_blocking_error attachments and hook system lines, whatever the result says).
  A PostToolUse or Stop hook's blocking error is no refusal: the call ran. They are not errors.
  "Permission denied" and "not permitted" count only when the
  result opens with them: inside a shell's output they are the OS refusing a file, an error the
  agent should fix. The next call of the same agent is a recovery when it is a different call that
  was not refused and is not an inspection repeated from before the guard (same canonical name and
  arguments as an inspection before it).
- Interruptions: events flagged `interrupted`, and notices such as "interrupted by user
  (KeyboardInterrupt)". Claude Code's "[Request interrupted by user for tool use]" right after a
  refused call is part of that refusal, not a second event. Chat logs record no interruption, so
  there (`MiningConfig.implicit_interruption_sources`) an attempt that the next instruction cuts
  off while the agent's last act was a tool call or result (it never answered) counts as one; in
  other sources that is a message queued while the agent worked, or a turn it ended itself.
- Corrections: the next instruction corrects this attempt when it opens with "no", "wait",
  "stop", "don't", "actually", "undo", "revert", "instead"... or says "that's wrong", "not what I
  meant", "bad idea" (`MiningConfig.correction_pattern`). It is counted on the corrected attempt.
- Verification: run_shell calls whose command the verification classifier recognizes (pytest, npm
  test, cargo test, ruff, tsc...), with outcomes from exit codes and runner output. Refused ones
  did not run and are left out. `final_verification` is the last one after the last successful
  edit (after any, with no edit); `verified_after_last_edit` says it passed after a real edit.
- Intent: keyword rules on the instruction (first match wins): explain when it asks for no
  changes; write_tests; bump_dependency; refactor (renames, lint and clippy clean-ups); fix_bug;
  add_feature; ops (runs, commits, deploys); explain (questions); else other. A correction takes
  the intent of the attempt it corrects: it continues the same task.
- Shape: the action classes in order, with runs collapsed and `patch` counted as `edit` (a Codex
  apply_patch and a Claude Edit are the same step); refused calls are left out. The family id
  hashes repo, intent and shape.

Tiers (first matching rule; reasons are all the codes that apply):
- reject: `no_tool_calls`, `too_short` (fewer than `min_tool_calls`), `interrupted`,
  `final_verification_failed`, `unresolved_error_at_end`, `all_calls_refused` (nothing ran);
- gold: a successful edit and a passing verification after the last one
  (`edit_then_passing_verification`), unless the attempt ended on a refused call
  (`ended_on_guard_denial`) or scores under `gold_min_quality` (`below_gold_quality`): then silver;
- silver: edits with no failing final verification (`edit_without_verification`,
  `edit_verification_unknown`), or a passing verification without edits (`inspect_only_verified`);
  with `unverified_edit_tier="bronze"` such edits are bronze unless a commit landed them;
- bronze: tool work without an outcome signal (`no_outcome_signal`).
`ended_on_guard_denial` is added to any tier's reasons when the agent's last call was refused.
Git outcomes (`landing.py`): when the attempt's repository is on disk, a commit soon after the
attempt that touches a file it edited is recorded (`landed_commit`) and adds `landed_in_commit` to
the reasons: evidence the edits landed, which lifts an attempt with edits and no failing
verification to silver (never to gold, which needs a passing verification).
Events before the first instruction are not mined; the `mined_trajectories` asset may count them.

Quality: each tier owns a quarter of [0, 1] (reject [0, .25], bronze [.25, .5], silver [.5, .75],
gold [.75, 1]) and the signal score in [0, 1] places the attempt inside it:
`quality = tier_floor + 0.25 * signal`, where signal is the weighted mean (weights in
`MiningConfig`) of: the share of calls that did not fail; a passing final verification; guard
handling (recoveries minus repeated inspections per denial, 1 without denials); no corrections;
the agent's own confidence (0.5 where the source records none). So any threshold keeps whole
tiers above it and the better attempts of the tier it cuts.

Speed: only the sort keys are sorted (`ordered_columns`), only the columns mining reads are taken
in that order and turned into plain lists, once; each session is a range of rows walked by plain
Python loops, with the per-row tests (instruction, interruption, failed result) made once per row.
What repeats within a run (a tool call's canonical form and class, a result's guard check, a
verification's outcome, an instruction's intent, a family id) is worked out once per distinct value,
in memos that live for one run. One core mines a generated day (32k events, 2.2k attempts) in about
0.25 s, ordering included; the Python walk is a third of it, reading runner output an eighth.
`annotate_attempts` gives decision-point extraction the same: one conversion for all the attempts
it needs, of only the columns annotation reads (`CALL_COLUMNS`), and with `outcomes=False` no
runner output read at all. The day stages skip pandas: `mine_table` orders an Arrow table
(`ordered_table`) and turns its columns into lists with `to_pylist` (`ArrowEventLists`, the same
lists as `EventLists` of the frame): the mining stage takes about a sixth less time per day.
Text columns of few distinct values (session, file, role, kind) go through a dictionary, so each
value becomes a Python string once.
"""

from __future__ import annotations

import bisect
import hashlib
import operator
import re
import shlex
from collections import Counter, defaultdict, deque
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import PurePath
from typing import Any, NamedTuple, TypeVar

import pandas as pd
import pyarrow as pa

from trajectory_pipeline.config import knob
from trajectory_pipeline.events import (
    READ_COLUMNS,
    REQUIRED_COLUMNS,
    ArrowEventLists,
    EventLists,
    ordered_columns,
    ordered_table,
    rows_table,
    session_runs,
)
from trajectory_pipeline.mining.actions import CallInfo, action_class, is_decisive, shell_command
from trajectory_pipeline.mining.landing import (
    AttemptEdits,
    LandingOptions,
    find_landings,
    parse_repo_paths,
)
from trajectory_pipeline.mining.verification import command_intent, command_outcome
from trajectory_pipeline.mining.vocabulary import CanonicalCall, canonicalize
from trajectory_pipeline.schema import canonical_json

TIERS = ("gold", "silver", "bronze", "reject")
# Events mined at a time by `mine_table` (whole sessions): bounds the Python lists of a day's events.
MINE_BATCH_EVENTS = 4_096
INTENTS = (
    "fix_bug",
    "add_feature",
    "refactor",
    "write_tests",
    "bump_dependency",
    "explain",
    "ops",
    "other",
)
TIER_FLOORS = {"reject": 0.0, "bronze": 0.25, "silver": 0.5, "gold": 0.75}
TIER_WIDTH = 0.25

DEFAULT_CORRECTION_PATTERN = (
    r"^\W*(?:no\b|nope\b|wrong\b|wait\b|stop\b|hold on\b|don'?t\b|do not\b|actually\b|undo\b|revert\b"
    r"|instead\b|rather\b|not like that\b|i said\b|i meant\b|try again\b|that'?s not\b)"
    r"|\b(?:that'?s (?:wrong|incorrect|not (?:it|right|what))|not what i (?:asked|meant|wanted)"
    r"|bad idea|not acceptable|undo (?:that|this|it|your)|revert (?:that|this|it|your)|instead\b)"
)


@dataclass(frozen=True)
class MiningConfig:
    """Thresholds and weights of tiering and scoring (see the module docstring for the rules)."""

    min_tool_calls: int = knob(
        1, 'An attempt with fewer tool calls is rejected as "too_short" (none at all: "no_tool_calls").'
    )
    gold_min_quality: float = knob(
        0.8,
        "A gold-rule attempt below this quality is silver (below_gold_quality). The default only "
        "demotes gold attempts with a signal score under 0.2: many failed calls and a correction, say.",
    )
    # Weights of the signal score that places an attempt inside its tier's quarter of [0, 1];
    # normalized by their sum, so only their ratios matter.
    weight_clean_calls: float = knob(0.35, "Signal weight: share of tool calls that did not fail.")
    weight_verified: float = knob(0.25, "Signal weight: the final verification passed.")
    weight_guard_handling: float = knob(
        0.15, "Signal weight: recovered from guard denials (full marks without denials)."
    )
    weight_no_corrections: float = knob(0.15, "Signal weight: the user did not correct the attempt.")
    weight_confidence: float = knob(
        0.10, "Signal weight: the agent's own confidence, where the source records it."
    )
    correction_pattern: str = knob(
        DEFAULT_CORRECTION_PATTERN,
        "Case-insensitive regex on the next instruction: a match counts a correction of this attempt.",
    )
    implicit_interruption_sources: tuple[str, ...] = knob(
        ("chat_jsonl",),
        "Sources whose logs record no interruption: there an attempt the next instruction cuts off "
        "while the agent's last act was a tool call or result counts as interrupted.",
    )
    unverified_edit_tier: str = knob(
        "silver",
        'Tier of an attempt with edits and no passing verification (none, or of unknown outcome): "silver", '
        'or "bronze", so that only evidence lifts it to silver: a commit that landed its edits '
        "(landed_in_commit).",
    )
    landing_window_minutes: int = knob(
        30,
        "Git outcomes: a commit from an attempt's first edit to this many minutes after its end that touches "
        "a file it edited is evidence the edits landed (landed_commit). 0 turns the git check off.",
    )
    landing_weak_match: bool = knob(
        False,
        "Git outcomes: also count a commit in the window that touches none of the edited files (a weak "
        "match).",
    )
    landing_repo_paths: str = knob(
        "",
        "Git outcomes: where repositories live, repo=path pairs (ledger-api=~/src/ledger-api); an attempt "
        "whose repo is not named here is looked up by its working folder.",
    )
    landing_timeout_s: float = knob(10.0, "Git outcomes: seconds one git command may take (else git_failed).")

    def __post_init__(self) -> None:
        if self.min_tool_calls < 0:
            raise ValueError(f"min_tool_calls must be at least 0, got {self.min_tool_calls}")
        if not 0.0 <= self.gold_min_quality <= 1.0:
            raise ValueError(f"gold_min_quality must be within [0, 1], got {self.gold_min_quality}")
        weights = {name: getattr(self, name) for name in _WEIGHT_FIELDS}
        negative = {name: value for name, value in weights.items() if value < 0}
        if negative or sum(weights.values()) <= 0:
            raise ValueError(f"signal weights must be >= 0 with a positive sum, got {negative or weights}")
        try:
            re.compile(self.correction_pattern)
        except re.error as err:
            raise ValueError(f"correction_pattern is not a valid regex: {err}") from err
        if self.unverified_edit_tier not in ("silver", "bronze"):
            raise ValueError(
                f'unverified_edit_tier must be "silver" or "bronze", got {self.unverified_edit_tier!r}'
            )
        if self.landing_window_minutes < 0 or self.landing_timeout_s <= 0:
            raise ValueError(
                "landing_window_minutes must be >= 0 and landing_timeout_s > 0, got "
                f"{self.landing_window_minutes} and {self.landing_timeout_s}"
            )
        try:
            parse_repo_paths(self.landing_repo_paths)
        except ValueError as err:
            raise ValueError(f"landing_repo_paths: {err}") from None

    def landing(self) -> LandingOptions | None:
        """The git check's options, or None when it is off."""
        if not self.landing_window_minutes:
            return None
        return LandingOptions(
            window_minutes=self.landing_window_minutes,
            weak=self.landing_weak_match,
            repo_paths=parse_repo_paths(self.landing_repo_paths),
            timeout_s=self.landing_timeout_s,
        )

    @cached_property  # read for every attempt
    def weights(self) -> tuple[float, ...]:
        return tuple(getattr(self, name) for name in _WEIGHT_FIELDS)


_WEIGHT_FIELDS = (
    "weight_clean_calls",
    "weight_verified",
    "weight_guard_handling",
    "weight_no_corrections",
    "weight_confidence",
)


_TS = pa.timestamp("us", tz="UTC")
_STRINGS = pa.list_(pa.string())

TRAJECTORY_SCHEMA = pa.schema(
    [
        ("attempt_id", pa.string()),  # sha256 of session, file and line of the first instruction; 16 hex
        ("session_id", pa.string()),
        ("source", pa.string()),
        ("repo", pa.string()),
        ("git_branch", pa.string()),
        ("model", pa.string()),
        ("attempt_index", pa.int64()),  # 0-based within the session
        ("first_ordinal", pa.int64()),  # the instruction's ordinal (order_session_events)
        ("last_ordinal", pa.int64()),  # inclusive
        ("instruction", pa.large_string()),
        ("started_at", _TS),
        ("ended_at", _TS),
        ("duration_s", pa.float64()),
        ("tool_calls", pa.int64()),
        ("tools_used", _STRINGS),  # canonical names, in order of first use
        ("tool_sequence", _STRINGS),  # canonical names, every call in order
        ("files_inspected", _STRINGS),
        ("files_edited", _STRINGS),
        ("edits", pa.int64()),  # successful edit / write / patch calls
        ("verification_intents", _STRINGS),
        ("verification_outcomes", _STRINGS),  # parallel to verification_intents
        ("final_verification", pa.string()),  # passed / failed / unknown, or null
        ("verified_after_last_edit", pa.bool_()),
        ("landed_commit", pa.string()),  # a commit soon after that touched the edited files (git); or null
        ("errors", pa.int64()),
        ("unresolved_error_at_end", pa.bool_()),
        ("guard_denials", pa.int64()),
        ("guard_recoveries", pa.int64()),
        ("repeated_inspections_after_guard", pa.int64()),
        ("interruptions", pa.int64()),
        ("corrections", pa.int64()),
        ("confidence", pa.float64()),  # mean of the agent's own confidences; null where none recorded
        ("sidechain_events", pa.int64()),
        ("intent", pa.string()),
        ("shape", pa.string()),  # e.g. "inspect>edit>verification"
        ("family_id", pa.string()),  # sha256 of repo, intent and shape; 12 hex
        ("tier", pa.string()),
        ("tier_reasons", _STRINGS),
        ("quality", pa.float64()),
    ]
)

# ---------------------------------------------------------------- text heuristics

_GUARD_AT_START = re.compile(
    r"(?:<tool_use_error>\s*)?(?:error:\s*)?(?:"
    r"the user doesn['’]?t want to (?:proceed|take this action)|user rejected|the user declined|denied:"
    r"|guard refused|permission to use \S+ (?:with .* )?has been denied|claude requested permissions"
    r"|permission denied|not permitted|blocked:|blocked by"
    r"|pretooluse(?::\S*)? hook (?:error|blocking error|stopped continuation)"
    r"|execution stopped by pretooluse hook"
    r"|hook \S+ (?:denied|blocked)|tool (?:call|execution) (?:was )?(?:cancelled|denied|rejected))",
    re.IGNORECASE,
)
_GUARD_ANYWHERE = re.compile(
    r"(?:rejected|declined|denied|cancell?ed) by (?:the )?(?:user|hook|policy|sandbox|approval)"
    r"|failed in sandbox|sandbox denied|blocked by (?:policy|hook|the sandbox|sandbox|guard)"
    r"|not allowed by (?:policy|the sandbox|sandbox)|approval (?:was )?denied",
    re.IGNORECASE,
)
_GUARD_HEAD = 400
# Every guard phrase holds one of these; a plain substring test spares the regexes most results.
_GUARD_WORDS = (
    "doesn't want",
    "doesn’t want",
    "doesnt want",
    "reject",
    "declin",
    "denied",
    "cancel",
    "guard",
    "permission",
    "permitted",
    "blocked",
    "hook",
    "sandbox",
    "not allowed",
)
# Every _GUARD_ANYWHERE match holds one of these, in lower case: most results hold none, and
# that unanchored search is the one costly step (20 µs on a 400-character head).
_GUARD_ANYWHERE_WORDS = (" by ", "andbox", "approval")

_INTERRUPT_TEXT = re.compile(
    r"\s*(?:\[request interrupted by user|interrupted by (?:the )?user\b|turn aborted\b|keyboardinterrupt)",
    re.IGNORECASE,
)
_ERROR_TEXT = re.compile(r"\s*(?:error\b|exit code [1-9]|traceback \(most recent|fatal:)", re.IGNORECASE)

_PATCH_FILE = re.compile(
    r"^\*\*\* (?:Update|Add|Delete) File: (.+?)\s*$|^\+\+\+ (?:b/)?(.+?)\s*$", re.MULTILINE
)
_SED_SCRIPT = re.compile(r"^\d*,?\d*p$")

_INTENT_RULES: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (intent, re.compile(pattern, re.IGNORECASE))
    for intent, pattern in (
        ("explain", r"don'?t change anything|no changes|just explain|without changing"),
        ("write_tests", r"\b(?:add|write|create)\b.{0,40}\btests?\b|\bno tests?\b|\btest coverage\b"),
        (
            "bump_dependency",
            r"\b(?:bump|upgrade|downgrade)\b|\b(?:dependabot|renovate)\b"
            r"|\bupdate\b.{0,40}(?:\bto v?\d+\.\d+|\bversion|\bdependenc|\bpackage)",
        ),
        (
            "refactor",
            r"\b(?:refactor\w*|rename\w*|clean ?up|restructure|simplify|reorgani[sz]e|extract|lint|clippy"
            r"|warnings?)\b|misleading name|\bcall it\b.+\beverywhere\b",
        ),
        (
            "fix_bug",
            r"\b(?:fix\w*|bugs?|broken|crash\w*|fail\w*|errors?|exception|traceback|regression|wrong"
            r"|off[- ]by[- ]one|doesn'?t work|not working|is red)\b"
            r"|\b(?:render|show|display|return|print)s?\b.{0,40}\binstead of\b",
        ),
        (
            "add_feature",
            r"^\W*(?:add|implement|support|introduce|expose|allow|enable|return|create|build)\b"
            r"|\badd\b|\bneeds? (?:a|an)\b|\bnew (?:feature|endpoint|flag|option|command)\b",
        ),
        (
            "ops",
            r"^\W*run\b|\b(?:rerun|re-run|deploy\w*|restart\w*|roll ?back|backfill|dry[- ]run|migrate"
            r"|release|commit|push|merge|rebase)\b",
        ),
        (
            "explain",
            r"^\W*(?:how|what|why|where|which|who|when|is|are|does|do|can you explain|explain|describe"
            r"|summari[sz]e|walk me through|tell me|quick question)\b|\bexplain\b",
        ),
    )
)


def classify_intent(instruction: str) -> str:
    """The instruction's intent class from keywords (module docstring); "other" when none match."""
    for intent, pattern in _INTENT_RULES:
        if pattern.search(instruction):
            return intent
    return "other"


def is_guard_denial(text: str | None) -> bool:
    """Whether a tool result's text says a person, hook, sandbox or policy refused the call."""
    if not text:
        return False
    head = text[:_GUARD_HEAD].lstrip()  # not text.lstrip(): that copies a whole long output
    if len(head) < _GUARD_HEAD < len(text):  # it opened with whitespace: read on past it
        head = text.lstrip()[:_GUARD_HEAD]
    lowered = head.lower()
    at_start = _GUARD_AT_START.match(head) is not None  # anchored: cheap
    # Three substring tests rule out most results, where the fourteen _GUARD_WORDS took twice as long.
    if not at_start and not any(map(lowered.__contains__, _GUARD_ANYWHERE_WORDS)):
        return False
    if not any(map(lowered.__contains__, _GUARD_WORDS)):
        return False
    return at_start or _GUARD_ANYWHERE.search(head) is not None


def _stable_hash(*parts: object, length: int) -> str:
    joined = "\x1f".join(["" if part is None else str(part) for part in parts])
    return hashlib.sha256(joined.encode()).hexdigest()[:length]


def family_id(repo: str | None, intent: str, shape: str) -> str:
    """Stable id of a workflow family: the same repo, intent and shape give the same id."""
    return _stable_hash(repo or "", intent, shape, length=12)


def attempt_id(session_id: str, source_path: str, seq: int) -> str:
    """Stable id of an attempt, from where its first instruction sits.

    Only the file's name counts, not its folder: moving the transcripts keeps every id.
    """
    return _stable_hash(session_id, file_name(source_path), seq, length=16)


def file_name(source_path: str) -> str:
    """`PurePath(source_path).name`, without making a path object when the part after the last
    slash is already the name: ids are made for every attempt and every decision point."""
    name = source_path.rpartition("/")[2]
    return name if name and name != "." else PurePath(source_path).name


class _CallFacts(NamedTuple):
    """What a tool call's source, name and input alone decide, worked out once per distinct call:
    agents repeat calls (`git status`, the test command, reads of the same file) within a day."""

    call: CanonicalCall
    action_class: str
    decisive: bool
    key: tuple[str, str]  # `_call_key`: tells a call made again from a different one
    command: str  # run_shell's command; "" for other tools
    shell_intent: str | None  # command_intent of a run_shell command
    inspected: Sequence[str]  # files the call reads, as the call names them
    edited: Sequence[str]  # files the call changes, as the call names them


def _call_facts(source: str, tool_name: str, tool_input: Any) -> _CallFacts:
    call = canonicalize(source, tool_name, tool_input)
    klass = action_class(call)
    command = shell_command(call) if call.name == "run_shell" else ""
    intent = command_intent(command) if call.name == "run_shell" else None
    return _CallFacts(
        call=call,
        action_class=klass,
        decisive=is_decisive(call),
        key=_call_key(call),
        command=command,
        shell_intent=intent,
        inspected=_inspected_files(call, klass, intent),
        edited=_edited_files(call),
    )


_K = TypeVar("_K", bound=Hashable)
_V = TypeVar("_V")


class _Memo(dict[_K, _V]):
    """A pure function's results by argument, for one run: each distinct argument is worked out once."""

    def __init__(self, function: Callable[[_K], _V]) -> None:
        super().__init__()
        self.function = function

    def __missing__(self, key: _K) -> _V:
        value = self[key] = self.function(key)
        return value


def _outcome_of(args: tuple[str | None, int | None, bool | None, str | None, str]) -> str:
    intent, exit_code, is_error, output, command = args
    return command_outcome(intent, exit_code, is_error, output, command=command)


class _CallColumns:
    """The columns annotating calls reads, as lists indexed by row of ordered events, with which
    results failed and memos of what repeats: all that decision-point extraction needs."""

    def __init__(self, columns: EventLists) -> None:
        missing = [name for name in (*REQUIRED_COLUMNS, "ordinal") if not columns.has(name)]
        if missing:
            raise ValueError(
                f"events need the columns {missing} (ordered events come from order_session_events); "
                f"got {columns.names()}"
            )
        self.n = columns.n
        self.session_id: list[str] = columns.strings("session_id")
        self.source: list[str] = columns.strings("source")
        self.ordinal: list[int] = columns.ints("ordinal")
        self.kind: list[str] = columns.strings("kind")
        self.text: list[str | None] = columns.texts("text")
        self.tool_name: list[str | None] = columns.texts("tool_name")
        self.tool_call_id: list[str | None] = columns.texts("tool_call_id")
        self.tool_input: list[str | None] = columns.texts("tool_input")
        self.agent_id: list[str | None] = columns.texts("agent_id")
        self.is_error: list[bool | None] = columns.optional_bools("is_error")
        self.exit_code: list[int | None] = columns.optional_ints("exit_code")
        self.is_sidechain: list[bool] = columns.flags("is_sidechain")
        # Per row: a tool result that failed (False for other kinds).
        self.failed = [
            kind == "tool_result" and _result_failed(is_error, code, text)
            for kind, is_error, code, text in zip(
                self.kind, self.is_error, self.exit_code, self.text, strict=True
            )
        ]
        # Memos of pure functions of repeated inputs: tool calls, result texts, runner outputs.
        self._calls: _Memo[tuple[str, str, str | None], _CallFacts] = _Memo(lambda key: _call_facts(*key))
        self.guard_denial: _Memo[str | None, bool] = _Memo(is_guard_denial)
        self.outcome = _Memo(_outcome_of)
        # Rows of refusal notices: events other than calls and results that name a call
        # (tool_call_id) and say it was refused (a Claude Code hook_blocking_error, say). Few.
        self.refusal_notices = [
            i
            for i, (kind, call_id) in enumerate(zip(self.kind, self.tool_call_id, strict=True))
            if call_id is not None
            and kind not in ("tool_call", "tool_result")
            and self.guard_denial[self.text[i]]
        ]

    def refused_calls(self, lo: int, hi: int) -> set[str]:
        """Ids of the calls that refusal notices among rows lo..hi (inclusive) name."""
        notices = self.refusal_notices
        first, last = bisect.bisect_left(notices, lo), bisect.bisect_right(notices, hi)
        return {self.tool_call_id[i] or "" for i in notices[first:last]}

    def call_facts(self, i: int) -> _CallFacts:
        """`_CallFacts` of the tool_call at row `i`."""
        source, name, tool_input = self.source[i], self.tool_name[i] or "", self.tool_input[i]
        if tool_input is None or isinstance(tool_input, str):
            return self._calls[(source, name, tool_input)]
        return _call_facts(source, name, tool_input)  # a dict input: unhashable, and rare

    def sessions(self) -> list[tuple[int, int]]:
        """[start, stop) row ranges of each session (ordinals restart at 0 for each one)."""
        starts = [i for i, ordinal in enumerate(self.ordinal) if ordinal == 0]
        if self.n and (not starts or starts[0] != 0):
            raise ValueError("events are not in order_session_events order: the first row has ordinal != 0")
        return list(zip(starts, [*starts[1:], self.n], strict=True))


class _Events(_CallColumns):
    """All the columns mining reads, and the per-row facts its walks test again and again."""

    def __init__(self, columns: EventLists) -> None:
        super().__init__(columns)
        self.source_path: list[str] = columns.strings("source_path")
        self.seq: list[int] = columns.ints("seq")
        self.role: list[str] = columns.strings("role")
        self.cwd: list[str | None] = columns.texts("cwd")
        self.repo: list[str | None] = columns.texts("repo")
        self.git_branch: list[str | None] = columns.texts("git_branch")
        self.model: list[str | None] = columns.texts("model")
        self.ts: list[int | None] = columns.micros("ts")
        self.confidence: list[float | None] = columns.optional_floats("confidence")
        self.interrupted: list[bool] = columns.flags("interrupted")
        # Per row: an interruption (flag or notice); a real instruction; agent activity (or an
        # interruption), which separates two instructions.
        notice = _INTERRUPT_TEXT.match  # on the first 200 characters (endpos), as if cut there
        self.interruption = [
            flag or (kind != "tool_result" and text is not None and notice(text, 0, 200) is not None)
            for flag, kind, text in zip(self.interrupted, self.kind, self.text, strict=True)
        ]
        self.instruction = [
            role == "user" and kind == "message" and not sidechain and not interruption
            for role, kind, sidechain, interruption in zip(
                self.role, self.kind, self.is_sidechain, self.interruption, strict=True
            )
        ]
        self.activity = [
            role in ("assistant", "tool") or interruption
            for role, interruption in zip(self.role, self.interruption, strict=True)
        ]


# ---------------------------------------------------------------- attempts


def _split(ev: _Events, start: int, stop: int) -> list[list[int]]:
    """Per attempt, the row indices of its instruction messages; the attempt runs from the first
    to the row before the next attempt's first (or `stop`)."""
    attempts: list[list[int]] = []
    active = False
    instruction, activity = ev.instruction, ev.activity
    for i in range(start, stop):
        if instruction[i]:
            if attempts and not active:
                attempts[-1].append(i)  # more of the same instruction
            else:
                attempts.append([i])
                active = False
        elif attempts and not active and activity[i]:
            active = True
    return attempts


def _bounds(attempts: list[list[int]], stop: int) -> list[tuple[int, int]]:
    """[first, last] row indices of each attempt."""
    firsts = [rows[0] for rows in attempts]
    return [(first, nxt - 1) for first, nxt in zip(firsts, [*firsts[1:], stop][: len(firsts)], strict=True)]


def split_attempts(session_events: pd.DataFrame) -> list[tuple[int, int]]:
    """(first_ordinal, last_ordinal), inclusive, of each attempt of one ordered session."""
    if session_events.empty:
        return []
    if session_events["session_id"].nunique() != 1:
        raise ValueError(
            "split_attempts takes one session's events; "
            f"got {session_events['session_id'].nunique()} sessions"
        )
    ev = _Events(EventLists(session_events))
    bounds = _bounds(_split(ev, 0, ev.n), ev.n)
    return [(ev.ordinal[first], ev.ordinal[last]) for first, last in bounds]


# ---------------------------------------------------------------- calls


def _call_key(call: CanonicalCall) -> tuple[str, str]:
    return call.name, canonical_json(call.arguments)


def _result_failed(is_error: bool | None, exit_code: int | None, text: str | None) -> bool:
    """Whether a tool result says its call failed."""
    if is_error:
        return True
    if exit_code is not None:
        return exit_code != 0
    # Where the source records no outcome (chat logs), the text is all there is.
    return is_error is None and text is not None and _ERROR_TEXT.match(text[:100]) is not None


def _link_results(ev: _CallColumns, lo: int, hi: int) -> dict[int, int]:
    """Row of each tool_call → row of its tool_result: by id, else the next id-less result of the
    same agent, first in first out."""
    kinds, call_ids = ev.kind, ev.tool_call_id
    by_id: dict[str, int] = {}
    for i in range(lo, hi + 1):
        call_id = call_ids[i]
        if kinds[i] == "tool_result" and call_id is not None:
            by_id.setdefault(call_id, i)
    links: dict[int, int] = {}
    waiting: dict[tuple[bool, str | None], deque[int]] = {}
    for i in range(lo, hi + 1):
        kind, call_id = kinds[i], call_ids[i]
        if kind == "tool_call":
            if call_id is not None:
                if call_id in by_id and by_id[call_id] > i:
                    links[i] = by_id[call_id]
            else:
                waiting.setdefault((ev.is_sidechain[i], ev.agent_id[i]), deque()).append(i)
        elif kind == "tool_result" and call_id is None:
            queue = waiting.get((ev.is_sidechain[i], ev.agent_id[i]))
            if queue:
                links[queue.popleft()] = i
    return links


class _Annotated(NamedTuple):
    """One call as `annotate_calls` gives it, with its rows and its `_CallFacts`."""

    info: CallInfo
    row: int
    result_row: int | None
    facts: _CallFacts


def _annotate(ev: _CallColumns, lo: int, hi: int, *, outcomes: bool = True) -> list[_Annotated]:
    """The calls of rows lo..hi (inclusive); without `outcomes`, verifications get no outcome."""
    links = _link_results(ev, lo, hi)
    refused_by_notice = ev.refused_calls(lo, hi)
    calls: list[_Annotated] = []
    previous: dict[tuple[bool, str | None], _Annotated] = {}
    inspected: defaultdict[tuple[bool, str | None], set[tuple[str, str]]] = defaultdict(set)
    seen_main_call = False
    kinds = ev.kind
    for i in range(lo, hi + 1):
        if kinds[i] != "tool_call":
            continue
        facts = ev.call_facts(i)
        action_class = facts.action_class
        r = links.get(i)
        result_text = ev.text[r] if r is not None else None
        guard_denied = (r is not None and ev.guard_denial[result_text]) or (
            bool(refused_by_notice) and ev.tool_call_id[i] in refused_by_notice
        )
        is_error = guard_denied or (r is not None and ev.failed[r])
        verification_intent: str | None = None
        verification_outcome: str | None = None
        if action_class == "verification":
            verification_intent = facts.shell_intent
            if outcomes and not guard_denied:  # a refused verification never ran: no outcome
                exit_code = ev.exit_code[r] if r is not None else None
                result_is_error = ev.is_error[r] if r is not None else None
                verification_outcome = ev.outcome[
                    (verification_intent, exit_code, result_is_error, result_text, facts.command)
                ]
        is_sidechain = ev.is_sidechain[i]
        stream = (is_sidechain, ev.agent_id[i])
        before = previous.get(stream)
        key = facts.key
        after_guard = before is not None and before.info.guard_denied
        repeated_inspection_after_guard = (
            after_guard and action_class == "inspect" and key in inspected[stream]
        )
        guard_recovery = (
            after_guard
            and before is not None
            and key != before.facts.key
            and not repeated_inspection_after_guard
            and not guard_denied
        )
        first_action = not is_sidechain and not seen_main_call
        seen_main_call = seen_main_call or not is_sidechain
        # positional, in field order: keywords would cost more than half of building it
        info = CallInfo(
            ev.ordinal[i],
            facts.call,
            action_class,
            facts.decisive,
            ev.tool_call_id[i],
            is_sidechain,
            ev.ordinal[r] if r is not None else None,
            result_text,
            is_error,
            verification_intent,
            verification_outcome,
            guard_denied,
            first_action,
            after_guard,
            guard_recovery,
            repeated_inspection_after_guard,
        )
        annotated = _Annotated(info, i, r, facts)
        calls.append(annotated)
        previous[stream] = annotated
        if action_class == "inspect" and not guard_denied:
            inspected[stream].add(key)
    return calls


def annotate_calls(attempt_events: pd.DataFrame) -> list[CallInfo]:
    """The attempt's assistant tool calls in order, each with its result, verification outcome and
    guard context (see `CallInfo`). `attempt_events` are one attempt's rows of
    `order_session_events` output; guard context does not cross attempts."""
    if attempt_events.empty:
        return []
    ev = _CallColumns(EventLists(attempt_events))
    return [call.info for call in _annotate(ev, 0, ev.n - 1)]


def annotate_attempts(
    ordered_events: pd.DataFrame | EventLists, spans: Sequence[tuple[str, int, int]], *, outcomes: bool = True
) -> dict[tuple[str, int], list[CallInfo]]:
    """`annotate_calls` of many attempts at once, keyed by (session_id, first_ordinal).

    `ordered_events` are whole sessions in `order_session_events` order; each span is
    (session_id, first_ordinal, last_ordinal), inclusive. The frame becomes plain lists once, not once
    per attempt: that conversion, not the annotation, is what costs on a day of small attempts.
    With `outcomes=False` every `verification_outcome` is None: reading runner output is most of
    what annotation costs, and a caller that never looks at outcomes (decision points) need not pay.
    A caller that has the events as `EventLists` already (an Arrow table's) may pass those.
    """
    if not spans:
        return {}
    lists = ordered_events if isinstance(ordered_events, EventLists) else EventLists(ordered_events)
    ev = _CallColumns(lists)
    rows = {ev.session_id[start]: (start, stop) for start, stop in ev.sessions()}
    annotated: dict[tuple[str, int], list[CallInfo]] = {}
    for session_id, first, last in spans:
        start, stop = rows.get(session_id, (0, 0))
        if not 0 <= first <= last < stop - start or ev.session_id[start + last] != session_id:
            raise ValueError(
                f"attempt span {first}..{last} of session {session_id} is not within the ordered events, "
                f"which hold {stop - start} events of that session"
            )
        calls = _annotate(ev, start + first, start + last, outcomes=outcomes)
        annotated[(session_id, first)] = [call.info for call in calls]
    return annotated


# ---------------------------------------------------------------- per-attempt signals


def _relative(path: str, cwd: str | None) -> str:
    if cwd:
        root = cwd.rstrip("/") + "/"
        if path.startswith(root):
            path = path[len(root) :]
    return path.removeprefix("./")


@lru_cache(maxsize=1 << 14)
def _shell_read_paths(command: str) -> tuple[str, ...]:
    """Files a read-only shell command shows (`cat a`, `sed -n '1,80p' a`, `nl -ba a | head`)."""
    head = re.split(r"\|\||&&|[|;]", command, maxsplit=1)[0]
    try:
        words = shlex.split(head)
    except ValueError:
        return ()
    return tuple(
        w
        for w in words[1:]
        if not w.startswith("-") and not _SED_SCRIPT.match(w) and ("/" in w or "." in w) and not w.isdigit()
    )


def _inspected_files(call: CanonicalCall, klass: str, shell_intent: str | None) -> tuple[str, ...]:
    if call.name == "read_file":
        path = call.arguments.get("file_path")
        return (path,) if isinstance(path, str) and path else ()
    if call.name == "run_shell" and klass == "inspect" and shell_intent == "read":
        return _shell_read_paths(shell_command(call))
    return ()


def call_files(call: CanonicalCall) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The files a canonical call reads and the files it changes, as the call names them (the rules
    `files_inspected` and `files_edited` follow; rendering's state summary reuses them)."""
    klass = action_class(call)
    intent = command_intent(shell_command(call)) if call.name == "run_shell" else None
    return _inspected_files(call, klass, intent), _edited_files(call)


def _edited_files(call: CanonicalCall) -> tuple[str, ...]:
    args = call.arguments
    if call.name in ("edit_file", "write_file"):
        path = args.get("file_path")
        return (path,) if isinstance(path, str) and path else ()
    if call.name == "apply_patch":
        patch = args.get("patch_text")
        if isinstance(patch, str):
            return tuple(a or b for a, b in _PATCH_FILE.findall(patch) if (a or b) != "/dev/null")
    return ()


def _shape(calls: Sequence[CallInfo]) -> str:
    steps: list[str] = []
    for info in calls:
        if info.guard_denied:
            continue
        step = "edit" if info.action_class == "patch" else info.action_class
        if not steps or steps[-1] != step:
            steps.append(step)
    return ">".join(steps)


class _Outcome:
    """Event-level signals of one attempt: errors, interruptions, confidence, sub-agent work."""

    __slots__ = ("confidence", "errors", "interruptions", "sidechain_events", "unresolved")

    def __init__(self, ev: _Events, lo: int, hi: int, guarded_results: set[int], cut_off: bool) -> None:
        errors = interruptions = 0
        unresolved = False
        confidences = [conf for conf in ev.confidence[lo : hi + 1] if conf is not None]
        last_word = -1  # the agent's (or an interruption's) last substantive event: decides a cut-off
        prev = -1  # the previous event that is not meta or reasoning
        kinds, roles, is_sidechain, failed = ev.kind, ev.role, ev.is_sidechain, ev.failed
        interruption, interrupted = ev.interruption, ev.interrupted
        for i in range(lo, hi + 1):
            kind = kinds[i]
            if kind == "tool_result":
                if interrupted[i]:
                    interruptions += 1
                if i in guarded_results:
                    pass
                elif failed[i]:
                    errors += 1
                    unresolved = True
                else:
                    unresolved = False
            elif interruption[i]:
                # The notice after a refused call belongs to the refusal; after an interrupted
                # tool run, to that interruption.
                echo = prev >= 0 and (prev in guarded_results or interrupted[prev])
                if not echo:
                    interruptions += 1
            elif kind == "error":
                notice = (
                    prev >= 0 and kinds[prev] == "tool_result" and (prev in guarded_results or failed[prev])
                )
                if not notice and not ev.guard_denial[ev.text[i]]:
                    errors += 1
                    unresolved = True
            if kind not in ("meta", "reasoning", "decision"):
                prev = i
                if not is_sidechain[i] and (roles[i] != "user" or interruption[i]):
                    last_word = i
        if cut_off and not interruptions and last_word >= 0:
            word_kind = kinds[last_word]
            if word_kind in ("tool_call", "tool_result") and last_word not in guarded_results:
                interruptions += 1
        self.errors = errors
        self.interruptions = interruptions
        self.sidechain_events = sum(is_sidechain[lo : hi + 1])
        self.unresolved = unresolved
        self.confidence = sum(confidences) / len(confidences) if confidences else None


def _first_value(values: list[Any], lo: int, hi: int, skip: list[bool] | None = None) -> Any:
    for i in range(lo, hi + 1):
        if values[i] is not None and (skip is None or not skip[i]):
            return values[i]
    return None


def _signal(row: dict[str, Any], config: MiningConfig) -> float:
    calls = row["tool_calls"]
    clean = 1.0 - min(1.0, row["errors"] / calls) if calls else 0.0
    verified = 1.0 if row["final_verification"] == "passed" else 0.0
    denials = row["guard_denials"]
    guard = (
        1.0
        if denials == 0
        else min(1.0, max(0.0, (row["guard_recoveries"] - row["repeated_inspections_after_guard"]) / denials))
    )
    no_corrections = 1.0 if row["corrections"] == 0 else 0.0
    confidence = row["confidence"] if row["confidence"] is not None else 0.5
    scores = (clean, verified, guard, no_corrections, min(1.0, max(0.0, confidence)))
    weights = config.weights
    return sum(map(operator.mul, weights, scores)) / sum(weights)


def _tier(row: dict[str, Any], ended_on_guard: bool, config: MiningConfig) -> tuple[str, list[str], float]:
    signal = _signal(row, config)
    calls, edits, final = row["tool_calls"], row["edits"], row["final_verification"]
    rejects = []
    if calls == 0:
        rejects.append("no_tool_calls")
    elif calls < config.min_tool_calls:
        rejects.append("too_short")
    if row["interruptions"]:
        rejects.append("interrupted")
    if final == "failed":
        rejects.append("final_verification_failed")
    if row["unresolved_error_at_end"]:
        rejects.append("unresolved_error_at_end")
    if calls and row["guard_denials"] == calls:
        rejects.append("all_calls_refused")
    if rejects:
        tier, reasons = "reject", rejects
    elif edits and row["verified_after_last_edit"]:
        tier, reasons = "gold", ["edit_then_passing_verification"]
        if ended_on_guard:
            tier = "silver"
            reasons.append("ended_on_guard_denial")
        elif TIER_FLOORS["gold"] + TIER_WIDTH * signal < config.gold_min_quality:
            tier = "silver"
            reasons.append("below_gold_quality")
    elif edits:
        reasons = ["edit_verification_unknown" if final is not None else "edit_without_verification"]
        landed = row["landed_commit"] is not None
        tier = "silver" if landed or config.unverified_edit_tier == "silver" else "bronze"
    elif final == "passed":
        tier, reasons = "silver", ["inspect_only_verified"]
    else:
        tier, reasons = "bronze", ["no_outcome_signal"]
    if ended_on_guard and "ended_on_guard_denial" not in reasons:
        reasons.append("ended_on_guard_denial")
    if row["landed_commit"] is not None:
        reasons.append("landed_in_commit")
    quality = round(TIER_FLOORS[tier] + TIER_WIDTH * signal, 6)
    return tier, reasons, quality


def _mine_attempt(
    ev: _Events,
    instruction_rows: list[int],
    lo: int,
    hi: int,
    cut_off: bool,
) -> dict[str, Any]:
    """One attempt's row, less the columns that need its neighbours (corrections, intent, tier)."""
    annotated = _annotate(ev, lo, hi)
    calls = [call.info for call in annotated]
    guarded_results = {
        call.result_row for call in annotated if call.info.guard_denied and call.result_row is not None
    }
    outcome = _Outcome(ev, lo, hi, guarded_results, cut_off)

    tools_used: dict[str, None] = {}
    inspected: dict[str, None] = {}
    edited: dict[str, None] = {}
    v_intents: list[str] = []
    v_outcomes: list[str] = []
    edits = 0
    first_edit: int | None = None
    final: str | None = None
    denials = recoveries = repeated = 0
    for info, at, _, facts in annotated:
        tools_used.setdefault(info.call.name, None)
        cwd = ev.cwd[at]
        denials += info.guard_denied
        recoveries += info.guard_recovery
        repeated += info.repeated_inspection_after_guard
        if info.guard_denied:
            continue
        if info.action_class == "inspect" and not info.is_error:  # a failed read saw nothing
            for path in facts.inspected:
                inspected.setdefault(_relative(path, cwd), None)
        elif info.action_class in ("edit", "patch") and not info.is_error:
            edits += 1
            if first_edit is None:
                first_edit = ev.ts[at]
            final = None  # only verifications after the last edit decide
            for path in facts.edited:
                edited.setdefault(_relative(path, cwd), None)
        elif info.verification_outcome is not None:
            v_intents.append(info.verification_intent or "unknown")
            v_outcomes.append(info.verification_outcome)
            final = info.verification_outcome
    ended_on_guard = False  # the main agent's last call was refused
    for info in reversed(calls):
        if not info.is_sidechain:
            ended_on_guard = info.guard_denied
            break

    first = instruction_rows[0]
    texts = [ev.text[i] for i in instruction_rows if ev.text[i]]
    started = ev.ts[first] if ev.ts[first] is not None else _first_value(ev.ts, lo, hi)
    stamps = [t for t in ev.ts[lo : hi + 1] if t is not None]
    ended = max(stamps) if stamps else None
    row: dict[str, Any] = {
        "attempt_id": attempt_id(ev.session_id[first], ev.source_path[first], ev.seq[first]),
        "session_id": ev.session_id[first],
        "source": ev.source[first],
        "repo": _first_value(ev.repo, lo, hi),
        "git_branch": _first_value(ev.git_branch, lo, hi),
        "model": _first_value(ev.model, lo, hi, ev.is_sidechain) or _first_value(ev.model, lo, hi),
        "first_ordinal": ev.ordinal[lo],
        "last_ordinal": ev.ordinal[hi],
        "instruction": "\n\n".join(t for t in texts if t is not None),
        "started_at": started,
        "ended_at": ended,
        "duration_s": (ended - started) / 1e6 if started is not None and ended is not None else None,
        "tool_calls": len(calls),
        "tools_used": list(tools_used),
        "tool_sequence": [info.call.name for info in calls],
        "files_inspected": list(inspected),
        "files_edited": list(edited),
        "edits": edits,
        "verification_intents": v_intents,
        "verification_outcomes": v_outcomes,
        "final_verification": final,
        "verified_after_last_edit": bool(edits) and final == "passed",
        "errors": outcome.errors,
        "unresolved_error_at_end": outcome.unresolved,
        "guard_denials": denials,
        "guard_recoveries": recoveries,
        "repeated_inspections_after_guard": repeated,
        "interruptions": outcome.interruptions,
        "confidence": outcome.confidence,
        "sidechain_events": outcome.sidechain_events,
        "shape": _shape(calls),
        "landed_commit": None,
        "_ended_on_guard": ended_on_guard,
        # For the git check (landing.py); left out of the table.
        "_cwd": _first_value(ev.cwd, lo, hi, ev.is_sidechain) or _first_value(ev.cwd, lo, hi),
        "_first_edit": first_edit,
    }
    return row


def _mine_session(
    ev: _Events,
    start: int,
    stop: int,
    config: MiningConfig,
    instructions: _Memo[str, tuple[str, bool]],
    families: _Memo[tuple[str | None, str, str], str],
) -> list[dict[str, Any]]:
    """The session's attempt rows; `instructions` gives an instruction's intent and whether it is a
    correction, `families` the family id of a repo, intent and shape."""
    attempts = _split(ev, start, stop)
    bounds = _bounds(attempts, stop)
    rows: list[dict[str, Any]] = []
    for index, (rows_of_instruction, (lo, hi)) in enumerate(zip(attempts, bounds, strict=True)):
        cut_off = index + 1 < len(attempts) and ev.source[lo] in config.implicit_interruption_sources
        row = _mine_attempt(ev, rows_of_instruction, lo, hi, cut_off)
        row["attempt_index"] = index
        row["corrections"] = 0
        rows.append(row)
    for index, row in enumerate(rows):
        intent, is_correction = instructions[row["instruction"]]
        if index > 0 and is_correction:  # a correction continues the task it corrects
            rows[index - 1]["corrections"] += 1
            intent = rows[index - 1]["intent"]
        row["intent"] = intent
    for row in rows:
        row["family_id"] = families[(row["repo"], row["intent"], row["shape"])]
    return rows


def _land(rows: list[dict[str, Any]], options: LandingOptions) -> Counter[str]:
    """Set `landed_commit` on the attempts with edits whose edits a commit landed (landing.py)."""
    edited = [row for row in rows if row["edits"]]
    landings, counts = find_landings(
        [
            AttemptEdits(
                row["_cwd"], row["repo"], tuple(row["files_edited"]), row["_first_edit"], row["ended_at"]
            )
            for row in edited
        ],
        options,
    )
    for row, landing in zip(edited, landings, strict=True):
        row["landed_commit"] = landing.commit
    return counts


def mine_trajectories(
    events: pd.DataFrame, config: MiningConfig = MiningConfig(), landings: Counter[str] | None = None
) -> pd.DataFrame:
    """One row per task attempt of the sessions in `events` (raw_sessions rows, any order), with the
    columns of TRAJECTORY_SCHEMA, sorted by (session_id, attempt_index). `landings`, when given,
    counts the git check's outcomes (landing.OUTCOMES) of the attempts with edits."""
    if events.empty:
        return TRAJECTORY_SCHEMA.empty_table().to_pandas()
    _require_read_columns(list(events.columns))
    return _mine([EventLists(ordered_columns(events, READ_COLUMNS))], config, landings).to_pandas()


def mine_table(
    events: pa.Table,
    config: MiningConfig = MiningConfig(),
    landings: Counter[str] | None = None,
    batch_events_at_most: int = MINE_BATCH_EVENTS,
) -> pa.Table:
    """`mine_trajectories` of raw_sessions rows in an Arrow table, as an Arrow table: the day stages
    read Parquet and write Parquet, and going through pandas on the way costs more than mining's
    own ordering (`ordered_table`, `ArrowEventLists` give the same order and the same values)."""
    if not events.num_rows:
        return TRAJECTORY_SCHEMA.empty_table()
    _require_read_columns(events.column_names)
    runs = session_runs(ordered_table(events, READ_COLUMNS), batch_events_at_most)
    return _mine((ArrowEventLists(run) for run in runs), config, landings)


def _require_read_columns(names: Sequence[str]) -> None:
    missing = [name for name in (*REQUIRED_COLUMNS, "ts", "session_start") if name not in names]
    if missing:
        raise ValueError(f"events need the raw_sessions columns {missing}; got {list(names)}")


def _mine(runs: Iterable[EventLists], config: MiningConfig, landings: Counter[str] | None = None) -> pa.Table:
    """The attempts of ordered events, given in runs of whole sessions, as a table of TRAJECTORY_SCHEMA."""
    correction = re.compile(config.correction_pattern, re.IGNORECASE)
    # Instructions repeat ("run the tests", "continue"): classify each distinct text once.
    instructions: _Memo[str, tuple[str, bool]] = _Memo(
        lambda text: (classify_intent(text), correction.search(text) is not None)
    )
    families: _Memo[tuple[str | None, str, str], str] = _Memo(lambda key: family_id(*key))
    rows: list[dict[str, Any]] = []
    for ordered in runs:
        ev = _Events(ordered)
        for start, stop in ev.sessions():
            rows.extend(_mine_session(ev, start, stop, config, instructions, families))
    options = config.landing()
    if options is not None:
        counts = _land(rows, options)
        if landings is not None:
            landings.update(counts)
    for row in rows:
        tier, reasons, quality = _tier(row, row.pop("_ended_on_guard"), config)
        row["tier"], row["tier_reasons"], row["quality"] = tier, reasons, quality
    return rows_table(rows, TRAJECTORY_SCHEMA)
