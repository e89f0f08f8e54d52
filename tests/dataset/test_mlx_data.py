"""The mlx-lm data directory is what training reads, so it must load in mlx-lm and never surprise it.

Why these tests exist: `mlx_lm.lora` stops late and cryptically when a split is smaller than the
batch size, its loader picks a dataset class from a file's first record, and a fine-tune is only
reproducible when the same rows give the same bytes and a manifest whose hashes can be checked.
So: files and manifest are written and private, bytes are deterministic whatever the row order,
the batch-size guard names the sizes and pads only held-out splits, and mlx-lm's own loader reads
the directory with a tiny tokenizer built here (no downloads).

    .venv/bin/pytest tests/dataset/test_mlx_data.py
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import types
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from tests.conftest import TOOL_SPECS, TOOLS
from trajectory_pipeline.dataset.mlx_data import SplitTooSmallError, read_manifest, write_mlx_dataset

SPLITS = ("train", "valid", "test")
FORMATS = ("tools", "chat", "completions")


def _canonical(value: object) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _record(fmt: str, n: int, tool: str) -> str:
    prompt = f"fix bug {n} in src/módulo_{n}.py"  # non-ASCII on purpose: files are UTF-8
    arguments = _canonical({"path": f"src/módulo_{n}.py"})
    if fmt == "tools":
        call = {"id": f"call_{n}", "type": "function", "function": {"name": tool, "arguments": arguments}}
        return _canonical(
            {
                "messages": [
                    {"role": "system", "content": "You are a coding agent."},
                    {"role": "user", "content": prompt},
                    {"role": "assistant", "content": "", "tool_calls": [call]},
                ],
                "tools": TOOL_SPECS,
            }
        )
    call_text = (
        "<tool_call>" + _canonical({"name": tool, "arguments": json.loads(arguments)}) + "</tool_call>"
    )
    if fmt == "chat":
        return _canonical(
            {"messages": [{"role": "user", "content": prompt}, {"role": "assistant", "content": call_text}]}
        )
    return _canonical({"prompt": prompt, "completion": call_text})


def _rows(sizes: tuple[int, int, int], fmt: str = "tools") -> pd.DataFrame:
    """Rendered rows; decision ids are hashes, so creation order is not decision_id order."""
    out = []
    n = 0
    for split, size in zip(SPLITS, sizes, strict=True):
        for _ in range(size):
            tool = TOOLS[n % len(TOOLS)]
            out.append(
                {
                    "decision_id": hashlib.sha256(f"decision-{n}".encode()).hexdigest()[:16],
                    "split": split,
                    "record": _record(fmt, n, tool),
                    "target_name": tool,
                    "session_id": f"s{n // 2}",
                }
            )
            n += 1
    return pd.DataFrame(out, columns=["decision_id", "split", "record", "target_name", "session_id"])


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize("fmt", FORMATS)
def test_writes_sorted_files_and_a_manifest_that_describes_them(tmp_path: Path, fmt: str) -> None:
    rows = _rows((9, 4, 5), fmt)
    config = {"format": fmt, "ratios": [0.8, 0.1, 0.1], "holdout": Path("/data/holdout.txt")}
    manifest = write_mlx_dataset(
        rows, tmp_path, batch_size=4, config=config, partitions=["2024-05-02", "2024-05-01"]
    )

    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "manifest.json",
        "test.jsonl",
        "train.jsonl",
        "valid.jsonl",
    ]
    for split in SPLITS:
        expected = rows[rows["split"] == split].sort_values("decision_id")
        assert _lines(tmp_path / f"{split}.jsonl") == list(expected["record"])
        assert manifest.per_tool[split] == dict(sorted(expected["target_name"].value_counts().items()))
    assert manifest.counts == {"train": 9, "valid": 4, "test": 5}
    assert manifest.padded == {"train": 0, "valid": 0, "test": 0}
    assert manifest.path == tmp_path
    assert manifest.partitions == ("2024-05-01", "2024-05-02")
    written = json.loads((tmp_path / "manifest.json").read_text(encoding="utf-8"))
    assert written == manifest.to_json()
    assert written["config"] == {"format": fmt, "holdout": "/data/holdout.txt", "ratios": [0.8, 0.1, 0.1]}
    assert written["batch_size"] == 4
    assert str(tmp_path) not in (tmp_path / "manifest.json").read_text(encoding="utf-8")


def test_sha256_and_dataset_hash_match_the_files(tmp_path: Path) -> None:
    manifest = write_mlx_dataset(_rows((8, 4, 4)), tmp_path, batch_size=4)
    digests = [hashlib.sha256((tmp_path / f"{split}.jsonl").read_bytes()).hexdigest() for split in SPLITS]
    assert [manifest.sha256[split] for split in SPLITS] == digests
    assert manifest.dataset_hash == hashlib.sha256("".join(digests).encode()).hexdigest()


def test_read_manifest_round_trips(tmp_path: Path) -> None:
    written = write_mlx_dataset(
        _rows((8, 2, 3)), tmp_path, batch_size=4, pad_small_splits=True, config={"seed": 7}, partitions=["d1"]
    )
    assert read_manifest(tmp_path) == written


@pytest.mark.parametrize("split", SPLITS)
def test_read_manifest_refuses_a_changed_file(tmp_path: Path, split: str) -> None:
    write_mlx_dataset(_rows((8, 4, 4)), tmp_path, batch_size=4)
    path = tmp_path / f"{split}.jsonl"
    os.chmod(path, 0o600)
    path.write_bytes(path.read_bytes()[:-1])
    with pytest.raises(ValueError, match=rf"{split}\.jsonl does not match its manifest"):
        read_manifest(tmp_path)


def test_read_manifest_without_a_manifest_says_where_it_looked(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"manifest\.json"):
        read_manifest(tmp_path)


def test_files_are_0600_and_folders_0700_whatever_the_umask(tmp_path: Path) -> None:
    out_dir = tmp_path / "data" / "mlx" / "window"
    old = os.umask(0o022)
    try:
        write_mlx_dataset(_rows((4, 4, 4)), out_dir, batch_size=4)
    finally:
        os.umask(old)
    for folder in (tmp_path / "data", tmp_path / "data" / "mlx", out_dir):
        assert _mode(folder) == 0o700
    names = sorted(p.name for p in out_dir.iterdir())
    assert names == ["manifest.json", "test.jsonl", "train.jsonl", "valid.jsonl"]  # no temporaries left
    for name in names:
        assert _mode(out_dir / name) == 0o600


@pytest.mark.parametrize(("fmt", "seed"), [("tools", 0), ("chat", 1), ("completions", 2), ("tools", 3)])
def test_same_rows_in_any_order_give_identical_bytes(tmp_path: Path, fmt: str, seed: int) -> None:
    rows = _rows((12, 3, 5), fmt)
    first = write_mlx_dataset(rows, tmp_path / "a", batch_size=4, pad_small_splits=True, config={"k": 1})
    shuffled = rows.sample(frac=1.0, random_state=seed).reset_index(drop=True)
    second = write_mlx_dataset(shuffled, tmp_path / "b", batch_size=4, pad_small_splits=True, config={"k": 1})
    for name in ("train.jsonl", "valid.jsonl", "test.jsonl", "manifest.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    assert first.dataset_hash == second.dataset_hash


GUARD_CASES = [
    # sizes, batch_size, pad, expected counts or the error's fragments
    ((8, 4, 4), 4, False, {"counts": (8, 4, 4), "padded": (0, 0, 0)}),
    ((8, 2, 3), 4, True, {"counts": (8, 4, 4), "padded": (0, 2, 1)}),
    ((8, 1, 9), 4, True, {"counts": (8, 4, 9), "padded": (0, 3, 0)}),
    (
        (8, 2, 3),
        4,
        False,
        {
            "error": [
                "batch_size=4",
                "valid has 2",
                "test has 3",
                "train has 8",
                "valid and test are too small",
                "--batch-size to 2",
                "widen the window",
                "pad_small_splits",
            ]
        },
    ),
    ((8, 5, 3), 4, False, {"error": ["test has 3", "test is too small", "--batch-size to 3"]}),
    (
        (3, 5, 5),
        4,
        True,
        {"error": ["train has 3", "train is too small", "--batch-size to 3", "never padded"]},
    ),
    ((8, 0, 4), 4, True, {"error": ["valid has 0", "valid is empty", "no batch size"]}),
    ((8, 4, 0), 4, False, {"error": ["test has 0", "test is empty"]}),
    ((0, 0, 0), 1, True, {"error": ["train has 0", "train and valid and test are empty"]}),
]


@pytest.mark.parametrize(("sizes", "batch_size", "pad", "expected"), GUARD_CASES)
def test_batch_size_guard(
    tmp_path: Path, sizes: tuple[int, int, int], batch_size: int, pad: bool, expected: dict[str, Any]
) -> None:
    rows = _rows(sizes)
    if "error" in expected:
        with pytest.raises(SplitTooSmallError) as raised:
            write_mlx_dataset(rows, tmp_path, batch_size=batch_size, pad_small_splits=pad)
        for fragment in expected["error"]:
            assert fragment in str(raised.value)
        assert not (tmp_path / "manifest.json").exists()
        return
    manifest = write_mlx_dataset(rows, tmp_path, batch_size=batch_size, pad_small_splits=pad)
    assert tuple(manifest.counts[split] for split in SPLITS) == expected["counts"]
    assert tuple(manifest.padded[split] for split in SPLITS) == expected["padded"]
    for split in SPLITS:
        assert len(_lines(tmp_path / f"{split}.jsonl")) == manifest.counts[split]
        assert sum(manifest.per_tool[split].values()) == manifest.counts[split]


def test_padding_repeats_the_splits_own_rows_cyclically_in_decision_id_order(tmp_path: Path) -> None:
    rows = _rows((8, 3, 4))
    write_mlx_dataset(rows, tmp_path, batch_size=7, pad_small_splits=True)
    valid = list(rows[rows["split"] == "valid"].sort_values("decision_id")["record"])
    assert _lines(tmp_path / "valid.jsonl") == valid + valid + valid[:1]
    assert not set(_lines(tmp_path / "valid.jsonl")) & set(_lines(tmp_path / "train.jsonl"))


def test_a_refused_write_leaves_the_previous_dataset_alone(tmp_path: Path) -> None:
    before = write_mlx_dataset(_rows((8, 4, 4)), tmp_path, batch_size=4)
    with pytest.raises(SplitTooSmallError):
        write_mlx_dataset(_rows((8, 1, 1)), tmp_path, batch_size=4)
    assert read_manifest(tmp_path) == before


def test_rewriting_replaces_every_file(tmp_path: Path) -> None:
    write_mlx_dataset(_rows((8, 4, 4), "chat"), tmp_path, batch_size=4)
    after = write_mlx_dataset(_rows((5, 2, 2), "completions"), tmp_path, batch_size=2)
    assert read_manifest(tmp_path) == after
    assert len(_lines(tmp_path / "train.jsonl")) == 5


def _with(rows: pd.DataFrame, column: str, index: int, value: Any) -> pd.DataFrame:
    rows = rows.copy()
    rows[column] = rows[column].astype(object)
    rows.at[index, column] = value
    return rows


BAD_INPUTS = [
    ("missing column", lambda r: r.drop(columns=["target_name"]), "lack column"),
    ("unknown split", lambda r: _with(r, "split", 0, "validation"), "unknown split"),
    (
        "duplicate id",
        lambda r: _with(r, "decision_id", 1, r.at[0, "decision_id"]),
        "decision_id must be unique",
    ),
    ("null target", lambda r: _with(r, "target_name", 2, None), "target_name must be a string"),
    ("not JSON", lambda r: _with(r, "record", 0, "{not json"), "not valid JSON"),
    ("two lines", lambda r: _with(r, "record", 0, '{"messages":\n[]}'), "one line"),
    ("no messages", lambda r: _with(r, "record", 0, '{"text": "hi"}'), "'messages' or 'prompt'"),
    ("mixed formats", lambda r: _with(r, "record", 0, _record("completions", 0, "read_file")), "mix formats"),
]


@pytest.mark.parametrize(("case", "spoil", "message"), BAD_INPUTS, ids=[case[0] for case in BAD_INPUTS])
def test_bad_rows_are_refused_with_what_was_wrong(
    tmp_path: Path, case: str, spoil: Any, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        write_mlx_dataset(spoil(_rows((4, 4, 4))), tmp_path, batch_size=4)


@pytest.mark.parametrize("batch_size", [0, -1])
def test_batch_size_must_be_positive(tmp_path: Path, batch_size: int) -> None:
    with pytest.raises(ValueError, match="batch_size must be a positive integer"):
        write_mlx_dataset(_rows((4, 4, 4)), tmp_path, batch_size=batch_size)


def test_config_values_json_cannot_hold_are_refused(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match=r"cannot be written to manifest\.json"):
        write_mlx_dataset(_rows((4, 4, 4)), tmp_path, batch_size=4, config={"tokenizer": object()})


# A chat template that renders what our records hold: tool specs, messages and tool calls.
CHAT_TEMPLATE = (
    "{% if tools %}tools:{% for t in tools %} {{ t.function.name }}{% endfor %}{{ '\\n' }}{% endif %}"
    "{% for m in messages %}{{ m.role }}: {{ m.content or '' }}"
    "{% for c in m.tool_calls or [] %} call {{ c.function.name }} {{ c.function.arguments }}{% endfor %}"
    " <eos>{{ '\\n' }}{% endfor %}{% if add_generation_prompt %}assistant:{% endif %}"
)


def _tiny_tokenizer(texts: list[str]) -> Any:
    """A word-level tokenizer trained on `texts`, wrapped the way mlx-lm expects a Hugging Face one."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    core = Tokenizer(models.WordLevel(unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.Whitespace()
    core.train_from_iterator(texts, trainers.WordLevelTrainer(special_tokens=["<unk>", "<eos>"]))
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=core, unk_token="<unk>", eos_token="<eos>")
    tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer


@pytest.mark.parametrize(
    ("fmt", "pad"), [("tools", False), ("chat", False), ("completions", False), ("tools", True)]
)
def test_mlx_lm_loads_the_written_directory(tmp_path: Path, fmt: str, pad: bool) -> None:
    from mlx_lm.tuner.datasets import load_dataset

    rows = _rows((9, 2 if pad else 4, 3 if pad else 4), fmt)
    manifest = write_mlx_dataset(rows, tmp_path, batch_size=4, pad_small_splits=pad)
    tokenizer = _tiny_tokenizer([*rows["record"], "user assistant system tools call"])
    args = types.SimpleNamespace(data=str(tmp_path), train=True, test=True, mask_prompt=True, hf_dataset=None)

    train, valid, test = load_dataset(args, tokenizer)

    assert (len(train), len(valid), len(test)) == tuple(manifest.counts[split] for split in SPLITS)
    for dataset in (train, valid, test):
        tokens, offset = dataset.process(dataset[0])
        assert len(tokens) > 0
        assert 0 < offset < len(tokens)  # the prompt is masked, the target call is trained on
        assert all(isinstance(token, int) for token in tokens)
        assert set(tokens[offset:]) - {tokenizer.unk_token_id}


# ---- a rewrite replaces the whole directory or nothing ----------------------------------------

REWRITE_CHILD = """
import sys, time
from pathlib import Path
import pandas as pd
from trajectory_pipeline.dataset import mlx_data
rows, out_dir, ready = sys.argv[1:4]
real = mlx_data.write_bytes_atomic

def hang_at_test(dest, body):
    if dest.name == "test.jsonl":  # train.jsonl and valid.jsonl of the new version are written
        Path(ready).write_text(str(dest.parent))
        time.sleep(600)
    real(dest, body)

mlx_data.write_bytes_atomic = hang_at_test
mlx_data.write_mlx_dataset(pd.read_parquet(rows), Path(out_dir), batch_size=2)
"""


def _files(folder: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(folder.iterdir())}


def test_a_rewrite_killed_halfway_leaves_the_previous_directory_whole(tmp_path: Path) -> None:
    """The files used to be replaced one by one in place: a kill left a new train.jsonl beside an old
    test.jsonl (and no manifest). Now the new version is written beside it and swapped in."""
    import signal
    import subprocess
    import sys
    import time

    from tests.conftest import REPO_ROOT

    out_dir = tmp_path / "mlx"
    old = write_mlx_dataset(_rows((4, 2, 2)), out_dir, batch_size=2)
    before = _files(out_dir)
    new_rows = tmp_path / "new.parquet"
    _rows((6, 3, 3)).to_parquet(new_rows)
    ready = tmp_path / "ready"
    child = subprocess.Popen(
        [sys.executable, "-c", REWRITE_CHILD, str(new_rows), str(out_dir), str(ready)],
        cwd=REPO_ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        while not ready.exists():
            assert child.poll() is None, "the child ended before it wrote test.jsonl"
            assert time.monotonic() < deadline
            time.sleep(0.05)
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    staging = Path(ready.read_text())
    assert staging.parent == out_dir.parent and staging.name.startswith(".mlx.new-")
    assert (staging / "train.jsonl").exists()  # the new version had begun
    assert _files(out_dir) == before
    assert read_manifest(out_dir).dataset_hash == old.dataset_hash  # every file matches its manifest

    again = write_mlx_dataset(pd.read_parquet(new_rows), out_dir, batch_size=2)
    assert read_manifest(out_dir).counts == again.counts == {"train": 6, "valid": 3, "test": 3}
    assert not staging.exists(), "the next write did not sweep the killed writer's folder"
    assert sorted(path.name for path in out_dir.parent.iterdir()) == ["mlx", "new.parquet", "ready"]


def test_a_rewrite_that_fails_leaves_the_previous_directory_and_no_leftovers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from trajectory_pipeline.dataset import mlx_data

    out_dir = tmp_path / "mlx"
    write_mlx_dataset(_rows((4, 2, 2)), out_dir, batch_size=2)
    before = _files(out_dir)
    real = mlx_data.write_bytes_atomic

    def full_disk(dest: Path, body: bytes) -> None:
        if dest.name == "valid.jsonl":
            raise OSError(28, "No space left on device")
        real(dest, body)

    monkeypatch.setattr(mlx_data, "write_bytes_atomic", full_disk)
    with pytest.raises(OSError, match="No space left"):
        write_mlx_dataset(_rows((6, 3, 3)), out_dir, batch_size=2)
    assert _files(out_dir) == before
    assert [path.name for path in tmp_path.iterdir()] == ["mlx"]


@pytest.mark.parametrize("exchange", [True, False], ids=["renameat2-exchange", "two-renames"])
def test_the_new_directory_replaces_the_old_one_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, exchange: bool
) -> None:
    from trajectory_pipeline import parquet_io

    if not exchange:
        monkeypatch.setattr(parquet_io, "_exchange", lambda a, b: False)
    elif not sys_is_linux():
        pytest.skip("renameat2 is Linux's")
    out_dir = tmp_path / "mlx"
    write_mlx_dataset(_rows((4, 2, 2)), out_dir, batch_size=2)
    (out_dir / "stray.txt").write_text("a file of the old version only")
    manifest = write_mlx_dataset(_rows((6, 3, 3)), out_dir, batch_size=2)
    assert sorted(_files(out_dir)) == ["manifest.json", "test.jsonl", "train.jsonl", "valid.jsonl"]
    assert read_manifest(out_dir).dataset_hash == manifest.dataset_hash
    assert stat.S_IMODE(out_dir.stat().st_mode) == 0o700
    assert [path.name for path in tmp_path.iterdir()] == ["mlx"]


def sys_is_linux() -> bool:
    import sys

    return sys.platform.startswith("linux")
