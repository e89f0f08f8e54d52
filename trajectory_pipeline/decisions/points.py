"""Decision points: one training example per assistant tool call of an accepted task attempt.

For each tool call of an attempt in the included tiers (gold and silver by default) this builds
the chat history the agent had just before the call, the call itself in the canonical tool
vocabulary (the source's own name and arguments kept beside it), and the labels mining already
attached to the call (`CallInfo`). The `decision_points` asset is a thin wrapper around it:

    attempts = mine_trajectories(events)
    decisions = extract_decision_points(events, attempts, DecisionConfig(history_budget_chars=16_000))

What a history holds, in event order (`order_session_events`):
- the system prompt (`DecisionConfig.system_prompt`, formatted with the repo and cwd) and the
  attempt's instruction as the first user message; neither is ever dropped;
- earlier assistant turns as `{"role": "assistant", "content": text, "tool_calls": [...]}` with
  canonical calls (calls made in one turn share a message), tool results as `{"role": "tool", ...}`
  capped to head + tail, and later user messages of the attempt (interruption notices: mining
  starts a new attempt at any other user message after the agent has acted).

What it leaves out, and why:
- reasoning and the own agent's `decision` notes: private to the agent, encrypted or missing in
  most sources (so histories would differ by source), and they spell out the next call;
- meta/system records and API errors: the agent never saw them as conversation;
- tool results mining did not link to a call: a result without its call teaches nothing;
- the assistant text of the target's own turn ("Reading fees.py to see ..."): it announces the
  call, so a model could copy the answer from it in training and at replay time. Calls made
  earlier in the same turn (parallel calls) stay, in a message of their own;
- sub-agent (sidechain) work, from the history of a main-chain call: the main agent saw only the
  sub-agent's final answer, as the result of the call that spawned it. Sub-agent calls become
  targets only with `include_sidechain`, each decided in the sub-agent's own context: its prompt as
  the instruction, then its own earlier calls and results.

Over `history_budget_chars` (measured as the length of the history's JSON), whole units are dropped
oldest first: an assistant turn together with the results of its calls, or a lone message, so the
history never holds a result without its call. The target is not part of the history and is never
cut. Ids come from content (session, file and position of the target call), and rows are sorted by
(session_id, ordinal), so the same input gives the same rows in any row order.

Speed: the events of the accepted sessions are ordered (sorting only their sort keys) and the
columns read here are turned into plain lists once, mining annotates all their attempts in one pass
(`annotate_attempts`), and each message is encoded to JSON once (a history's JSON is its messages'
joined). One core extracts a generated day's 5,400 decision points from 32k events in about 0.22 s;
a quarter of it is mining's annotation, which has to run again here (without verification
outcomes, which no decision point reads). Rows are tuples in the schema's column order,
transposed into columns once: a dict per row cost twice as much to build and take apart. The day
stages call `decision_points_table` and `learnable_table`, the same on Arrow tables: no pandas
frame on the way from Parquet to Parquet, and the lists of the events made once for both the
history and the annotation.
"""

from __future__ import annotations

import hashlib
import itertools
import operator
import string
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from trajectory_pipeline.config import knob
from trajectory_pipeline.events import (
    CALL_COLUMNS,
    ArrowEventLists,
    EventLists,
    ordered_columns,
    ordered_table,
    session_starts,
    tuples_table,
)
from trajectory_pipeline.mining.actions import CallInfo
from trajectory_pipeline.mining.attempts import annotate_attempts, file_name
from trajectory_pipeline.mining.vocabulary import CanonicalCall, missing_required
from trajectory_pipeline.schema import canonical_json

TIERS = ("gold", "silver", "bronze", "reject")
PROMPT_FIELDS = frozenset({"repo", "cwd"})
MIN_RESULT_CHARS = 100  # room for the omission marker and some text on either side of it
UNKNOWN_REPO = "the current repository"
UNKNOWN_CWD = "the current directory"
# Events cut at a time by `decision_point_batches` (whole sessions): bounds its Python objects. A
# day's cut in a backfill worker peaked 44 MiB lower than at 4,096, in the same time.
CUT_BATCH_EVENTS = 1_024
RAW_ARGUMENTS = "raw"  # the key arguments that are not a JSON object are kept under
# Why a decision point is set aside (`learnable`), in the order they are judged: each point is
# counted under the first that applies.
SET_ASIDE_REASONS = ("refused_by_guard", "unparseable_arguments", "missing_required_arguments")

EVENT_COLUMNS = (
    "session_id",
    "source_path",
    "seq",
    "role",
    "kind",
    "text",
    "cwd",
    "is_sidechain",
    "agent_id",
)
# The events columns cutting reads: its own and those of mining's annotation.
EVENT_READ_COLUMNS = tuple(dict.fromkeys((*EVENT_COLUMNS, *CALL_COLUMNS)))
ATTEMPT_COLUMNS = (
    "attempt_id",
    "session_id",
    "source",
    "repo",
    "first_ordinal",
    "last_ordinal",
    "instruction",
    "tier",
    "quality",
    "family_id",
    "intent",
)

DECISION_SCHEMA = pa.schema(
    [
        ("decision_id", pa.string()),
        ("attempt_id", pa.string()),
        ("session_id", pa.string()),
        ("source", pa.string()),
        ("repo", pa.string()),
        ("tier", pa.string()),
        ("quality", pa.float64()),
        ("family_id", pa.string()),
        ("intent", pa.string()),
        ("step", pa.int64()),  # index of the call among the attempt's calls
        ("ordinal", pa.int64()),  # position of the call in order_session_events order
        ("messages", pa.large_string()),  # canonical JSON list of chat messages before the call
        ("target_name", pa.string()),
        ("target_arguments", pa.large_string()),
        ("target_source_name", pa.string()),
        ("target_source_arguments", pa.large_string()),
        ("target_known", pa.bool_()),
        ("missing_required", pa.list_(pa.string())),
        ("arguments_unparseable", pa.bool_()),  # the source's arguments were not a JSON object
        ("action_class", pa.string()),
        ("decisive", pa.bool_()),
        ("first_action", pa.bool_()),
        ("after_guard", pa.bool_()),
        ("guard_recovery", pa.bool_()),
        ("repeated_inspection_after_guard", pa.bool_()),
        ("target_guard_denied", pa.bool_()),  # a person, hook or sandbox refused the target call
        ("history_messages", pa.int64()),
        ("history_dropped", pa.int64()),
        ("history_chars", pa.int64()),
        ("is_sidechain", pa.bool_()),
    ]
)

Message = dict[str, Any]


@dataclass(frozen=True)
class DecisionConfig:
    """Which attempts become decision points, and how much history each one carries."""

    included_tiers: tuple[str, ...] = knob(
        ("gold", "silver"),
        "Attempt tiers whose calls become decision points (gold / silver / bronze / reject).",
    )
    max_result_chars: int = knob(
        2_000,
        "Each tool result in the history is capped to this many characters: head and tail, with a marker "
        "that says how much was left out between them.",
    )
    history_budget_chars: int = knob(
        24_000,
        "Size of the history's JSON above which the oldest messages after the instruction are dropped; "
        "the system prompt, the instruction and the target are never dropped.",
    )
    system_prompt: str = knob(
        "You are a coding agent working in {repo}. Decide the next tool call.",
        "The first message of every history; may use {repo} and {cwd}.",
    )
    agent_text: bool = knob(
        True,
        "Keep what the agent wrote around its earlier calls in the history; off keeps only the calls "
        "and their results: fewer tokens for a small model, and the records of one attempt then "
        "extend each other (what history_calls training relies on).",
    )
    include_sidechain: bool = knob(
        False,
        "Also make decision points of sub-agent (sidechain) calls, each decided in the sub-agent's own "
        "context. Off by default: sub-agent prompts are written by the main agent, not by a person.",
    )

    def __post_init__(self) -> None:
        unknown = [tier for tier in self.included_tiers if tier not in TIERS]
        if not self.included_tiers or unknown:
            raise ValueError(
                f"included_tiers must be a non-empty selection of {TIERS}, got {self.included_tiers!r}"
            )
        if self.max_result_chars < MIN_RESULT_CHARS:
            raise ValueError(
                f"max_result_chars must be at least {MIN_RESULT_CHARS}, got {self.max_result_chars}"
            )
        if self.history_budget_chars < 1:
            raise ValueError(f"history_budget_chars must be positive, got {self.history_budget_chars}")
        fields = {name for _, name, _, _ in string.Formatter().parse(self.system_prompt) if name is not None}
        if not fields <= PROMPT_FIELDS:
            raise ValueError(
                f"system_prompt may only use the fields {sorted(PROMPT_FIELDS)}, got {sorted(fields)}"
            )


def cap_result(text: str, limit: int) -> str:
    """`text` if it fits in `limit` characters, else its head and tail around an omission marker,
    `limit` characters at most in all."""
    if len(text) <= limit:
        return text
    longest_marker = len(_omission_marker(len(text)))
    keep = max(limit - longest_marker, 0)
    head, tail = keep - keep // 2, keep // 2
    return text[:head] + _omission_marker(len(text) - keep) + (text[-tail:] if tail else "")


def _omission_marker(omitted: int) -> str:
    return f"\n[... {omitted} characters omitted ...]\n"


def decision_id(session_id: str, source_path: str, seq: int) -> str:
    """16 hex characters of sha256 over where the target call was written: stable across runs.

    Only the file's name counts, not its folder: moving the transcripts keeps every id.
    """
    key = "\x1f".join((session_id, file_name(source_path), str(seq)))
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def _value(value: Any) -> Any:
    """None for pandas' missing values (None, NaN, NA), the value otherwise."""
    return None if value is None or (not isinstance(value, list | dict) and pd.isna(value)) else value


def _as_list(column: pd.Series) -> list[Any]:
    """The column's values as Python objects, with None for every kind of missing value."""
    if isinstance(column.dtype, pd.StringDtype):
        # pyarrow hands out None for missing strings itself, without an object array in between.
        return pa.array(column).to_pylist()
    if isinstance(column.dtype, np.dtype) and column.dtype.kind in "biu":  # nothing can be missing
        return column.tolist()
    return column.astype(object).where(column.notna(), None).tolist()


class _EventView:
    """The columns history building needs, as Python lists, for a run of ordered events."""

    def __init__(self, columns: dict[str, list[Any]], ordinals: list[int]) -> None:
        self.columns = columns
        self.ordinals = ordinals
        sidechain, agent, path = columns["is_sidechain"], columns["agent_id"], columns["source_path"]
        # per event: None for the main agent, else the sub-agent's id (or file)
        self.contexts = [
            str(agent_id or source_path) if is_sidechain else None
            for is_sidechain, agent_id, source_path in zip(sidechain, agent, path, strict=True)
        ]

    @cached_property
    def position(self) -> dict[int, int]:
        """Ordinal -> index, for a view of one attempt; made on first use, as a day's view is read by
        row (its sessions' ordinals number their rows)."""
        return {ordinal: index for index, ordinal in enumerate(self.ordinals)}

    @classmethod
    def from_frame(cls, frame: pd.DataFrame) -> _EventView:
        missing = [name for name in (*EVENT_COLUMNS, "ordinal") if name not in frame.columns]
        if missing:
            raise ValueError(
                f"events need the columns {missing} (ordered events come from order_session_events); "
                f"got {list(frame.columns)}"
            )
        columns = {name: _as_list(frame[name]) for name in EVENT_COLUMNS}
        return cls(columns, [int(v) for v in _as_list(frame["ordinal"])])

    @classmethod
    def from_lists(cls, lists: EventLists) -> _EventView:
        """The view of ordered events already held as lists (mining's annotation reads the same ones)."""
        missing = [name for name in (*EVENT_COLUMNS, "ordinal") if not lists.has(name)]
        if missing:
            raise ValueError(f"events need the columns {missing}; got {lists.names()}")
        return cls({name: lists.values(name) for name in EVENT_COLUMNS}, lists.ints("ordinal"))

    def index(self, ordinal: int) -> int:
        """Where the event at `ordinal` sits in the view's lists."""
        index = self.position.get(ordinal)
        if index is None:
            raise ValueError(f"no event with ordinal {ordinal}: the events hold {self._span()}")
        return index

    def row(self, index: int) -> dict[str, Any]:
        return {name: values[index] for name, values in self.columns.items()}

    def context_of(self, ordinal: int) -> str | None:
        return self.contexts[self.index(ordinal)]

    def _span(self) -> str:
        return f"ordinals {self.ordinals[0]}..{self.ordinals[-1]}" if self.ordinals else "no events"


class _Conversation:
    """One agent's side of an attempt (the main agent, or one sub-agent) as chat messages,
    built once; `history(ordinal)` then cuts it before any of its calls."""

    def __init__(
        self,
        view: _EventView,
        rows: range,
        calls: Sequence[CallInfo],
        context: str | None,
        instruction: str,
        repo: str | None,
        config: DecisionConfig,
    ) -> None:
        self.budget = config.history_budget_chars
        contexts = view.contexts
        indices = [i for i in rows if contexts[i] == context]
        own_ordinals = {view.ordinals[i] for i in indices}
        own_calls = [info for info in calls if info.ordinal in own_ordinals]
        by_call = {info.ordinal: info for info in own_calls}
        by_result = {info.result_ordinal: info for info in own_calls if info.result_ordinal is not None}
        call_ids = {info.ordinal: info.tool_call_id or f"call_{info.ordinal}" for info in own_calls}

        cwd = next((view.columns["cwd"][i] for i in indices if view.columns["cwd"][i]), None)
        system = config.system_prompt.format(repo=repo or UNKNOWN_REPO, cwd=cwd or UNKNOWN_CWD)
        self.messages: list[Message] = []  # everything after the instruction, in order
        self.units: list[int] = []  # per message: index of the message that opens its unit
        self.turn_of: dict[int, tuple[int, int]] = {}  # call ordinal -> (its turn's message, calls before it)
        turn: Message | None = None
        turn_text: list[str] = []
        unit_of_call: dict[int, int] = {}
        # Mining joins the user messages before the agent's first act into one instruction.
        active = False
        prompt_parts: list[str] = []

        def close_turn() -> None:
            nonlocal turn, turn_text
            if turn is None and turn_text:
                self._append({"role": "assistant", "content": "\n\n".join(turn_text)}, None)
            turn, turn_text = None, []

        roles, kinds, texts = view.columns["role"], view.columns["kind"], view.columns["text"]
        for i in indices:
            ordinal, role, kind, text = view.ordinals[i], roles[i], kinds[i], texts[i]
            active = active or role in ("assistant", "tool")
            if ordinal in by_call:
                info = by_call[ordinal]
                if turn is None:
                    turn = {"role": "assistant", "content": "\n\n".join(turn_text), "tool_calls": []}
                    self._append(turn, None)
                    turn_text = []
                unit_of_call[ordinal] = len(self.messages) - 1
                self.turn_of[ordinal] = (len(self.messages) - 1, len(turn["tool_calls"]))
                turn["tool_calls"].append(
                    {"id": call_ids[ordinal], "name": info.call.name, "arguments": info.call.arguments}
                )
            elif ordinal in by_result and by_result[ordinal].ordinal in unit_of_call:
                close_turn()
                info = by_result[ordinal]
                content = cap_result(info.result_text or "", config.max_result_chars)
                result = {
                    "role": "tool",
                    "tool_call_id": call_ids[info.ordinal],
                    "name": info.call.name,
                    "content": content,
                }
                self._append(result, unit_of_call[info.ordinal])
            elif kind == "message" and role == "user":
                close_turn()
                if not active:  # part of the instruction (or of a sub-agent's prompt)
                    prompt_parts.extend([text] if text else [])
                elif text:
                    self._append({"role": "user", "content": text}, None)
            elif kind == "message" and role == "assistant" and text and text.strip() and config.agent_text:
                if turn is not None:  # text after calls starts the next turn
                    close_turn()
                turn_text.append(text.strip())  # Claude Code writes "\n\n" between blocks
        close_turn()
        if context is not None and prompt_parts:
            instruction = "\n\n".join(prompt_parts)
        self.head: list[Message] = [
            {"role": "system", "content": system},
            {"role": "user", "content": instruction},
        ]
        # Each message's JSON, once: a history's JSON is theirs joined, not a fresh encoding.
        self.jsons = [canonical_json(m) for m in self.messages]
        self.head_jsons = [canonical_json(m) for m in self.head]  # never dropped
        # The length of the history's JSON before each message: brackets, and a comma between messages.
        self.chars_before = [1 + sum(len(text) + 1 for text in self.head_jsons)]
        for text in self.jsons:
            self.chars_before.append(self.chars_before[-1] + len(text) + 1)

    def _append(self, message: Message, unit: int | None) -> None:
        self.units.append(len(self.messages) if unit is None else unit)
        self.messages.append(message)

    def history(self, ordinal: int) -> tuple[list[Message], int, str]:
        """The messages before the call at `ordinal`, how many were dropped for the budget, and the
        kept messages' canonical JSON."""
        if ordinal not in self.turn_of:
            raise ValueError(f"the call at ordinal {ordinal} is not one of this conversation's calls")
        turn_index, calls_before = self.turn_of[ordinal]
        units, messages, jsons = (
            self.units[:turn_index],
            self.messages[:turn_index],
            self.jsons[:turn_index],
        )
        if calls_before:  # parallel calls the agent made just before the target, in the same turn
            earlier = {
                "role": "assistant",
                "content": "",
                "tool_calls": self.messages[turn_index]["tool_calls"][:calls_before],
            }
            units.append(turn_index)
            messages.append(earlier)
            jsons.append(canonical_json(earlier))
        total = self.chars_before[turn_index] + (len(jsons[-1]) + 1 if calls_before else 0)
        dropped = 0
        if total > self.budget:
            unit_chars: dict[int, int] = {}
            for unit, text in zip(units, jsons, strict=True):
                unit_chars[unit] = unit_chars.get(unit, 0) + len(text) + 1
            dropped_units: set[int] = set()
            for unit in sorted(unit_chars):  # a unit's id is its first message's index: oldest first
                if total <= self.budget:
                    break
                dropped_units.add(unit)
                total -= unit_chars[unit]
            kept = [i for i, unit in enumerate(units) if unit not in dropped_units]
            dropped = len(units) - len(kept)
            messages, jsons = [messages[i] for i in kept], [jsons[i] for i in kept]
        text = f"[{','.join([*self.head_jsons, *jsons])}]"  # one copy less than "[" + ... + "]"
        return [*self.head, *messages], dropped, text


def build_history(
    attempt_events: pd.DataFrame,
    calls: list[CallInfo],
    target: int,
    instruction: str,
    config: DecisionConfig,
    repo: str | None,
) -> tuple[list[dict[str, Any]], int]:
    """The chat messages before `calls[target]`, and how many were dropped for the history budget.

    `attempt_events` are one attempt's events in `order_session_events` order (with `ordinal`);
    `calls` are the attempt's calls as mining annotates them. A sub-agent's call gets the
    sub-agent's own prompt as its instruction instead of `instruction`.
    """
    if not 0 <= target < len(calls):
        raise ValueError(f"target must index one of the attempt's {len(calls)} calls, got {target}")
    view = _EventView.from_frame(attempt_events)
    ordinal = calls[target].ordinal
    context = view.context_of(ordinal)
    conversation = _Conversation(view, range(len(view.ordinals)), calls, context, instruction, repo, config)
    messages, dropped, _ = conversation.history(ordinal)
    return messages, dropped


def _require_columns(present: Sequence[str], names: Sequence[str], what: str) -> None:
    missing = [name for name in names if name not in present]
    if missing:
        raise ValueError(f"{what} lack the columns {missing}; got {list(present)}")


def _empty() -> pd.DataFrame:
    return DECISION_SCHEMA.empty_table().to_pandas()


def extract_decision_points(
    events: pd.DataFrame, attempts: pd.DataFrame, config: DecisionConfig = DecisionConfig()
) -> pd.DataFrame:
    """One row per assistant tool call in attempts of `config.included_tiers` (see the module doc).

    `events` are raw_sessions rows; `attempts` are mined_trajectories rows, whose
    first_ordinal..last_ordinal refer to `order_session_events` order.
    """
    _require_columns(list(events.columns), EVENT_COLUMNS, "events")
    _require_columns(list(attempts.columns), ATTEMPT_COLUMNS, "attempts")
    accepted = attempts[attempts["tier"].isin(config.included_tiers)]
    if accepted.empty:
        return _empty()
    accepted = accepted.sort_values(["session_id", "first_ordinal"], kind="stable")
    # Ordinals count within a session, so ordering only the sessions needed gives the same ones;
    # and only the columns read here and by mining's annotation.
    ordered = ordered_columns(events, EVENT_READ_COLUMNS, set(accepted["session_id"]))
    columns = [_as_list(accepted[name]) for name in ATTEMPT_COLUMNS]
    records = [dict(zip(ATTEMPT_COLUMNS, values, strict=True)) for values in zip(*columns, strict=True)]
    rows = _decision_rows(EventLists(ordered), _EventView.from_frame(ordered), records, config)
    return tuples_table(rows, DECISION_SCHEMA).to_pandas() if rows else _empty()


def decision_points_table(
    events: pa.Table,
    attempts: pa.Table,
    config: DecisionConfig = DecisionConfig(),
    batch_events_at_most: int = CUT_BATCH_EVENTS,
) -> pa.Table:
    """`extract_decision_points` of Arrow tables, as an Arrow table of DECISION_SCHEMA: the day
    stages read Parquet and write Parquet, and pandas on the way would cost a tenth of the cut."""
    tables = list(decision_point_batches(events, attempts, config, batch_events_at_most))
    return pa.concat_tables(tables) if tables else DECISION_SCHEMA.empty_table()


def decision_point_batches(
    events: pa.Table,
    attempts: pa.Table,
    config: DecisionConfig = DecisionConfig(),
    batch_events_at_most: int = CUT_BATCH_EVENTS,
) -> Iterator[pa.Table]:
    """`decision_points_table`'s rows a run of whole sessions at a time, in its order.

    Sessions are cut about a thousand events at a time (`CUT_BATCH_EVENTS`), each run's rows made
    Arrow before the next: a day's rows as Python tuples, histories and all, were most of a
    backfill worker's peak memory, and a caller that writes each run as it comes (the day stages)
    never holds the day's rows at all. The events are not referenced once ordered: a caller that
    lets go of its own reference frees them before the first run is cut."""
    _require_columns(events.column_names, EVENT_COLUMNS, "events")
    records = accepted_attempts(attempts, config)
    if records:
        ordered = ordered_table(events, EVENT_READ_COLUMNS, accepted_sessions(records))
        del events
        yield from ordered_point_batches(ordered, records, config, batch_events_at_most)


def accepted_attempts(attempts: pa.Table, config: DecisionConfig = DecisionConfig()) -> list[dict[str, Any]]:
    """The attempts of the tiers cut (`config.included_tiers`), as records sorted by session and
    first ordinal: what `ordered_point_batches` cuts."""
    _require_columns(attempts.column_names, ATTEMPT_COLUMNS, "attempts")
    tiers = pa.array(config.included_tiers, pa.string())
    accepted = ArrowEventLists(attempts.filter(pc.is_in(attempts.column("tier"), tiers)))
    columns = [accepted.values(name) for name in ATTEMPT_COLUMNS]
    records = [dict(zip(ATTEMPT_COLUMNS, values, strict=True)) for values in zip(*columns, strict=True)]
    # as extract_decision_points' stable sort_values: Python's sort is stable too
    records.sort(key=lambda attempt: (attempt["session_id"], attempt["first_ordinal"]))
    return records


def accepted_sessions(records: list[dict[str, Any]]) -> set[str]:
    """The sessions of `accepted_attempts`: the only events cutting reads."""
    return {attempt["session_id"] for attempt in records}


def ordered_point_batches(
    ordered: pa.Table,
    records: list[dict[str, Any]],
    config: DecisionConfig = DecisionConfig(),
    batch_events_at_most: int = CUT_BATCH_EVENTS,
) -> Iterator[pa.Table]:
    """`decision_point_batches` of the `accepted_attempts` `records`, their sessions' events given
    already in event order (an `ordered_table` of `EVENT_READ_COLUMNS`, as the day stages read it
    from Parquet a column at a time)."""
    _require_columns(ordered.column_names, EVENT_COLUMNS, "events")
    if not records:
        return
    for batch, batch_events in _session_batches(ordered, records, batch_events_at_most):
        lists = ArrowEventLists(batch_events)
        rows = _decision_rows(lists, _EventView.from_lists(lists), batch, config)
        yield tuples_table(rows, DECISION_SCHEMA)


def _session_batches(
    ordered: pa.Table, records: list[dict[str, Any]], events_at_most: int
) -> Iterator[tuple[list[dict[str, Any]], pa.Table]]:
    """The sorted attempts `records` in runs of whole sessions, each with its sessions' rows of
    `ordered` (in their order there), a run holding at most `events_at_most` events unless one
    session alone holds more. Rows are sorted by session first, so the runs' rows in run order are
    the rows of all the attempts at once; only a run's Python objects are alive at a time."""
    starts = session_starts(ordered)
    stops = np.append(starts[1:], ordered.num_rows)
    span = dict(
        zip(
            ordered.column("session_id").take(starts).to_pylist(),
            zip(starts, stops, strict=True),
            strict=True,
        )
    )
    batch: list[dict[str, Any]] = []
    ranges: list[np.ndarray] = []
    size = 0
    for session_id, attempts in itertools.groupby(records, key=lambda attempt: attempt["session_id"]):
        start, stop = span.get(session_id, (0, 0))
        if batch and size + stop - start > events_at_most:
            yield batch, ordered.take(np.concatenate(ranges))
            batch, ranges, size = [], [], 0
        batch.extend(attempts)
        ranges.append(np.arange(start, stop))
        size += stop - start
    if batch:
        yield batch, ordered.take(np.concatenate(ranges))


_SORT_KEY = operator.itemgetter(
    DECISION_SCHEMA.names.index("session_id"), DECISION_SCHEMA.names.index("ordinal")
)


def _decision_rows(
    ordered: EventLists, view: _EventView, records: list[dict[str, Any]], config: DecisionConfig
) -> list[tuple[Any, ...]]:
    """The decision-point rows of the accepted attempts `records` (sorted by session and first
    ordinal), sorted by (session_id, ordinal); `ordered` and `view` hold their sessions' events."""
    spans = _session_rows(view)
    bounds: list[tuple[str, int, int]] = []  # per attempt: session, first and last ordinal
    for attempt in records:
        session_id = str(attempt["session_id"])
        first, last = int(attempt["first_ordinal"]), int(attempt["last_ordinal"])
        start, stop = spans.get(session_id, (0, 0))
        if not 0 <= first <= last < stop - start:
            raise ValueError(
                f"attempt {attempt['attempt_id']} spans ordinals {first}..{last} of session {session_id}, "
                f"which has {stop - start} events"
            )
        bounds.append((session_id, first, last))
    # One pass of mining over all the attempts: annotating each slice apart would convert the
    # events to lists again for every attempt. Decision points never read verification outcomes.
    annotated = annotate_attempts(ordered, bounds, outcomes=False)
    rows: list[tuple[Any, ...]] = []
    targets = _Targets()
    for attempt, (session_id, first, last) in zip(records, bounds, strict=True):
        start = spans[session_id][0]
        calls = annotated[(session_id, first)]
        attempt_rows = range(start + first, start + last + 1)
        rows.extend(_attempt_rows(attempt, calls, view, start, attempt_rows, config, targets))
    # Stable, as sort_values(kind="stable"); attempts come in this order already, unless they overlap.
    rows.sort(key=_SORT_KEY)
    return rows


def _session_rows(view: _EventView) -> dict[str, tuple[int, int]]:
    """Session id -> its rows [start, stop) in ordered events (each session's ordinals start at 0)."""
    starts = [i for i, ordinal in enumerate(view.ordinals) if ordinal == 0]
    stops = [*starts[1:], len(view.ordinals)] if starts else []  # no events (a batch of a missing session)
    session_ids = view.columns["session_id"]
    return {str(session_ids[start]): (start, stop) for start, stop in zip(starts, stops, strict=True)}


def arguments_unparseable(source_arguments: Mapping[str, Any]) -> bool:
    """Whether a call's arguments were text that is not a JSON object: ingestion and mining keep such
    text as `{"raw": text}` (`parse_arguments`, `parse_tool_input`), so a sloppy call still counts as a
    call, but its arguments can be neither learned nor scored, whatever the tool."""
    return len(source_arguments) == 1 and isinstance(source_arguments.get(RAW_ARGUMENTS), str)


class _Targets(dict[int, tuple[CanonicalCall, str, str, tuple[str, ...], bool]]):
    """The target columns of each call object, worked out once: mining hands out one CanonicalCall
    per distinct call, and agents repeat calls (the test command, `git status`) all day."""

    def of(self, call: CanonicalCall) -> tuple[str, str, tuple[str, ...], bool]:
        """Canonical JSON of the arguments and of the source's arguments, the missing keys, and
        whether the arguments could not be parsed."""
        known = self.get(id(call))
        if known is None:  # the entry holds the call, so its id is not reused while this lives
            arguments = canonical_json(call.arguments)
            known = (
                call,
                arguments,
                canonical_json(call.source_arguments),
                missing_required(call),
                arguments_unparseable(call.source_arguments),
            )
            self[id(call)] = known
        return known[1], known[2], known[3], known[4]


def _attempt_rows(
    attempt: Mapping[str, Any],
    calls: list[CallInfo],
    view: _EventView,
    start: int,
    rows_of_attempt: range,
    config: DecisionConfig,
    targets: _Targets,
) -> list[tuple[Any, ...]]:
    """The decision-point rows of one attempt's calls, each a tuple of DECISION_SCHEMA's columns in
    order (a dict per row costs twice as much to build and then to turn into columns).

    The attempt is `rows_of_attempt` of `view`, in a session whose ordinal 0 is row `start`."""
    repo = _value(attempt["repo"])
    conversations: dict[str | None, _Conversation] = {}  # one per agent: main, and each sub-agent
    source_paths, seqs, kinds = view.columns["source_path"], view.columns["seq"], view.columns["kind"]
    rows: list[tuple[Any, ...]] = []
    for step, info in enumerate(calls):
        if info.is_sidechain and not config.include_sidechain:
            continue
        at = start + info.ordinal  # a session's ordinals number its rows
        if kinds[at] != "tool_call":
            target = view.row(at)
            raise ValueError(
                f"call {step} of attempt {attempt['attempt_id']} points at ordinal {info.ordinal}, "
                f"a {target['role']} {target['kind']} event, not a tool_call"
            )
        context = view.contexts[at]
        if context not in conversations:
            instruction = _value(attempt["instruction"])
            if not isinstance(instruction, str):
                raise ValueError(f"attempt {attempt['attempt_id']} has no instruction text: {instruction!r}")
            conversations[context] = _Conversation(
                view, rows_of_attempt, calls, context, instruction, repo, config
            )
        messages, dropped, messages_json = conversations[context].history(info.ordinal)
        if not rows:  # the attempt's own values, the same on each of its rows
            session_id, quality, intent = (
                str(attempt["session_id"]),
                float(attempt["quality"]),
                _value(attempt["intent"]),
            )
        call = info.call
        arguments, source_arguments, missing, unparseable = targets.of(call)
        rows.append(
            (
                decision_id(session_id, source_paths[at], seqs[at]),  # decision_id
                attempt["attempt_id"],  # attempt_id
                attempt["session_id"],  # session_id
                attempt["source"],  # source
                repo,  # repo
                attempt["tier"],  # tier
                quality,  # quality
                attempt["family_id"],  # family_id
                intent,  # intent
                step,  # step
                info.ordinal,  # ordinal
                messages_json,  # messages
                call.name,  # target_name
                arguments,  # target_arguments
                call.source_name,  # target_source_name
                source_arguments,  # target_source_arguments
                call.known,  # target_known
                missing,  # missing_required; a tuple: () leaves the row untracked by gc
                unparseable,  # arguments_unparseable
                info.action_class,  # action_class
                info.decisive,  # decisive
                info.first_action,  # first_action
                info.after_guard,  # after_guard
                info.guard_recovery,  # guard_recovery
                info.repeated_inspection_after_guard,  # repeated_inspection_after_guard
                info.guard_denied,  # target_guard_denied
                len(messages),  # history_messages
                dropped,  # history_dropped
                len(messages_json),  # history_chars
                info.is_sidechain,  # is_sidechain
            )
        )
    return rows


def learnable(decisions: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, int]]:
    """The decision points worth training on, and how many were set aside for each reason.

    A call that a person or policy refused is not a decision to imitate; a target whose arguments
    were not JSON (kept as `{"raw": text}`), whatever its tool, and a target missing a required
    argument (arguments redacted by whoever published the transcript, say) can be neither learned
    nor scored. Each point counts under the first reason of `SET_ASIDE_REASONS` that applies.
    """
    reasons = set_aside_reasons(
        decisions["target_guard_denied"].astype(bool).to_numpy(),
        decisions["arguments_unparseable"].astype(bool).to_numpy(),
        decisions["missing_required"].map(len).to_numpy(dtype=np.int64),
    )
    keep = reasons == ""
    return decisions[keep].reset_index(drop=True), _counts(reasons)


def learnable_table(decisions: pa.Table) -> tuple[pa.Table, dict[str, int]]:
    """`learnable` of an Arrow table of DECISION_SCHEMA."""
    reasons = set_aside_table(decisions)
    return decisions.filter(pa.array(reasons == "")), _counts(reasons)


def set_aside_table(decisions: pa.Table) -> np.ndarray:
    """Each point's set-aside reason (`SET_ASIDE_REASONS`), or "" for a learnable one."""
    return set_aside_reasons(
        decisions.column("target_guard_denied").to_numpy().astype(bool),
        decisions.column("arguments_unparseable").to_numpy().astype(bool),
        pc.list_value_length(decisions.column("missing_required")).to_numpy(),
    )


def set_aside_reasons(refused: np.ndarray, unparseable: np.ndarray, missing: np.ndarray) -> np.ndarray:
    """The first reason of `SET_ASIDE_REASONS` that applies to each point, or ""."""
    return np.select([refused, unparseable, missing > 0], list(SET_ASIDE_REASONS), default="").astype(object)


def _counts(reasons: np.ndarray) -> dict[str, int]:
    return {reason: int((reasons == reason).sum()) for reason in SET_ASIDE_REASONS}
