"""mlx compiles nothing where it computes on a Linux CPU (trajectory_pipeline/__init__.py): there each
fused kernel is C++ built with g++ at first use, about a second each, for steps no faster. The
switch is set on importing the package, for the processes it starts too; the user's choice wins."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import trajectory_pipeline
from trajectory_pipeline import cli, settings
from trajectory_pipeline.settings import CHECKOUT

on_cpu = pytest.mark.skipif(
    not trajectory_pipeline.mlx_computes_on_cpu(), reason="mlx here is not its Linux x86 CPU build"
)
# A compiled function: an element-wise chain mlx fuses into one kernel.
COMPILED = "f = mx.compile(lambda x: mx.exp(x) * 2 + 1); mx.eval(f(mx.ones((64,)))); "


def _kernels_built(tmp_path: Path, code: str, **env: str) -> tuple[int, list[str]]:
    """Run `code` in a fresh interpreter with its own temporary folder (where mlx keeps the kernels it
    builds): how many kernels it built, and the words it printed."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    ours = (trajectory_pipeline.MLX_COMPILE_ENV, settings.MLX_COMPILE.name)
    environment = {k: v for k, v in os.environ.items() if k not in ours} | env | {"TMPDIR": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", code], env=environment, cwd=CHECKOUT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return len(list(tmp_path.rglob("*.so"))), done.stdout.split()


@on_cpu
def test_importing_the_package_turns_mlx_compilation_off_on_a_linux_cpu(tmp_path: Path) -> None:
    show = f"print(os.environ.get({trajectory_pipeline.MLX_COMPILE_ENV!r}))"
    code = f"import os, trajectory_pipeline, mlx.core as mx; {COMPILED}{show}"
    assert _kernels_built(tmp_path / "package", code) == (0, ["1"])
    # mlx imported first: switched off all the same.
    code = f"import os, mlx.core as mx, trajectory_pipeline; {COMPILED}{show}"
    assert _kernels_built(tmp_path / "mlx-first", code) == (0, ["1"])
    # The processes the package starts inherit the switch (mlx-lm's server, the benches' children).
    compiles = f"import mlx.core as mx; {COMPILED}"
    child = f"import subprocess, sys; subprocess.run([sys.executable, '-c', {compiles!r}], check=True)"
    assert _kernels_built(tmp_path / "child", f"import trajectory_pipeline; {child}")[0] == 0


@on_cpu
@pytest.mark.skipif(shutil.which("g++") is None, reason="no g++: mlx builds no kernel on the CPU without it")
def test_the_user_may_keep_compiling(tmp_path: Path) -> None:
    """TRAJECTORY_MLX_COMPILE=on, or mlx's own switch set by the user, are kept; the control shows
    that the kernel counted above is really built when compiling is on."""
    code = f"import os, trajectory_pipeline, mlx.core as mx; {COMPILED}"
    built, _ = _kernels_built(tmp_path / "on", code, TRAJECTORY_MLX_COMPILE="on")
    assert built >= 1
    show = f"print(os.environ[{trajectory_pipeline.MLX_COMPILE_ENV!r}])"
    assert _kernels_built(tmp_path / "mine", code + show, MLX_DISABLE_COMPILE="yes") == (0, ["yes"])


def test_off_turns_compilation_off_anywhere(tmp_path: Path) -> None:
    code = f"import os, trajectory_pipeline; print(os.environ.get({trajectory_pipeline.MLX_COMPILE_ENV!r}))"
    assert _kernels_built(tmp_path, code, TRAJECTORY_MLX_COMPILE="OFF") == (0, ["1"])


def test_a_bad_choice_is_one_line_and_no_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.setenv(settings.MLX_COMPILE.name, "Sometimes")
    assert cli.main(["tiny-model", "--out", str(tmp_path / "model"), "--data", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines() == [
        "trajectory-pipeline tiny-model: TRAJECTORY_MLX_COMPILE='Sometimes': use auto (off where mlx "
        "computes on a Linux x86 CPU), on or off; unset means auto."
    ]
    assert not (tmp_path / "model").exists()
    # Importing the package with that value leaves mlx as it is: the commands and the definitions say why.
    code = f"import os, trajectory_pipeline; print(os.environ.get({trajectory_pipeline.MLX_COMPILE_ENV!r}))"
    assert _kernels_built(tmp_path, code, TRAJECTORY_MLX_COMPILE="sometimes") == (0, ["None"])
