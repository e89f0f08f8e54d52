"""The adapter registry as a Dagster resource: SQLite in the Dagster home by default, else any
SQLAlchemy URL."""

import dagster as dg
from pydantic import Field

from trajectory_pipeline.training.registry import AdapterRegistry, default_url


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
