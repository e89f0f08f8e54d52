"""The replay tests' tiny model: built once per session from the replay test rows' records."""

from __future__ import annotations

from pathlib import Path

import pytest

from trajectory_pipeline.sample.tiny_model import TinyModelSpec, build_tiny_model


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """2 layers, random weights, a tokenizer of 400 tokens with Qwen2.5's ChatML template."""
    from tests.evaluation.test_replay import _rows

    texts = list(_rows()["record"])
    return build_tiny_model(tmp_path_factory.mktemp("model") / "tiny", texts, TinyModelSpec(vocab_size=400))
