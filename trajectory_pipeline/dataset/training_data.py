"""From rendered rows to the mlx-lm data directory a training run reads.

`rendered_splits` is daily; a training run reads a window of days. `write_window`
takes the rendered rows of every day in the window, removes duplicates that
only show across days, refuses a window that leaks, and writes train.jsonl,
valid.jsonl, test.jsonl and manifest.json (`mlx_data.write_mlx_dataset`). The
demo calls it for the sample window; the trainer asset calls it for its window.

    days = sorted(Path("data/warehouse/rendered_splits").glob("*.parquet"))
    rows = pd.concat(pd.read_parquet(day) for day in days)
    manifest = write_window(rows, Path("data/mlx/sample"), batch_size=4)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa

from trajectory_pipeline.dataset.mlx_data import DatasetManifest, write_mlx_dataset
from trajectory_pipeline.dataset.splits import LeakageReport, check_leakage

RENDERED_SCHEMA = pa.schema(
    [
        ("decision_id", pa.string()),
        ("session_id", pa.string()),
        ("source", pa.string()),
        ("tier", pa.string()),
        ("quality", pa.float64()),
        ("target_name", pa.string()),
        ("action_class", pa.string()),
        ("family_id", pa.string()),  # workflow family, for the replay eval's seen-variant lane
        ("repo", pa.string()),  # repository, for the replay eval's action memory
        ("decisive", pa.bool_()),
        ("split", pa.string()),
        ("format", pa.string()),
        ("target_mode", pa.string()),  # full, or tool_choice: replay scores the tool name only
        ("record", pa.large_string()),  # canonical JSON of the mlx-lm record
        ("prompt_hash", pa.string()),
        ("target_hash", pa.string()),
        ("chars", pa.int64()),
        ("tokens", pa.int64()),  # null without a tokenizer
        ("history_dropped", pa.int64()),
    ]
)


class LeakageError(ValueError):
    """The window's splits share sessions or examples: training on it would inflate every score."""


def load_tokenizer(path: str) -> Any:
    """The tokenizer of a local model folder (Hugging Face layout), to measure lengths in tokens."""
    try:
        from transformers import AutoTokenizer
    except ImportError as err:  # pragma: no cover - transformers comes with mlx-lm
        raise ValueError("measuring tokens needs transformers: pip install transformers") from err
    folder = Path(path).expanduser()
    if not (folder / "tokenizer.json").exists() and not (folder / "tokenizer_config.json").exists():
        raise ValueError(f"{folder} holds no tokenizer (expected tokenizer.json or tokenizer_config.json)")
    return AutoTokenizer.from_pretrained(str(folder))


# Which copy of a repeated (prompt, target) stays: a held-out one, so an example the eval asks
# about is never also trained on, whatever day each copy came from.
_KEEP_FIRST = {"test": 0, "valid": 1, "train": 2}


def dedupe_across_days(rows: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """Drop rows whose (prompt, target) already occurs in the window, and any training or validation
    row whose prompt a more held-out split holds.

    The daily split keeps a day's repeats together, but a task redone on another day can land in
    another split. Of each repeated pair the most held-out copy stays (test, then valid, then
    train; then the first decision_id), so a train copy of a test example is what goes. A prompt
    is held out whatever its target: two sessions can reach the same context (the same typed
    words and no call yet, or the same compact state) and answer it differently, and a model that
    trained on that context would be replayed on a prompt it has seen.
    """
    rank = rows["split"].map(_KEEP_FIRST).fillna(len(_KEEP_FIRST))
    ordered = rows.assign(_rank=rank).sort_values(["_rank", "decision_id"], kind="stable")
    kept = ordered.drop_duplicates(["prompt_hash", "target_hash"], keep="first")
    most_held = kept.groupby("prompt_hash", sort=False)["_rank"].transform("min")
    kept = kept[kept["_rank"] == most_held]
    kept = kept.sort_values("decision_id", kind="stable").drop(columns="_rank")
    return kept.reset_index(drop=True), len(ordered) - len(kept)


def write_window(
    rows: pd.DataFrame,
    out_dir: Path,
    *,
    batch_size: int,
    pad_small_splits: bool = False,
    holdout: frozenset[str] = frozenset(),
    config: Mapping[str, Any] | None = None,
    partitions: Sequence[str] = (),
    failures: Sequence[str] = (),
    failure_repeats: int = 2,
) -> DatasetManifest:
    """Write the mlx-lm data directory of a window of rendered days; raises LeakageError on a leak.

    `failures` (decision ids a previous adapter got wrong in the seen-exact lane) adds a labelled
    slice to train.jsonl: each such training row again `failure_repeats` times, with ids
    `<decision_id>~failure-<n>`. Only train-split rows qualify; the manifest's config records it.
    """
    kept, duplicates = dedupe_across_days(rows)
    # A session split in two, or a holdout item in training, is a broken split whatever the dedupe
    # would drop, so those are judged on the rows as given; repeats only once they are resolved.
    given, deduped = check_leakage(rows, holdout), check_leakage(kept, holdout)
    report = LeakageReport(
        passed=deduped.passed and given.passed_but_for_repeats,
        sessions_in_several_splits=given.sessions_in_several_splits,
        shared_prompt_target=deduped.shared_prompt_target,
        holdout_in_train_or_valid=given.holdout_in_train_or_valid,
    )
    if not report.passed:
        raise LeakageError(report.message())
    settings = {**(config or {}), "dropped_duplicates_across_days": duplicates}
    if failures:
        slice_rows = failure_slice(kept, failures, failure_repeats)
        settings["failure_slice"] = {
            "decision_ids": sorted(set(slice_rows["decision_id"].str.split("~").str[0])),
            "repeats": failure_repeats,
            "rows": len(slice_rows),
        }
        kept = pd.concat([kept, slice_rows], ignore_index=True)
    return write_mlx_dataset(
        kept,
        out_dir,
        batch_size=batch_size,
        pad_small_splits=pad_small_splits,
        config=settings,
        partitions=partitions,
    )


def failure_slice(rows: pd.DataFrame, failures: Sequence[str], repeats: int) -> pd.DataFrame:
    """The train rows among `failures`, each `repeats` times under a labelled id; never a test row."""
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"failure_repeats must be a positive integer, got {repeats!r}")
    wanted = rows[rows["decision_id"].isin(set(failures))]
    held_out = sorted(wanted.loc[wanted["split"] != "train", "decision_id"])
    if held_out:
        raise ValueError(f"a failure slice may repeat only train rows; these are not: {held_out[:10]}")
    copies = [
        wanted.assign(decision_id=wanted["decision_id"] + f"~failure-{n}") for n in range(1, repeats + 1)
    ]
    return pd.concat(copies, ignore_index=True) if copies else wanted
