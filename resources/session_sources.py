"""Where transcripts are read from: one root folder per transcript format, and the SQL event store.

The fields are made from the format registry (`trajectory_pipeline/ingest/formats.py`): one
`<source>_root` per format, whose default is read at run time from `TRAJECTORY_<SOURCE>_ROOT`,
else the folder the tool writes to. Set a field in a launchpad run to override both.

An empty value turns a source off. A root that does not exist is skipped with a log
line (most people run one or two of these agents); a root that exists but cannot be
read is an error, since silently skipping it would lose data.

The `sql_events_*` fields (a database of agent events, `trajectory_pipeline/ingest/sql_events.py`)
are derived from the core's `SqlEventsConfig`: unset, they come from `TRAJECTORY_SQL_EVENTS_*`;
`stores()` gives the configured event stores, checked (a database that cannot be read stops the
run, naming it without its password).

A root may be an object-store prefix (`s3://bucket/agent-logs/codex`, where each engineer's agent
uploads its logs): a run copies into the local cache (`TRAJECTORY_CACHE_DIR`) the objects changed
since what its days need (files last modified before the day ahead of its first day cannot hold
its sessions: the rule ingestion plans by), then lists and reads the copies like a folder, each
with its object's modification time. The sensor only lists the prefix.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

import dagster as dg
from pydantic import Field

from resources.core_config import derive, to_core
from resources.privacy import private_failure
from trajectory_pipeline.ingest.days import SourceRoot, SourceUnreadableError
from trajectory_pipeline.ingest.formats import FORMATS
from trajectory_pipeline.ingest.new_files import FileState, file_states
from trajectory_pipeline.ingest.sql_events import SqlEventsConfig, SqlEventStore
from trajectory_pipeline.ingest.stores import StoreError
from trajectory_pipeline.storage import objects


def _root_fields() -> Any:
    """A resource base with a `<source>_root` field per format: None means "from the settings"."""
    annotations = {f"{name}_root": str | None for name in FORMATS}
    namespace: dict[str, Any] = {
        f"{name}_root": Field(
            default=None,
            description=f"{spec.title}: the folder (or object-store prefix, s3://...) holding {spec.holds}. "
            "Empty turns the source off. Unset: "
            f"${spec.variable}, else {spec.default_root or 'off'}. A value set here is stored with the "
            "run as written: prefer ~/... to a path that names your login.",
        )
        for name, spec in FORMATS.items()
    }
    return type("SourceRoots", (dg.ConfigurableResource,), {**namespace, "__annotations__": annotations})


_SourceRoots: Any = _root_fields()
_SourceFields: Any = derive("SessionSourceFields", SqlEventsConfig, base=_SourceRoots)


class SessionSources(_SourceFields):
    """The root folders that hold each agent's transcripts, and the database of agent events."""

    def configured(self) -> dict[str, str]:
        """Each source's root: the field when set, else its variable, else its default folder."""
        found = {}
        for name, spec in FORMATS.items():
            value = getattr(self, f"{name}_root")
            found[name] = spec.root() if value is None else value
        return found

    def roots(
        self,
        log: logging.Logger | dg.DagsterLogManager | None = None,
        first_day: dt.date | None = None,
        *,
        remote: bool = True,
    ) -> list[SourceRoot]:
        """The roots to read, checked: missing ones skipped with a log line, unreadable ones an error.
        An object-store root is copied into the cache first (only what days from `first_day` on can
        need, when it is given) and read as that folder; `remote=False` leaves those out."""
        found = []
        for source, configured in self.configured().items():
            if not configured:
                continue
            if objects.is_remote(configured):
                if not remote:
                    continue
                mirrored = _mirrored(source, configured, first_day, log)
                if mirrored is not None:
                    found.append(mirrored)
                continue
            root = Path(configured).expanduser()
            if not root.exists():
                if log is not None:
                    log.info(f"{source}: {root} does not exist, skipping this source")
                continue
            if not root.is_dir():
                raise private_failure(
                    f"{source}_root {root} is a file, not a folder. Point it at the folder that holds "
                    f"the {source} transcripts, or set it to an empty string to turn the source off."
                )
            try:
                with os.scandir(root):
                    pass
            except PermissionError as err:
                raise private_failure(
                    f"{source}_root {root} exists but cannot be read ({err.strerror}). Give this user "
                    "read access to it, or set the root to an empty string to turn the source off."
                ) from None
            found.append(SourceRoot(source, root))
        return found

    def stores(self, log: logging.Logger | dg.DagsterLogManager | None = None) -> list[SqlEventStore]:
        """The event stores to read, each connected to and checked (one log line each); a store
        that cannot be read, or a bad column mapping, fails the run naming it without its password."""
        try:
            store = to_core(SqlEventsConfig, self).store()
            if store is None:
                return []
            described = store.check()
        except StoreError as err:
            raise private_failure(str(err)) from None
        if log is not None:
            log.info(described)
        return [store]

    def watched_files(self) -> tuple[list[FileState], int]:
        """Every transcript file under the roots with its size and modification time, and how many
        roots were looked at, for `new_sessions_sensor`: folders are listed and stat-ed, object-store
        prefixes listed (nothing is read or downloaded). Raises SourceUnreadableError when a folder or
        prefix cannot be listed."""
        local = self.roots(remote=False)  # object-store roots are listed below, not copied
        states = file_states(local)
        watched = len(local)
        for source, configured in self.configured().items():
            if configured and objects.is_remote(configured):
                try:
                    listed = objects.listing(configured)
                except (OSError, objects.StorageError) as err:
                    raise SourceUnreadableError(f"{source}: cannot list {configured} ({err})") from None
                watched += 1
                states += [
                    FileState(objects.join(configured, name), entry.size, int(entry.mtime * 1_000_000))
                    for name, entry in sorted(listed.items())
                    if _matches(source, name)
                ]
        return states, watched


def _matches(source: str, name: str) -> bool:
    """Whether an object's name fits the source's file patterns (as `ingest.days.matching_files`)."""
    base = name.rsplit("/", 1)[-1]
    return any(fnmatch(base, pattern.removeprefix("**/")) for pattern in FORMATS[source].globs)


def _mirrored(
    source: str, url: str, first_day: dt.date | None, log: logging.Logger | dg.DagsterLogManager | None
) -> SourceRoot | None:
    """The cache's copy of an object-store root, brought up to date; None (logged) when it is empty."""
    # A file last modified on day m can hold sessions up to day m + 1 (ingest.days._verdicts).
    since = None
    if first_day is not None:
        day_before = first_day - dt.timedelta(days=1)
        since = dt.datetime(day_before.year, day_before.month, day_before.day, tzinfo=dt.UTC).timestamp()
    try:
        if not objects.listing(url):
            if log is not None:
                log.info(f"{source}: nothing under {url}, skipping this source")
            return None
        return SourceRoot(source, objects.fetch_tree(url, since))
    except (OSError, objects.StorageError) as err:
        raise private_failure(
            f"{source}_root {url} cannot be read ({err}). Check the store's credentials and the "
            "prefix, or set the root to an empty string to turn the source off."
        ) from None
