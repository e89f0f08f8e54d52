"""Dagster resources: where sessions come from, and where tables are stored."""
