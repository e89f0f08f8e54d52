"""Dagster resources: where sessions come from, and where tables are stored."""

import trajectory_pipeline  # noqa: F401  (sets Arrow's allocator before any resource imports pyarrow)
