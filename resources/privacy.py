"""What the project writes into the Dagster instance goes through the redactor first.

The tables are redacted at ingestion, but the instance keeps more: materialization metadata
(previews, misassigned files, paths), log lines, check results and failure messages. Those come
from paths and settings as well as from the tables, and the instance (`DAGSTER_HOME`, or a team's
PostgreSQL) is read by everyone who opens the UI. So every text the assets put there passes the
same `Redactor` as the transcripts: secrets become `[REDACTED:kind]`, e-mail addresses are
replaced, and the login name in a home path becomes `<user>` (`/home/<user>/...`).

    context.add_asset_metadata(private_metadata(metadata), partition_key=day)
    log = private_log(context.log)          # for resources that log paths
    raise private_failure(f"{root} cannot be read")

What it cannot reach: run config typed into the launchpad is stored as typed (write `~/...`, or set
the `TRAJECTORY_*` variables, read at run time and never stored), and the stack traces Dagster
records name the code's own files.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Mapping
from typing import Any

import dagster as dg

from trajectory_pipeline.ingest.redact import Redactor


@functools.cache
def _redactor() -> Redactor:
    return Redactor()


def private(text: str) -> str:
    """`text` with secrets, e-mail addresses and home-folder login names replaced."""
    return _redactor().redact(text)[0] if text else text


def private_json(value: Any) -> Any:
    """A JSON-able value with every string (keys included) redacted."""
    if isinstance(value, str):
        return private(value)
    if isinstance(value, Mapping):
        return {private(str(key)): private_json(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [private_json(item) for item in value]
    return value


def private_value(value: Any) -> Any:
    """A metadata value with its text redacted; numbers and other kinds pass as they are."""
    if isinstance(value, str):
        return private(value)
    if isinstance(value, dg.MarkdownMetadataValue):
        return dg.MetadataValue.md(private(value.md_str or ""))
    if isinstance(value, dg.PathMetadataValue):
        return dg.MetadataValue.path(private(str(value.path)))
    if isinstance(value, dg.TextMetadataValue):
        return dg.MetadataValue.text(private(value.text or ""))
    if isinstance(value, dg.JsonMetadataValue):
        return dg.MetadataValue.json(private_json(value.data))
    if isinstance(value, list | dict):
        return private_json(value)
    return value


def private_metadata(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """Materialization or check metadata with every text value redacted."""
    return {key: private_value(value) for key, value in metadata.items()}


def private_failure(message: str, **kwargs: Any) -> dg.Failure:
    """A `dg.Failure` whose message (stored in the event log) is redacted."""
    metadata = kwargs.pop("metadata", None)
    return dg.Failure(private(message), metadata=private_metadata(metadata or {}), **kwargs)


class _PrivateLog:
    """A logger (Dagster's or Python's) whose messages are redacted before they are stored."""

    def __init__(self, log: logging.Logger | dg.DagsterLogManager) -> None:
        self._log = log

    def debug(self, message: str, *args: Any, **kwargs: Any) -> None:
        self._log.debug(private(str(message)), *args, **kwargs)

    def info(self, message: str, *args: Any, **kwargs: Any) -> None:
        self._log.info(private(str(message)), *args, **kwargs)

    def warning(self, message: str, *args: Any, **kwargs: Any) -> None:
        self._log.warning(private(str(message)), *args, **kwargs)

    def error(self, message: str, *args: Any, **kwargs: Any) -> None:
        self._log.error(private(str(message)), *args, **kwargs)


def private_log(log: logging.Logger | dg.DagsterLogManager) -> Any:
    """`log`, its messages redacted (typed Any: it stands in for either kind of logger)."""
    return _PrivateLog(log)
