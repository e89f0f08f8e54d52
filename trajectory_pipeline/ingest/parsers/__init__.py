"""Parsers from each agent's transcript format into normalized `Event`s, one module per format.

What a parser module must expose, and the registry of formats built from them, are in
`trajectory_pipeline/ingest/formats.py`.
"""
