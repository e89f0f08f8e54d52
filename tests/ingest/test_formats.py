"""A format is one parser module and one registry entry: every registered format must have every part,
and every place that lists formats (vocabulary tables, the session-sources resource, the README)
must follow the registry rather than a list of its own."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from resources.session_sources import SessionSources
from trajectory_pipeline.ingest.formats import FORMATS, SourceFormat, roots_table
from trajectory_pipeline.ingest.sql_events import SqlEventsConfig
from trajectory_pipeline.ingest.stores import STORES
from trajectory_pipeline.mining.vocabulary import TABLES
from trajectory_pipeline.settings import CHECKOUT


@pytest.mark.parametrize("spec", FORMATS.values(), ids=list(FORMATS))
def test_a_format_has_every_part(spec: SourceFormat) -> None:
    assert spec.name and spec.title and spec.holds
    assert spec.globs and all(pattern.startswith("**/") for pattern in spec.globs)
    assert spec.vocabulary in TABLES, f"{spec.name}: no vocabulary table {spec.vocabulary!r}"
    assert callable(spec.sniff) and callable(spec.parse) and callable(spec.earliest_start)
    assert spec.variable == f"TRAJECTORY_{spec.name.upper()}_ROOT"
    assert isinstance(spec.path_dated, bool)


def test_every_vocabulary_table_serves_a_format() -> None:
    assert set(TABLES) == {spec.vocabulary for spec in FORMATS.values()}


def test_the_sources_resource_has_a_root_per_format_and_the_event_store_fields() -> None:
    fields = set(SessionSources.model_fields)
    sql = {field.name for field in dataclasses.fields(SqlEventsConfig)}
    assert fields == {f"{name}_root" for name in FORMATS} | sql


def test_event_stores_are_not_formats_and_have_a_vocabulary() -> None:
    assert not set(STORES) & set(FORMATS)
    assert {kind.vocabulary for kind in STORES.values()} <= set(TABLES)


def test_the_readme_lists_every_format() -> None:
    readme = (CHECKOUT / "README.md").read_text()
    assert roots_table() in readme, (
        "README's sources table is out of date: paste ingest.formats.roots_table()"
    )


def test_a_root_comes_from_its_variable_at_run_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRAJECTORY_CODEX_ROOT", str(tmp_path))
    assert FORMATS["codex"].root() == str(tmp_path)
    assert SessionSources().configured()["codex"] == str(tmp_path)
    monkeypatch.setenv("TRAJECTORY_CODEX_ROOT", "")
    assert SessionSources().configured()["codex"] == ""  # empty turns the source off
    monkeypatch.delenv("TRAJECTORY_CODEX_ROOT")
    assert SessionSources().configured()["codex"] == FORMATS["codex"].default_root
    assert SessionSources(codex_root=str(tmp_path)).configured()["codex"] == str(tmp_path)
