"""Rendered splits: which decision points become training rows, and in which split each one lands.

`select` takes `decision_points` rows, renders each with `trajectory_pipeline.dataset.render`, filters them,
and assigns every kept row to train / valid / test by its *source session*; `check_leakage` then
proves that no session, no (prompt, target) pair and no holdout item crosses the train/test line.
The `rendered_splits` asset is a thin wrapper around them:

    holdout = load_holdout(Path("holdout.txt"))
    config = SelectConfig(tool_caps="read_file=400,run_shell=220")
    rows, counts = select(decisions, RenderConfig(), config, holdout)
    report = check_leakage(rows, holdout)   # a blocking asset check: report.passed, report.message()

Filters, in this order, each counted in `counts` (a row is counted by the first filter that drops it):
1. `dropped_tier`, `dropped_quality`: the attempt's tier is not in `included_tiers`, or its quality
   is below `min_quality`.
2. Length: a rendered record longer than `max_length` (characters, or tokens when a tokenizer is
   passed) loses its oldest history turns one at a time (`render.drop_oldest_turn`: never the system
   prompt, the instruction or the target). `trimmed_history` counts rows kept that way and the
   `history_dropped` column says how many messages each lost; `dropped_too_long` counts rows still too
   long with nothing left to drop. The target is never truncated.
3. `dropped_exact_duplicate`: the same prompt and target text as a row with a smaller decision_id.
4. `dropped_near_duplicate`: a prompt whose word-shingle Jaccard similarity with an already kept row
   *of another session* reaches `near_duplicate_threshold`. Candidates come from datasketch's
   MinHash LSH (fixed seed and number of permutations) and are confirmed with the exact Jaccard of
   the shingle sets, so a kept pair is never a false positive. Rows are visited by decision_id. The
   shingles are taken from the (trimmed) history messages rather than the format's prompt string, so
   the rows kept do not depend on the format, and the tools list every row of the `tools` format
   carries does not make unrelated short prompts look alike. Within one session near-duplicates stay:
   they never straddle a split, and a repeated step of one task is a real decision.
5. `dropped_tool_cap`: more than the cap for the target's canonical tool; the rows kept are the first
   N in sha256(seed, decision_id) order, a stable pseudo-random sample that does not favour early ids.
6. Split: `assign_split(session_id, seed, ratios)`. A holdout item (one per line of the holdout file)
   matches a row's session_id or its prompt_hash; every row of a session with any matching row goes
   to **test** (not dropped: held-out sessions are what replay evaluation wants), and
   `holdout_moved` counts the rows that were moved there from train or valid. Moving whole sessions
   keeps "one session, one split" true. Target hashes are not matched: a target such as
   `git status` recurs everywhere and would hold out far more than was asked.

Output: one row per kept decision point, sorted by (split, decision_id), with the rendered record as
canonical JSON; the same input gives the same rows in any row order. Run the tests with
`.venv/bin/pytest tests/dataset/test_splits.py`.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pandas as pd

from trajectory_pipeline.config import knob
from trajectory_pipeline.dataset.render import (
    RenderConfig,
    drop_oldest_turn,
    prompt_and_target,
    record_length,
    render,
    render_row,
)
from trajectory_pipeline.decisions.points import TIERS
from trajectory_pipeline.schema import canonical_json

SPLITS = ("train", "valid", "test")
INPUT_COLUMNS = (
    "decision_id",
    "session_id",
    "source",
    "tier",
    "quality",
    "target_name",
    "target_arguments",
    "action_class",
    "messages",
)
OUTPUT_COLUMNS = (
    "decision_id",
    "session_id",
    "source",
    "tier",
    "quality",
    "target_name",
    "action_class",
    "family_id",  # carried for the replay eval's lanes; optional in the input
    "repo",  # carried for the replay eval's action memory; optional in the input
    "decisive",
    "split",
    "format",
    "target_mode",
    "record",
    "prompt_hash",
    "target_hash",
    "chars",
    "tokens",
    "history_dropped",
)
COUNT_KEYS = (
    "input",
    "dropped_tier",
    "dropped_quality",
    "trimmed_history",
    "dropped_too_long",
    "dropped_exact_duplicate",
    "dropped_near_duplicate",
    "dropped_tool_cap",
    "holdout_moved",
    "kept",
)
RATIO_TOLERANCE = 1e-9
# MinHash settings are fixed, not configurable: changing them changes which rows are kept.
MINHASH_PERMUTATIONS = 128
MINHASH_SEED = 1
SHINGLE_WORDS = 5
LEAK_IDS_SHOWN = 10
_WORD = re.compile(r"\w+")


def _validate_ratios(ratios: tuple[float, ...]) -> None:
    if len(ratios) != len(SPLITS):
        raise ValueError(f"ratios must give one share per split {SPLITS}, got {ratios!r}")
    if any(not math.isfinite(r) or r < 0 for r in ratios):
        raise ValueError(f"ratios must be non-negative numbers, got {ratios!r}")
    if abs(sum(ratios) - 1.0) > RATIO_TOLERANCE:
        raise ValueError(f"ratios must sum to 1, got {ratios!r} (sum {sum(ratios)!r})")


def _unit_interval(key: str) -> float:
    """A number in [0, 1) from sha256 of `key`: uniform, and the same on every machine and run."""
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big") / 2**64


def assign_split(session_id: str, seed: int = 0, ratios: tuple[float, float, float] = (0.8, 0.1, 0.1)) -> str:
    """The split of every decision point of `session_id`: sha256 of f"{seed}:{session_id}" read as
    a number in [0, 1), cut at the cumulative ratios."""
    _validate_ratios(ratios)
    u = _unit_interval(f"{seed}:{session_id}")
    edge = 0.0
    for name, share in zip(SPLITS, ratios, strict=True):
        edge += share
        if u < edge:
            return name
    # Floating-point sums can end just below 1: fall into the last split that has a share.
    return next(name for name, share in zip(SPLITS[::-1], ratios[::-1], strict=True) if share > 0)


def load_holdout(path: Path | None) -> frozenset[str]:
    """The holdout items of `path`: one session id or prompt hash per line; blank lines and
    everything after a `#` are ignored. No path means no holdout."""
    if path is None:
        return frozenset()
    if not path.is_file():
        raise FileNotFoundError(
            f"holdout file {path} does not exist (expected one session id or prompt hash per line)"
        )
    items = (line.split("#", 1)[0].strip() for line in path.read_text(encoding="utf-8").splitlines())
    return frozenset(item for item in items if item)


def parse_tool_caps(text: str) -> dict[str, int]:
    """Per-tool row caps from "read_file=400,run_shell=220" (spaces allowed; empty text: no caps)."""
    caps: dict[str, int] = {}
    for raw in text.split(","):
        item = raw.strip()
        if not item:
            continue
        name, sep, value = (part.strip() for part in item.partition("="))
        if not sep or not name:
            raise ValueError(f"tool cap {item!r} must look like name=count (e.g. read_file=400)")
        if not re.fullmatch(r"\d+", value):
            raise ValueError(f"tool cap {item!r} needs a non-negative whole count, got {value!r}")
        if name in caps:
            raise ValueError(f"tool cap for {name!r} is given twice in {text!r}")
        caps[name] = int(value)
    return caps


def format_tool_caps(caps: Mapping[str, int]) -> str:
    """`parse_tool_caps`'s text for `caps`, names sorted."""
    return ",".join(f"{name}={cap}" for name, cap in sorted(caps.items()))


@dataclass(frozen=True)
class SelectConfig:
    """Which decision points become training rows, and how sessions are split."""

    included_tiers: tuple[str, ...] = knob(
        ("gold", "silver"), "Attempt tiers whose decision points are kept (gold / silver / bronze / reject)."
    )
    min_quality: float = knob(0.0, "Rows whose attempt quality score is below this are dropped.")
    tool_caps: str = knob(
        "", "Most rows per canonical target tool, e.g. 'read_file=400,run_shell=220'; others uncapped."
    )
    max_length: int = knob(
        16_000, "Longest record kept: characters, or tokens with a tokenizer (history dropped first)."
    )
    near_duplicate_threshold: float = knob(
        0.9,
        "Prompts of different sessions this similar (Jaccard of word shingles) are near-duplicates; "
        "1.0 turns near-duplicate removal off.",
    )
    seed: int = knob(0, "Seed of the session → split hash and of the tool-cap sample order.")
    train_ratio: float = knob(0.8, "Share of sessions in train.")
    valid_ratio: float = knob(0.1, "Share of sessions in valid.")
    test_ratio: float = knob(0.1, "Share of sessions in test.")

    def __post_init__(self) -> None:
        unknown = [tier for tier in self.included_tiers if tier not in TIERS]
        if not self.included_tiers or unknown:
            raise ValueError(
                f"included_tiers must be a non-empty selection of {TIERS}, got {self.included_tiers!r}"
            )
        if not math.isfinite(self.min_quality):
            raise ValueError(f"min_quality must be a finite number, got {self.min_quality!r}")
        # one spelling per meaning, so equal configs hash alike
        try:
            caps = parse_tool_caps(self.tool_caps)
        except ValueError as err:
            raise ValueError(f"tool_caps: {err}") from None
        object.__setattr__(self, "tool_caps", format_tool_caps(caps))
        if self.max_length < 1:
            raise ValueError(f"max_length must be positive, got {self.max_length}")
        if not 0.0 < self.near_duplicate_threshold <= 1.0:
            raise ValueError(
                f"near_duplicate_threshold must be in (0, 1] (1.0 turns it off), "
                f"got {self.near_duplicate_threshold}"
            )
        _validate_ratios(self.ratios)

    @property
    def caps(self) -> dict[str, int]:
        """`tool_caps` as a dict."""
        return parse_tool_caps(self.tool_caps)

    @property
    def ratios(self) -> tuple[float, float, float]:
        """The shares of sessions in (train, valid, test)."""
        return (self.train_ratio, self.valid_ratio, self.test_ratio)


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _shingles(messages: list[dict[str, Any]]) -> set[str]:
    """Lower-cased word 5-grams of what the messages say: roles, texts, tool names and arguments."""
    parts: list[str] = []
    for message in messages:
        parts.append(str(message.get("role", "")))
        content = message.get("content")
        parts.append(content if isinstance(content, str) else canonical_json(content))
        for call in message.get("tool_calls") or ():
            parts.append(str(call.get("name", "")))
            parts.append(canonical_json(call.get("arguments")))
    words = _WORD.findall(" ".join(parts).lower())
    if len(words) <= SHINGLE_WORDS:
        return {" ".join(words)}
    return {" ".join(words[i : i + SHINGLE_WORDS]) for i in range(len(words) - SHINGLE_WORDS + 1)}


def _arguments(value: Any) -> dict[str, Any]:
    """decision_points keep target arguments as canonical JSON; rendering takes the object."""
    parsed = orjson.loads(value) if isinstance(value, str | bytes) else value
    if not isinstance(parsed, dict):
        raise ValueError(f"target_arguments must be a JSON object, got {value!r}")
    return parsed


def _fit(
    row: dict[str, Any], render_config: RenderConfig, max_length: int, tokenizer: Any
) -> tuple[dict[str, Any], list[dict[str, Any]], int] | None:
    """The row's record, its history and how many messages were dropped to fit `max_length`;
    None when even the shortest history is too long."""
    messages: list[dict[str, Any]] = orjson.loads(row["messages"])
    record = render_row(row, render_config)
    dropped = 0
    arguments: dict[str, Any] | None = None
    while record_length(record, tokenizer) > max_length:
        shorter = drop_oldest_turn(messages)
        if shorter is None:
            return None
        dropped += len(messages) - len(shorter)
        messages = shorter
        if arguments is None:
            arguments = _arguments(row["target_arguments"])
        record = render(messages, row["target_name"], arguments, render_config)
    return record, messages, dropped


def _empty_output() -> pd.DataFrame:
    frame = pd.DataFrame({name: pd.Series(dtype=object) for name in OUTPUT_COLUMNS})
    frame["quality"] = frame["quality"].astype("float64")
    frame["chars"] = frame["chars"].astype("int64")
    frame["tokens"] = frame["tokens"].astype("Int64")
    frame["history_dropped"] = frame["history_dropped"].astype("int64")
    return frame


def _near_duplicates(rows: list[dict[str, Any]], shingles: list[set[str]], threshold: float) -> set[int]:
    """Indices of rows (visited in list order) whose shingles reach `threshold` Jaccard similarity
    with an earlier kept row of another session."""
    # Imported here: datasketch pulls in scipy, a third of a second and tens of MiB in every process
    # that loads the definitions, while only rendered_splits ever sketches.
    from datasketch import MinHash, MinHashLSH

    lsh = MinHashLSH(threshold=threshold, num_perm=MINHASH_PERMUTATIONS)
    # Copying an empty sketch shares its permutations instead of drawing them again for every row.
    empty = MinHash(num_perm=MINHASH_PERMUTATIONS, seed=MINHASH_SEED)
    dropped: set[int] = set()
    for index, (row, own) in enumerate(zip(rows, shingles, strict=True)):
        signature = empty.copy()
        signature.update_batch([s.encode() for s in sorted(own)])
        for candidate in sorted(lsh.query(signature)):
            other = shingles[candidate]
            if rows[candidate]["session_id"] == row["session_id"]:
                continue
            if len(own & other) / len(own | other) >= threshold:
                dropped.add(index)
                break
        else:
            lsh.insert(index, signature)
    return dropped


def select(
    decisions: pd.DataFrame,
    render_config: RenderConfig,
    config: SelectConfig = SelectConfig(),
    holdout: frozenset[str] = frozenset(),
    tokenizer: Any = None,
) -> tuple[pd.DataFrame, dict[str, int]]:
    """The training rows of `decisions` (decision_points rows) and the count of each filter
    (see the module doc for the filters, their order and the output columns)."""
    missing = [name for name in INPUT_COLUMNS if name not in decisions.columns]
    if missing:
        raise ValueError(f"decision points lack the columns {missing}; got {list(decisions.columns)}")
    counts = dict.fromkeys(COUNT_KEYS, 0)
    counts["input"] = len(decisions)
    # Visiting rows by decision_id makes every "keep the first" below independent of input order.
    ordered = decisions.sort_values("decision_id", kind="stable")
    rows: list[dict[str, Any]] = [
        dict(zip(ordered.columns, values, strict=True))
        for values in ordered.astype(object).itertuples(index=False, name=None)
    ]
    ids = [row["decision_id"] for row in rows]
    if len(set(ids)) != len(ids):
        raise ValueError("decision_id must be unique in the decision points")

    in_tier = [row for row in rows if row["tier"] in config.included_tiers]
    counts["dropped_tier"] = len(rows) - len(in_tier)
    good = [row for row in in_tier if float(row["quality"]) >= config.min_quality]
    counts["dropped_quality"] = len(in_tier) - len(good)

    fitted: list[dict[str, Any]] = []
    histories: list[list[dict[str, Any]]] = []
    for row in good:
        fit = _fit(row, render_config, config.max_length, tokenizer)
        if fit is None:
            counts["dropped_too_long"] += 1
            continue
        record, messages, dropped = fit
        counts["trimmed_history"] += dropped > 0
        prompt, target = prompt_and_target(record)
        fitted.append(
            {
                **row,
                "record": canonical_json(record),
                "prompt_hash": _sha256(prompt),
                "target_hash": _sha256(target),
                "chars": record_length(record),
                "tokens": record_length(record, tokenizer) if tokenizer is not None else None,
                "history_dropped": dropped,
            }
        )
        histories.append(messages)

    seen: set[tuple[str, str]] = set()
    unique: list[int] = []
    for index, row in enumerate(fitted):
        key = (row["prompt_hash"], row["target_hash"])
        if key not in seen:
            seen.add(key)
            unique.append(index)
    counts["dropped_exact_duplicate"] = len(fitted) - len(unique)
    fitted = [fitted[i] for i in unique]
    histories = [histories[i] for i in unique]

    if config.near_duplicate_threshold < 1.0 and fitted:
        shingles = [_shingles(messages) for messages in histories]
        near = _near_duplicates(fitted, shingles, config.near_duplicate_threshold)
        counts["dropped_near_duplicate"] = len(near)
        fitted = [row for index, row in enumerate(fitted) if index not in near]

    caps = config.caps
    if caps:
        by_sample = sorted(fitted, key=lambda row: _sha256(f"{config.seed}:{row['decision_id']}"))
        taken: dict[str, int] = {}
        capped: set[str] = set()
        for row in by_sample:
            name = row["target_name"]
            if name in caps and taken.get(name, 0) >= caps[name]:
                capped.add(row["decision_id"])
            else:
                taken[name] = taken.get(name, 0) + 1
        counts["dropped_tool_cap"] = len(capped)
        fitted = [row for row in fitted if row["decision_id"] not in capped]

    held = {
        row["session_id"] for row in fitted if row["session_id"] in holdout or row["prompt_hash"] in holdout
    }
    for row in fitted:
        split = assign_split(str(row["session_id"]), config.seed, config.ratios)
        if row["session_id"] in held and split != "test":
            counts["holdout_moved"] += 1
            split = "test"
        row["split"] = split
        row["format"] = render_config.format
        row["target_mode"] = render_config.target_mode
    counts["kept"] = len(fitted)

    if not fitted:
        return _empty_output(), counts
    frame = pd.DataFrame([{name: row.get(name) for name in OUTPUT_COLUMNS} for row in fitted])
    frame["quality"] = frame["quality"].astype("float64")
    frame["chars"] = frame["chars"].astype("int64")
    frame["tokens"] = frame["tokens"].astype("Int64")
    frame["history_dropped"] = frame["history_dropped"].astype("int64")
    frame = frame.sort_values(["split", "decision_id"], kind="stable").reset_index(drop=True)
    return frame, counts


@dataclass(frozen=True)
class LeakageReport:
    """What crosses the split lines; `passed` only when nothing does."""

    passed: bool
    # Sessions with rows in more than one split.
    sessions_in_several_splits: list[str]
    # Decision ids in test whose (prompt, target) pair also occurs in train.
    shared_prompt_target: list[str]
    # Decision ids in train or valid whose session id or prompt hash is a holdout item.
    holdout_in_train_or_valid: list[str]

    @property
    def passed_but_for_repeats(self) -> bool:
        """No session in two splits and no holdout item in training (repeated pairs aside)."""
        return not (self.sessions_in_several_splits or self.holdout_in_train_or_valid)

    def message(self) -> str:
        """One line per kind of leak, naming the first ids of each."""
        if self.passed:
            return (
                "no leakage: every session is in one split, no (prompt, target) pair is in both train "
                "and test, and no holdout item is in train or valid"
            )
        lines = []
        for label, ids in (
            ("sessions in several splits", self.sessions_in_several_splits),
            ("test decisions whose (prompt, target) is also in train", self.shared_prompt_target),
            ("holdout decisions in train or valid", self.holdout_in_train_or_valid),
        ):
            if ids:
                shown = ", ".join(ids[:LEAK_IDS_SHOWN])
                more = f" and {len(ids) - LEAK_IDS_SHOWN} more" if len(ids) > LEAK_IDS_SHOWN else ""
                lines.append(f"{len(ids)} {label}: {shown}{more}")
        return "leakage found: " + "; ".join(lines)


def check_leakage(rows: pd.DataFrame, holdout: frozenset[str] = frozenset()) -> LeakageReport:
    """Look for sessions in two splits, (prompt, target) pairs in train and test, and holdout items
    (session ids or prompt hashes) in train or valid, in `select`'s output rows."""
    needed = ("decision_id", "session_id", "split", "prompt_hash", "target_hash")
    missing = [name for name in needed if name not in rows.columns]
    if missing:
        raise ValueError(f"split rows lack the columns {missing}; got {list(rows.columns)}")
    unknown = sorted(set(rows["split"]) - set(SPLITS))
    if unknown:
        raise ValueError(f"split must be one of {SPLITS}, got {unknown}")
    splits_per_session = rows.groupby("session_id")["split"].nunique()
    several = sorted(str(s) for s in splits_per_session[splits_per_session > 1].index)
    train = rows[rows["split"] == "train"]
    test = rows[rows["split"] == "test"]
    train_pairs = set(zip(train["prompt_hash"], train["target_hash"], strict=True))
    shared = sorted(
        str(decision)
        for decision, prompt, target in zip(
            test["decision_id"], test["prompt_hash"], test["target_hash"], strict=True
        )
        if (prompt, target) in train_pairs
    )
    fitting = rows[rows["split"].isin(("train", "valid"))]
    held = fitting["session_id"].isin(holdout) | fitting["prompt_hash"].isin(holdout)
    in_training = sorted(str(decision) for decision in fitting.loc[held, "decision_id"])
    return LeakageReport(
        passed=not (several or shared or in_training),
        sessions_in_several_splits=several,
        shared_prompt_target=shared,
        holdout_in_train_or_valid=in_training,
    )
