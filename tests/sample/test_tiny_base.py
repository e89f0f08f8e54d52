"""The learned base of the tiny model: a real full fine-tune that changes every weight, is recorded,
is deterministic, and is done once (a second call with the same data and settings is free)."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import mlx.core as mx
import pytest

from tests.evaluation.test_replay import _rows
from trajectory_pipeline.dataset.mlx_data import write_mlx_dataset
from trajectory_pipeline.sample.tiny_base import (
    BaseTraining,
    add_arguments,
    learn_base,
    pretraining_record,
    run,
)
from trajectory_pipeline.sample.tiny_model import TinyModelSpec, build_tiny_model

SETTINGS = BaseTraining(iters=3, batch_size=1, learning_rate=1e-2)


def _command(model: Path, data: Path, *flags: str) -> argparse.Namespace:
    """The `learn-base` command line, parsed as the CLI parses it."""
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser.parse_args(["--model", str(model), "--data", str(data), *flags])


def _model_and_data(root: Path) -> tuple[Path, Path]:
    rows = _rows()
    data = root / "data"
    write_mlx_dataset(rows, data, batch_size=1)
    model = build_tiny_model(root / "model", list(rows["record"]), TinyModelSpec(vocab_size=400))
    return model, data


def test_learn_base_trains_every_weight_and_records_it(tmp_path: Path) -> None:
    model, data = _model_and_data(tmp_path)
    before = mx.load(str(model / "model.safetensors"))
    assert pretraining_record(model) is None
    reports: list[dict[str, object]] = []
    record = learn_base(model, data, SETTINGS, on_report=reports.append)
    after = mx.load(str(model / "model.safetensors"))
    assert set(after) == set(before)
    changed = [name for name in before if not mx.array_equal(before[name], after[name]).item()]
    assert "model.embed_tokens.weight" in changed and len(changed) == len(before)
    assert pretraining_record(model) == record and record["settings"]["iters"] == 3
    assert any("val_loss" in row for row in reports) and any("train_loss" in row for row in reports)
    assert (model / "pretraining.json").stat().st_mode & 0o777 == 0o600

    # Done once: the same data and settings leave the weights alone.
    mtime = (model / "model.safetensors").stat().st_mtime_ns
    assert learn_base(model, data, SETTINGS) == record
    assert (model / "model.safetensors").stat().st_mtime_ns == mtime


def test_learn_base_is_deterministic(tmp_path: Path) -> None:
    first, data = _model_and_data(tmp_path / "a")
    second, _ = _model_and_data(tmp_path / "b")
    learn_base(first, data, SETTINGS)
    learn_base(second, data, SETTINGS)
    assert (first / "model.safetensors").read_bytes() == (second / "model.safetensors").read_bytes()


def test_settings_are_validated() -> None:
    with pytest.raises(ValueError, match="iters"):
        BaseTraining(iters=0)
    with pytest.raises(ValueError, match="learning_rate"):
        BaseTraining(learning_rate=0.0)


def test_a_base_learned_otherwise_is_refused_until_the_model_is_rebuilt(tmp_path: Path) -> None:
    model, data = _model_and_data(tmp_path)
    learn_base(model, data, SETTINGS)
    with pytest.raises(ValueError, match="already holds a base learned on other data or settings"):
        learn_base(model, data, dataclasses.replace(SETTINGS, iters=4))
    _model_and_data(tmp_path)  # random weights again: the record goes with them
    assert pretraining_record(model) is None


def test_the_command_learns_on_every_token_when_asked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`learn-base --no-mask-prompt --learning-rate ...`: what bench_base.py's long base is built with."""
    model, data = _model_and_data(tmp_path)
    args = _command(
        model, data, "--iters", "2", "--batch-size", "1", "--learning-rate", "0.01", "--no-mask-prompt"
    )
    assert run(args) == 0
    settings = pretraining_record(model)["settings"]  # type: ignore[index]
    assert settings["mask_prompt"] is False and settings["history_calls"] is False
    assert (settings["iters"], settings["batch_size"], settings["learning_rate"]) == (2, 1, 0.01)
    assert f"learned base in {model}" in capsys.readouterr().out
    defaults = _command(Path("m"), Path("d"))
    assert (defaults.mask_prompt, defaults.learning_rate) == (
        BaseTraining().mask_prompt,
        BaseTraining().learning_rate,
    )


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--batch-size", "0"], "batch_size must be a positive integer"),
        (["--learning-rate", "0"], "learning_rate must be positive"),
        (["--batch-size", "64"], "at least batch_size=64 examples"),
    ],
)
def test_the_command_says_what_was_wrong(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], said: str
) -> None:
    model, data = _model_and_data(tmp_path)
    assert run(_command(model, data, *flags)) == 2
    assert said in capsys.readouterr().err
    assert pretraining_record(model) is None


def test_a_data_folder_without_a_dataset_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model, _ = _model_and_data(tmp_path)
    assert run(_command(model, tmp_path / "nothing-here")) == 2
    said = capsys.readouterr().err
    assert "no mlx-lm dataset manifest" in said and "rendered_splits" in said and said.count("\n") == 1
