"""A training window is written only when it does not leak, and duplicates across days are removed first."""

from pathlib import Path

import pandas as pd
import pytest

from trajectory_pipeline.dataset.mlx_data import read_manifest
from trajectory_pipeline.dataset.training_data import LeakageError, dedupe_across_days, write_window
from trajectory_pipeline.schema import canonical_json


def row(decision: str, session: str, split: str, prompt: str, target: str = "t") -> dict[str, object]:
    record = {
        "messages": [
            {"role": "user", "content": prompt},
            {"role": "assistant", "content": f"<tool_call>{target}</tool_call>"},
        ]
    }
    return {
        "decision_id": decision,
        "session_id": session,
        "split": split,
        "target_name": "run_shell",
        "record": canonical_json(record),
        "prompt_hash": f"p-{prompt}",
        "target_hash": f"t-{target}",
    }


def window(*rows: dict[str, object]) -> pd.DataFrame:
    return pd.DataFrame(list(rows))


BASE = [
    row("d01", "s1", "train", "fix a"),
    row("d02", "s1", "train", "fix b"),
    row("d03", "s2", "valid", "fix c"),
    row("d04", "s3", "test", "fix d"),
]


def test_a_duplicate_seen_on_two_days_is_kept_once_on_the_held_out_side(tmp_path: Path) -> None:
    # Day 2 repeats day 1's (prompt, target) in another session, landing in test: a leak unless removed.
    # The train copy goes, so the eval can still ask about it and the adapter never saw it.
    rows = window(*BASE, row("d09", "s9", "test", "fix a"))
    kept, dropped = dedupe_across_days(rows)
    assert dropped == 1 and "d09" in set(kept["decision_id"]) and "d01" not in set(kept["decision_id"])
    assert list(kept["decision_id"]) == sorted(kept["decision_id"])
    manifest = write_window(rows, tmp_path / "data", batch_size=1, partitions=["2026-11-21", "2026-11-22"])
    assert manifest.counts == {"train": 1, "valid": 1, "test": 2}
    assert read_manifest(tmp_path / "data").config["dropped_duplicates_across_days"] == 1


def test_a_held_out_prompt_is_never_trained_on_whatever_its_target(tmp_path: Path) -> None:
    # Another session reached the same context ("fix a", no call yet) and answered it otherwise: the
    # training copy goes, and so does a validation copy of a test prompt; test keeps both answers.
    rows = window(
        *BASE,
        row("d09", "s9", "test", "fix a", "other"),
        row("d10", "s8", "test", "fix c", "other"),
        row("d11", "s7", "test", "fix a", "third"),
        row("d12", "s2", "valid", "fix z"),
    )
    kept, dropped = dedupe_across_days(rows)
    assert set(kept["decision_id"]) == {"d02", "d04", "d09", "d10", "d11", "d12"} and dropped == 2
    manifest = write_window(rows, tmp_path / "data", batch_size=1)
    assert manifest.counts == {"train": 1, "valid": 1, "test": 4}


def test_a_leaking_window_is_refused_and_names_the_session(tmp_path: Path) -> None:
    rows = window(*BASE, row("d05", "s1", "test", "fix e"))  # session s1 in train and test
    with pytest.raises(LeakageError, match="s1"):
        write_window(rows, tmp_path / "data", batch_size=1)
    assert not (tmp_path / "data").exists()


def test_holdout_sessions_in_training_are_refused(tmp_path: Path) -> None:
    with pytest.raises(LeakageError):
        write_window(window(*BASE), tmp_path / "data", batch_size=1, holdout=frozenset({"s2"}))


def test_failures_are_repeated_as_a_labelled_train_slice(tmp_path: Path) -> None:
    manifest = write_window(
        window(*BASE), tmp_path / "data", batch_size=1, failures=["d02", "gone"], failure_repeats=3
    )
    assert manifest.counts["train"] == 2 + 3
    assert len((tmp_path / "data" / "train.jsonl").read_text().splitlines()) == 5
    recorded = read_manifest(tmp_path / "data").config["failure_slice"]
    assert recorded == {"decision_ids": ["d02"], "repeats": 3, "rows": 3}


@pytest.mark.parametrize("split_row", ["d03", "d04"])
def test_a_failure_slice_never_repeats_valid_or_test_rows(tmp_path: Path, split_row: str) -> None:
    with pytest.raises(ValueError, match=f"only train rows.*{split_row}"):
        write_window(window(*BASE), tmp_path / "data", batch_size=1, failures=[split_row])
