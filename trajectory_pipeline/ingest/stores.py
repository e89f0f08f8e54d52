"""Event stores: sources that are asked for a span of days, not listed as files.

A transcript format (`formats.py`) is files under a root folder: listed, sniffed, planned by
modification time and path date, parsed one file at a time. An event store is a database (or
anything like it) that can itself say which sessions started in a span of days, so ingestion asks
it once per pass of days instead (`days.ingest_days(..., stores=...)`), and routes what it gives to
the same day writers: the same redaction, caps, statistics, duplicate checks and quarantine rows
as a file's events.

An event store is any picklable object (a pass may run in a worker process) with:
- `name`: the `source` column of its rows, a key of `STORES`;
- `label`: what its rows' `source_path` holds (a table's name), and how logs name it;
- `shown()`: a description for logs and metadata that holds no password;
- `check()`: connect and validate the configuration, raising `StoreError` with a one-line fix;
- `read(lo_us, hi_us)`: every event of each session whose first plausible event falls in
  [lo_us, hi_us) (µs UTC), with its `session_start`, and a `BadLine` (also with a `session_start`
  in the span) for each record that cannot be read; records of other sessions are not given.

`STORES` describes the kinds there are (today one: `sql_events`, `sql_events.py`): the source's
title and the canonical-vocabulary table that maps its tool names. `vocabulary_of` serves every
source, file format or store.

    from trajectory_pipeline.ingest.stores import STORES, vocabulary_of
    vocabulary_of("sql_events")   # "home_made"
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol

from trajectory_pipeline.ingest.formats import FORMATS
from trajectory_pipeline.schema import BadLine, Event


class StoreError(Exception):
    """An event store cannot be read (unreachable, refused, misconfigured). The message is one line
    that names the store without its password and says what to change; it stops the run, as an
    unreadable source folder does, since ingesting around it would lose its sessions silently."""


class EventStore(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def label(self) -> str: ...

    def shown(self) -> str: ...

    def check(self) -> str: ...

    def read(self, lo_us: int, hi_us: int) -> Iterator[Event | BadLine]: ...


@dataclass(frozen=True)
class StoreKind:
    """What the pipeline knows of a kind of event store, beside its reader."""

    name: str
    title: str
    holds: str
    vocabulary: str  # its table in mining/vocabulary.py


STORES: dict[str, StoreKind] = {
    "sql_events": StoreKind(
        name="sql_events",
        title="SQL event store",
        holds="one row per agent event, in a table or view reached by a SQLAlchemy URL",
        vocabulary="home_made",
    ),
}


def vocabulary_of(source: str) -> str:
    """The canonical-vocabulary table of any source: a transcript format or an event store."""
    if source in FORMATS:
        return FORMATS[source].vocabulary
    if source in STORES:
        return STORES[source].vocabulary
    raise ValueError(f"source must be one of {[*FORMATS, *STORES]}, got {source!r}")
