"""The Dagster instance folder the project's commands run against: found or made, and kept private.

Dagster stores run logs, asset metadata (previews of transcript rows), check results and run config
in `DAGSTER_HOME`, and writes its own files there 0644 in 0755 folders. So the folder itself is
made 0700, or tightened if it is not, at every entry point that opens the instance: `make` (every
target that installs, `make ui` included), `trajectory-pipeline demo` and `materialize`
(`dagster_home`), and the definitions when they load (`keep_instance_private`), which covers
`dagster dev` or `dagster-daemon` started by hand, and the temporary home `dagster dev` makes when
DAGSTER_HOME is unset.
"""

from __future__ import annotations

import os
from pathlib import Path

from trajectory_pipeline.parquet_io import ensure_private_dir

REPO_CONFIG = Path(__file__).resolve().parents[1] / "dagster.yaml"


def keep_instance_private() -> Path | None:
    """Tighten the instance folder of this process (DAGSTER_HOME) to 0700, when there is one."""
    configured = os.environ.get("DAGSTER_HOME")
    if not configured:
        return None
    home = Path(configured).expanduser()
    return ensure_private_dir(home) if home.is_dir() else None


def dagster_home() -> Path:
    """DAGSTER_HOME (default ./.dagster_home), private, using the repository's dagster.yaml when it
    has none."""
    home = Path(os.environ.setdefault("DAGSTER_HOME", str(Path(".dagster_home").resolve())))
    ensure_private_dir(home)
    config = home / "dagster.yaml"
    if not config.exists() and not config.is_symlink() and REPO_CONFIG.exists():
        config.symlink_to(REPO_CONFIG)
    return home
