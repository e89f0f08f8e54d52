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
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import dagster as dg
from pydantic import Field

from resources.core_config import derive, to_core
from resources.privacy import private_failure
from trajectory_pipeline.ingest.days import SourceRoot
from trajectory_pipeline.ingest.formats import FORMATS
from trajectory_pipeline.ingest.sql_events import SqlEventsConfig, SqlEventStore
from trajectory_pipeline.ingest.stores import StoreError


def _root_fields() -> Any:
    """A resource base with a `<source>_root` field per format: None means "from the settings"."""
    annotations = {f"{name}_root": str | None for name in FORMATS}
    namespace: dict[str, Any] = {
        f"{name}_root": Field(
            default=None,
            description=f"{spec.title}: the folder holding {spec.holds}. Empty turns the source off. Unset: "
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

    def roots(self, log: logging.Logger | dg.DagsterLogManager | None = None) -> list[SourceRoot]:
        """The roots to read, checked: missing ones skipped with a log line, unreadable ones an error."""
        found = []
        for source, configured in self.configured().items():
            if not configured:
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
