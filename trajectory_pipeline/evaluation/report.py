"""The replay eval's numbers and report: summaries, breakdowns, a chart and a Markdown page.

Input is the scored answers (columns of `eval_schema.EVAL_RESULT_SCHEMA`, one row per model, lane,
decision and sample). The `replay_eval` asset calls:

    summary = summarize(results)                      # one row per (model, lane)
    by_tool = breakdown(results, "target_name")       # also "action_class", "failure"
    failures = failure_counts(results)                # failure reasons with counts and shares
    chart = pass_rate_chart(summary, by_tool, out / "pass_rate.png")
    text = report_markdown(summary, by_tool, breakdown(results, "action_class"), failures,
                           decision, timings, chart.name)

Summaries, breakdowns and failures are of the models' own calls (selector `none`, what promotion is
decided on); `memory_table` sets the `memory` selector's rows beside them.

Rates are over answers (rows), so with several samples per decision every sample counts once.
`pass^k` (tau-bench) is the chance that k samples drawn without replacement from a decision's n
all pass, C(c, k) / C(n, k) (`scoring.pass_hat_k`), averaged over the decisions with at least k
samples; its columns appear only when some decision has more than one sample. `tool selection`,
`param names` and `param values` in the report are RoTBench's three accuracies (name_match_rate,
param_names_rate, param_values_rate). `decisive_pass_rate` is NaN where a model and lane have no
decisive cases. Output is sorted by model (base, candidate, promoted, then others by name), lane
(holdout, seen-exact, seen-variant), then key, so the same answers give the same frames, bytes and
text.
Run the tests with `.venv/bin/python -m pytest tests/evaluation/test_eval_report.py`.
"""

from __future__ import annotations

import io
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd
import pyarrow as pa

from trajectory_pipeline.evaluation.promotion import PromotionDecision
from trajectory_pipeline.evaluation.schema import (
    EVAL_COLUMNS,
    EVAL_RESULT_SCHEMA,
    HOLDOUT,
    LANES,
    MEMORY,
    MODELS,
    NONE,
)
from trajectory_pipeline.evaluation.scoring import pass_hat_k
from trajectory_pipeline.parquet_io import write_bytes_atomic

if TYPE_CHECKING:
    from matplotlib.axes import Axes

BOOL_COLUMNS = tuple(field.name for field in EVAL_RESULT_SCHEMA if pa.types.is_boolean(field.type))
BREAKDOWN_KEYS = ("target_name", "action_class", "failure")
_MISSING_LABEL = {"failure": "(passed)"}  # a null failure means the answer passed
_MEANS = {
    "pass_rate": "passed",
    "name_match_rate": "name_match",
    "required_present_rate": "required_present",
    "target_match_rate": "target_match",
    "exact_match_rate": "exact_match",
    "arg_shape_mean": "arg_shape",
    "param_names_rate": "param_names_match",
    "param_values_rate": "param_values_match",
    "invalid_rate": "invalid",
    "prose_rate": "prose",
    "thinking_rate": "thinking_preamble",
}
_COLORS = {"base": "#8c8c8c", "candidate": "#1f77b4", "promoted": "#ff7f0e"}
_LANE_NOTES = {
    "holdout": "Held-out sessions: the lane promotion is decided on.",
    "seen-exact": "Decisions the adapter trained on.",
    "seen-variant": "Test-split instances of workflow families the adapter trained on.",
}
# (header, column, kind) of the per-lane tables; kind "pct" prints a percentage, "int" a count.
_LANE_TABLE = [
    ("cases", "cases", "int"),
    ("answers", "answers", "int"),
    ("pass", "pass_rate", "pct"),
    ("tool selection", "name_match_rate", "pct"),
    ("param names", "param_names_rate", "pct"),
    ("param values", "param_values_rate", "pct"),
    ("required args", "required_present_rate", "pct"),
    ("target", "target_match_rate", "pct"),
    ("exact", "exact_match_rate", "pct"),
    ("arg shape", "arg_shape_mean", "pct"),
    ("invalid", "invalid_rate", "pct"),
    ("prose only", "prose_rate", "pct"),
    ("thinking", "thinking_rate", "pct"),
    ("decisive cases", "decisive_cases", "int"),
    ("decisive pass", "decisive_pass_rate", "pct"),
]


def own_answers(results: pd.DataFrame) -> pd.DataFrame:
    """The rows of the models' own calls (selector `none`): every row but the memory selector's."""
    if "selector" not in results.columns:
        return results
    return results[results["selector"].ne(MEMORY)]


def memory_table(results: pd.DataFrame) -> pd.DataFrame:
    """Per (model, lane), the action memory's effect: pass rate without and with it, the oracle
    rate (the answer's call or a remembered candidate passes), remembered candidates per answer, and
    the answers memory fixed (failed alone, passed with it) and broke (the reverse). Empty when the
    results hold no memory rows."""
    columns = ["model", "lane", "cases", "pass_rate", "memory_pass_rate", "oracle_rate"]
    columns += ["candidates_per_case", "fixed", "broke"]
    if "selector" not in results.columns or not results["selector"].eq(MEMORY).any():
        return pd.DataFrame(columns=columns)
    frame = _validated(results)
    keys = ["model", "lane", "decision_id", "sample"]
    own = frame[frame["selector"].eq(NONE)].set_index(keys)["passed"]
    memory = frame[frame["selector"].eq(MEMORY)].set_index(keys)
    paired = memory.assign(own=own.reindex(memory.index).fillna(False).astype(bool)).reset_index()
    paired = paired.assign(
        fixed=paired["passed"] & ~paired["own"],
        broke=~paired["passed"] & paired["own"],
    )
    table = paired.groupby(["model", "lane"]).agg(
        cases=("decision_id", "nunique"),
        pass_rate=("own", "mean"),
        memory_pass_rate=("passed", "mean"),
        oracle_rate=("oracle", "mean"),
        candidates_per_case=("candidates", "mean"),
        fixed=("fixed", "sum"),
        broke=("broke", "sum"),
    )
    table = table.astype({"fixed": "int64", "broke": "int64"})
    return _sorted(table.reset_index(), [])[columns]


def summarize(results: pd.DataFrame) -> pd.DataFrame:
    """One row per (model, lane) of the models' own calls: counts, the rates of the module
    docstring, and pass^k columns."""
    frame = _validated(own_answers(results))
    frame = frame.assign(
        invalid=~frame["parsed"],
        prose=~frame["parsed"] & ~frame["starts_with_json"],
        decisive_id=frame["decision_id"].where(frame["decisive"]),
        decisive_passed=frame["passed"].astype(float).where(frame["decisive"]),
    )
    groups = frame.groupby(["model", "lane"])
    summary = groups.agg(
        cases=("decision_id", "nunique"),
        answers=("decision_id", "size"),
        **{name: (column, "mean") for name, column in _MEANS.items()},
        decisive_cases=("decisive_id", "nunique"),
        decisive_pass_rate=("decisive_passed", "mean"),
    )
    per_case = frame.groupby(["model", "lane", "decision_id"])["passed"].agg(["size", "sum"])
    summary.insert(2, "samples", per_case.groupby(level=["model", "lane"])["size"].max())
    most = int(per_case["size"].max()) if len(per_case) else 0
    for k in range(1, most + 1) if most > 1 else []:
        enough = per_case[per_case["size"] >= k]
        hats = [pass_hat_k(int(n), int(c), k) for n, c in zip(enough["size"], enough["sum"], strict=True)]
        summary[f"pass^{k}"] = pd.Series(hats, index=enough.index).groupby(level=["model", "lane"]).mean()
    return _sorted(summary.reset_index(), [])


def breakdown(results: pd.DataFrame, by: str) -> pd.DataFrame:
    """Cases, answers, passes and pass rate per (model, lane, `by`); a null key reads "(none)"."""
    if by not in BREAKDOWN_KEYS:
        raise ValueError(f"breakdown is by one of {BREAKDOWN_KEYS}, got {by!r}")
    frame = _validated(own_answers(results))
    frame = frame.assign(**{by: frame[by].fillna(_MISSING_LABEL.get(by, "(none)"))})
    table = frame.groupby(["model", "lane", by]).agg(
        cases=("decision_id", "nunique"),
        answers=("decision_id", "size"),
        passed=("passed", "sum"),
        pass_rate=("passed", "mean"),
    )
    return _sorted(table.reset_index(), [by])


def failure_counts(results: pd.DataFrame) -> pd.DataFrame:
    """Failed answers per (model, lane, failure), most frequent first, with their share of answers."""
    frame = _validated(own_answers(results))
    answers = frame.groupby(["model", "lane"]).size().rename("answers")
    counts = frame.dropna(subset=["failure"]).groupby(["model", "lane", "failure"]).size().rename("count")
    table = counts.reset_index().join(answers, on=["model", "lane"])
    table["share"] = table["count"] / table["answers"]
    order = ["model", "lane", "count", "failure"]
    table = table.drop(columns="answers").sort_values(
        order, key=_rank_key, ascending=[True, True, False, True]
    )
    return table.reset_index(drop=True)


def pass_rate_chart(summary: pd.DataFrame, by_tool: pd.DataFrame, path: Path) -> Path:
    """Write a PNG (0600) of pass rate per model and lane, and per tool and model on holdout."""
    # Imported here: matplotlib costs a third of a second in every process that loads the
    # definitions, while only replay_eval draws.
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(10, 8), dpi=100)
    FigureCanvasAgg(figure)  # the Agg backend, explicitly: no display, no global pyplot state
    top, bottom = figure.subplots(2, 1)
    _grouped_bars(top, summary, "lane", "Pass rate per lane")
    holdout = by_tool[by_tool["lane"] == HOLDOUT]
    _grouped_bars(bottom, holdout, "target_name", "Pass rate per tool (holdout)")
    figure.tight_layout()
    buffer = io.BytesIO()
    # No Software or date entries, so equal data gives byte-equal files.
    figure.savefig(buffer, format="png", metadata={"Software": None})
    write_bytes_atomic(path, buffer.getvalue())
    return path


def report_markdown(
    summary: pd.DataFrame,
    by_tool: pd.DataFrame,
    by_action: pd.DataFrame,
    failures: pd.DataFrame,
    decision: PromotionDecision,
    timings: Mapping[str, Mapping[str, float]],
    chart_name: str,
    notes: Sequence[str] = (),
    memory: pd.DataFrame | None = None,
    memory_calls: int | None = None,
) -> str:
    """The human report: decision, per-lane tables, breakdowns, failures, speed and the chart;
    `notes` (how the cases were scored, when not as calls) come first, under the title."""
    rates = [("candidate", decision.candidate_pass_rate), ("base", decision.base_pass_rate)]
    rates += [("promoted", decision.promoted_pass_rate)] if decision.promoted_pass_rate is not None else []
    reason = decision.reason[:1].upper() + decision.reason[1:]
    lines = [f"# Replay eval: candidate {decision.status}", ""]
    for note in notes:
        lines += [f"**{note}**", ""]
    lines += [f"{reason}.", ""]
    headline = ", ".join(f"{model} {_pct(rate)}" for model, rate in rates)
    lines += [f"Holdout pass rate: {headline} ({decision.cases} cases).", ""]
    lines += [f"![pass rate]({chart_name})", ""]
    pass_k = [(c, c, "pct") for c in summary.columns if c.startswith("pass^")]
    for lane in _ordered(summary["lane"], LANES):
        rows = summary[summary["lane"] == lane]
        lines += [f"## Lane {lane}", "", _LANE_NOTES.get(lane, f"Lane {lane}."), ""]
        lines += _table(rows, [("model", "model", "str"), *_LANE_TABLE, *pass_k])
    if memory is not None and not memory.empty:
        lines += _memory_section(memory, memory_calls)
    lines += ["## Pass rate per tool", "", "Pass rate (answers) per model.", ""]
    lines += _pivot(by_tool, "target_name", _pass_cell)
    lines += ["## Pass rate per action class", "", "Pass rate (answers) per model.", ""]
    lines += _pivot(by_action, "action_class", _pass_cell)
    lines += ["## Failure reasons", "", "Failed answers (share of the model's answers in the lane).", ""]
    lines += _pivot(failures, "failure", lambda r: f"{r['count']} ({_pct(r['share'])})", "count")
    lines += ["## Speed", "", *_speed(timings)]
    return "\n".join(lines)


_MEMORY_TABLE = [
    ("model", "model", "str"),
    ("lane", "lane", "str"),
    ("cases", "cases", "int"),
    ("pass", "pass_rate", "pct"),
    ("pass with memory", "memory_pass_rate", "pct"),
    ("oracle", "oracle_rate", "pct"),
    ("candidates per case", "candidates_per_case", "num"),
    ("fixed", "fixed", "int"),
    ("broke", "broke", "int"),
]


def _memory_section(memory: pd.DataFrame, calls: int | None) -> list[str]:
    held = f" The memory held {calls} remembered calls of the training split." if calls is not None else ""
    lines = [
        "## Action memory",
        "",
        "Each answer's call with and without the action memory (selector `memory`: an aim the memory "
        "does not hold for the repository and tool is replaced by the best-scoring remembered call "
        "when its score reaches the threshold). Oracle: the answer's call or a remembered candidate "
        "passes. Fixed / broke: answers that pass only with memory / only without it. Promotion is "
        f"decided without memory.{held}",
        "",
    ]
    return lines + _table(memory, _MEMORY_TABLE)


def _validated(results: pd.DataFrame) -> pd.DataFrame:
    missing = [column for column in EVAL_COLUMNS if column not in results.columns]
    if missing:
        raise ValueError(f"results lack columns {missing}; expected eval_schema.EVAL_RESULT_SCHEMA's columns")
    nulls = {column: int(results[column].isna().sum()) for column in BOOL_COLUMNS}
    if any(nulls.values()):
        bad = {column: count for column, count in nulls.items() if count}
        raise ValueError(f"boolean result columns must have no nulls, got null counts {bad}")
    return results.astype(dict.fromkeys(BOOL_COLUMNS, bool))


def _rank_key(column: pd.Series) -> pd.Series:
    """Known models and lanes in their declared order, anything else after them by name."""
    order = {"model": MODELS, "lane": LANES}.get(str(column.name))
    if order is None:
        return column
    return column.map(lambda value: f"{order.index(value) if value in order else len(order):02d}{value}")


def _sorted(frame: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    return frame.sort_values(["model", "lane", *keys], key=_rank_key).reset_index(drop=True)


def _ordered(values: pd.Series, known: Sequence[str]) -> list[str]:
    present = set(values)
    return [v for v in known if v in present] + sorted(present - set(known))


def _pct(value: float | None) -> str:
    return "—" if value is None or math.isnan(value) else f"{value * 100:.1f}%"


def _pass_cell(row: pd.Series) -> str:
    return f"{_pct(row['pass_rate'])} ({row['answers']})"


def _cell(value: Any, kind: str) -> str:
    text = _pct(value) if kind == "pct" else f"{value:.1f}" if kind == "num" else str(value)
    return text.replace("|", "\\|")


def _table(rows: pd.DataFrame, columns: Sequence[tuple[str, str, str]]) -> list[str]:
    lines = ["| " + " | ".join(header for header, _, _ in columns) + " |"]
    lines.append("|" + "|".join(" --- " for _ in columns) + "|")
    for _, row in rows.iterrows():
        lines.append("| " + " | ".join(_cell(row[column], kind) for _, column, kind in columns) + " |")
    return [*lines, ""]


def _pivot(
    frame: pd.DataFrame, key: str, cell: Callable[[pd.Series], str], weight: str = "answers"
) -> list[str]:
    """One row per (lane, key), heaviest first, one column per model; an empty frame reads "None."."""
    if frame.empty:
        return ["None.", ""]
    models = _ordered(frame["model"], MODELS)
    cells = {(r["lane"], r[key], r["model"]): cell(r) for _, r in frame.iterrows()}
    lines = ["| lane | " + key.replace("_", " ") + " | " + " | ".join(models) + " |"]
    lines.append("|" + "|".join(" --- " for _ in range(len(models) + 2)) + "|")
    for lane in _ordered(frame["lane"], LANES):
        totals = frame[frame["lane"] == lane].groupby(key)[weight].sum()
        for value in sorted(totals.index, key=lambda v: (-totals[v], str(v))):
            row = [lane, value, *(cells.get((lane, value, model), "—") for model in models)]
            lines.append("| " + " | ".join(_cell(text, "str") for text in row) + " |")
    return [*lines, ""]


def _speed(timings: Mapping[str, Mapping[str, float]]) -> list[str]:
    if not timings:
        return ["No timings recorded.", ""]
    lines = ["| model | cases | seconds | seconds per case | generated tokens/s | prompt tokens |"]
    lines.append("| --- | --- | --- | --- | --- | --- |")
    for model in _ordered(pd.Series(list(timings)), MODELS):
        t = timings[model]
        missing = {"seconds", "cases", "generated_tokens", "prompt_tokens"} - set(t)
        if missing:
            raise ValueError(f"timings[{model!r}] lacks {sorted(missing)}")
        per_case = f"{t['seconds'] / t['cases']:.2f}" if t["cases"] else "—"
        rate = f"{t['generated_tokens'] / t['seconds']:.1f}" if t["seconds"] else "—"
        counts = f"{int(t['cases'])} | {t['seconds']:.1f} | {per_case} | {rate} | {int(t['prompt_tokens'])}"
        lines.append(f"| {model} | {counts} |")
    return [*lines, "", *_decoding(timings)]


def _decoding(timings: Mapping[str, Mapping[str, float]]) -> list[str]:
    """How the answers were decoded: constrained runs' timings carry the grammar's figures."""
    constrained = {model: t for model, t in timings.items() if "constraint_seconds" in t}
    if not constrained:
        return ["Decoding: free (the models' own tokens).", ""]
    models = _ordered(pd.Series(list(constrained)), MODELS)
    grammar = ", ".join(
        f"{m} {constrained[m]['constraint_seconds'] / max(constrained[m]['cases'], 1) * 1e3:.1f} ms"
        for m in models
    )
    closed = ", ".join(
        f"{m} {int(constrained[m].get('closed_by_budget', 0))} of {int(constrained[m]['cases'])}"
        for m in models
    )
    return [
        "Decoding: constrained (every answer held to one call of an offered tool, in the model's "
        f"convention). Grammar time per case: {grammar}. Calls the token budget closed: {closed}.",
        "",
    ]


def _grouped_bars(ax: Axes, frame: pd.DataFrame, group: str, title: str) -> None:
    """Bars of pass_rate per `group` value, one colour per model, side by side."""
    from matplotlib.ticker import PercentFormatter

    groups = _ordered(frame[group], LANES if group == "lane" else ())
    models = _ordered(frame["model"], MODELS)
    width = 0.8 / max(len(models), 1)
    for i, model in enumerate(models):
        rates = frame[frame["model"] == model].set_index(group)["pass_rate"]
        xs = [g + (i - (len(models) - 1) / 2) * width for g in range(len(groups))]
        heights = [float(rates.get(name, math.nan)) for name in groups]  # NaN: no bar, no label
        bars = ax.bar(xs, heights, width, label=model, color=_COLORS.get(model, "#2ca02c"))
        labels = ["" if math.isnan(h) else f"{h * 100:.0f}%" for h in heights]
        ax.bar_label(bars, labels=labels, fontsize=7, padding=1)
    tilt = group != "lane"  # tool names are long: slant them
    ax.set_xticks(range(len(groups)), groups, rotation=30 if tilt else 0, ha="right" if tilt else "center")
    ax.set_ylim(0, 1.1)  # headroom for the labels of full bars
    ax.set_yticks([i / 5 for i in range(6)])
    ax.yaxis.set_major_formatter(PercentFormatter(1.0))
    ax.set_title(title)
    if models:
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
    else:
        ax.text(0.5, 0.5, "no cases", ha="center", va="center", transform=ax.transAxes)
