"""The mlx-lm data directory: train/valid/test JSONL files plus a manifest, written privately.

`rendered_splits` rows (one per training example, each with its split and its rendered mlx-lm
record as canonical JSON) become the directory that `mlx_lm.lora --data DIR` reads:

    manifest = write_mlx_dataset(rows, Path("data/mlx/2024-05-01_2024-05-07"), batch_size=4,
                                 config=render_config, partitions=["2024-05-01", ...])
    # python -m mlx_lm.lora --model ... --train --data data/mlx/2024-05-01_2024-05-07 --batch-size 4
    manifest = read_manifest(Path("data/mlx/2024-05-01_2024-05-07"))  # verifies every sha256

What is written:
- `train.jsonl`, `valid.jsonl`, `test.jsonl`: one record per line, rows ordered by decision_id
  within each split, so the same rows always give the same bytes (input order does not matter);
- `manifest.json`: counts per split and per split per tool (both describe the files as written,
  repeats included), how many rows of each split are repeats (`padded`), the sha256 of each file,
  `dataset_hash` (the sha256 of the three files' hex digests concatenated in train, valid, test
  order), the batch size checked, the config and the partitions covered. No timestamps, no paths:
  the directory can be moved and rebuilt byte for byte.
Files are 0600 and folders 0700. The whole directory is written into a new folder beside it and
swapped in when complete (`parquet_io.staged_dir`: an atomic exchange on Linux), so a reader, or a
run killed halfway, never sees a new train.jsonl beside an old test.jsonl, and the manifest on disk
always describes the data files beside it.

mlx-lm's trap: `mlx_lm.lora` stops with "Dataset must have at least batch_size=N examples" when
train, valid or test (when evaluated) holds fewer than N rows, and its loader fails on an empty
file. So every split must hold at least `batch_size` rows:
- train too small is always an error: repeating training rows would weight them twice;
- valid or test too small is an error (`SplitTooSmallError`) unless `pad_small_splits` is set;
  then the split's own rows are repeated cyclically, in decision_id order, up to `batch_size`,
  and `padded` counts the repeats. Repeats only ever copy rows of the same held-out split, so no
  training example reaches valid or test; they weight a few held-out rows more in the average loss,
  which is why the count is recorded. An empty split has nothing to repeat and is still an error.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trajectory_pipeline.parquet_io import staged_dir, write_bytes_atomic

if TYPE_CHECKING:  # annotations only: training reads manifests without loading pandas
    import pandas as pd

SPLITS = ("train", "valid", "test")
MANIFEST_NAME = "manifest.json"
MANIFEST_VERSION = 1
REQUIRED_COLUMNS = ("decision_id", "split", "record", "target_name")


class SplitTooSmallError(ValueError):
    """A split holds fewer rows than the batch size, so `mlx_lm.lora` would stop on it."""


@dataclass(frozen=True)
class DatasetManifest:
    """What an mlx-lm data directory holds; `path` is the directory (not stored in the manifest)."""

    path: Path
    counts: dict[str, int]
    per_tool: dict[str, dict[str, int]]
    sha256: dict[str, str]
    padded: dict[str, int]
    dataset_hash: str
    batch_size: int = 0
    config: dict[str, Any] = field(default_factory=dict)
    partitions: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The manifest as written to manifest.json (everything but `path`)."""
        return {
            "version": MANIFEST_VERSION,
            "files": {split: f"{split}.jsonl" for split in SPLITS},
            "counts": dict(self.counts),
            "per_tool": {split: dict(tools) for split, tools in self.per_tool.items()},
            "padded": dict(self.padded),
            "sha256": dict(self.sha256),
            "dataset_hash": self.dataset_hash,
            "batch_size": self.batch_size,
            "partitions": list(self.partitions),
            "config": self.config,
        }


def write_mlx_dataset(
    rows: pd.DataFrame,
    out_dir: Path,
    *,
    batch_size: int,
    pad_small_splits: bool = False,
    config: Mapping[str, Any] | None = None,
    partitions: Sequence[str] = (),
) -> DatasetManifest:
    """Write `rows` as mlx-lm's train/valid/test JSONL files plus manifest.json into `out_dir`."""
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
    records = _records_by_split(rows)
    padded = _guard_sizes(records, batch_size, pad_small_splits)
    config_json = _canonical_config(config)

    # The whole directory is written beside the old one and swapped in at the end: a run killed
    # halfway never leaves a new train.jsonl beside an old test.jsonl.
    sha256: dict[str, str] = {}
    with staged_dir(out_dir) as staging:
        for split in SPLITS:
            body = "".join(record + "\n" for _, _, record in records[split]).encode("utf-8")
            sha256[split] = hashlib.sha256(body).hexdigest()
            write_bytes_atomic(staging / f"{split}.jsonl", body)
        manifest = _manifest(out_dir, records, sha256, padded, batch_size, config_json, partitions)
        write_bytes_atomic(staging / MANIFEST_NAME, _manifest_bytes(manifest))
    return manifest


def _manifest(
    out_dir: Path,
    records: dict[str, list[tuple[str, str, str]]],
    sha256: dict[str, str],
    padded: dict[str, int],
    batch_size: int,
    config_json: dict[str, Any],
    partitions: Sequence[str],
) -> DatasetManifest:
    return DatasetManifest(
        path=out_dir,
        counts={split: len(records[split]) for split in SPLITS},
        per_tool={
            split: dict(sorted(Counter(tool for _, tool, _ in records[split]).items())) for split in SPLITS
        },
        sha256=sha256,
        padded=padded,
        dataset_hash=_dataset_hash(sha256),
        batch_size=batch_size,
        config=config_json,
        partitions=tuple(sorted(set(partitions))),
    )


def read_manifest(out_dir: Path) -> DatasetManifest:
    """Read `out_dir`/manifest.json and check that each data file still has its recorded sha256."""
    path = out_dir / MANIFEST_NAME
    if not path.is_file():
        raise FileNotFoundError(
            f"no mlx-lm dataset manifest at {path}: point at a folder rendered_splits wrote (its "
            "mlx_data_dir config; make demo writes data/mlx/sample-window)"
        )
    data = json.loads(path.read_text(encoding="utf-8"))
    if data.get("version") != MANIFEST_VERSION:
        raise ValueError(f"{path}: expected manifest version {MANIFEST_VERSION}, got {data.get('version')!r}")
    manifest = DatasetManifest(
        path=out_dir,
        counts={split: int(data["counts"][split]) for split in SPLITS},
        per_tool={split: dict(data["per_tool"][split]) for split in SPLITS},
        sha256={split: str(data["sha256"][split]) for split in SPLITS},
        padded={split: int(data["padded"][split]) for split in SPLITS},
        dataset_hash=str(data["dataset_hash"]),
        batch_size=int(data["batch_size"]),
        config=dict(data["config"]),
        partitions=tuple(data["partitions"]),
    )
    for split in SPLITS:
        actual = _file_sha256(out_dir / f"{split}.jsonl")
        if actual != manifest.sha256[split]:
            raise ValueError(
                f"{out_dir / f'{split}.jsonl'} does not match its manifest: "
                f"expected sha256 {manifest.sha256[split]}, found {actual}"
            )
    if _dataset_hash(manifest.sha256) != manifest.dataset_hash:
        raise ValueError(f"{path}: dataset_hash does not match the files' sha256 values")
    return manifest


def _records_by_split(rows: pd.DataFrame) -> dict[str, list[tuple[str, str, str]]]:
    """Validated (decision_id, target_name, record) triples per split, ordered by decision_id."""
    missing = [column for column in REQUIRED_COLUMNS if column not in rows.columns]
    if missing:
        raise ValueError(f"rendered rows lack column(s) {missing}; expected {list(REQUIRED_COLUMNS)}")
    unknown = sorted({str(split) for split in rows["split"].unique()} - set(SPLITS))
    if unknown:
        raise ValueError(f"rendered rows have unknown split(s) {unknown}; expected one of {list(SPLITS)}")
    duplicated = rows["decision_id"][rows["decision_id"].duplicated()]
    if not duplicated.empty:
        raise ValueError(f"decision_id must be unique; repeated: {sorted(set(duplicated))[:10]}")

    records: dict[str, list[tuple[str, str, str]]] = {split: [] for split in SPLITS}
    kinds: dict[str, set[str]] = {}
    columns = zip(rows["decision_id"], rows["split"], rows["target_name"], rows["record"], strict=True)
    for decision_id, split, target_name, record in columns:
        for name, value in (("decision_id", decision_id), ("target_name", target_name), ("record", record)):
            if not isinstance(value, str):
                raise ValueError(f"row {decision_id!r}: {name} must be a string, got {value!r}")
        kinds.setdefault(_record_kind(decision_id, record), set()).add(decision_id)
        records[split].append((decision_id, target_name, record))
    if len(kinds) > 1:
        # mlx-lm picks one dataset class per file from its first record.
        examples = {kind: sorted(ids)[0] for kind, ids in sorted(kinds.items())}
        raise ValueError(f"records mix formats {sorted(kinds)} (e.g. {examples}); render every row one way")
    for split_records in records.values():
        split_records.sort()
    return records


def _record_kind(decision_id: str, record: str) -> str:
    if "\n" in record or "\r" in record:
        raise ValueError(f"row {decision_id!r}: record must be one line of JSON, it holds a line break")
    try:
        value = json.loads(record)
    except json.JSONDecodeError as err:
        raise ValueError(f"row {decision_id!r}: record is not valid JSON ({err})") from err
    if isinstance(value, dict) and "prompt" in value and "completion" in value:
        return "completions"
    if isinstance(value, dict) and isinstance(value.get("messages"), list):
        return "messages"
    shown = sorted(value) if isinstance(value, dict) else type(value).__name__
    raise ValueError(
        f"row {decision_id!r}: expected a record with 'messages' or 'prompt' and 'completion', got {shown}"
    )


def _guard_sizes(
    records: dict[str, list[tuple[str, str, str]]], batch_size: int, pad_small_splits: bool
) -> dict[str, int]:
    """Check every split against `batch_size`; pad valid/test in place when asked. Returns the repeats."""
    sizes = {split: len(records[split]) for split in SPLITS}
    small = [split for split in SPLITS if sizes[split] < batch_size]
    padded = dict.fromkeys(SPLITS, 0)
    if not small:
        return padded
    listing = ", ".join(f"{split} has {sizes[split]}" for split in SPLITS)
    needs = f"mlx_lm.lora needs at least batch_size={batch_size} examples in each split, but {listing}"
    empty = [split for split in small if sizes[split] == 0]
    if empty:
        raise SplitTooSmallError(
            f"{needs}. {_are(empty)} empty, which no batch size or padding can fix: widen the window "
            "of daily partitions or change the split ratios."
        )
    if "train" in small:
        raise SplitTooSmallError(
            f"{needs}. train is too small: lower --batch-size to {sizes['train']} or less, or widen the "
            "window of daily partitions (train is never padded: repeated rows would skew training)."
        )
    if not pad_small_splits:
        smallest = min(sizes[split] for split in small)
        raise SplitTooSmallError(
            f"{needs}. {_are(small)} too small: lower --batch-size to {smallest} or less, or widen the "
            "window of daily partitions (or set pad_small_splits=True to repeat their rows up to the "
            "batch size)."
        )
    for split in small:
        original = records[split]
        records[split] = [original[i % len(original)] for i in range(batch_size)]
        padded[split] = batch_size - len(original)
    return padded


def _are(splits: Sequence[str]) -> str:
    return f"{' and '.join(splits)} {'is' if len(splits) == 1 else 'are'}"


def _canonical_config(config: Mapping[str, Any] | None) -> dict[str, Any]:
    """The config as plain JSON with sorted keys; raises TypeError on values JSON cannot hold."""
    text = json.dumps(dict(config or {}), sort_keys=True, default=_jsonable)
    result: dict[str, Any] = json.loads(text)
    return result


def _jsonable(value: object) -> object:
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, set | frozenset):
        return sorted(value)
    raise TypeError(f"config value {value!r} ({type(value).__name__}) cannot be written to manifest.json")


def _dataset_hash(sha256: Mapping[str, str]) -> str:
    return hashlib.sha256("".join(sha256[split] for split in SPLITS).encode("ascii")).hexdigest()


def _manifest_bytes(manifest: DatasetManifest) -> bytes:
    return (json.dumps(manifest.to_json(), indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()
