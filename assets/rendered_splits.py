"""rendered_splits: each kept decision point rendered for training and assigned to train / valid / test.

Whole sessions go to one split (a stable hash of session id and seed); rows are
filtered, deduplicated and checked for leakage before anything trains on them.
With `mlx_data_dir` set, the run also writes the mlx-lm data directory of its
days (`trajectory_pipeline.dataset.training_data.write_window`, the function the trainer
calls for its window).

    trajectory-pipeline materialize --select rendered_splits --partition 2026-11-20
"""

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dagster as dg
import pandas as pd
from pydantic import Field

from assets import OWNERS
from assets.day_checks import Verdict, Withheld, day_check, report, withheld_days
from assets.metadata import as_table, counter_md, single_or_dict
from assets.partitions import daily_backfill_policy, daily_partitions
from resources.core_config import derive, to_core
from resources.privacy import private_failure, private_metadata
from trajectory_pipeline.dataset.mlx_data import DatasetManifest, SplitTooSmallError
from trajectory_pipeline.dataset.render import RenderConfig
from trajectory_pipeline.dataset.splits import (
    SelectConfig,
    check_leakage,
    load_holdout,
    select,
)
from trajectory_pipeline.dataset.training_data import (
    RENDERED_SCHEMA,
    LeakageError,
    load_tokenizer,
    write_window,
)
from trajectory_pipeline.storage import objects

_SplitKnobs: Any = derive("SplitKnobs", RenderConfig, SelectConfig)


class RenderedSplitsConfig(_SplitKnobs):
    """Format, split and filters of the training rows."""

    holdout_path: str = Field(
        default="", description="File of session ids or prompt hashes kept out of train and valid."
    )
    tokenizer_path: str = Field(
        default="", description="Model folder whose tokenizer measures lengths in tokens."
    )
    mlx_data_dir: str = Field(
        default="",
        description="Also write the mlx-lm data directory (train/valid/test.jsonl, manifest.json) "
        "of the run's days here: a folder, or an object-store URL (s3://bucket/prefix).",
    )
    batch_size: int = Field(
        default=4, gt=0, description="The training batch size the data directory must fit."
    )
    pad_small_splits: bool = Field(
        default=False, description="Fill a valid/test split smaller than the batch by repeating its rows."
    )

    def render(self) -> RenderConfig:
        return to_core(RenderConfig, self)

    def select(self) -> SelectConfig:
        return to_core(SelectConfig, self)


NAME = "rendered_splits"
# What to do about a day a gate left out, by check (assets/day_checks.py GATES).
REMEDIES = {
    "targets_have_required_arguments": "fix what dropped the arguments (the source's parser, or "
    "transcripts published with their arguments redacted) or, to accept the day as it is, raise "
    "decision_points' max_incomplete_share in the run config; then materialize decision_points and "
    "rendered_splits for the day again",
    "no_repeated_inspection_after_guard": "read those attempts (the tier rules are in "
    "trajectory_pipeline/mining/attempts.py); then materialize mined_trajectories, decision_points "
    "and rendered_splits for the day again",
}


@dg.multi_asset(
    outs={
        NAME: dg.AssetOut(
            description="Decision points rendered in mlx-lm's format, filtered, deduplicated and split "
            "by session.",
            owners=OWNERS,
            tags={"stage": "rendering"},
            io_manager_key="io_manager",
            # A range run with a day left out by a gate stores the other days itself (see below).
            is_required=False,
        )
    },
    partitions_def=daily_partitions,
    backfill_policy=daily_backfill_policy(),
    group_name="ingest",
    compute_kind="pandas",
    # Each day gets its own check results (assets/day_checks.py); the check outputs stay unset.
    can_subset=True,
    check_specs=[
        day_check(
            "no_leakage",
            NAME,
            "No session in two splits, no train/test duplicate, no holdout item in training.",
        ),
        day_check("rows_kept", NAME, "Filters did not empty a day that had data (a warning)."),
    ],
)
def rendered_splits(
    context: dg.AssetExecutionContext, config: RenderedSplitsConfig, decision_points: dict[str, pd.DataFrame]
) -> Iterator[dg.Output[Any] | dg.AssetMaterialization | dg.AssetCheckEvaluation]:
    """Decision points rendered in mlx-lm's format, filtered, deduplicated and split by session.

    A day whose decision points failed a gating check is left out, and the run fails at the end
    naming it; the other days are rendered and stored (assets/day_checks.py)."""
    try:
        holdout = load_holdout(Path(config.holdout_path) if config.holdout_path else None)
        render, choose = config.render(), config.select()
        tokenizer = load_tokenizer(config.tokenizer_path) if config.tokenizer_path else None
    except (ValueError, OSError) as err:
        raise private_failure(f"rendered_splits config: {err}") from None
    withheld = withheld_days(context.instance, context.partition_keys)
    days = [key for key in context.partition_keys if key not in withheld]
    rendered, counts, day_metadata = {}, {}, {}
    for key in days:
        rendered[key], counts[key] = select(decision_points[key], render, choose, holdout, tokenizer)
        day_metadata[key] = private_metadata(split_metadata(rendered[key], counts[key]))
    tables = {key: as_table(frame, RENDERED_SCHEMA) for key, frame in rendered.items()}
    manifest = _write_data_dir(config, rendered, holdout, days) if days else None
    output_metadata = (
        {} if manifest is None else private_metadata(manifest_metadata(manifest, config.mlx_data_dir))
    )
    if not withheld:
        for key in days:
            context.add_asset_metadata(day_metadata[key], asset_key=NAME, partition_key=key)
        yield dg.Output(
            single_or_dict(tables, context.partition_keys), output_name=NAME, metadata=output_metadata
        )
    else:
        # Dagster would record every day of the range for an output: store the good days one by one.
        manager = context.resources.io_manager
        for key in days:
            stored = manager.store_partition(dg.AssetKey(NAME), key, tables[key])
            yield dg.AssetMaterialization(
                asset_key=NAME, partition=key, metadata={**output_metadata, **day_metadata[key], **stored}
            )
    # Each day on its own, so a range run and day-by-day runs judge alike; duplicates that only
    # show across days are removed when a training window is written (training_data.write_window).
    leakage = {key: check_leakage(rendered[key], holdout) for key in days}
    yield from report(
        context,
        NAME,
        "no_leakage",
        (
            Verdict(
                key,
                leak.passed,
                {
                    "sessions_in_several_splits": len(leak.sessions_in_several_splits),
                    "shared_prompt_target": len(leak.shared_prompt_target),
                    "holdout_in_train_or_valid": len(leak.holdout_in_train_or_valid),
                },
                f"{key}: {leak.message()}" if not leak.passed else "no leakage",
            )
            for key, leak in leakage.items()
        ),
    )
    yield from report(
        context,
        NAME,
        "rows_kept",
        (
            Verdict(
                key,
                not (counts[key]["input"] and not counts[key]["kept"]),
                {"input": counts[key]["input"], "kept": counts[key]["kept"]},
                warn=True,
            )
            for key in days
        ),
    )
    if withheld:
        raise private_failure(
            withheld_message(withheld, len(days)), metadata={"withheld_days": sorted(withheld)}
        )


def withheld_message(withheld: dict[str, list[Withheld]], rendered: int) -> str:
    """What the run's failure says: each day left out, the check and its finding, and what to do."""
    lines = [
        f"rendered_splits left out {len(withheld)} day(s) whose checks failed; the other {rendered} "
        "day(s) of the run were rendered and stored."
    ]
    for day in sorted(withheld):
        for found in withheld[day]:
            check = found.check.rsplit(" ", 1)[-1]
            lines.append(f"- {day}, {found.check}: {found.description or 'failed'}")
            remedy = REMEDIES.get(check, "fix what the check found, then materialize the day again")
            lines.append(f"  To render {day}: {remedy}.")
    return "\n".join(lines)


def _write_data_dir(
    config: RenderedSplitsConfig,
    rendered: dict[str, pd.DataFrame],
    holdout: frozenset[str],
    partitions: list[str],
) -> DatasetManifest | None:
    """The mlx-lm data directory of the run's days, when the config names one. For an object store it
    is written in the local cache's copy of the prefix, then uploaded (manifest.json last)."""
    if not config.mlx_data_dir:
        return None
    rows = pd.concat(rendered.values(), ignore_index=True)
    remote = objects.is_remote(config.mlx_data_dir)
    folder = objects.mirror_path(config.mlx_data_dir) if remote else objects.local_path(config.mlx_data_dir)
    try:
        manifest = write_window(
            rows,
            folder,
            batch_size=config.batch_size,
            pad_small_splits=config.pad_small_splits,
            holdout=holdout,
            config=config.model_dump(),
            partitions=partitions,
        )
    except (LeakageError, SplitTooSmallError) as err:
        raise private_failure(f"mlx-lm data directory not written: {err}") from None
    if remote:
        objects.publish_tree(config.mlx_data_dir)
    return manifest


def manifest_metadata(manifest: DatasetManifest, location: str = "") -> dict[str, Any]:
    shown = location if objects.is_remote(location) else str(manifest.path)
    return {
        "mlx_data_dir": dg.MetadataValue.path(shown),
        "dataset_hash": manifest.dataset_hash,
        "examples_by_split": dg.MetadataValue.json(manifest.counts),
        "file_sha256": dg.MetadataValue.json(manifest.sha256),
        "padded": dg.MetadataValue.json(manifest.padded),
    }


def split_metadata(rows: pd.DataFrame, counts: dict[str, int]) -> dict[str, Any]:
    lengths = rows["chars"].quantile([0.5, 0.9, 0.99]).round() if len(rows) else pd.Series(dtype=float)
    return {
        "rows": len(rows),
        "rows_by_split": counter_md(Counter(rows["split"]), ("split", "rows")),
        "rows_by_split_and_tool": counter_md(
            Counter(zip(rows["split"], rows["target_name"], strict=True)), ("split", "tool", "rows")
        ),
        "rows_by_action_class": counter_md(Counter(rows["action_class"]), ("action class", "rows")),
        "filters": counter_md(Counter(counts), ("filter", "rows")),
        "length_chars_p50_p90_p99_max": dg.MetadataValue.json(
            [*(int(v) for v in lengths), int(rows["chars"].max()) if len(rows) else 0]
        ),
    }
