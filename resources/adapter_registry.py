"""The adapter registry as a Dagster resource: SQLite in the Dagster home by default,; any SQLAlchemy URL."""

import os
from pathlib import Path

import dagster as dg
from pydantic import Field

from trajectory_pipeline import settings
from trajectory_pipeline.training.registry import AdapterRegistry, sqlite_url


def default_url() -> str:
    """TRAJECTORY_REGISTRY_URL, else a SQLite file beside Dagster's own storage, so one folder holds
    a laptop's whole state."""
    configured = settings.registry_url()
    if configured:
        return configured
    home = Path(os.environ.get("DAGSTER_HOME", ".dagster_home")).expanduser()
    return sqlite_url(home / "adapters.sqlite")


class AdapterRegistryResource(dg.ConfigurableResource):
    """Where trained adapters are recorded, promoted or rejected."""

    url: str = Field(
        default="",
        description="SQLAlchemy URL of the registry; empty: $TRAJECTORY_REGISTRY_URL, else "
        "sqlite:///$DAGSTER_HOME/adapters.sqlite.",
    )

    def resolved_url(self) -> str:
        """The configured URL, else the settings' default (read now, so a run can change it)."""
        return self.url or default_url()

    def registry(self) -> AdapterRegistry:
        return AdapterRegistry(self.resolved_url())
