"""The Dagster asset graph: one module per stage, asset checks beside the asset they check."""

import warnings

import dagster as dg

import trajectory_pipeline  # noqa: F401  (sets Arrow's allocator before any asset imports pyarrow)

# The graph uses Dagster parameters still marked beta or preview, on purpose: single-run backfills
# (`backfill_policy`) and training windows that reach before the first partition
# (`allow_nonexistent_upstream_partitions`). Their notices are for us, not for every command a
# user runs, so they are filtered here, where every entry point's definitions load.
warnings.filterwarnings(
    "ignore",
    message=r"Parameter `(backfill_policy|allow_nonexistent_upstream_partitions)`",
    category=dg.BetaWarning,
)
# The daily checks have a result per day (assets/day_checks.py): partitioned checks, still "preview".
warnings.filterwarnings(
    "ignore", message=r"Specifying a partitions_def on an AssetCheckSpec", category=dg.PreviewWarning
)

# Who answers for every asset (shown in the UI; a team or an email, as Dagster accepts).
OWNERS = ["team:trajectory-pipeline"]
