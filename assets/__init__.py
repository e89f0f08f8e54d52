"""The Dagster asset graph: one module per stage, asset checks beside the asset they check."""
