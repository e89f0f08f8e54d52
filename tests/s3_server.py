"""A throwaway S3-compatible server for tests: moto's standalone server, a process on 127.0.0.1.

    with running_s3() as server:          # `python -m moto.server` on a free port; stopped at exit
        env = server.env                  # AWS_ENDPOINT_URL and test credentials, for s3fs and boto
        url = server.url("warehouse")     # s3://<bucket>/warehouse

Why moto's server: it installs from PyPI with the dev extras (`moto[server]`), is pure Python (no
binary download, which the registries-only CI could not fetch), and speaks S3's HTTP API, so s3fs
talks to it exactly as to AWS: PUT, multipart uploads, list-objects-v2, HEAD, DELETE. MinIO and
SeaweedFS ship as binaries from their own sites and are in neither PyPI nor Debian. The data lives
in the server's memory and goes with it.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tests.services import stop

START_S = 60
BUCKET = "trajectory"


@dataclass(frozen=True)
class S3Server:
    endpoint: str
    bucket: str
    env: dict[str, str] = field(default_factory=dict)

    def url(self, *parts: str) -> str:
        return "/".join([f"s3://{self.bucket}", *parts])


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _answers(port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
        return True
    return False


def client_env(endpoint: str) -> dict[str, str]:
    """What an S3 client needs to reach the server and nothing else: its endpoint and throwaway keys;
    no profile or credentials file of the machine, no instance-metadata lookups."""
    return {
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_ACCESS_KEY_ID": "test-" + secrets.token_hex(4),
        "AWS_SECRET_ACCESS_KEY": secrets.token_hex(16),
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_CONFIG_FILE": os.devnull,
        "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
        "AWS_EC2_METADATA_DISABLED": "true",
    }


@contextlib.contextmanager
def running_s3(log: Path, bucket: str = BUCKET) -> Iterator[S3Server]:
    """moto's S3 server on a free port of 127.0.0.1 with one empty bucket; stopped on exit."""
    port = _free_port()
    with log.open("wb") as out:
        server = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + START_S
        while not _answers(port):
            if server.poll() is not None or time.monotonic() > deadline:
                tail = log.read_text(errors="replace")[-2000:]
                raise RuntimeError(f"moto's S3 server did not start: {tail}")
            time.sleep(0.2)
        endpoint = f"http://127.0.0.1:{port}"
        env = client_env(endpoint)
        import boto3

        boto3.client(
            "s3",
            endpoint_url=endpoint,
            aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"],
            region_name=env["AWS_DEFAULT_REGION"],
        ).create_bucket(Bucket=bucket)
        yield S3Server(endpoint, bucket, env)
    finally:
        stop(server)
