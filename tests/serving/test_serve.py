"""`trajectory-pipeline serve` for real: mlx_lm.server on a free 127.0.0.1 port with the registry's
promoted model, asked a chat completion with `tools` over HTTP; no model is one clear line; a
rollback in the registry changes what the next start serves."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.serving.conftest import TESTS_TASK, TOOLS, USER_TESTS, Served, adapter_record
from trajectory_pipeline import cli
from trajectory_pipeline.serving.fuse import ExportConfig, publish_model
from trajectory_pipeline.serving.server import served_model
from trajectory_pipeline.training.registry import AdapterRegistry, sqlite_url

REPO_ROOT = Path(__file__).resolve().parents[2]
STARTUP_S = 60.0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _request(url: str, body: dict[str, Any] | None = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def _wait_healthy(process: subprocess.Popen[str], url: str) -> None:
    deadline = time.monotonic() + STARTUP_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"serve exited with {process.returncode}: {process.communicate()[0]}")
        try:
            _request(f"{url}/health")
            return
        except (urllib.error.URLError, ConnectionError):
            time.sleep(0.25)
    raise AssertionError(f"no answer on {url}/health within {STARTUP_S:.0f} s")


@pytest.mark.serving
def test_serve_answers_a_chat_completion_with_a_tool_call(served: Served) -> None:
    port = _free_port()
    env = {**os.environ, "TRAJECTORY_REGISTRY_URL": served.registry_url}
    process = subprocess.Popen(
        [sys.executable, "-m", "trajectory_pipeline.cli", "serve", "--port", str(port)],
        cwd=REPO_ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_healthy(process, url)
        answer = _request(
            f"{url}/v1/chat/completions",
            {"messages": [{"role": "user", "content": TESTS_TASK}], "tools": TOOLS, "max_tokens": 64},
        )
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            # A test process started with SIGTERM ignored (a background job under nohup) hands that
            # on to the server, which then cannot be stopped so: not what this test is about.
            process.kill()
        output = process.communicate(timeout=30)[0]
    assert f"URL: {url}/v1" in output and "serving adapter week-1" in output
    assert f"model id: {served.fused.path}" in output
    [choice] = answer["choices"]
    [call] = choice["message"]["tool_calls"]
    assert call["function"]["name"] == "run_shell"
    assert json.loads(call["function"]["arguments"]) == {"command": USER_TESTS}
    assert choice["finish_reason"] == "tool_calls"


@pytest.mark.serving
def test_no_promoted_model_is_one_line_saying_how_to_get_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = AdapterRegistry(sqlite_url(tmp_path / "empty.sqlite"))
    assert empty.list() == []  # the registry exists, with no adapter in it
    monkeypatch.setenv("TRAJECTORY_REGISTRY_URL", empty.url)
    assert cli.main(["serve"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("trajectory-pipeline serve: no promoted model in the adapter registry")
    assert "materialize --job weekly_retrain_job" in err


def test_a_registry_file_that_is_not_there_is_one_line_and_is_not_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "typo" / "adapters.sqlite"
    monkeypatch.setenv("TRAJECTORY_REGISTRY_URL", sqlite_url(missing))
    assert cli.main(["serve"]) == 2
    err = capsys.readouterr().err
    assert (
        err.startswith(f"trajectory-pipeline serve: no adapter registry at {missing}")
        and err.count("\n") == 1
    )
    assert not (tmp_path / "typo").exists()


@pytest.mark.serving
def test_a_promoted_adapter_not_yet_fused_names_the_week_to_materialize(
    served: Served, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    registry = AdapterRegistry(sqlite_url(tmp_path / "registry.sqlite"))
    registry.register(adapter_record("week-0", served.base, served.adapter))
    registry.promote("week-0")
    monkeypatch.setenv("TRAJECTORY_REGISTRY_URL", registry.url)
    assert cli.main(["serve", "--port", "1"]) == 2
    err = capsys.readouterr().err
    assert "adapter week-0 is promoted but not fused yet" in err
    assert "materialize --select promoted_model --partition 2026-11-22" in err


@pytest.mark.serving
def test_rolling_back_in_the_registry_changes_what_the_next_start_serves(
    served: Served, tmp_path: Path
) -> None:
    registry = AdapterRegistry(sqlite_url(tmp_path / "registry.sqlite"))
    models = ExportConfig(models_dir=str(tmp_path / "models"))
    for adapter_id in ("week-1", "week-2"):
        registry.register(adapter_record(adapter_id, served.base, served.adapter))
        promoted = registry.promote(adapter_id)
        fused = publish_model(promoted, served.base, served.adapter, models)
        registry.record_model(adapter_id, str(fused.path))
    assert served_model(registry).adapter_id == "week-2"
    registry.promote("week-1")  # the rollback
    now = served_model(registry)
    assert (now.adapter_id, now.path) == ("week-1", (tmp_path / "models" / "week-1").resolve())


@pytest.mark.serving
def test_a_port_in_use_is_one_line_before_the_model_loads(
    served: Served, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TRAJECTORY_REGISTRY_URL", served.registry_url)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert cli.main(["serve", "--port", str(port)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"trajectory-pipeline serve: 127.0.0.1:{port} is not free") and err.count("\n") == 1
