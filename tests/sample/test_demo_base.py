"""The demo's learned base is kept only while it learned the records today's stages make of the
generic corpus: a base kept from records rendered by older code would read other prompts than the
adapter and the replay give it."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

import assets.demo as demo
from trajectory_pipeline.dataset.mlx_data import _dataset_hash, _file_sha256
from trajectory_pipeline.sample.tiny_base import learn_base, pretraining_record
from trajectory_pipeline.sample.tiny_model import TinyModelSpec, build_tiny_model, corpus_texts

TINY = TinyModelSpec(layers=1, hidden_size=32, heads=2, kv_heads=1, intermediate_size=64, vocab_size=512)


def _render_the_old_way(data: Path) -> None:
    """The data directory as an older version of the stages left it: other prompts, and a manifest
    that agrees with them."""
    train = data / "train.jsonl"
    records = [json.loads(line) for line in train.read_text().splitlines()]
    for record in records:
        for message in record["messages"]:
            if message["role"] == "user":
                message["content"] = message["content"].replace("State so far:", "Where things stand:")
    train.write_text("".join(json.dumps(record) + "\n" for record in records))
    manifest = json.loads((data / "manifest.json").read_text())
    manifest["sha256"]["train"] = _file_sha256(train)
    manifest["dataset_hash"] = _dataset_hash(manifest["sha256"])
    (data / "manifest.json").write_text(json.dumps(manifest))


def test_a_base_learned_on_records_older_code_rendered_is_learned_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(demo, "DEMO_MODEL", TINY)
    monkeypatch.setattr(demo, "DEMO_BASE", dataclasses.replace(demo.DEMO_BASE, iters=2))
    root, model = tmp_path / "base", tmp_path / "tiny-model"

    fresh = demo.learned_base(root, model)
    assert "Learning the base model" in capsys.readouterr().out
    assert demo.learned_base(root, model) == fresh  # the same records: kept
    assert "built once" in capsys.readouterr().out

    # What an upgrade finds: a base built and learned, by the older code, on that code's records.
    data = root / "mlx"
    _render_the_old_way(data)
    build_tiny_model(model, corpus_texts([data / "train.jsonl"]), TINY)
    stale = learn_base(model, data, demo.DEMO_BASE)
    assert stale["dataset_hash"] != fresh["dataset_hash"]

    again = demo.learned_base(root, model)
    assert "Learning the base model" in capsys.readouterr().out
    assert again["dataset_hash"] == fresh["dataset_hash"]
    assert pretraining_record(model) == again


def test_the_demo_reads_the_sample_corpus_and_no_event_database(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from resources.session_sources import SessionSources

    monkeypatch.setenv("TRAJECTORY_SQL_EVENTS_URL", f"sqlite:///{tmp_path / 'your-real-events.sqlite'}")
    config = demo.demo_resources(tmp_path / "corpus", tmp_path / "warehouse")["session_sources"]["config"]
    sources = SessionSources(**config)
    assert sources.stores() == []
    roots = [root for root in sources.configured().values() if root]  # "" is a source turned off
    assert roots and all(root.startswith(str(tmp_path / "corpus")) for root in roots)


def test_a_corpus_folder_of_other_files_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("not a sample corpus")
    assert demo.run_demo(str(mine), str(tmp_path / "warehouse")) == 2
    said = capsys.readouterr().err
    assert said.startswith("trajectory-pipeline demo: --corpus:") and "not empty" in said
    assert [path.name for path in mine.iterdir()] == ["notes.txt"]
