"""The small data directory and tiny model the training tests share (one of each per test module)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.training.small_data import write_data
from trajectory_pipeline.sample.tiny_model import TinyModelSpec, build_tiny_model, corpus_texts


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_data(tmp_path_factory.mktemp("data"), (24, 8, 4))


@pytest.fixture(scope="module")
def base_model(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> Path:
    out = tmp_path_factory.mktemp("model")
    return build_tiny_model(out, corpus_texts([data_dir / "train.jsonl"]), TinyModelSpec(layers=2))
