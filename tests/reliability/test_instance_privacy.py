"""Nothing private reaches the Dagster instance: what the project writes there (materialization
metadata and previews, misassigned files, log lines, check results, failure messages) is redacted
like the tables are.

The plants are the ones a real machine has: a login name in Claude Code's encoded project folder
(`-home-NAME-repo`) that holds a misplaced Codex rollout, and a token in the folder everything lives
under (so the warehouse path, the source roots and a missing root's log line all hold it). After
real runs through a real SQLite instance, every byte the instance stored is searched.
"""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

import dagster as dg

from assets.decision_points import decision_points
from assets.mined_trajectories import mined_trajectories
from assets.raw_sessions import raw_sessions
from assets.rendered_splits import rendered_splits
from resources.parquet_io_manager import ParquetIOManager
from resources.session_sources import SessionSources
from trajectory_pipeline.ingest.formats import FORMATS
from trajectory_pipeline.sample.corpus import SOURCE_FOLDERS, CorpusSpec, generate_corpus

TOKEN = "ghp_" + "Zq8Lm2Nx4Vb6Kc0Jd3Hf5Gs7Ta9Wr1Ye2Ui4"  # a GitHub token's shape
LOGIN = "zed7planted"
DAY = "2026-11-22"
ASSETS = [raw_sessions, mined_trajectories, decision_points, rendered_splits]


def stored_bytes(home: Path) -> bytes:
    return b"\n".join(path.read_bytes() for path in sorted(home.rglob("*")) if path.is_file())


def test_metadata_logs_checks_and_failures_in_the_instance_hold_no_login_or_secret(tmp_path: Path) -> None:
    root = tmp_path / TOKEN
    generate_corpus(
        root / "corpus", CorpusSpec(days=1, end_date=dt.date(2026, 11, 22), sessions_per_day=3, seed=3)
    )
    claude = root / "corpus" / SOURCE_FOLDERS["claude_code"]
    rollout = next((root / "corpus" / SOURCE_FOLDERS["codex"]).rglob("rollout-*.jsonl"))
    (claude / f"-home-{LOGIN}-repo").mkdir()
    shutil.move(rollout, claude / f"-home-{LOGIN}-repo" / rollout.name)  # misassigned: reported by path
    roots = {f"{source}_root": str(root / "corpus" / sub) for source, sub in SOURCE_FOLDERS.items()}
    off = {f"{source}_root": "" for source in FORMATS if source not in SOURCE_FOLDERS}
    off["gemini_cli_root"] = str(root / "gemini")  # does not exist: a log line names it
    (root / "a-file").write_text("not a folder")
    home = tmp_path / "home"
    home.mkdir()
    with dg.instance_for_test(temp_dir=str(home)) as instance:
        resources = {
            "io_manager": ParquetIOManager(base_dir=str(root / "warehouse")),
            "session_sources": SessionSources(**roots, **off),
        }
        result = dg.materialize(ASSETS, partition_key=DAY, instance=instance, resources=resources)
        assert result.success
        [materialization] = [
            m
            for m in result.asset_materializations_for_node("raw_sessions")
            if m.asset_key.path == ["raw_sessions"]
        ]
        misassigned = materialization.metadata["misassigned_files"].value
        assert misassigned and all("-home-<user>-repo" in str(entry) for entry in misassigned)
        logs = [entry.user_message for entry in instance.all_logs(result.run_id)]
        assert any("[REDACTED:github_token]/gemini does not exist" in line for line in logs), logs
        # A failure's message names the root it refuses.
        broken = SessionSources(**{**roots, **off, "aider_root": str(root / "a-file")})
        failed = dg.materialize(
            [raw_sessions],
            partition_key=DAY,
            instance=instance,
            resources={**resources, "session_sources": broken},
            raise_on_error=False,
        )
        failure = failed.failure_data_for_node("raw_sessions")
        assert failure is not None and "[REDACTED:github_token]/a-file is a file" in failure.error.message

    stored = stored_bytes(home)
    assert len(stored) > 100_000  # the run's events, metadata and logs are there
    for planted in (TOKEN, LOGIN, "/home/dana", "-home-dana-"):
        assert planted.encode() not in stored, f"{planted} reached the instance"
