"""Ingestion: listing transcript files, parsing each format into events, redacting secrets, and
writing each UTC day of sessions (the `raw_sessions` stage)."""
