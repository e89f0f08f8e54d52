"""docs/design.md is the design's source of truth that code cites, so it must not drift from the code.

A design document is read when it is trusted and trusted while it is right. These tests compare
its tables with the code they describe and fail, naming the difference, when one side changes
without the other:

- every stored table's schema: the document's table lists exactly the schema's columns, in order;
- the canonical tool vocabulary: the same tools with the same required and optional arguments;
- the replay scoring failure reasons: the same reasons in the same precedence order;
- the named values of the chain (tiers, action classes, splits, lanes, ...) are all mentioned;
- the layout: every stage folder of the core and every module of the core's top level and of the
  Dagster layer is named;
- every link to a section of the document (`](#anchor)`) leads to a heading.

Fix a failure by updating docs/design.md (or the code, if the document holds the intended design).
"""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow as pa
import pytest

from trajectory_pipeline.dataset.render import CONVENTIONS
from trajectory_pipeline.dataset.render import FORMATS as RECORD_FORMATS
from trajectory_pipeline.dataset.splits import COUNT_KEYS, SPLITS
from trajectory_pipeline.dataset.training_data import RENDERED_SCHEMA
from trajectory_pipeline.decisions.points import DECISION_SCHEMA
from trajectory_pipeline.evaluation.memory import MEMORY_SCHEMA
from trajectory_pipeline.evaluation.schema import EVAL_RESULT_SCHEMA, LANES, MODELS, SELECTORS
from trajectory_pipeline.evaluation.scoring import FAILURES, INTENT_MATCH_CLASSES, OPTIONAL_KEYS
from trajectory_pipeline.ingest.formats import SOURCES
from trajectory_pipeline.ingest.stores import STORES
from trajectory_pipeline.mining.actions import ACTION_CLASSES
from trajectory_pipeline.mining.attempts import INTENTS, TIERS, TRAJECTORY_SCHEMA
from trajectory_pipeline.mining.verification import INTENTS as SHELL_INTENTS
from trajectory_pipeline.mining.vocabulary import CANONICAL_TOOLS
from trajectory_pipeline.schema import EVENT_SCHEMA, KINDS, QUARANTINE_SCHEMA, ROLES
from trajectory_pipeline.serving.fuse import MODEL_MANIFEST_SCHEMA
from trajectory_pipeline.training.adapters import ADAPTER_MANIFEST_SCHEMA

REPO_ROOT = Path(__file__).resolve().parents[1]
DESIGN = REPO_ROOT / "docs" / "design.md"
CORE = REPO_ROOT / "trajectory_pipeline"

# Each stored table, by the name of its schema variable: the document's section for it has that
# name in its heading, e.g. "### `raw_sessions` (`EVENT_SCHEMA`, trajectory_pipeline/schema.py)".
SCHEMAS: dict[str, pa.Schema] = {
    "EVENT_SCHEMA": EVENT_SCHEMA,
    "QUARANTINE_SCHEMA": QUARANTINE_SCHEMA,
    "TRAJECTORY_SCHEMA": TRAJECTORY_SCHEMA,
    "DECISION_SCHEMA": DECISION_SCHEMA,
    "RENDERED_SCHEMA": RENDERED_SCHEMA,
    "ADAPTER_MANIFEST_SCHEMA": ADAPTER_MANIFEST_SCHEMA,
    "EVAL_RESULT_SCHEMA": EVAL_RESULT_SCHEMA,
    "MODEL_MANIFEST_SCHEMA": MODEL_MANIFEST_SCHEMA,
    "MEMORY_SCHEMA": MEMORY_SCHEMA,
}

# The stage folders the Layout section describes; a folder added later is found on disk as well.
STAGE_FOLDERS = ("ingest", "mining", "decisions", "dataset", "training", "evaluation", "sample")

# Values the document's rules are written in terms of: each must appear as `value`.
NAMED_VALUES: dict[str, tuple[str, ...]] = {
    "tiers": TIERS,
    "attempt intents": INTENTS,
    "action classes": ACTION_CLASSES,
    "shell intents": tuple(sorted(SHELL_INTENTS)),
    "target-matching shell intents": tuple(sorted(INTENT_MATCH_CLASSES)),
    "splits": SPLITS,
    "split filter counts": tuple(key for key in COUNT_KEYS if key not in ("input", "kept")),
    "record formats": RECORD_FORMATS,
    "call conventions": CONVENTIONS,
    "lanes": LANES,
    "models": MODELS,
    "selectors": SELECTORS,
    "sources": SOURCES + tuple(STORES),
    "event roles": ROLES,
    "event kinds": KINDS,
}

_HEADING = re.compile(r"^(#{1,6}) (.+)$")
_CODE = re.compile(r"`([^`\n]+)`")
_FENCED = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)


@pytest.fixture(scope="module")
def text() -> str:
    assert DESIGN.is_file(), f"{DESIGN.relative_to(REPO_ROOT)} is missing"
    return DESIGN.read_text(encoding="utf-8")


def section(text: str, marker: str) -> str:
    """The body under the one heading that contains `marker`, up to the next heading of the same or a
    higher level (so a level-2 section includes its subsections)."""
    lines = _FENCED.sub(lambda block: "\n" * block[0].count("\n"), text).splitlines()
    found = [(i, len(m[1])) for i, line in enumerate(lines) if (m := _HEADING.match(line)) and marker in m[2]]
    assert len(found) == 1, f"docs/design.md needs exactly one heading containing {marker!r}, found {found}"
    start, level = found[0]
    end = next(
        (i for i in range(start + 1, len(lines)) if (m := _HEADING.match(lines[i])) and len(m[1]) <= level),
        len(lines),
    )
    return "\n".join(lines[start + 1 : end])


def first_table(body: str) -> list[list[str]]:
    """The data rows (header and separator left out) of the first Markdown table in `body`, as cells."""
    rows: list[list[str]] = []
    for line in body.splitlines():
        if line.startswith("|"):
            rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
        elif rows:
            break
    assert len(rows) >= 2 and set(rows[1][0]) <= set("-: "), f"no Markdown table in:\n{body[:300]}"
    return rows[2:]


def code_name(cell: str) -> str:
    """The name a table's first cell holds: exactly one `name`."""
    match = re.fullmatch(r"`([^`]+)`", cell)
    assert match, f"a first cell must be one `name` in backticks, got {cell!r}"
    return match[1]


@pytest.mark.parametrize("variable", SCHEMAS)
def test_schema_table_lists_every_column_in_order(text: str, variable: str) -> None:
    body = section(text, f"`{variable}`")
    documented = [code_name(row[0]) for row in first_table(body)]
    columns = list(SCHEMAS[variable].names)
    missing = [name for name in columns if name not in documented]
    extra = [name for name in documented if name not in columns]
    assert not missing and not extra, (
        f"docs/design.md's table of {variable} drifted from the code: "
        f"columns not documented {missing}, documented columns the schema lacks {extra}"
    )
    assert documented == columns, f"{variable}: list the columns in the schema's order, {columns}"
    for row in first_table(body):
        assert len(row) >= 2 and row[1], f"{variable}: column {row[0]} has no meaning written beside it"


def test_vocabulary_table_matches_canonical_tools(text: str) -> None:
    rows = first_table(section(text, "`CANONICAL_TOOLS`"))
    documented = {code_name(row[0]): tuple(_CODE.findall(row[1])) for row in rows}
    differ = {
        tool: {"documented": documented.get(tool), "code": CANONICAL_TOOLS.get(tool)}
        for tool in sorted(set(documented) | set(CANONICAL_TOOLS))
        if documented.get(tool) != CANONICAL_TOOLS.get(tool)
    }
    assert not differ, (
        f"docs/design.md's vocabulary table drifted from CANONICAL_TOOLS (required arguments): {differ}"
    )
    optional = {code_name(row[0]): frozenset(_CODE.findall(row[2])) for row in rows if len(row) > 2}
    differ = {
        tool: {"documented": sorted(optional.get(tool, ())), "code": sorted(keys)}
        for tool, keys in OPTIONAL_KEYS.items()
        if optional.get(tool, frozenset()) != keys
    }
    assert not differ, f"docs/design.md's optional arguments drifted from scoring.OPTIONAL_KEYS: {differ}"


def test_failure_reasons_in_precedence_order(text: str) -> None:
    documented = tuple(code_name(row[0]) for row in first_table(section(text, "`FAILURES`")))
    assert documented == FAILURES, f"failure reasons: documented {documented}, scoring.FAILURES {FAILURES}"


@pytest.mark.parametrize("kind", NAMED_VALUES)
def test_named_values_are_mentioned(text: str, kind: str) -> None:
    mentioned = set(_CODE.findall(_FENCED.sub("", text)))
    missing = [value for value in NAMED_VALUES[kind] if value not in mentioned]
    assert not missing, f"docs/design.md never names these {kind}: {missing}"


def test_layout_names_every_stage_folder(text: str) -> None:
    folders = {path.parent.name for path in CORE.glob("*/__init__.py")}
    assert set(STAGE_FOLDERS) <= folders, f"stage folders gone from the code: {set(STAGE_FOLDERS) - folders}"
    layout = section(text, "Layout")
    missing = sorted(name for name in folders if f"`{name}/`" not in layout)
    assert not missing, f"the Layout section of docs/design.md never names these folders: {missing}"


@pytest.mark.parametrize(
    ("folder", "prefix"),
    [("trajectory_pipeline", ""), ("assets", "assets/"), ("resources", "resources/")],
)
def test_layout_names_every_module(text: str, folder: str, prefix: str) -> None:
    layout = section(text, "Layout")
    modules = sorted(p.name for p in (REPO_ROOT / folder).glob("*.py") if p.name != "__init__.py")
    assert modules, f"no modules found under {folder}/"
    missing = [name for name in modules if f"`{prefix}{name}`" not in layout]
    assert not missing, f"the Layout section of docs/design.md never names these {folder}/ modules: {missing}"


def test_section_links_resolve(text: str) -> None:
    """Code cites sections as docs/design.md#anchor; links inside the document must lead somewhere."""
    headings = [m[2] for line in _FENCED.sub("", text).splitlines() if (m := _HEADING.match(line))]
    anchors = {re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-") for heading in headings}
    links = re.findall(r"\]\(#([^)]+)\)", text)
    assert links, "docs/design.md links none of its own sections"
    broken = sorted(set(links) - anchors)
    assert not broken, f"links to sections docs/design.md does not have: {broken}"
