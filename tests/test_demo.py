"""`make demo` end to end: a fresh folder, the real CLI, a real Dagster instance, Parquet read back.

The demo runs once per session (the `demo_run` fixture in conftest.py); tests/test_ui_browser.py
opens the same instance in the Dagster UI.

    .venv/bin/python -m pytest tests/test_demo.py
"""

import hashlib
import json
from pathlib import Path

import dagster as dg
import pandas as pd
import pytest

from tests.conftest import DemoRun
from trajectory_pipeline.dataset.render import prompt_and_target
from trajectory_pipeline.sample.generic import MANIFESTS


@pytest.mark.slow
def test_demo_materializes_every_sample_day_through_the_instance(
    demo_run: DemoRun, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DAGSTER_HOME", str(demo_run.home))  # dagster.yaml's storage reads it
    out, root = demo_run.result, demo_run.root
    assert out.returncode == 0, out.stderr[-3000:]
    assert "Generated the sample corpus" in out.stdout
    total = next(line for line in out.stdout.splitlines() if line.startswith("total"))
    partitions = sorted((root / "warehouse" / "raw_sessions").glob("*.parquet"))
    assert [p.stem for p in partitions][:1] == ["2026-11-09"] and len(partitions) == 14
    events = pd.concat(pd.read_parquet(p) for p in partitions)
    assert total.split()[1:3] == [str(events["session_id"].nunique()), str(len(events))]
    with dg.DagsterInstance.from_config(str(demo_run.home)) as instance:
        runs = instance.get_runs()
        assert len(runs) == 2 and all(run.is_success for run in runs)  # the ingest range, then training
        assert "daily_ingest_job" in {run.job_name for run in runs}
        for asset in ("raw_sessions", "rendered_splits", "lora_adapter", "replay_eval"):
            assert instance.get_latest_materialization_event(dg.AssetKey(asset)) is not None
    assert "Trained lora_adapter and ran replay_eval for the week of 2026-11-22" in out.stdout
    # The closing table: pass rates of base and adapter per lane, then the promotion decision.
    table = [line.split() for line in out.stdout.splitlines() if line.startswith(("holdout ", "seen-"))]
    assert {(row[0], row[1]) for row in table} >= {("holdout", "base"), ("holdout", "candidate")}
    assert any(line.startswith("Promotion: ") for line in out.stdout.splitlines())
    promoted = any(line.startswith("Promotion: promoted") for line in out.stdout.splitlines())
    fused = "Fused model: " if promoted else "No new model: "
    assert any(line.startswith(fused) for line in out.stdout.splitlines())
    assert (root / "tiny-model" / "pretraining.json").exists()
    assert (root / "mlx" / "sample-window" / "manifest.json").exists()
    assert len(list((root / "artifacts" / "adapters").glob("*/adapter/adapters.safetensors"))) == 1


def _keys(records: list[str]) -> tuple[set[str], set[str]]:
    """sha256 of each record's prompt and of its target, as rendered_splits hashes them."""
    prompts, targets = set(), set()
    for line in records:
        prompt, target = prompt_and_target(json.loads(line))
        prompts.add(hashlib.sha256(prompt.encode()).hexdigest())
        targets.add(hashlib.sha256(target.encode()).hexdigest())
    return prompts, targets


def _reads_a_manifest(record: str) -> bool:
    _, target = prompt_and_target(json.loads(record))
    call = json.loads(target)
    return call["name"] == "read_file" and call["arguments"].get("file_path") in MANIFESTS


def _rendered(warehouse: Path) -> pd.DataFrame:
    return pd.concat(
        pd.read_parquet(day) for day in sorted((warehouse / "rendered_splits").glob("*.parquet"))
    )


def _lines(folder: Path, splits: tuple[str, ...] = ("train", "valid")) -> list[str]:
    return [line for split in splits for line in (folder / f"{split}.jsonl").read_text().splitlines() if line]


@pytest.mark.slow
def test_no_held_out_session_prompt_or_target_reaches_any_training(demo_run: DemoRun) -> None:
    """The base learned from other people's sessions alone, the adapter from the window's training
    split: no held-out session, prompt or target of the demo window is in either's training data."""
    root = demo_run.root
    assert demo_run.result.returncode == 0, demo_run.result.stderr[-3000:]
    window = pd.concat(
        pd.read_parquet(p) for p in sorted((root / "warehouse" / "rendered_splits").glob("*.parquet"))
    )
    held = window[window["split"] == "test"]
    assert len(held) > 0
    base_rows = pd.concat(
        pd.read_parquet(p)
        for p in sorted((root / "base" / "warehouse" / "rendered_splits").glob("*.parquet"))
    )
    assert not set(held["session_id"]) & set(base_rows["session_id"])
    base_prompts, base_targets = _keys(_lines(root / "base" / "mlx"))
    assert not set(held["prompt_hash"]) & base_prompts
    # a call of the demo user's may be anyone's only when it reads a language's manifest (the one
    # name the two corpora share, tests/sample/test_profiles.py)
    shared = held[held["target_hash"].isin(base_targets)]
    assert all(_reads_a_manifest(record) for record in shared["record"]), shared["record"].tolist()
    (data,) = (root / "artifacts" / "adapters").glob("*/data")
    adapter_prompts, _ = _keys(_lines(data))
    assert not set(held["prompt_hash"]) & adapter_prompts
    trained = _lines(data, ("train",))
    assert not {row for row in held["record"]} & set(trained)
