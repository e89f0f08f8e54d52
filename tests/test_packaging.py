"""What `pip install` without extras gives is enough to run the pipeline: every third-party module that
`trajectory_pipeline/`, `assets/` or `resources/` imports comes with the runtime dependencies
(pyproject.toml's `dependencies`, or theirs), unless it belongs to a named extra. `make demo`, `make
ui` and `make serve` install just those (the dev extras cost a fresh two-core machine 2.5 minutes
more); a module that only the dev extras brought (psutil did) would fail them there, while every test
here, run with the dev extras, passed."""

from __future__ import annotations

import re
import sys
from importlib import metadata

from packaging.requirements import Requirement

from tests.test_layering import _imports  # top-level names a module imports, as the layering rule reads them
from trajectory_pipeline.settings import CHECKOUT

FIRST_PARTY = ("trajectory_pipeline", "assets", "resources")
# Imported only where the extra's feature is configured (TRAJECTORY_EXECUTOR, the celery workers' app).
EXTRA_MODULES = {"dagster_celery": "celery", "dagster_k8s": "k8s"}


def _imported_modules() -> dict[str, str]:
    """Each third-party top-level module imported anywhere in the package, with one file importing it."""
    found: dict[str, str] = {}
    for package in FIRST_PARTY:
        for path in sorted((CHECKOUT / package).rglob("*.py")):
            for top in sorted(_imports(path.read_text())):
                if top not in sys.stdlib_module_names and top not in FIRST_PARTY:
                    found.setdefault(top, path.relative_to(CHECKOUT).as_posix())
    return found


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _runtime_closure(extras: tuple[str, ...] = ()) -> set[str]:
    """The distributions `pip install trajectory-pipeline[extras]` brings on this platform."""
    seen: set[str] = set()
    pending = [("trajectory-pipeline", frozenset(extras))]
    while pending:
        name, wanted = pending.pop()
        for line in metadata.requires(name) or []:
            requirement = Requirement(line)
            applies = requirement.marker is None or any(
                requirement.marker.evaluate({"extra": extra}) for extra in (*wanted, "")
            )
            if not applies:
                continue
            dependency = _canonical(requirement.name)
            if dependency == "trajectory-pipeline":  # an extra naming others ("dev" = s3, celery, ...)
                pending.append((name, frozenset(requirement.extras)))
            elif dependency not in seen or requirement.extras:
                seen.add(dependency)
                pending.append((dependency, frozenset(requirement.extras)))
    return seen


def test_every_module_the_package_imports_comes_with_its_runtime_dependencies() -> None:
    runtime = _runtime_closure()
    providers = metadata.packages_distributions()
    missing = {
        module: (where, sorted(providers.get(module, ["nothing installed"])))
        for module, where in _imported_modules().items()
        if module not in EXTRA_MODULES and not {_canonical(d) for d in providers.get(module, [])} & runtime
    }
    assert missing == {}, f"imported, but only a dev extra (or nothing) installs it: {missing}"


def test_each_extra_module_comes_with_its_extra() -> None:
    providers = metadata.packages_distributions()
    for module, extra in EXTRA_MODULES.items():
        assert {_canonical(d) for d in providers[module]} & _runtime_closure((extra,)), module
