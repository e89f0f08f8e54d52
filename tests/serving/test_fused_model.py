"""The fused model is the adapter: same greedy answers as base + adapter, private files, a model card,
and GGUF: written with an Ollama Modelfile for an architecture mlx-lm converts (llama), refused by name
for one it does not (qwen2, the tiny model's)."""

from __future__ import annotations

import json
import shutil
import stat
from pathlib import Path

import mlx.core as mx
import mlx_lm
import pytest

from tests.serving.conftest import PROMPTS, TESTS_TASK, TOOLS, USER_TESTS, Served, adapter_record
from trajectory_pipeline.serving.fuse import GGUF_FILE, MODELFILE, ExportConfig, publish_model


def _greedy(model_dir: Path, adapter: Path | None) -> list[str]:
    model, tokenizer = mlx_lm.load(str(model_dir), adapter_path=None if adapter is None else str(adapter))
    answers = []
    for task in PROMPTS:
        messages = [{"role": "user", "content": task}]
        prompt = tokenizer.apply_chat_template(messages, tools=TOOLS, add_generation_prompt=True)
        answers.append(mlx_lm.generate(model, tokenizer, prompt, max_tokens=48))
    return answers


@pytest.mark.serving
def test_the_fused_model_answers_as_base_plus_adapter(served: Served) -> None:
    with_adapter = _greedy(served.base, served.adapter)
    fused = _greedy(served.fused.path, None)
    assert fused == with_adapter
    # The adapter mattered: it changed the base model's answer to this user's test command.
    base = _greedy(served.base, None)
    assert USER_TESTS in with_adapter[PROMPTS.index(TESTS_TASK)]
    assert base != with_adapter


@pytest.mark.serving
def test_the_fused_folder_is_private_and_carries_its_model_card(served: Served) -> None:
    folder = served.fused.path
    assert folder == served.models_dir / "week-1"
    files = [path for path in folder.rglob("*") if path.is_file()]
    assert {"config.json", "model.safetensors", "tokenizer.json", "README.md"} <= {p.name for p in files}
    assert {oct(stat.S_IMODE(p.stat().st_mode)) for p in files} == {"0o600"}
    assert {oct(stat.S_IMODE(p.stat().st_mode)) for p in (folder, served.models_dir)} == {"0o700"}
    card = served.fused.card_path.read_text()
    expected_lines = ("week-1", "2026-11-21 .. 2026-11-22", "holdout", "25.0%", "mlx_lm.server --model")
    for expected in (*expected_lines, "trajectory-pipeline serve"):
        assert expected in card, expected


@pytest.mark.serving
def test_gguf_for_an_architecture_mlx_lm_cannot_convert_is_a_note_naming_it(
    served: Served, tmp_path: Path
) -> None:
    record = adapter_record("week-gguf", served.base, served.adapter)
    fused = publish_model(record, served.base, served.adapter, ExportConfig(str(tmp_path), gguf=True))
    assert fused.architecture == "qwen2" and fused.gguf_path is None
    assert fused.gguf_note is not None and "this model is qwen2" in fused.gguf_note
    assert not (fused.path / GGUF_FILE).exists() and not (fused.path / MODELFILE).exists()
    assert fused.gguf_note in fused.card_path.read_text()


def _as_llama(qwen2: Path, out: Path) -> Path:
    """The tiny qwen2 model as a llama one: the same shapes without qwen2's q/k/v biases (the tiny model
    builder writes qwen2 only, and mlx-lm converts llama, mixtral and mistral to GGUF)."""
    shutil.copytree(qwen2, out)
    config = json.loads((out / "config.json").read_text())
    (out / "config.json").write_text(json.dumps({**config, "model_type": "llama"}))
    weights = mx.load(str(out / "model.safetensors"))
    mx.save_safetensors(
        str(out / "model.safetensors"), {k: v for k, v in weights.items() if ".bias" not in k}
    )
    return out


@pytest.mark.serving
def test_gguf_and_an_ollama_modelfile_for_a_llama_model(served: Served, tmp_path: Path) -> None:
    base = _as_llama(served.base, tmp_path / "llama")
    record = adapter_record("week-llama", base, served.adapter)
    fused = publish_model(record, base, served.adapter, ExportConfig(str(tmp_path / "models"), gguf=True))
    assert fused.architecture == "llama" and fused.gguf_note is None
    assert fused.gguf_path == fused.path / GGUF_FILE
    assert fused.gguf_path.read_bytes()[:4] == b"GGUF"
    modelfile = (fused.path / MODELFILE).read_text()
    assert modelfile.startswith(f"FROM ./{GGUF_FILE}\n")
    assert {oct(stat.S_IMODE(p.stat().st_mode)) for p in (fused.gguf_path, fused.path / MODELFILE)} == {
        "0o600"
    }
    assert "ollama create week-llama -f Modelfile" in fused.card_path.read_text()
