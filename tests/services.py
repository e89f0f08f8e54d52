"""The servers and programs the object-store, distributed, daemon and UI-backfill tests need: present,
or the test skips with the reason — a failure instead under TRAJECTORY_REQUIRE_SERVICES=1, which
.ci/run sets, since `make test` installs every one of them there (as root, on Debian)."""

from __future__ import annotations

import importlib.util
import subprocess
from typing import NoReturn

import pytest

from trajectory_pipeline import settings


def unavailable(reason: str) -> NoReturn:
    """Skip the test for `reason`, or fail it where every service must be there."""
    if settings.require_services():
        pytest.fail(f"{reason}, and {settings.REQUIRE_SERVICES.name} is set", pytrace=False)
    pytest.skip(reason)


def require_service(what: str, *modules: str) -> None:
    """Skip (or fail) unless every Python module that `what` needs is installed."""
    missing = [name for name in modules if _missing(name)]
    if missing:
        unavailable(
            f"no {what}: {', '.join(missing)} not installed "
            "(pip install -e '.[dev]' brings it; `make test` does)"
        )


def _missing(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is None
    except ModuleNotFoundError:
        return True


def stop(process: subprocess.Popen[bytes]) -> None:
    """Terminate a server the test started, and kill it when it does not stop within ten seconds."""
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
