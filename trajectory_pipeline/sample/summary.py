"""What `make demo` prints: per-day figures, attempts by tier, the eval table, read back from Parquet.

The figures come from the stored partitions, not from a run's own counters, so what the demo shows
is what a user would find in the tables.

    print(summary_table(Path("data/warehouse"), ["2026-11-20", "2026-11-21"]))
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from trajectory_pipeline.evaluation.report import memory_table, summarize
from trajectory_pipeline.evaluation.schema import BASE, CANDIDATE, HOLDOUT, SEEN_EXACT


def last_value(rows: list[dict[str, Any]], key: str) -> float:
    return [row[key] for row in rows if row.get(key) is not None][-1]


def eval_table(frame: Any) -> str:
    """Per lane, base model against the new adapter: answers holding a parseable call, calls of
    the right tool, pass rate, pass rate with the action memory (`-` without memory rows) and
    decisive-action pass rate."""
    header = (
        f"\n{'lane':<14}{'model':<11}{'cases':>7}{'valid call':>12}{'right tool':>12}"
        f"{'pass rate':>11}{'with memory':>13}{'decisive pass rate':>20}"
    )
    lines = [header, "-" * (len(header) - 1)]
    memory = memory_table(frame).set_index(["model", "lane"])["memory_pass_rate"]
    for row in summarize(frame).to_dict("records"):
        decisive = row["decisive_pass_rate"]
        rate = "-" if pd.isna(decisive) else f"{decisive:.1%}"
        remembered = memory.get((row["model"], row["lane"]))
        with_memory = "-" if remembered is None or pd.isna(remembered) else f"{remembered:.1%}"
        lines.append(
            f"{row['lane']:<14}{row['model']:<11}{row['cases']:>7}{1 - row['invalid_rate']:>12.1%}"
            f"{row['name_match_rate']:>12.1%}{row['pass_rate']:>11.1%}{with_memory:>13}{rate:>20}"
        )
    return "\n".join(lines)


def tier_table(warehouse: Path, days: list[str]) -> str:
    """Attempts by source and tier, and the decision points cut from the kept ones."""
    attempts = pa.concat_tables(
        pq.read_table(warehouse / "mined_trajectories" / f"{d}.parquet") for d in days
    )
    decisions = pa.concat_tables(pq.read_table(warehouse / "decision_points" / f"{d}.parquet") for d in days)
    tiers = ("gold", "silver", "bronze", "reject")
    header = f"\n{'source':<12}" + "".join(f"{tier:>9}" for tier in tiers) + f"{'decision points':>17}"
    lines = [header, "-" * (len(header) - 1)]
    sources = sorted(set(attempts["source"].to_pylist()))
    for source in [*sources, "total"]:
        mine = attempts if source == "total" else attempts.filter(pc.equal(attempts["source"], source))
        made = decisions if source == "total" else decisions.filter(pc.equal(decisions["source"], source))
        counts = [pc.sum(pc.equal(mine["tier"], tier)).as_py() or 0 for tier in tiers]
        lines.append(f"{source:<12}" + "".join(f"{n:>9}" for n in counts) + f"{made.num_rows:>17}")
    return "\n".join(lines)


COLUMNS = ("sessions", "events", "tool calls", "errors", "quarantined", "redactions")


def _day_figures(warehouse: Path, day: str) -> list[int]:
    events = pq.read_table(warehouse / "raw_sessions" / f"{day}.parquet")
    quarantined = pq.read_metadata(warehouse / "raw_sessions_quarantine" / f"{day}.parquet").num_rows
    return [
        len(pc.unique(events["session_id"])),
        events.num_rows,
        pc.sum(pc.equal(events["kind"], "tool_call")).as_py() or 0,
        pc.sum(pc.fill_null(events["is_error"], False)).as_py() or 0,
        quarantined,
        pc.sum(events["redactions"]).as_py() or 0,
    ]


def summary_table(warehouse: Path, days: list[str]) -> str:
    """Per-day figures read back from the Parquet partitions, not from the run's own counters."""

    def line(label: str, cells: list[object]) -> str:
        return f"{label:<12}" + "".join(f"{cell!s:>13}" for cell in cells)

    rows = [_day_figures(warehouse, day) for day in days]
    totals = [sum(column) for column in zip(*rows, strict=True)]
    rule = "-" * (12 + 13 * len(COLUMNS))
    body = [line(day, list(row)) for day, row in zip(days, rows, strict=True)]
    return "\n".join([line("day", list(COLUMNS)), rule, *body, rule, line("total", list(totals))])


@dataclass(frozen=True)
class Target:
    """One of the demo's promises about the adapter, with what was measured."""

    name: str
    wanted: str
    measured: str
    met: bool


def lift_targets(frame: pd.DataFrame, promoted: bool) -> list[Target]:
    """The demo's targets (README, "What the demo shows"), read from replay_eval's rows: the adapter
    writes valid calls, beats the base on held-out sessions, keeps its decisive calls and knows
    the workflows it trained on; and the registry promoted it."""
    rates = summarize(frame).set_index(["model", "lane"])

    def rate(model: str, lane: str, column: str) -> float:
        value = rates[column].get((model, lane), float("nan")) if column in rates else float("nan")
        return float(value)

    valid = 1 - rate(CANDIDATE, HOLDOUT, "invalid_rate")
    lift = rate(CANDIDATE, HOLDOUT, "pass_rate") - rate(BASE, HOLDOUT, "pass_rate")
    decisive = (rate(CANDIDATE, HOLDOUT, "decisive_pass_rate"), rate(BASE, HOLDOUT, "decisive_pass_rate"))
    seen = rate(CANDIDATE, SEEN_EXACT, "pass_rate")
    return [
        Target("valid calls (holdout)", ">= 95%", f"{valid:.1%}", valid >= 0.95),
        Target(
            "pass rate over the base (holdout)", ">= +20 points", f"{lift * 100:+.1f} points", lift >= 0.20
        ),
        Target(
            "decisive pass rate (holdout)",
            "not below the base's",
            f"{decisive[0]:.1%} vs {decisive[1]:.1%}",
            not decisive[0] < decisive[1],
        ),
        Target("seen-exact pass rate", ">= 80%", f"{seen:.1%}", seen >= 0.80),
        Target("promoted", "yes", "yes" if promoted else "no", promoted),
    ]


def targets_table(targets: list[Target]) -> str:
    name = max(len("target"), *(len(t.name) for t in targets))
    wanted = max(len("wanted"), *(len(t.wanted) for t in targets))
    measured = max(len("measured"), *(len(t.measured) for t in targets))
    lines = [f"{'target':<{name}}  {'wanted':<{wanted}}  {'measured':<{measured}}  met"]
    lines.append("-" * (name + wanted + measured + 9))
    lines += [
        f"{t.name:<{name}}  {t.wanted:<{wanted}}  {t.measured:<{measured}}  {'yes' if t.met else 'NO'}"
        for t in targets
    ]
    return "\n".join(lines)
