"""The core is importable and testable without Dagster: no module of `trajectory_pipeline/` imports
`dagster`, `assets` or `resources` (docs/design.md, "Layering rules"). The one exception is the CLI's
`demo` command, an entry point that runs the graph."""

from __future__ import annotations

import ast

from trajectory_pipeline.settings import CHECKOUT

DAGSTER_LAYER = ("dagster", "assets", "resources")
ENTRY_POINTS = {"trajectory_pipeline/cli.py"}


def _imports(source: str) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_the_core_never_imports_the_dagster_layer() -> None:
    offenders = {}
    for path in sorted((CHECKOUT / "trajectory_pipeline").rglob("*.py")):
        rel = path.relative_to(CHECKOUT).as_posix()
        if rel in ENTRY_POINTS:
            continue
        found = _imports(path.read_text()) & set(DAGSTER_LAYER)
        if found:
            offenders[rel] = sorted(found)
    assert offenders == {}


def test_at_most_ten_modules_sit_directly_in_the_core() -> None:
    top = sorted(p.name for p in (CHECKOUT / "trajectory_pipeline").glob("*.py"))
    assert len(top) <= 10, top
