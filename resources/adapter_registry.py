"""The adapter registry as a Dagster resource: SQLite in the Dagster home by default,; any SQLAlchemy URL."""

import os
from pathlib import Path

import dagster as dg
from pydantic import Field

from trajectory_pipeline.training.registry import AdapterRegistry, sqlite_url


def default_url() -> str:
    """TRAJECTORY_REGISTRY_URL, else a SQLite file beside Dagster's own storage, so one folder holds
    a laptop's whole state."""
    if os.environ.get("TRAJECTORY_REGISTRY_URL"):
        return os.environ["TRAJECTORY_REGISTRY_URL"]
    home = Path(os.environ.get("DAGSTER_HOME", ".dagster_home")).expanduser()
    return sqlite_url(home / "adapters.sqlite")


class AdapterRegistryResource(dg.ConfigurableResource):
    """Where trained adapters are recorded, promoted or rejected."""

    url: str = Field(
        default_factory=default_url,
        description="SQLAlchemy URL of the registry (default: $TRAJECTORY_REGISTRY_URL, else "
        "sqlite:///$DAGSTER_HOME/adapters.sqlite).",
    )

    def registry(self) -> AdapterRegistry:
        return AdapterRegistry(self.url)
