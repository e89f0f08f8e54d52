"""`trajectory-pipeline serve`: mlx-lm's OpenAI-compatible server on 127.0.0.1 with the promoted model.

What is served is read from the adapter registry at every start: the promoted adapter of the most
recent promotion and the fused folder `promoted_model` recorded for it. Rolling back is promoting
another adapter in the registry; the next start serves that one's fused model, no file is moved.

    trajectory-pipeline serve                 # port TRAJECTORY_SERVE_PORT (8080)
    trajectory-pipeline serve --port 8181

The server is `python -m mlx_lm server` itself (no wrapper of ours in the request path): chat
completions with `tools` come back with OpenAI `tool_calls`, parsed by the tool parser mlx-lm infers
from the model's chat template. It listens on 127.0.0.1 only: the model was trained on a person's
transcripts. The process replaces this one (exec), so Ctrl-C and signals reach the server directly.
"""

from __future__ import annotations

import os
import socket
import sys
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy.engine import make_url

from trajectory_pipeline.training.registry import AdapterRegistry

HOST = "127.0.0.1"


class NothingToServe(RuntimeError):
    """The registry names no fused model to serve, or it cannot be served here; the message says
    what to do."""


@dataclass(frozen=True)
class ServedModel:
    """The registry's current promoted adapter and its fused model folder."""

    adapter_id: str
    partition: str
    path: Path


def served_model(registry: AdapterRegistry) -> ServedModel:
    """The fused model of the registry's current promoted adapter, or NothingToServe saying what to run."""
    record = registry.served()
    where = make_url(registry.url).render_as_string(hide_password=True)
    if record is None:
        raise NothingToServe(
            f"no promoted model in the adapter registry ({where}): run the weekly chain "
            "(trajectory-pipeline materialize --job weekly_retrain_job --partition <week>) until replay_eval "
            "promotes an adapter; promoted_model then fuses it"
        )
    materialize = f"trajectory-pipeline materialize --select promoted_model --partition {record.partition}"
    if record.model_path is None:
        raise NothingToServe(f"adapter {record.adapter_id} is promoted but not fused yet: run {materialize}")
    path = Path(record.model_path).expanduser()
    if not (path / "config.json").is_file():
        raise NothingToServe(
            f"adapter {record.adapter_id}'s fused model is gone from {path}: run {materialize} again"
        )
    return ServedModel(record.adapter_id, record.partition, path.resolve())


def check_port(port: int) -> None:
    """NothingToServe when 127.0.0.1:`port` is taken: said in one line before the server starts,
    instead of a traceback from mlx-lm's server after the model has loaded."""
    with socket.socket() as probe:
        try:
            probe.bind((HOST, port))
        except OSError as err:
            raise NothingToServe(
                f"{HOST}:{port} is not free ({err.strerror}): pass --port or set TRAJECTORY_SERVE_PORT"
            ) from None


def server_command(model: Path, port: int) -> list[str]:
    """mlx-lm's server on 127.0.0.1:`port` with `model`, greedy by default (as replay measured it)."""
    server = [sys.executable, "-m", "mlx_lm", "server"]
    return [*server, "--model", str(model), "--host", HOST, "--port", str(port)]


def announce(served: ServedModel, port: int) -> str:
    """What `serve` prints before the server starts: where to send requests and which model answers."""
    return (
        f"serving adapter {served.adapter_id} (week {served.partition}), fused model {served.path}\n"
        f"  URL: http://{HOST}:{port}/v1  (POST /v1/chat/completions, with tools)\n"
        f'  model id: {served.path}  (send it as "model", or leave model out)'
    )


def serve(registry: AdapterRegistry, port: int, note: str = "") -> None:
    """Print the URL and model (and `note`: which BLAS mlx runs on), then become mlx-lm's server (never
    returns); NothingToServe before anything is printed."""
    served = served_model(registry)
    registry.close()
    check_port(port)
    print(announce(served, port) + (f"\n  {note}" if note else ""), flush=True)
    command = server_command(served.path, port)
    os.execv(command[0], command)
