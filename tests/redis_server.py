"""A throwaway Redis server for tests: Debian's `redis-server`, a free port on 127.0.0.1, no persistence.

    with running_redis(folder) as url:    # redis://127.0.0.1:<port>/0, stopped (and its folder left) at exit
        ...

`make test` installs Debian's `redis-server` package when it is missing (as root, with apt-get); by hand:

    python -m tests.redis_server install
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from tests.services import stop

START_S = 30
PACKAGE = "redis-server"


class RedisUnavailable(RuntimeError):
    """No redis-server here, and it cannot be installed; the message says why."""


def find_binary() -> Path | None:
    found = shutil.which("redis-server") or (
        "/usr/bin/redis-server" if Path("/usr/bin/redis-server").is_file() else None
    )
    return Path(found) if found else None


def install_from_debian() -> Path:
    """The redis-server binary, installing Debian's package first when it is missing."""
    found = find_binary()
    if found is not None:
        return found
    if shutil.which("apt-get") is None:
        raise RedisUnavailable("no apt-get here (not Debian or Ubuntu); install Redis's server")
    if os.geteuid() != 0:
        raise RedisUnavailable(f"installing Debian's {PACKAGE} package needs root: apt-get install {PACKAGE}")
    # apt's signature check runs as the _apt user: its temporary files go to /var/tmp, open to it.
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive", "TMPDIR": "/var/tmp"}
    for command in (
        ["apt-get", "update", "-qq"],
        ["apt-get", "install", "-y", "-qq", "--no-install-recommends", PACKAGE],
    ):
        done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise RedisUnavailable(
                f"`{' '.join(command)}` exited with {done.returncode}: {done.stderr[-500:]}"
            )
    found = find_binary()
    if found is None:
        raise RedisUnavailable(f"apt-get installed {PACKAGE} but there is no redis-server on PATH")
    return found


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _pong(port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
        sock.sendall(b"PING\r\n")
        return sock.recv(16).startswith(b"+PONG")
    return False


@contextlib.contextmanager
def running_redis(folder: Path, binary: Path | None = None) -> Iterator[str]:
    """A redis-server on a free port of 127.0.0.1, in the foreground of its own process group, with no
    snapshot and no append-only file; yields its URL and stops it on exit."""
    binary = binary or find_binary()
    if binary is None:
        raise RedisUnavailable("no redis-server on PATH")
    folder.mkdir(parents=True, exist_ok=True)
    port = _free_port()
    log = folder / "redis.log"
    options = {
        "bind": "127.0.0.1",
        "port": str(port),
        "protected-mode": "yes",
        "save": "",
        "appendonly": "no",
        "dir": str(folder),
        "logfile": str(log),
        "daemonize": "no",
    }
    server = subprocess.Popen(
        [str(binary), *(part for name, value in options.items() for part in (f"--{name}", value))],
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + START_S
        while not _pong(port):
            if server.poll() is not None or time.monotonic() > deadline:
                tail = log.read_text(errors="replace")[-2000:] if log.exists() else "(no log)"
                raise RedisUnavailable(f"redis-server did not answer on port {port}: {tail}")
            time.sleep(0.1)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        stop(server)


def main(argv: list[str]) -> int:
    """`install`: make sure redis-server is here (quietly; never fails the caller, the tests skip)."""
    if argv != ["install"]:
        print("usage: python -m tests.redis_server install", file=sys.stderr)
        return 2
    try:
        install_from_debian()
    except RedisUnavailable as exc:
        print(
            f"Redis is not installed and could not be installed ({exc}); "
            "tests/test_distributed.py will be skipped",
            file=sys.stderr,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
