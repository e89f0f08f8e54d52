"""A throwaway PostgreSQL server for tests: Debian's binaries, a temp folder, a free port on 127.0.0.1.

    with running_postgres() as server:    # initdb, pg_ctl start, createdb; pg_ctl stop and rm at exit
        engine = sqlalchemy.create_engine(server.url())

initdb refuses to run as root, so under root the server runs as Debian's `postgres` system user
(created by the `postgresql` package), in a folder under that user's home (/var/lib/postgresql),
since /tmp may be closed to other users; otherwise it runs as the current user under $TMPDIR.
TCP on 127.0.0.1 asks for a random password (scram-sha-256), so the password path of a production
config is exercised; the Unix socket in the folder trusts local admin commands (createdb, pg_ctl).
Durability is off (fsync, synchronous_commit): the data is thrown away.

`make test` installs the binaries from Debian's packages when they are missing; by hand:

    python -m tests.postgres_server install    # as root, on Debian: apt-get install postgresql
"""

from __future__ import annotations

import contextlib
import os
import pwd
import re
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy.engine import URL

DEBIAN_ROOT = Path("/usr/lib/postgresql")
SUPERUSER = "postgres"
DATABASE = "trajectory"
START_ATTEMPTS = 3  # a free port can be taken between choosing it and the server binding it
COMMAND_TIMEOUT_S = 120


class PostgresUnavailable(RuntimeError):
    """PostgreSQL's server binaries are not here and cannot be installed; the message says why."""


@dataclass(frozen=True)
class PostgresServer:
    """A running server: where to reach it and as whom."""

    host: str
    port: int
    socket_dir: Path
    user: str
    password: str
    database: str

    def url(self, driver: str = "postgresql+psycopg2") -> str:
        """The SQLAlchemy URL of the database (password quoted)."""
        return URL.create(
            driver,
            username=self.user,
            password=self.password,
            host=self.host,
            port=self.port,
            database=self.database,
        ).render_as_string(hide_password=False)


def find_binaries() -> Path | None:
    """The folder holding initdb and pg_ctl: Debian's newest version first, then PATH; None if absent."""
    versions = sorted(
        (folder for folder in DEBIAN_ROOT.glob("*/bin") if (folder / "initdb").is_file()),
        key=lambda folder: [int(n) for n in re.findall(r"\d+", folder.parent.name)],
        reverse=True,
    )
    if versions:
        return versions[0]
    initdb = shutil.which("initdb")
    if initdb is not None and shutil.which("pg_ctl") is not None:
        return Path(initdb).resolve().parent
    return None


def install_from_debian() -> Path:
    """Find the binaries, installing Debian's `postgresql` package first when they are missing."""
    found = find_binaries()
    if found is not None:
        return found
    if shutil.which("apt-get") is None:
        raise PostgresUnavailable("no apt-get here (not Debian or Ubuntu); install PostgreSQL's server")
    if os.geteuid() != 0:
        raise PostgresUnavailable(
            "installing Debian's postgresql package needs root; run `apt-get install postgresql` as root"
        )
    # apt's signature check runs as the _apt user: its temporary files go to /var/tmp, open to it
    # even where /tmp is not (0700 here).
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive", "TMPDIR": "/var/tmp"}
    for command in (
        ["apt-get", "update", "-qq"],
        ["apt-get", "install", "-y", "-qq", "--no-install-recommends", "postgresql"],
    ):
        done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise PostgresUnavailable(
                f"`{' '.join(command)}` exited with {done.returncode}: {done.stderr.strip()[-500:]}"
            )
    found = find_binaries()
    if found is None:
        raise PostgresUnavailable(f"apt-get installed postgresql but no initdb is under {DEBIAN_ROOT}")
    return found


@contextlib.contextmanager
def running_postgres(bin_dir: Path | None = None) -> Iterator[PostgresServer]:
    """Start a fresh server with database `trajectory`; stop it and remove its folder on exit."""
    bin_dir = bin_dir if bin_dir is not None else find_binaries()
    if bin_dir is None:
        raise PostgresUnavailable(f"no initdb under {DEBIAN_ROOT}/*/bin or on PATH")
    owner = _server_owner()
    # Under root the folder goes in the postgres user's home: /tmp may be closed to other users.
    parent = None if owner is None or not os.path.isdir(owner.pw_dir) else owner.pw_dir
    root = Path(tempfile.mkdtemp(prefix="trajectory-pg-", dir=parent))
    data = root / "data"
    try:
        if owner is not None:
            os.chown(root, owner.pw_uid, owner.pw_gid)
        password = secrets.token_hex(16)
        (root / "pwfile").write_text(password + "\n")
        if owner is not None:
            os.chown(root / "pwfile", owner.pw_uid, owner.pw_gid)
        _run(
            owner,
            root,
            bin_dir / "initdb",
            f"--pgdata={data}",
            f"--username={SUPERUSER}",
            f"--pwfile={root / 'pwfile'}",
            "--auth-local=trust",
            "--auth-host=scram-sha-256",
            "--encoding=UTF8",
            "--no-locale",
            "--no-sync",
            "--no-instructions",
        )
        port = _start(owner, root, bin_dir, data)
        try:
            _run(
                owner, root, bin_dir / "createdb", "-h", str(root), "-p", str(port), "-U", SUPERUSER, DATABASE
            )
            yield PostgresServer("127.0.0.1", port, root, SUPERUSER, password, DATABASE)
        finally:
            _run(owner, root, bin_dir / "pg_ctl", "stop", f"--pgdata={data}", "--mode=fast", "--wait")
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _server_owner() -> pwd.struct_passwd | None:
    """The user the server must run as: `postgres` under root (initdb refuses root), else None (us)."""
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam(SUPERUSER)
    except KeyError:
        raise PostgresUnavailable(
            f"running as root and there is no {SUPERUSER!r} system user to run the server as "
            "(Debian's postgresql package creates it)"
        ) from None


def _start(owner: pwd.struct_passwd | None, root: Path, bin_dir: Path, data: Path) -> int:
    """pg_ctl start on a free port; retried with another port if that one was taken meanwhile."""
    error: subprocess.CalledProcessError | None = None
    for _ in range(START_ATTEMPTS):
        port = _free_port()
        settings = {
            "listen_addresses": "127.0.0.1",
            "port": str(port),
            "unix_socket_directories": str(root),  # no spaces: pg_ctl hands the options to a shell
            "fsync": "off",
            "synchronous_commit": "off",
            "full_page_writes": "off",
        }
        options = " ".join(f"-c {name}={value}" for name, value in settings.items())
        log = root / "server.log"
        try:
            _run(
                owner,
                root,
                bin_dir / "pg_ctl",
                "start",
                f"--pgdata={data}",
                f"--log={log}",
                "--wait",
                "--timeout=60",
                f"--options={options}",
            )
            return port
        except subprocess.CalledProcessError as exc:
            error = exc
            exc.add_note(f"server log:\n{_tail(log)}")
    assert error is not None
    raise error


def _run(owner: pwd.struct_passwd | None, cwd: Path, *command: str | Path) -> None:
    """Run a PostgreSQL command as the server's owner; a failure raises with its output attached."""
    args = [str(part) for part in command]
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(cwd), "LC_ALL": "C"}
    done = subprocess.run(
        args,
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT_S,
        check=False,
        user=None if owner is None else owner.pw_uid,
        group=None if owner is None else owner.pw_gid,
        extra_groups=None if owner is None else [],  # drop root's supplementary groups
    )
    if done.returncode != 0:
        error = subprocess.CalledProcessError(done.returncode, args, done.stdout, done.stderr)
        error.add_note(f"{Path(args[0]).name} said: {(done.stderr or done.stdout).strip()[-1000:]}")
        raise error


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _tail(path: Path, chars: int = 2000) -> str:
    return path.read_text(errors="replace")[-chars:] if path.exists() else "(no log)"


def main(argv: list[str]) -> int:
    """`install`: make sure the binaries are here (quietly; never fails the caller, the test skips)."""
    if argv != ["install"]:
        print("usage: python -m tests.postgres_server install", file=sys.stderr)
        return 2
    try:
        install_from_debian()
    except PostgresUnavailable as exc:
        print(
            f"PostgreSQL is not installed and could not be installed ({exc}); "
            "tests/test_postgres.py will be skipped",
            file=sys.stderr,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
