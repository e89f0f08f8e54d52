"""The Dagster instance folder the project's commands run against: found or made, and kept private.

Dagster stores run logs, asset metadata (previews of transcript rows) and run config in
`DAGSTER_HOME`, so the folder is made 0700 and tightened if it is not, at every entry point that
opens the instance (`make`, `trajectory-pipeline demo` and `materialize`).
"""

from __future__ import annotations

import os
from pathlib import Path

from trajectory_pipeline.parquet_io import ensure_private_dir

REPO_CONFIG = Path(__file__).resolve().parents[1] / "dagster.yaml"


def dagster_home() -> Path:
    """DAGSTER_HOME (default ./.dagster_home), private, using the repository's dagster.yaml when it
    has none."""
    home = Path(os.environ.setdefault("DAGSTER_HOME", str(Path(".dagster_home").resolve())))
    ensure_private_dir(home)
    config = home / "dagster.yaml"
    if not config.exists() and not config.is_symlink() and REPO_CONFIG.exists():
        config.symlink_to(REPO_CONFIG)
    return home
