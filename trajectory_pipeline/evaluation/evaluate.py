"""One replay eval, end to end: the base model, the new adapter and the promoted one on the same cases.

The `replay_eval` asset's body in plain Python (no dagster): pick the cases from the training
window's rendered rows, ask each model, score, summarize, decide the promotion, and write the
report (Markdown and a chart) into `out_dir`, next to the adapter:

    outcome = run_replay_eval(window_rows, Path("data/tiny-model"),
                              Contender("2026-11-22-3f899c05", Path(".../adapter")), None,
                              ReplayConfig(), PromotionConfig(), Path(".../eval"))
    outcome.decision.status, outcome.summary

The per-case rows are deterministic (greedy answers; no clock values); what the eval cost per
model is in `outcome.timings`, for metadata and the report.

Cases rendered with `target_mode: tool_choice` (the adapter learned which tool to call, not its
arguments: their targets have none) are scored on the tool name: such a case passes when the first
call names the right tool, for every model alike, and the report says so (`score_tool_choice`).

Selectors (`ReplayConfig.selectors`): each answer is scored as the model gave it (`none`) and, given
the action memory of the window's training split (`memory`, the `action_memory` asset's rows), once
more after the memory selector put a remembered call in place of a wrong aim (`memory.memory_rows`:
no extra generation). Promotion stays decided on `none`, the adapter alone: the memory is built from
the same training split whatever the adapter, so it lifts every contender alike and cannot tell a
better adapter from a worse one, and whoever runs the promoted adapter may run it without memory.
The report and `memory_table` set both side by side, with the oracle rate and what memory fixed
and broke.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from trajectory_pipeline.dataset.training_data import dedupe_across_days
from trajectory_pipeline.evaluation.memory import MemoryIndex, memory_rows
from trajectory_pipeline.evaluation.promotion import (
    PROMOTED_STATUS,
    PromotionConfig,
    PromotionDecision,
    decide_promotion,
)
from trajectory_pipeline.evaluation.replay import ReplayConfig, evaluate_model, select_cases
from trajectory_pipeline.evaluation.report import (
    breakdown,
    failure_counts,
    memory_table,
    own_answers,
    pass_rate_chart,
    report_markdown,
    summarize,
)
from trajectory_pipeline.evaluation.schema import BASE, CANDIDATE, MEMORY, PROMOTED, SEEN_EXACT
from trajectory_pipeline.parquet_io import ensure_private_dir, write_bytes_atomic
from trajectory_pipeline.training.registry import AdapterRegistry

REPORT_NAME = "report.md"
CHART_NAME = "pass_rate.png"


@dataclass(frozen=True)
class Contender:
    """An adapter under evaluation: its registry id and the folder mlx_lm.load reads."""

    adapter_id: str
    path: Path


TOOL_CHOICE = "tool_choice"
TOOL_CHOICE_NOTE = (
    "Scored on the tool name: {cases} of {total} cases were rendered with target_mode tool_choice (the "
    "adapter learned which tool to call, not its arguments), so each of them passes when the answer's "
    "first call names the right tool; their argument columns are not part of the pass."
)


def tool_choice_cases(rows: pd.DataFrame) -> set[str]:
    """The decision ids of rendered rows whose target names only the tool (older rows have no
    `target_mode`: full)."""
    if "target_mode" not in rows.columns:
        return set()
    return set(rows.loc[rows["target_mode"] == TOOL_CHOICE, "decision_id"].astype(str))


def score_tool_choice(results: pd.DataFrame, decision_ids: set[str]) -> pd.DataFrame:
    """Results with the tool_choice cases passing on the tool name alone (`passed` = `name_match`,
    no failure when it matches; a miss keeps its reason, `no_call_parsed` or `wrong_tool`)."""
    if not decision_ids:
        return results
    scored = results.copy()
    chosen = scored["decision_id"].isin(decision_ids)
    scored.loc[chosen, "passed"] = scored.loc[chosen, "name_match"].astype(bool)
    scored.loc[chosen & scored["passed"].astype(bool), "failure"] = None
    scored["passed"] = scored["passed"].astype(bool)
    return scored


@dataclass(frozen=True)
class EvalOutcome:
    results: pd.DataFrame  # eval_schema rows
    summary: pd.DataFrame  # eval_report.summarize
    by_tool: pd.DataFrame
    by_action: pd.DataFrame
    failures: pd.DataFrame
    decision: PromotionDecision
    timings: dict[str, dict[str, float]]
    report: Path
    chart: Path
    cases: int
    scored_on: str = "call"  # "tool_name" when some cases were rendered with target_mode tool_choice
    memory: pd.DataFrame | None = None  # report.memory_table; None without the memory selector


def run_replay_eval(
    window_rows: pd.DataFrame,
    base_model: Path,
    candidate: Contender,
    promoted: Contender | None,
    config: ReplayConfig,
    promotion: PromotionConfig,
    out_dir: Path,
    memory: pd.DataFrame | None = None,
) -> EvalOutcome:
    """Evaluate and decide; raises ValueError when the window holds no case to replay. `memory`
    (action_memory rows) feeds the `memory` selector; without it only `none` is scored."""
    rows, _ = dedupe_across_days(window_rows)  # exactly the rows the adapter's data directory holds
    cases = select_cases(rows, config)
    if not cases:
        raise ValueError(
            "the training window has no test or train decision points to replay; "
            "check rendered_splits for the adapter's window"
        )
    contenders: list[tuple[str, Contender | None]] = [(BASE, None), (CANDIDATE, candidate)]
    if promoted is not None and promoted.adapter_id != candidate.adapter_id:
        contenders.append((PROMOTED, promoted))
    for name, contender in contenders:
        if contender is not None and not (contender.path / "adapters.safetensors").is_file():
            raise ValueError(
                f"the {name} adapter {contender.adapter_id} has no adapters.safetensors in {contender.path}: "
                "restore its artifacts, or promote another adapter in the registry"
            )
    frames, timings = [], {}
    for name, contender in contenders:
        frame, timing = evaluate_model(
            base_model,
            contender.path if contender else None,
            cases,
            config,
            model_name=name,
            adapter_id=contender.adapter_id if contender else None,
        )
        frames.append(frame)
        timings[name] = timing.as_dict()
    own = pd.concat(frames, ignore_index=True)
    with_memory = MEMORY in config.selectors and memory is not None
    if memory is not None and with_memory:
        index = MemoryIndex(memory)
        own = pd.concat([own, memory_rows(own, cases, index, config.memory_threshold)], ignore_index=True)
    chosen = tool_choice_cases(rows) & {case.decision_id for case in cases}
    results = score_tool_choice(own, chosen)
    named = sum(case.decision_id in chosen for case in cases)
    notes = [TOOL_CHOICE_NOTE.format(cases=named, total=len(cases))] if chosen else []
    summary = summarize(results)
    by_tool, by_action = breakdown(results, "target_name"), breakdown(results, "action_class")
    failures = failure_counts(results)
    decision = decide_promotion(summary, promotion)  # on the models' own calls (selector none)
    compared = memory_table(results) if with_memory else None

    ensure_private_dir(out_dir)
    chart = pass_rate_chart(summary, by_tool, out_dir / CHART_NAME)
    text = report_markdown(
        summary,
        by_tool,
        by_action,
        failures,
        decision,
        timings,
        chart.name,
        notes,
        memory=compared,
        memory_calls=len(memory) if with_memory and memory is not None else None,
    )
    report = out_dir / REPORT_NAME
    write_bytes_atomic(report, text.encode())
    return EvalOutcome(
        results=results,
        summary=summary,
        by_tool=by_tool,
        by_action=by_action,
        failures=failures,
        decision=decision,
        timings=timings,
        report=report,
        chart=chart,
        cases=len(cases),
        scored_on="tool_name" if chosen else "call",
        memory=compared,
    )


def record_decision(registry: AdapterRegistry, adapter_id: str, outcome: EvalOutcome) -> str:
    """Write the decision and the eval summary to the registry; return what was done, in words.

    A promotion and its summary land in one transaction. A rejection never demotes an adapter that
    is already promoted (a re-run of its week): that would leave no adapter in use; it is said
    instead, with how to roll back."""
    try:
        current = registry.get(adapter_id)
    except KeyError as err:
        raise ValueError(
            f"{err.args[0]}: point the registry resource at the database lora_adapter wrote to"
        ) from None
    summary = eval_summary(outcome)
    if outcome.decision.status == PROMOTED_STATUS:
        registry.promote(adapter_id, eval_summary=summary)
        return "promoted"
    if current.status == PROMOTED_STATUS:
        registry.update(adapter_id, eval_summary=summary)
        return (
            "left promoted: it was promoted before and would be rejected now; to roll back, "
            "promote another adapter in the registry"
        )
    registry.update(adapter_id, status="rejected", eval_summary=summary)
    return "rejected"


def eval_summary(outcome: EvalOutcome) -> dict[str, Any]:
    """The registry's eval_summary: the decision and each model's headline rates per lane."""
    lanes: dict[str, Any] = {}
    for row in outcome.summary.to_dict("records"):
        lanes.setdefault(row["lane"], {})[row["model"]] = {
            "cases": int(row["cases"]),
            "pass_rate": _number(row["pass_rate"]),
            "decisive_pass_rate": _number(row["decisive_pass_rate"]),
        }
    decision = outcome.decision
    results = own_answers(outcome.results)
    failing = results[(results["model"] == CANDIDATE) & (results["lane"] == SEEN_EXACT) & ~results["passed"]]
    memory: dict[str, Any] = {}
    for row in outcome.memory.to_dict("records") if outcome.memory is not None else []:
        memory.setdefault(row["lane"], {})[row["model"]] = {
            "pass_rate": _number(row["pass_rate"]),
            "memory_pass_rate": _number(row["memory_pass_rate"]),
            "oracle_rate": _number(row["oracle_rate"]),
            "fixed": int(row["fixed"]),
            "broke": int(row["broke"]),
        }
    return {
        "status": decision.status,
        "reason": decision.reason,
        "lanes": lanes,
        "report": str(outcome.report),
        "scored_on": outcome.scored_on,
        # Training decisions the adapter still gets wrong: what a re-train on failures repeats.
        "failing_seen_exact": sorted(set(failing["decision_id"])),
        **({"memory": memory} if memory else {}),
    }


def _number(value: Any) -> float | None:
    return None if value is None or pd.isna(value) else round(float(value), 4)
