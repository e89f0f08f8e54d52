"""The bundled tiny model: a small Qwen2-style model directory that `mlx_lm.load` reads, built offline.

Real weights cannot be downloaded here, so tests and the demo use this instead: a few transformer
layers with random weights (from `mx.random` with a fixed seed), a byte-level BPE tokenizer trained
on the corpus's records as the model reads them (rendered through the chat template, split as
transformers will split them), and a ChatML chat template in Qwen2.5's style that renders `tools` (as
one-line signatures) and tool calls (so `mlx_lm.tuner.datasets.ChatDataset` reads our `tools`
records unchanged):

    python -m trajectory_pipeline.sample.tiny_model --out models/tiny --data data/mlx/2024-05-01_2024-05-07

    from trajectory_pipeline.sample.tiny_model import TinyModelSpec, build_tiny_model, corpus_texts
    build_tiny_model(Path("models/tiny"), corpus_texts([Path("train.jsonl")]), TinyModelSpec(layers=2))
    model, tokenizer = mlx_lm.load("models/tiny")

What is written (files 0600, folder 0700, each file via a temporary name and a rename):
`config.json` (`model_type: qwen2`, the Hugging Face key names), `model.safetensors` (float32,
keys as mlx-lm's qwen2 model names them, tied embeddings), `tokenizer.json` and
`tokenizer_config.json` (with the chat template). The same texts (in any order) and spec give
byte-identical files: the texts are sorted before training and every JSON file is written with
sorted keys. The model's vocabulary is the tokenizer's actual size, which is at most
`spec.vocab_size` (a small corpus runs out of merges first), so generation never samples an id the
tokenizer cannot decode.

Families: `build_tiny_model(..., family="mistral")` (CLI `--family`) writes another family's chat
template instead, with its tool-call convention, its marker tokens and its end-of-turn token as
eos: `hermes` (the default, above), `qwen3_coder`, `llama3_json` or `mistral` (see
`chat_templates`). The weights are the same Qwen2 architecture in every family.
"""

from __future__ import annotations

import argparse
import json
import struct
import sys
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from trajectory_pipeline.dataset.render import chat_of
from trajectory_pipeline.parquet_io import ensure_private_dir, write_bytes_atomic
from trajectory_pipeline.sample.chat_templates import (
    CHAT_TEMPLATE,
    ENDOFTEXT,
    FAMILIES,
    HERMES,
    IM_END,
    IM_START,
    SPECIAL_TOKENS,
    TAG_TOKENS,
    TEMPLATE_TEXTS,
    ChatFamily,
    chat_family,
)

__all__ = [  # with the default (hermes) family's names, which lived here before chat_templates
    "BYTE_ALPHABET",
    "CHAT_TEMPLATE",
    "ENDOFTEXT",
    "FAMILIES",
    "FILES",
    "FLAG_HELP",
    "HERMES",
    "IM_END",
    "IM_START",
    "PRETRAINING_RECORD",
    "SPECIAL_TOKENS",
    "SPLIT_FILES",
    "TAG_TOKENS",
    "TEMPLATE_TEXTS",
    "TinyModelSpec",
    "add_arguments",
    "add_spec_arguments",
    "build_tiny_model",
    "built_from",
    "corpus_texts",
    "data_files",
    "main",
    "model_config",
    "random_weights",
    "run",
    "safetensors_bytes",
    "spec_from_arguments",
    "tokenizer_config",
    "train_tokenizer",
]

BYTE_ALPHABET = 256
FILES = ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json")
PRETRAINING_RECORD = "pretraining.json"  # written by tiny_base.learn_base over these random weights
SPLIT_FILES = ("train.jsonl",)  # a data directory's held-out splits never shape the tokenizer


@dataclass(frozen=True)
class TinyModelSpec:
    """The tiny model's shape and seed (Qwen2 architecture; names follow mlx-lm's CLI flags)."""

    layers: int = 2  # transformer blocks (num_hidden_layers)
    hidden_size: int = 64  # model width; a multiple of heads with an even head size (RoPE)
    heads: int = 4  # attention heads (num_attention_heads)
    kv_heads: int = 2  # key/value heads for grouped-query attention; divides heads
    intermediate_size: int = 128  # width of the SwiGLU MLP
    vocab_size: int = 2048  # most tokens the BPE tokenizer may learn, special tokens included
    max_position: int = 4096  # max_position_embeddings and the tokenizer's model_max_length
    seed: int = 0  # mx.random seed for the weights

    def __post_init__(self) -> None:
        for name in ("layers", "hidden_size", "heads", "kv_heads", "intermediate_size", "max_position"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"TinyModelSpec.{name} must be a positive integer, got {value!r}")
        if not isinstance(self.seed, int) or self.seed < 0:
            raise ValueError(f"TinyModelSpec.seed must be a non-negative integer, got {self.seed!r}")
        if self.hidden_size % self.heads != 0 or (self.hidden_size // self.heads) % 2 != 0:
            raise ValueError(
                f"TinyModelSpec.hidden_size must be a multiple of heads with an even head size "
                f"(RoPE rotates pairs), got hidden_size={self.hidden_size}, heads={self.heads}"
            )
        if self.heads % self.kv_heads != 0:
            raise ValueError(
                f"TinyModelSpec.kv_heads must divide heads, got kv_heads={self.kv_heads}, heads={self.heads}"
            )
        smallest = BYTE_ALPHABET + len(SPECIAL_TOKENS) + len(TAG_TOKENS)
        if not isinstance(self.vocab_size, int) or self.vocab_size < smallest:
            raise ValueError(
                f"TinyModelSpec.vocab_size must be at least {smallest} (256 bytes and "
                f"{smallest - BYTE_ALPHABET} added tokens), got {self.vocab_size!r}"
            )


FLAG_HELP = {
    "layers": "transformer blocks",
    "hidden_size": "model width, a multiple of --heads with an even head size",
    "heads": "attention heads",
    "kv_heads": "key/value heads, dividing --heads",
    "intermediate_size": "width of the MLP",
    "vocab_size": "most tokens the BPE tokenizer may learn",
    "max_position": "longest sequence, in tokens",
    "seed": "seed of the random weights",
}


def model_config(
    spec: TinyModelSpec, vocab_size: int, token_ids: Mapping[str, int], family: str = HERMES
) -> dict[str, Any]:
    """config.json: the Hugging Face Qwen2 keys that mlx-lm's `qwen2.ModelArgs` reads; the family's
    bos token and end-of-turn token (where generation stops) as bos and eos."""
    chat = chat_family(family)
    return {
        "architectures": ["Qwen2ForCausalLM"],
        "bos_token_id": token_ids[chat.bos],
        "eos_token_id": token_ids[chat.eos],
        "hidden_act": "silu",
        "hidden_size": spec.hidden_size,
        "intermediate_size": spec.intermediate_size,
        "max_position_embeddings": spec.max_position,
        "model_type": "qwen2",
        "num_attention_heads": spec.heads,
        "num_hidden_layers": spec.layers,
        "num_key_value_heads": spec.kv_heads,
        "rms_norm_eps": 1e-6,
        "rope_theta": 1000000.0,
        "tie_word_embeddings": True,
        "torch_dtype": "float32",
        "vocab_size": vocab_size,
    }


def _record_text(record: Mapping[str, Any], where: str, chat: ChatFamily) -> str:
    """The text mlx-lm trains on for a record: a completions or chat record through the chat
    template (the conversation `chat_of` gives, as mlx-lm's datasets build it), a text record as
    it is."""
    if "messages" in record or {"prompt", "completion"} <= record.keys():
        messages = chat_of(record)
        return _rendered(messages, record.get("tools"), where, chat) if messages else ""
    if "text" in record:
        return str(record["text"])
    raise ValueError(
        f"{where}: expected an mlx-lm record with 'messages', 'prompt' and 'completion', or 'text'; "
        f"got keys {sorted(record)}"
    )


def _rendered(messages: list[dict[str, Any]], tools: Any, where: str, chat: ChatFamily) -> str:
    from jinja2 import TemplateError
    from transformers.utils.chat_template_utils import render_jinja_template

    try:
        rendered = render_jinja_template(
            conversations=[messages],
            tools=tools or None,
            chat_template=chat.chat_template,
            bos_token=chat.bos,
            eos_token=chat.eos,
        )
    except (TemplateError, TypeError, KeyError, AttributeError) as err:
        raise ValueError(f"{where}: the {chat.name} chat template cannot render this record ({err})") from err
    return str(rendered[0][0])  # (one text per conversation, generation indices)


def corpus_texts(jsonl_paths: Iterable[Path], family: str = HERMES) -> Iterator[str]:
    """Each record of mlx-lm JSONL files as the model will read it (a chat or completions record
    through `family`'s template, its tools block included), to train the tokenizer on.

    The rendered text, not the records' parts: the template's prose and the tools block are in
    every record the model reads, and a tokenizer that learns them where they recur spends fewer
    tokens on them. Measured on the demo's records, with `train_tokenizer`'s split as well: 410 to
    308 tokens a record of the generic corpus, 477 to 387 of the demo window's."""
    chat = chat_family(family)
    for path in jsonl_paths:
        with open(path, encoding="utf-8") as handle:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                where = f"{path}:{number}"
                try:
                    record = json.loads(line)
                except json.JSONDecodeError as err:
                    raise ValueError(f"{where}: expected one JSON record per line ({err})") from err
                if not isinstance(record, dict):
                    raise ValueError(f"{where}: expected a JSON object, got {type(record).__name__}")
                yield _record_text(record, where, chat)


def train_tokenizer(texts: Iterable[str], vocab_size: int, family: str = HERMES) -> Any:
    """A byte-level BPE (`tokenizers.Tokenizer`) trained on `texts` in sorted order, with the
    family's tokens added and its template's prose learned.

    Its text is split and normalized as Qwen2Tokenizer does it: transformers 5 loads a `qwen2`
    model's tokenizer as that class, whatever tokenizer.json says, so merges learned under another
    split (GPT-2's byte-level one, before) were applied to other pieces than they were learned on."""
    from tokenizers import (
        AddedToken,
        Regex,
        Tokenizer,
        decoders,
        models,
        normalizers,
        pre_tokenizers,
        trainers,
    )
    from transformers.models.qwen2.tokenization_qwen2 import PRETOKENIZE_REGEX

    chat = chat_family(family)
    corpus = sorted([*texts, *chat.template_texts])
    tokenizer = Tokenizer(models.BPE())
    tokenizer.normalizer = normalizers.NFC()
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(PRETOKENIZE_REGEX), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=2,
        show_progress=False,
        special_tokens=list(chat.added_tokens),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tokenizer.train_from_iterator(corpus, trainer=trainer, length=len(corpus))
    # The trainer added the tags as special tokens; mark them ordinary so decoding keeps them.
    tokenizer.add_tokens([AddedToken(tag, special=False, normalized=False) for tag in chat.tag_tokens])
    return tokenizer


def tokenizer_config(spec: TinyModelSpec, family: str = HERMES) -> dict[str, Any]:
    """tokenizer_config.json: the family's special tokens and chat template."""
    chat = chat_family(family)
    return {
        "bos_token": chat.bos,
        "chat_template": chat.chat_template,
        "clean_up_tokenization_spaces": False,
        "eos_token": chat.eos,
        "model_max_length": spec.max_position,
        "pad_token": chat.pad,
        "tokenizer_class": "PreTrainedTokenizerFast",
        "unk_token": None,
    }


def safetensors_bytes(tensors: Mapping[str, Any]) -> bytes:
    """float32 arrays as a safetensors file, keys sorted, so equal weights give equal bytes."""
    import numpy as np

    header: dict[str, Any] = {"__metadata__": {"format": "mlx"}}
    chunks, offset = [], 0
    for name in sorted(tensors):
        data = np.ascontiguousarray(np.asarray(tensors[name], dtype="<f4")).tobytes()
        header[name] = {
            "dtype": "F32",
            "shape": list(tensors[name].shape),
            "data_offsets": [offset, offset + len(data)],
        }
        chunks.append(data)
        offset += len(data)
    encoded = json.dumps(header, separators=(",", ":")).encode()
    encoded += b" " * (-len(encoded) % 8)  # the format pads the header to 8 bytes
    return struct.pack("<Q", len(encoded)) + encoded + b"".join(chunks)


def random_weights(config: Mapping[str, Any], seed: int) -> dict[str, Any]:
    """mlx-lm's own qwen2 model, initialised under `mx.random.seed(seed)`, as flat named arrays."""
    import mlx.core as mx
    from mlx.utils import tree_flatten
    from mlx_lm.models import qwen2

    mx.random.seed(seed)
    model = qwen2.Model(qwen2.ModelArgs.from_dict(dict(config)))
    weights = dict(tree_flatten(model.parameters()))
    mx.eval(weights)
    return weights


def _json_bytes(value: Mapping[str, Any]) -> bytes:
    return (json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()


def build_tiny_model(
    out_dir: Path, texts: Iterable[str], spec: TinyModelSpec = TinyModelSpec(), family: str = HERMES
) -> Path:
    """Write the tiny model directory (see the module doc) to `out_dir` and return it.

    `family` (one of chat_templates.FAMILIES) picks the chat template, its tool-call convention
    and its tokens; the default, hermes, is Qwen2.5's ChatML."""
    if out_dir.exists() and not out_dir.is_dir():
        raise NotADirectoryError(f"the tiny model's output must be a directory, but {out_dir} is a file")
    files = _tokenizer_and_config(texts, spec, family)
    config = json.loads(files["config.json"])
    weights = random_weights(config, spec.seed)

    ensure_private_dir(out_dir)
    write_bytes_atomic(out_dir / "config.json", files["config.json"])
    (out_dir / PRETRAINING_RECORD).unlink(missing_ok=True)  # the weights are random again
    write_bytes_atomic(out_dir / "model.safetensors", safetensors_bytes(weights))
    for name in ("tokenizer.json", "tokenizer_config.json"):
        write_bytes_atomic(out_dir / name, files[name])
    return out_dir


def built_from(model_dir: Path, texts: Iterable[str], spec: TinyModelSpec, family: str = HERMES) -> bool:
    """Whether `model_dir`'s config and tokenizer are what `build_tiny_model` writes from `texts` and
    `spec` today: a model kept from before the spec or the tokenizer's training changed is not."""
    try:
        return all(
            (Path(model_dir) / name).read_bytes() == data
            for name, data in _tokenizer_and_config(texts, spec, family).items()
        )
    except OSError:
        return False


def _tokenizer_and_config(texts: Iterable[str], spec: TinyModelSpec, family: str) -> dict[str, bytes]:
    chat = chat_family(family)
    smallest = BYTE_ALPHABET + len(chat.added_tokens)
    if spec.vocab_size < smallest:
        raise ValueError(
            f"TinyModelSpec.vocab_size must be at least {smallest} for the {family} family (256 bytes "
            f"and {len(chat.added_tokens)} added tokens), got {spec.vocab_size}"
        )
    corpus = list(texts)
    if not any(text.strip() for text in corpus):
        raise ValueError("build_tiny_model needs corpus texts to train the tokenizer on; got none")
    tokenizer = train_tokenizer(corpus, spec.vocab_size, family)
    vocab = tokenizer.get_vocab(with_added_tokens=True)
    return {
        "config.json": _json_bytes(model_config(spec, len(vocab), vocab, family)),
        "tokenizer.json": (tokenizer.to_str(pretty=True) + "\n").encode(),
        "tokenizer_config.json": _json_bytes(tokenizer_config(spec, family)),
    }


def data_files(paths: Iterable[Path]) -> list[Path]:
    """JSONL files to read: a data directory gives its train.jsonl, a file is taken as it is."""
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            found = [path / name for name in SPLIT_FILES if (path / name).is_file()]
            if not found:
                raise FileNotFoundError(
                    f"{path} is an mlx-lm data directory without {', '.join(SPLIT_FILES)}"
                )
            files.extend(found)
        elif path.is_file():
            files.append(path)
        else:
            raise FileNotFoundError(f"--data {path}: expected an mlx-lm data directory or a .jsonl file")
    return files


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The CLI's flags: where to write, what to train the tokenizer on, and the spec's fields."""
    parser.add_argument("--out", type=Path, required=True, help="folder to write the model into")
    parser.add_argument(
        "--data",
        type=Path,
        nargs="+",
        required=True,
        help="mlx-lm data directories (their train.jsonl is read) or .jsonl files",
    )
    add_spec_arguments(parser)
    parser.add_argument(
        "--family",
        choices=sorted(FAMILIES),
        default=HERMES,
        help="chat template and tool-call convention (default: %(default)s)",
    )


def add_spec_arguments(parser: argparse.ArgumentParser, defaults: TinyModelSpec | None = None) -> None:
    """A flag per spec field (`--layers`, `--hidden-size`, ...), defaulting to `defaults`' values."""
    defaults = defaults or TinyModelSpec()
    for field in fields(TinyModelSpec):
        flag = "--" + field.name.replace("_", "-")
        parser.add_argument(
            flag,
            type=int,
            default=getattr(defaults, field.name),
            dest=field.name,
            help=f"{FLAG_HELP[field.name]} (default: %(default)s)",
        )


def spec_from_arguments(args: argparse.Namespace) -> TinyModelSpec:
    """The spec `add_spec_arguments`' parsed flags describe."""
    return TinyModelSpec(**{field.name: getattr(args, field.name) for field in fields(TinyModelSpec)})


def run(args: argparse.Namespace) -> int:
    """Build the model the parsed flags describe and print what was written; a bad flag, a missing
    data directory or an unreadable record is one line on stderr and exit code 2."""
    import time

    started = time.perf_counter()
    family = getattr(args, "family", HERMES)
    try:
        spec = spec_from_arguments(args)
        files = data_files(args.data)
        out = build_tiny_model(args.out, corpus_texts(files, family), spec, family)
    except (ValueError, OSError) as err:
        print(f"trajectory-pipeline tiny-model: {err}", file=sys.stderr)
        return 2
    config = json.loads((out / "config.json").read_text())
    print(f"built {out} in {time.perf_counter() - started:.1f}s from {len(files)} file(s)")
    print(f"  qwen2: {json.dumps(asdict(spec), sort_keys=True)}; tokenizer vocab {config['vocab_size']}")
    print(f"  chat template: {family}")
    for name in FILES:
        print(f"  {name}: {(out / name).stat().st_size} bytes")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m trajectory_pipeline.sample.tiny_model",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
