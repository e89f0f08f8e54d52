"""replay_eval: the week's adapter, the base model and the promoted adapter, replayed at real decisions.

For a weekly partition it reads that week's `lora_adapter` manifest and the same window of
`rendered_splits` the adapter trained on, asks each model for the next tool call at every
evaluation case (holdout, seen-exact, seen-variant), scores the answers, writes the report
beside the adapter (`<artifacts>/<adapter_id>/eval/report.md` and `pass_rate.png`), and
promotes the adapter in the registry or rejects it with the reason. Its Parquet output is one
row per scored answer and selector: each answer as the model gave it (`none`, what promotion is
decided on) and through the week's `action_memory` (`memory`), side by side.

Adapters kept in an object store (a URL in the manifest or the registry) are replayed from the local
cache's copies (`TRAJECTORY_CACHE_DIR`), and the report and chart are uploaded beside the adapter.

    trajectory-pipeline materialize --select replay_eval --partition 2026-11-22
"""

import base64
from pathlib import Path
from typing import Any

import dagster as dg
import pandas as pd

from assets import OWNERS
from assets.metadata import as_table, frame_md
from assets.partitions import rendered_window, weekly_partitions
from resources.adapter_registry import AdapterRegistryResource
from resources.core_config import derive, to_core
from resources.privacy import private_failure, private_metadata
from trajectory_pipeline.evaluation.evaluate import Contender, EvalOutcome, record_decision, run_replay_eval
from trajectory_pipeline.evaluation.promotion import PROMOTED_STATUS, PromotionConfig
from trajectory_pipeline.evaluation.replay import ReplayConfig
from trajectory_pipeline.evaluation.schema import EVAL_RESULT_SCHEMA, HOLDOUT
from trajectory_pipeline.parquet_io import make_private_tree
from trajectory_pipeline.storage import objects

_ReplayKnobs: Any = derive("ReplayKnobs", ReplayConfig, PromotionConfig, exclude={"lane"})


class ReplayEvalConfig(_ReplayKnobs):
    """Lane sizes, generation and the promotion rule."""

    def replay(self) -> ReplayConfig:
        return to_core(ReplayConfig, self)

    def promotion(self) -> PromotionConfig:
        return to_core(PromotionConfig, self)


@dg.asset(
    partitions_def=weekly_partitions,
    group_name="training",
    compute_kind="mlx",
    pool="mlx_training",
    ins={
        "lora_adapter": dg.AssetIn(),
        "rendered_splits": rendered_window(),
        "action_memory": dg.AssetIn(),
    },
    check_specs=[
        dg.AssetCheckSpec(
            "adapter_promoted",
            asset="replay_eval",
            description="The new adapter beat the base model and the promoted adapter on held-out "
            "decisions (a warning when it was rejected; the reason is in the result).",
        )
    ],
    owners=OWNERS,
    tags={"stage": "evaluation"},
)
def replay_eval(
    context: dg.AssetExecutionContext,
    config: ReplayEvalConfig,
    adapter_registry: AdapterRegistryResource,
    lora_adapter: pd.DataFrame,
    rendered_splits: dict[str, pd.DataFrame],
    action_memory: pd.DataFrame,
) -> Any:
    """Scored answers of the base model, the new adapter and the promoted one at real decisions."""
    replay, promotion = config.replay(), config.promotion()
    manifest = lora_adapter.iloc[0]
    registry = adapter_registry.registry()
    base_model = Path(manifest["base_model"])  # a local folder, or the cache's copy of a model's URL
    base_url = objects.remote_of(base_model)
    local_base = objects.fetch_tree(base_url) if base_url else base_model
    # Adapters by path or URL: replayed from local folders (the cache's copies of URLs).
    candidate_location = str(manifest["adapter_path"])
    candidate = Contender(manifest["adapter_id"], objects.local_tree(candidate_location))
    current = registry.promoted(str(base_model))
    promoted = Contender(current.adapter_id, objects.local_tree(current.artifact_path)) if current else None
    days = sorted(rendered_splits)
    trained_on = (manifest["data_window_start"], manifest["data_window_end"])
    if days and (days[0], days[-1]) != trained_on:
        context.log.warning(
            f"the window now holds days {days[0]} .. {days[-1]}, the adapter trained on "
            f"{trained_on[0]} .. {trained_on[1]}: some cases may not be rows it trained or was held out on"
        )
    rows = [rendered_splits[day] for day in days]
    window = pd.concat(rows, ignore_index=True) if rows else pd.DataFrame()
    try:
        outcome = run_replay_eval(
            window,
            local_base,
            candidate,
            promoted,
            replay,
            promotion,
            candidate.path.parent / "eval",
            memory=action_memory,
        )
    except ValueError as err:
        raise private_failure(f"replay_eval for week {context.partition_key}: {err}") from None
    finally:
        # The report and chart (matplotlib writes with the umask's modes) join the private artifacts.
        make_private_tree(candidate.path.parent)
    report_location = str(outcome.report)
    if objects.is_remote(candidate_location):  # the report and chart join the adapter in the store
        eval_url = objects.join(candidate_location.rsplit("/", 1)[0], "eval")
        objects.publish_tree(eval_url, last=(outcome.report.name,))
        report_location = objects.join(eval_url, outcome.report.name)

    decision = outcome.decision
    try:
        applied = record_decision(registry, candidate.adapter_id, outcome)
    except ValueError as err:
        raise private_failure(f"replay_eval for week {context.partition_key}: {err}") from None
    context.log.info(f"adapter {candidate.adapter_id} {applied}: {decision.reason}")
    metadata = private_metadata(
        {**_metadata(outcome), "report_path": dg.MetadataValue.path(report_location), "registry": applied}
    )
    yield dg.Output(as_table(outcome.results, EVAL_RESULT_SCHEMA), metadata=metadata)
    yield dg.AssetCheckResult(
        check_name="adapter_promoted",
        passed=decision.status == PROMOTED_STATUS,
        severity=dg.AssetCheckSeverity.WARN,
        description=decision.reason,
        metadata={
            "candidate_pass_rate": decision.candidate_pass_rate,
            "base_pass_rate": decision.base_pass_rate,
            "promoted_pass_rate": decision.promoted_pass_rate,
            "holdout_cases": decision.cases,
        },
    )


def _metadata(outcome: EvalOutcome) -> dict[str, Any]:
    decision = outcome.decision
    holdout = outcome.summary[outcome.summary["lane"] == HOLDOUT]
    headline = {
        f"holdout_pass_rate_{m}": float(r)
        for m, r in zip(holdout["model"], holdout["pass_rate"], strict=True)
    }
    columns = [
        "model",
        "lane",
        "cases",
        "pass_rate",
        "decisive_pass_rate",
        "invalid_rate",
        "exact_match_rate",
    ]
    chart = base64.b64encode(outcome.chart.read_bytes()).decode()
    memory: dict[str, Any] = {}
    if outcome.memory is not None and not outcome.memory.empty:
        rows = outcome.memory[outcome.memory["lane"] == HOLDOUT]
        memory = {
            f"holdout_memory_pass_rate_{m}": float(r)
            for m, r in zip(rows["model"], rows["memory_pass_rate"], strict=True)
        }
        memory["memory"] = frame_md(outcome.memory.round(3))
    return {
        "decision": decision.status,
        "reason": decision.reason,
        **headline,
        **memory,
        "cases": outcome.cases,
        # "tool_name" when the window was rendered with target_mode tool_choice (the report says so)
        "scored_on": outcome.scored_on,
        "summary": frame_md(outcome.summary[columns].round(3)),
        # The report's chart link is relative to its folder; in the UI the image travels inline.
        "report": dg.MetadataValue.md(
            outcome.report.read_text().replace(
                f"]({outcome.chart.name})", f"](data:image/png;base64,{chart})"
            )
        ),
        "chart": dg.MetadataValue.md(f"![pass rate per model and lane](data:image/png;base64,{chart})"),
        "seconds_per_model": dg.MetadataValue.json(
            {model: round(t["seconds"], 2) for model, t in outcome.timings.items()}
        ),
        "generated_tokens_per_second": dg.MetadataValue.json(
            {
                model: round(t["generated_tokens"] / t["seconds"], 1) if t["seconds"] else None
                for model, t in outcome.timings.items()
            }
        ),
    }
