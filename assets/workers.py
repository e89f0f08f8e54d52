"""How many processes a range run of the daily assets spreads its days over (run config `workers`)."""

from typing import Any

import dagster as dg
from pydantic import Field

from trajectory_pipeline.parallel import default_workers
from trajectory_pipeline.settings import WORKERS


def workers_field() -> Any:
    return Field(
        default=0,
        ge=0,
        description=f"Processes a range of days is spread over; 0: one per CPU, or {WORKERS.name} when set.",
    )


def resolve_workers(configured: int) -> int:
    """The configured count, else the machine's; a bad TRAJECTORY_WORKERS fails the run with the fix."""
    if configured:
        return configured
    try:
        return default_workers()
    except ValueError as err:
        raise dg.Failure(str(err)) from None
