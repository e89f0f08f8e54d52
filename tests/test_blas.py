"""mlx on an optimized BLAS (trajectory_pipeline/blas.py): the same numbers as on its bundled reference
BLAS, the library really loaded, and the wiring (the CLI's re-exec, `make ui`'s LD_PRELOAD, the line
at definitions load).

Two fresh processes, one with the optimized libblas.so.3 in LD_PRELOAD and one without, compute an
mlx matmul of fixed random inputs, the forward pass of a random model of the bundled tiny model's
shape (TinyModelSpec's defaults) and the loss and gradients of one training step; the outputs agree
within float32 tolerance. Skips where no optimized BLAS is installed (macOS, or Linux without
Debian's libopenblas0-pthread), except where TRAJECTORY_REQUIRE_BLAS=1 (.ci/run sets it: `make test`
installs OpenBLAS as root there), where that is a failure.

    .venv/bin/python -m pytest tests/test_blas.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from trajectory_pipeline import blas, settings

REPO = Path(__file__).resolve().parents[1]
CLI = Path(sys.executable).with_name("trajectory-pipeline")
# float32 outputs of the same computation summed in a different order: ATOL is scaled by the output's
# largest magnitude (at least 1), as a sum's rounding grows with its terms (the matmul's reach 46).
RTOL, ATOL = 1e-4, 1e-5

PROBE = r"""
import json, sys
import numpy as np
import mlx.core as mx
import mlx.nn as nn
from mlx.utils import tree_flatten
from mlx_lm.models import qwen2
from trajectory_pipeline import blas, settings
from trajectory_pipeline.sample.tiny_model import ENDOFTEXT, IM_END, TinyModelSpec, model_config

rng = np.random.default_rng(0)
a = rng.standard_normal((3600, 64), dtype=np.float32)
b = rng.standard_normal((64, 2048), dtype=np.float32)
out = {"matmul": mx.array(a) @ mx.array(b)}

spec = TinyModelSpec()
mx.random.seed(spec.seed)
model = qwen2.Model(qwen2.ModelArgs.from_dict(model_config(spec, spec.vocab_size, {ENDOFTEXT: 0, IM_END: 1})))
tokens = mx.array(rng.integers(0, spec.vocab_size, (4, 257)))
out["logits"] = model(tokens[:, :-1])

def loss(model, inputs, targets):
    return nn.losses.cross_entropy(model(inputs), targets, reduction="mean")

out["loss"], grads = nn.value_and_grad(model, loss)(model, tokens[:, :-1], tokens[:, 1:])
out |= {"grad." + name: value for name, value in tree_flatten(grads)}
mx.eval(out)
mx.savez(sys.argv[1], **out)
info = blas.blas_in_use()
print(json.dumps({"kind": info.kind, "name": info.name, "path": info.path, "maps": blas.loaded_libraries()}))
"""


def clean_env(**extra: str) -> dict[str, str]:
    """This environment without any preload or BLAS choice of ours (OPENBLAS_* kept as they are)."""
    drop = ("LD_PRELOAD", blas.CHOICE_ENV, blas.REEXEC_ENV)
    return {**{k: v for k, v in os.environ.items() if k not in drop}, **extra}


@pytest.fixture(scope="module")
def optimized() -> Path:
    found = blas.find_optimized_blas({})
    if found is None:
        reason = (
            "no optimized BLAS installed (Debian's libopenblas0-pthread; `make install` installs it as root)"
            if blas.is_linux()
            else f"mlx runs on Accelerate and Metal on {sys.platform}: no BLAS to swap"
        )
        if settings.require_blas():
            pytest.fail(f"{settings.REQUIRE_BLAS.name}=1 but {reason}")
        pytest.skip(reason)
    return found


def probe(tmp_path: Path, name: str, env: dict[str, str]) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    out = tmp_path / f"{name}.npz"
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(out)],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    with np.load(out) as arrays:
        return json.loads(done.stdout.splitlines()[-1]), {key: arrays[key] for key in arrays.files}


def test_outputs_equal_on_the_optimized_and_the_reference_blas(tmp_path: Path, optimized: Path) -> None:
    reference_info, reference = probe(tmp_path, "reference", clean_env())
    fast_info, fast = probe(tmp_path, "optimized", clean_env(LD_PRELOAD=str(optimized)))

    assert reference_info["kind"] == "reference", reference_info
    assert Path(reference_info["path"]).parent.name == "mlx_cpu.libs", reference_info
    # The preloaded library is mapped and is what defines cblas_sgemm for mlx.
    assert fast_info["kind"] == "optimized", fast_info
    assert Path(fast_info["path"]).resolve() == optimized.resolve(), fast_info
    assert str(optimized.resolve()) in {str(Path(p).resolve()) for p in fast_info["maps"]}, fast_info

    assert sorted(fast) == sorted(reference) and len(reference) > 10  # matmul, logits, loss, gradients
    for key, expected in reference.items():
        assert fast[key].shape == expected.shape, key
        atol = ATOL * max(1.0, float(np.abs(expected).max()))
        np.testing.assert_allclose(fast[key], expected, rtol=RTOL, atol=atol, err_msg=key)
    assert np.isfinite(reference["loss"]) and reference["logits"].std() > 0
    # Equal within tolerance, not bit for bit: the other library really did the sums, in its own order.
    assert not np.array_equal(fast["matmul"], reference["matmul"])


REEXEC = r"""
import json, os, sys
from pathlib import Path
from trajectory_pipeline import blas, settings
with open(sys.argv[1], "a") as starts:
    starts.write(f"{os.getpid()}\n")
blas.reexec_with_optimized_blas()
info = blas.blas_in_use()
print(json.dumps({"argv": sys.argv[1:], "stdin": sys.stdin.read(), "kind": info.kind, "path": info.path,
                  "preload": os.environ.get("LD_PRELOAD", "")}))
"""


def run_reexec(tmp_path: Path, env: dict[str, str]) -> tuple[dict[str, Any], int]:
    starts = tmp_path / "starts"
    starts.unlink(missing_ok=True)
    done = subprocess.run(
        [sys.executable, "-c", REEXEC, str(starts), "two words", "--flag"],
        input="from stdin\n",
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout), len(starts.read_text().splitlines())


def test_reexec_runs_the_same_command_once_more_on_optimized_blas(tmp_path: Path, optimized: Path) -> None:
    result, starts = run_reexec(tmp_path, clean_env(LD_PRELOAD="libfoo-not-a-library.so"))
    assert starts == 2  # this process, then once again: never more
    assert result["argv"] == [str(tmp_path / "starts"), "two words", "--flag"]
    assert result["stdin"] == "from stdin\n"
    assert result["kind"] == "optimized" and Path(result["path"]).resolve() == optimized.resolve()
    assert result["preload"] == f"libfoo-not-a-library.so:{optimized}"  # the user's preloads kept first


@pytest.mark.parametrize(
    "env",
    [{blas.CHOICE_ENV: "reference"}, {blas.REEXEC_ENV: "/already/tried"}],
    ids=["opted-out", "already-re-executed"],
)
def test_reexec_stays_put(tmp_path: Path, env: dict[str, str]) -> None:
    result, starts = run_reexec(tmp_path, clean_env(**env))
    assert starts == 1 and result["preload"] == ""
    if blas.is_linux():
        assert result["kind"] == "reference"


def test_the_cli_runs_its_mlx_commands_on_the_optimized_blas(tmp_path: Path, optimized: Path) -> None:
    data = tmp_path / "train.jsonl"
    data.write_text('{"text": "read the file, then run the tests"}\n{"text": "edit the file"}\n')
    for choice, expected in (("auto", f"({optimized})"), ("reference", "reference BLAS bundled with mlx")):
        done = subprocess.run(
            [str(CLI), "tiny-model", "--out", str(tmp_path / choice), "--data", str(data), "--layers", "1"],
            env=clean_env(**{blas.CHOICE_ENV: choice}),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        lines = [line for line in done.stderr.splitlines() if "mlx BLAS:" in line]
        assert len(lines) == 1 and expected in lines[0], done.stderr
        assert done.stdout.startswith(f"built {tmp_path / choice}")


@pytest.mark.skipif(not blas.is_linux(), reason="LD_PRELOAD and the reference BLAS are Linux's")
def test_preload_env_adds_the_chosen_library_once(tmp_path: Path) -> None:
    library = tmp_path / "libblas.so.3"
    library.write_bytes(b"")
    env = blas.preload_env({blas.CHOICE_ENV: str(library), "LD_PRELOAD": "libjemalloc.so.2"})
    assert env is not None
    assert env["LD_PRELOAD"] == f"libjemalloc.so.2:{library}" and env[blas.REEXEC_ENV] == str(library)
    assert blas.preload_env(env) is None  # already re-executed
    assert blas.preload_env({blas.CHOICE_ENV: "reference"}) is None
    assert blas.preload_env({blas.CHOICE_ENV: str(tmp_path / "missing.so")}) is None
    # A BLAS the user preloads is theirs to choose.
    assert blas.preload_env({blas.CHOICE_ENV: str(library), "LD_PRELOAD": "/opt/libmkl_rt.so"}) is None


def test_ld_preload_command_for_make_ui(optimized: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "trajectory_pipeline.blas", "ld-preload"],
        env=clean_env(LD_PRELOAD="libjemalloc.so.2"),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and done.stdout.strip() == f"libjemalloc.so.2:{optimized}", done


def test_definitions_say_which_blas_at_load() -> None:
    done = subprocess.run(
        [sys.executable, "-c", "import assets.definitions"],
        env=clean_env(),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [line for line in done.stderr.splitlines() if "mlx BLAS:" in line]
    assert len(lines) == 1, done.stderr[-3000:]
    if blas.is_linux():  # the slow one, with the way to the fast one
        assert "reference BLAS bundled with mlx" in lines[0], lines[0]
        assert "LD_PRELOAD=" in lines[0] or "libopenblas0-pthread" in lines[0], lines[0]
