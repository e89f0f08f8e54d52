"""A promoted adapter fused into its base model: one MLX model folder anyone can load, serve or convert.

`promoted_model` calls `publish_model` for the week's adapter once `replay_eval` promoted it:

    fused = publish_model(record, base_model, adapter_dir, ExportConfig(models_dir="data/artifacts/models"))
    fused.path  # data/artifacts/models/<adapter_id>/: config.json, model.safetensors, tokenizer, README.md

Fusing is mlx-lm's own (`mlx_lm fuse`'s steps through its Python API: `load` with the adapter, each
LoRA layer's `fuse()`, `save`), so the folder is exactly what `mlx_lm fuse --model BASE --adapter-path
ADAPTER` writes, and base + adapter and the fused model give the same greedy answers (a test). Why
fuse rather than serve base + adapter: one folder is what other tools take (mlx_lm.server, GGUF
converters, Ollama), it loads faster, and it no longer depends on the base model's folder staying put.

The folder is written whole beside the old one and swapped in (`parquet_io.staged_dir`), so a server
starting meanwhile sees the previous fused model or the new one, never half of one; files are 0600 in
0700 folders like every artifact (mlx-lm writes with the umask's modes; tightened before the swap).

GGUF (`gguf: true`): mlx-lm's `convert_to_gguf` handles only the architectures `mlx_lm fuse
--export-gguf` accepts (`GGUF_ARCHITECTURES`: llama, mixtral, mistral). For those, `model.gguf` and an
Ollama `Modelfile` are written beside the MLX weights; for any other (the bundled tiny model is qwen2)
nothing is written and `gguf_note` says why, naming the architecture: the fused MLX model is still
the week's result, so this is a note, not a failure.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from trajectory_pipeline.config import knob
from trajectory_pipeline.parquet_io import (
    ensure_private_dir,
    make_private_tree,
    staged_dir,
    write_bytes_atomic,
)
from trajectory_pipeline.serving.card import model_card
from trajectory_pipeline.storage import objects
from trajectory_pipeline.training.registry import AdapterRecord

GGUF_ARCHITECTURES = ("llama", "mixtral", "mistral")  # mlx_lm.fuse's list for --export-gguf
GGUF_FILE, MODELFILE, CARD_FILE = "model.gguf", "Modelfile", "README.md"

# promoted_model's one-row Parquet manifest (docs/design.md); no clock values, as every table.
MODEL_MANIFEST_SCHEMA = pa.schema(
    [
        ("adapter_id", pa.string()),
        ("partition", pa.string()),
        ("base_model", pa.string()),
        ("adapter_path", pa.string()),
        ("model_path", pa.string()),
        ("architecture", pa.string()),
        ("gguf_path", pa.string()),
    ]
)


class ExportError(ValueError):
    """The fused model cannot be written where it was asked to go; the message says what to change."""


@dataclass(frozen=True)
class ExportConfig:
    """Where fused models go, and whether a GGUF copy is made for llama.cpp and Ollama."""

    models_dir: str = knob("data/artifacts/models", "Folder of fused models, one per promoted adapter.")
    gguf: bool = knob(
        False,
        "Also write model.gguf and an Ollama Modelfile (llama, mixtral and mistral architectures only; "
        "others get a note saying so).",
    )


@dataclass(frozen=True)
class FusedModel:
    """What `publish_model` wrote, and the figures the asset's metadata shows."""

    adapter_id: str
    path: Path
    architecture: str
    gguf_path: Path | None
    gguf_note: str | None  # why no GGUF was written, when one was asked for
    seconds: float

    @property
    def card_path(self) -> Path:
        return self.path / CARD_FILE

    def manifest_row(self, record: AdapterRecord, adapter_path: str) -> dict[str, Any]:
        return {
            "adapter_id": self.adapter_id,
            "partition": record.partition,
            "base_model": record.base_model,
            "adapter_path": adapter_path,
            "model_path": str(self.path),
            "architecture": self.architecture,
            "gguf_path": None if self.gguf_path is None else str(self.gguf_path),
        }


def fuse(base_model: Path, adapter_dir: Path, out: Path) -> tuple[dict[str, Any], Any]:
    """`mlx_lm fuse --model base_model --adapter-path adapter_dir --save-path out`, through its Python
    API; returns the model's config and the fused model (for a GGUF export)."""
    from mlx.utils import tree_unflatten
    from mlx_lm.utils import load, save

    loaded: Any = load(str(base_model), adapter_path=str(adapter_dir), return_config=True)
    model, tokenizer, config = loaded  # (model, tokenizer, config) with return_config
    fused = [(name, module.fuse()) for name, module in model.named_modules() if hasattr(module, "fuse")]
    if fused:
        model.update_modules(tree_unflatten(fused))
    save(out, str(base_model), model, tokenizer, config, donate_model=False)
    return config, model


def gguf_problem(config: dict[str, Any]) -> str | None:
    """Why mlx-lm cannot export this model as GGUF, in one line, or None when it can."""
    architecture = str(config.get("model_type", "unknown"))
    if architecture not in GGUF_ARCHITECTURES:
        return (
            f"GGUF not written: mlx-lm's convert_to_gguf supports the {', '.join(GGUF_ARCHITECTURES)} "
            f"architectures, and this model is {architecture} (config.json model_type); convert the fused "
            "MLX folder with llama.cpp's convert_hf_to_gguf.py instead"
        )
    if config.get("quantization"):
        return "GGUF not written: mlx-lm cannot convert a quantized model to GGUF"
    return None


def export_gguf(folder: Path, config: dict[str, Any], model: Any) -> Path:
    """`model.gguf` (mlx-lm's converter) and an Ollama Modelfile beside it; returns the GGUF path."""
    from mlx.utils import tree_flatten
    from mlx_lm.gguf import convert_to_gguf

    weights = dict(tree_flatten(model.parameters()))
    convert_to_gguf(folder, weights, config, str(folder / GGUF_FILE))
    write_bytes_atomic(folder / MODELFILE, modelfile().encode())
    return folder / GGUF_FILE


def modelfile() -> str:
    """An Ollama Modelfile for the GGUF beside it (`ollama create NAME -f Modelfile`): greedy, as the
    replay eval measured the model; the chat template comes from the GGUF's own metadata."""
    return f"FROM ./{GGUF_FILE}\nPARAMETER temperature 0\n"


def publish_model(
    record: AdapterRecord, base_model: Path, adapter_dir: Path, config: ExportConfig
) -> FusedModel:
    """Fuse `record`'s adapter (local `adapter_dir`) into `base_model` under `<models_dir>/<adapter_id>/`,
    with its model card and, when asked and possible, GGUF; the whole folder replaces any earlier one."""
    if objects.is_remote(config.models_dir):
        raise ExportError(
            f"models_dir {config.models_dir!r}: fused models are written to a local folder (serving "
            "reads them from disk); set models_dir to one"
        )
    started = time.monotonic()
    root = ensure_private_dir(Path(config.models_dir).expanduser())
    dest = root / record.adapter_id
    gguf_path: Path | None = None
    note: str | None = None
    with staged_dir(dest) as folder:
        model_config, model = fuse(base_model, adapter_dir, folder)
        if config.gguf:
            note = gguf_problem(model_config)
            if note is None:
                export_gguf(folder, model_config, model)
                gguf_path = dest / GGUF_FILE
        architecture = str(model_config.get("model_type", "unknown"))
        card = model_card(record, dest, architecture, gguf_path, note)
        write_bytes_atomic(folder / CARD_FILE, card.encode())
        make_private_tree(folder)
    return FusedModel(record.adapter_id, dest, architecture, gguf_path, note, time.monotonic() - started)
