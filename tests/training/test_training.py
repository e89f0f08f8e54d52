"""Training is the step users came for, so these tests run mlx-lm for real on the bundled tiny model.

Why real: the adapter is only useful if mlx-lm itself loads it (adapter_config.json as its CLI
writes it), if the best checkpoint really is the one with the lowest validation loss, and if early
stopping and resuming act on real weights. A fake trainer would test none of that. The tiny model
(two Qwen2 blocks, width 64, built offline by `tiny_model`) on a few dozen records trains in
seconds on the CPU, so CI runs all of it; validation uses the whole split (`val_batches=-1`) so
losses do not depend on batch order and can be recomputed exactly.

    .venv/bin/pytest tests/training/test_training.py
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from tests.conftest import TOOL_SPECS, TOOLS
from tests.training.small_data import FAST, short_record, write_data
from trajectory_pipeline.dataset.mlx_data import write_mlx_dataset
from trajectory_pipeline.training.trainer import (
    ModelDirectoryError,
    TrainConfig,
    TrainResult,
    check_model_dir,
    train_adapter,
)


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory, base_model: Path, data_dir: Path) -> Any:
    reports: list[dict[str, Any]] = []
    adapter_dir = tmp_path_factory.mktemp("adapter")
    result = train_adapter(base_model, data_dir, adapter_dir, FAST, on_report=reports.append)
    return result, reports


def _val_loss(base_model: Path, data_dir: Path, adapter_dir: Path | None) -> float:
    """The validation loss of the base model (plus an adapter directory), computed as mlx-lm does."""
    import types

    from mlx_lm import load
    from mlx_lm.tuner.datasets import CacheDataset, load_dataset
    from mlx_lm.tuner.trainer import evaluate

    model, tokenizer = load(str(base_model), adapter_path=None if adapter_dir is None else str(adapter_dir))
    args = types.SimpleNamespace(
        data=str(data_dir), train=True, test=False, mask_prompt=True, hf_dataset=None
    )
    _, valid, _ = load_dataset(args, tokenizer)
    return float(evaluate(model=model, dataset=CacheDataset(valid), batch_size=4, num_batches=-1))


def _only(adapter_dir: Path, weights: str, into: Path) -> Path:
    """A copy of `adapter_dir` whose adapters.safetensors is `weights` (to load best or last with mlx-lm)."""
    into.mkdir()
    shutil.copy(adapter_dir / "adapter_config.json", into / "adapter_config.json")
    shutil.copy(adapter_dir / weights, into / "adapters.safetensors")
    return into


def test_the_adapter_loads_in_mlx_lm_and_changes_the_logits(trained: Any, base_model: Path) -> None:
    import mlx.core as mx
    from mlx_lm import load

    result: TrainResult = trained[0]
    base, tokenizer = load(str(base_model))
    tuned, _ = load(str(base_model), adapter_path=str(result.adapter_dir))
    prompt = tokenizer.apply_chat_template(
        [{"role": "user", "content": "Task 3: fix the failing test."}],
        tools=TOOL_SPECS,
        add_generation_prompt=True,
    )
    tokens = mx.array([prompt])

    difference = mx.abs(tuned(tokens) - base(tokens)).max().item()

    assert difference > 1e-3
    assert result.iterations == FAST.iters
    assert result.tokens > 0 and result.tokens_per_second > 0 and result.peak_memory_gb > 0
    assert not result.stopped_early


def test_adapter_config_has_the_keys_mlx_lm_lora_writes(trained: Any, base_model: Path) -> None:
    from mlx_lm.lora import CONFIG_DEFAULTS

    config = json.loads((trained[0].adapter_dir / "adapter_config.json").read_text())

    assert set(CONFIG_DEFAULTS) <= set(config)
    assert config["model"] == str(base_model)
    assert config["fine_tune_type"] == "lora"
    assert config["num_layers"] == -1
    assert config["lora_parameters"] == {"rank": 4, "scale": 20.0, "dropout": 0.0}
    assert config["mask_prompt"] is True


def test_mlx_lm_fuse_accepts_the_adapter(
    trained: Any, base_model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    from mlx_lm import fuse, load

    out = tmp_path / "fused"
    argv = ["fuse", "--model", str(base_model), "--adapter-path", str(trained[0].adapter_dir)]
    monkeypatch.setattr(sys, "argv", [*argv, "--save-path", str(out)])

    fuse.main()

    load(str(out))


def test_every_report_reaches_on_report_and_the_result(trained: Any) -> None:
    result, reports = trained

    assert reports == result.losses
    train_rows = [row for row in reports if row["kind"] == "train"]
    val_rows = [row for row in reports if row["kind"] == "val"]
    assert [row["iteration"] for row in train_rows] == list(range(2, FAST.iters + 1, 2))
    # mlx-lm evaluates before step 1 and before every 4th step; its evaluation before the last step
    # (iteration 11) is skipped for one of the final weights.
    assert [row["iteration"] for row in val_rows] == [0, 3, 7, 12]
    for row in train_rows:
        assert row["train_loss"] > 0 and row["learning_rate"] == pytest.approx(FAST.learning_rate)
        assert row["tokens_per_second"] > 0 and row["peak_memory_gb"] > 0
    assert all(row["val_loss"] > 0 for row in val_rows)
    assert sum(row["tokens"] for row in train_rows) == result.tokens
    # Training lowers the loss on this small, repetitive corpus.
    assert val_rows[-1]["val_loss"] < val_rows[0]["val_loss"]


def test_the_best_checkpoint_is_the_lowest_validation_loss(
    trained: Any, base_model: Path, data_dir: Path, tmp_path: Path
) -> None:
    result: TrainResult = trained[0]
    val_rows = [row for row in result.losses if row["kind"] == "val"]
    best = min(val_rows, key=lambda row: row["val_loss"])

    assert (result.best_iteration, result.best_val_loss) == (best["iteration"], best["val_loss"])
    assert result.last_val_loss == val_rows[-1]["val_loss"]
    assert result.chosen == "best"
    chosen = (result.adapter_dir / "adapters.safetensors").read_bytes()
    assert chosen == result.best_adapter.read_bytes()
    # The files hold the weights those losses were measured on.
    best_dir = _only(result.adapter_dir, result.best_adapter.name, tmp_path / "best")
    last_dir = _only(result.adapter_dir, result.last_adapter.name, tmp_path / "last")
    assert _val_loss(base_model, data_dir, best_dir) == pytest.approx(result.best_val_loss, rel=1e-4)
    assert _val_loss(base_model, data_dir, last_dir) == pytest.approx(result.last_val_loss, rel=1e-4)
    assert (result.adapter_dir / "0000006_adapters.safetensors").is_file()


def test_early_stopping_stops_after_patience_evaluations_without_improvement(
    base_model: Path, data_dir: Path, tmp_path: Path
) -> None:
    # A learning rate of zero never improves on iteration 0, so evaluations 1 and 2 exhaust patience 2.
    config = dataclasses.replace(FAST, iters=40, learning_rate=0.0, early_stopping_patience=2)

    result = train_adapter(base_model, data_dir, tmp_path, config)

    assert result.stopped_early
    assert result.iterations == 7  # evaluations at iterations 0 (best), 3 and 7
    assert [row["iteration"] for row in result.losses if row["kind"] == "val"] == [0, 3, 7]
    assert (result.best_iteration, result.last_val_loss) == (0, result.best_val_loss)
    assert result.last_adapter.is_file() and result.best_adapter.is_file()
    assert (tmp_path / "adapters.safetensors").is_file()


def test_the_final_evaluation_scores_the_saved_weights_and_stops_nothing(
    base_model: Path, data_dir: Path, tmp_path: Path
) -> None:
    # iters below steps_per_eval: mlx-lm alone would evaluate at 0 and before the last step (2).
    # A learning rate of zero never improves on iteration 0, so the final evaluation exhausts
    # patience 1, after training has ended: it must not stop anything (nor raise).
    config = dataclasses.replace(FAST, iters=3, learning_rate=0.0, early_stopping_patience=1)

    result = train_adapter(base_model, data_dir, tmp_path, config)

    assert [row["iteration"] for row in result.losses if row["kind"] == "val"] == [0, 3]
    assert (result.iterations, result.stopped_early, result.stop_reason) == (3, False, None)
    assert result.last_val_loss == result.best_val_loss and result.best_iteration == 0
    last_dir = _only(tmp_path, result.last_adapter.name, tmp_path / "last")
    assert _val_loss(base_model, data_dir, last_dir) == pytest.approx(result.last_val_loss, rel=1e-4)


def test_a_single_step_is_evaluated_before_and_after(
    base_model: Path, data_dir: Path, tmp_path: Path
) -> None:
    result = train_adapter(base_model, data_dir, tmp_path, dataclasses.replace(FAST, iters=1))

    assert [row["iteration"] for row in result.losses if row["kind"] == "val"] == [0, 1]


def test_validation_leaves_the_training_order_alone(base_model: Path, data_dir: Path, tmp_path: Path) -> None:
    """mlx-lm shuffles validation batches with NumPy's global RNG, the one training's epochs draw
    from: unguarded, a run validated more often trained on another order. Two runs differing only in
    how often they validate must end on the same weights (12 steps: two epochs of 6 batches)."""
    often, rarely = (
        train_adapter(base_model, data_dir, tmp_path / name, dataclasses.replace(FAST, steps_per_eval=every))
        for name, every in (("often", 2), ("rarely", 100))
    )

    assert len([row for row in often.losses if row["kind"] == "val"]) == 7
    assert often.last_adapter.read_bytes() == rarely.last_adapter.read_bytes()


def test_resume_starts_from_the_stored_adapter(
    trained: Any, base_model: Path, data_dir: Path, tmp_path: Path
) -> None:
    previous: TrainResult = trained[0]
    config = dataclasses.replace(FAST, iters=4)

    resumed = train_adapter(
        base_model, data_dir, tmp_path / "resumed", config, resume_from=previous.adapter_dir
    )
    fresh = train_adapter(base_model, data_dir, tmp_path / "fresh", config)

    def first_val(result: TrainResult) -> float:
        return float(next(row["val_loss"] for row in result.losses if row["kind"] == "val"))

    assert first_val(resumed) == pytest.approx(previous.best_val_loss, rel=1e-4)
    assert first_val(resumed) < first_val(fresh)
    config_json = json.loads((tmp_path / "resumed" / "adapter_config.json").read_text())
    assert config_json["resume_adapter_file"] == str(previous.adapter_dir / "adapters.safetensors")


def test_resume_refuses_an_adapter_of_another_shape(
    trained: Any, base_model: Path, data_dir: Path, tmp_path: Path
) -> None:
    config = dataclasses.replace(FAST, rank=8, iters=2)

    with pytest.raises(ValueError, match=r"cannot resume from .*shape"):
        train_adapter(base_model, data_dir, tmp_path, config, resume_from=trained[0].adapter_dir)


@pytest.mark.parametrize("fine_tune_type", ["dora", "full"])
def test_dora_and_full_adapters_load_in_mlx_lm(
    base_model: Path, data_dir: Path, tmp_path: Path, fine_tune_type: str
) -> None:
    config = dataclasses.replace(FAST, fine_tune_type=fine_tune_type, iters=4, num_layers=1)

    result = train_adapter(base_model, data_dir, tmp_path, config)

    assert _val_loss(base_model, data_dir, tmp_path) == pytest.approx(result.best_val_loss, rel=1e-4)


def test_a_split_smaller_than_the_batch_names_the_sizes(base_model: Path, tmp_path: Path) -> None:
    data = write_data(tmp_path / "data", (8, 2, 2), batch_size=2)

    with pytest.raises(ValueError, match=r"at least batch_size=4 examples, but valid has 2"):
        train_adapter(base_model, data, tmp_path / "adapter", FAST)
    assert not (tmp_path / "adapter").exists()


def _without(*names: str) -> Any:
    def make(model: Path, out: Path) -> Path:
        shutil.copytree(model, out)
        for name in names:
            (out / name).unlink()
        return out

    return make


def _broken_config(model: Path, out: Path) -> Path:
    shutil.copytree(model, out)
    (out / "config.json").write_text("{not json")
    return out


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda model, out: out / "missing", "is not a directory"),
        (_without("config.json"), "has no config.json"),
        (_broken_config, "is unreadable"),
        (_without("model.safetensors"), r"has no model\*\.safetensors"),
        (_without("tokenizer.json", "tokenizer_config.json"), "has no tokenizer files"),
    ],
)
def test_a_bad_base_model_says_what_a_model_directory_holds(
    base_model: Path, data_dir: Path, tmp_path: Path, make: Any, message: str
) -> None:
    bad = make(base_model, tmp_path / "model")

    with pytest.raises(ModelDirectoryError, match=message) as caught:
        train_adapter(bad, data_dir, tmp_path / "adapter", FAST)
    assert "config.json, model weights as model*.safetensors and tokenizer files" in str(caught.value)
    check_model_dir(base_model)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"fine_tune_type": "qlora"}, "fine_tune_type must be one of"),
        ({"optimizer": "rmsprop"}, "optimizer must be one of"),
        ({"iters": 0}, "iters must be a positive integer"),
        ({"batch_size": True}, "batch_size must be a positive integer"),
        ({"num_layers": 0}, "num_layers must be -1"),
        ({"val_batches": 0}, "val_batches must be -1"),
        ({"early_stopping_patience": 0}, "early_stopping_patience must be None or at least 1"),
        ({"lr_schedule": {"name": "cosine_decay"}}, "lr_schedule needs 'name' and 'arguments'"),
    ],
)
def test_train_config_rejects_bad_values(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        TrainConfig(**changes)


# ---- a loss that is not a number --------------------------------------------------------------


def _long_record(n: int) -> str:
    """A record whose prompt alone is longer than NAN_CONFIG.max_seq_length tokens: truncation cuts its
    whole target, so with mask_prompt its loss is 0 target tokens / 0 = NaN."""
    record = json.loads(short_record(n))
    record["messages"][1]["content"] += " Here is the whole log:" + " fix src/module_1.py test" * 120
    return json.dumps(record, sort_keys=True, separators=(",", ":"))


def _nan_data(out_dir: Path, long_train: int, long_valid: int = 0) -> Path:
    """12 short train examples (plus `long_train` long ones), 4 valid (`long_valid` of them long)."""
    rows = []
    for n in range(12 + long_train + 4):
        split = "train" if n < 12 + long_train else "valid"
        long = (split == "train" and n >= 12) or (split == "valid" and n - 12 - long_train < long_valid)
        rows.append(
            {
                "decision_id": hashlib.sha256(f"n{n}".encode()).hexdigest()[:16],
                "split": split,
                "record": _long_record(n) if long else short_record(n),
                "target_name": TOOLS[n % len(TOOLS)],
            }
        )
    rows.append({**rows[-1], "decision_id": "test-row", "split": "test"})
    write_mlx_dataset(pd.DataFrame(rows), out_dir, batch_size=1)
    return out_dir


# Batch size 1 and a cap shorter than the long records: the case seen with the default 2,048 tokens.
NAN_CONFIG = dataclasses.replace(
    FAST, batch_size=1, iters=40, steps_per_report=1, steps_per_eval=2, max_seq_length=256, seed=3
)


def test_a_nan_loss_stops_training_and_keeps_the_best_finite_checkpoint(
    base_model: Path, tmp_path: Path
) -> None:
    import math

    import mlx.core as mx

    data = _nan_data(tmp_path / "data", long_train=2)
    result = train_adapter(base_model, data, tmp_path / "adapter", NAN_CONFIG)

    train_rows = [row for row in result.losses if row["kind"] == "train"]
    assert math.isnan(train_rows[-1]["train_loss"])
    assert all(math.isfinite(row["train_loss"]) for row in train_rows[:-1])
    stopped = train_rows[-1]["iteration"]
    assert result.stopped_early and result.iterations == stopped < NAN_CONFIG.iters
    assert result.chosen == "best" and result.best_iteration is not None and result.best_iteration < stopped
    assert result.best_val_loss is not None and math.isfinite(result.best_val_loss)
    assert result.last_val_loss is not None and math.isfinite(result.last_val_loss)
    weights = mx.load(str(result.adapter_dir / "adapters.safetensors"))
    best = mx.load(str(result.adapter_dir / "adapters.best.safetensors"))
    assert all(bool(mx.isfinite(w).all()) for w in weights.values())
    assert all(bool(mx.array_equal(weights[k], best[k])) for k in best)
    assert result.stop_reason == (
        f"training stopped at iteration {stopped}: the train loss is nan (not a finite number). "
        f"Kept the best finite checkpoint, iteration {result.best_iteration} "
        f"(validation loss {result.best_val_loss:.4g}), as adapters.safetensors. Likely cause: 2 of the "
        "first 14 train examples have a prompt of max_seq_length (256) tokens or more, so truncation "
        "leaves no target token to learn and their loss is 0/0 (with batch_size 1, a batch of one such "
        "example): raise max_seq_length, or lower rendered_splits' max_length (measured with "
        "tokenizer_path) so records fit."
    )


def test_a_nan_loss_before_any_finite_checkpoint_is_an_error_that_says_why(
    base_model: Path, tmp_path: Path
) -> None:
    from trajectory_pipeline.training.trainer import NonFiniteLossError

    data = _nan_data(tmp_path / "data", long_train=0, long_valid=4)
    with pytest.raises(NonFiniteLossError) as raised:
        train_adapter(base_model, data, tmp_path / "adapter", NAN_CONFIG)
    assert str(raised.value).startswith(
        "training stopped at iteration 0: the validation loss is nan (not a finite number). "
        "No finite checkpoint was kept (the first validation already failed). Likely cause: 4 of the "
        "first 4 valid examples have a prompt of max_seq_length (256) tokens or more"
    )


def test_the_loss_chart_and_table_take_a_loss_that_is_not_a_number() -> None:
    from trajectory_pipeline.training.adapters import loss_chart, loss_table

    rows: list[dict[str, object]] = [
        {"iteration": 0, "val_loss": 3.5},
        {"iteration": 1, "train_loss": 2.0},
        {"iteration": 2, "train_loss": float("nan")},
    ]
    chart = loss_chart(rows)
    assert "3.500 |" in chart and "2.000 |" in chart
    assert "| 2 | nan |" in loss_table(rows)


def test_importing_the_trainer_loads_no_dataframe_or_dagster_libraries() -> None:
    # `train_adapter` runs in a fresh process per training; pandas and pyarrow cost it ~0.3 s of
    # imports it never uses (it only reads a JSON manifest and makes files private).
    import subprocess
    import sys

    heavy = ("pandas", "pyarrow", "dagster")
    code = (
        f"import sys, trajectory_pipeline.training.trainer\nprint([m for m in {heavy!r} if m in sys.modules])"
    )
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True)

    assert out.stdout.strip() == "[]"
