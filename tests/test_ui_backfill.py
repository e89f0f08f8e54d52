"""A backfill launched from the UI, in a real browser, and carried out by the daemon.

`dagster dev` (the webserver and the daemon, as `make ui` starts them) serves a fresh instance on a
free port of 127.0.0.1, with the transcript folders of a three-day sample corpus. Headless Chromium,
driven by Playwright, opens `daily_ingest_job`, clicks Materialize all, types the three days into the
partition dialog and clicks Launch backfill, as operations.md tells a person to. The daemon must then
materialize every day of it (one run: the daily assets' single-run backfill policy), and the backfill's
page must say so. Screenshots land in test-artifacts/ui-backfill/.

    .venv/bin/python -m pytest -m ui_backfill -s
"""

from __future__ import annotations

import datetime as dt
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pytest
from playwright.sync_api import Page, expect

from tests.conftest import REPO_ROOT
from tests.dagster_processes import QUICK_QUEUE, make_instance, started, wait_for, write_workspace
from tests.services import unavailable
from tests.test_distributed import source_env
from tests.test_ui_browser import (  # noqa: F401 (browser and page are fixtures used here)
    CHROMIUM,
    LOCATION,
    _free_port,
    _wait_until_loaded,
    browser,
    page,
)
from trajectory_pipeline import settings
from trajectory_pipeline.sample.corpus import CorpusSpec, generate_corpus

pytestmark = [pytest.mark.ui_backfill, pytest.mark.slow]

SCREENSHOTS = REPO_ROOT / "test-artifacts" / "ui-backfill"
DEADLINE_S = 240  # the backfill daemon looks every 30 s, then one run of three days
DAYS_BACK = (4, 2)  # the days backfilled, counted back from today: inside the dialog's last 90 days
TABLES = (
    "raw_sessions",
    "raw_sessions_quarantine",
    "mined_trajectories",
    "decision_points",
    "rendered_splits",
)
# The instance of tests/dagster_processes.py, without Dagster's "Join the community" dialog, which on a
# fresh instance pops up a second after a page loads, over whatever dialog is open then.
NO_NUX = f"{QUICK_QUEUE}nux:\n  enabled: false\n"


def backfill_days() -> list[str]:
    today = dt.datetime.now(dt.UTC).date()
    first, last = (today - dt.timedelta(days=back) for back in DAYS_BACK)
    return [(first + dt.timedelta(days=n)).isoformat() for n in range((last - first).days + 1)]


@pytest.fixture(scope="module")
def chromium() -> None:
    """Debian's Chromium, where every service must be there (elsewhere `browser` may find Playwright's)."""
    if settings.require_services() and not CHROMIUM.exists():
        unavailable(f"no Chromium at {CHROMIUM} (`make test` installs Debian's chromium as root)")


@pytest.fixture(scope="module")
def ui(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path, list[str]]]:
    """`dagster dev` on a fresh instance over a sample corpus; yields its URL, its root and the days."""
    root = tmp_path_factory.mktemp("ui-backfill")
    days = backfill_days()
    end = dt.date.fromisoformat(days[-1])
    generate_corpus(root / "corpus", CorpusSpec(days=len(days), end_date=end, sessions_per_day=2, seed=5))
    home = root / "home"
    saved = os.environ.get("DAGSTER_HOME")
    os.environ["DAGSTER_HOME"] = str(home)  # the instance config reads it
    try:
        make_instance(home, NO_NUX)
        env = {
            **os.environ,
            **source_env(root / "corpus"),
            "DAGSTER_HOME": str(home),
            "TRAJECTORY_DATA_DIR": str(root / "warehouse"),
        }
        port = _free_port()
        base = f"http://127.0.0.1:{port}"
        command = [
            str(Path(sys.executable).with_name("dagster")),
            "dev",
            "-h",
            "127.0.0.1",
            "-p",
            str(port),
            "-w",
            str(write_workspace(root)),
        ]
        with started(command, root, env, root / "dagster-dev.log", stop_s=60) as server:
            _wait_until_loaded(base, server, root / "dagster-dev.log")
            yield base, root, days
    finally:
        if saved is None:
            os.environ.pop("DAGSTER_HOME", None)
        else:
            os.environ["DAGSTER_HOME"] = saved


def _shoot(tab: Page, name: str, shots: list[Path]) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{len(shots) + 1:02d}-{name}.png"
    tab.screenshot(path=path, full_page=True, animations="disabled")
    shots.append(path)


def test_a_backfill_launched_in_the_ui_is_materialized_by_the_daemon(
    chromium: None,
    browser: object,  # noqa: F811 (before ui: without Chromium the test skips before a server starts)
    ui: tuple[str, Path, list[str]],
    page: Page,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    base, root, days = ui
    shots: list[Path] = []

    # Jobs → daily_ingest_job → Materialize all: the partition dialog, the range typed in.
    page.goto(f"{base}/locations/{LOCATION}/jobs/daily_ingest_job")
    page.get_by_role("button", name="Materialize all").click()
    dialog = page.get_by_role("dialog").filter(has_text="Launch runs to materialize")
    expect(dialog).to_be_visible()
    selection = dialog.get_by_role("textbox")
    selection.fill(f"[{days[0]}...{days[-1]}]")
    selection.press("Enter")
    expect(dialog).to_contain_text(f"{len(days)} partitions")
    _shoot(page, "partition-dialog", shots)
    launched = time.monotonic()
    dialog.get_by_role("button", name="Launch backfill").click()
    expect(page.get_by_text("Created backfill")).to_be_visible()
    _shoot(page, "backfill-created", shots)

    # The daemon takes it from there: every day materialized, the backfill done.
    with dg.DagsterInstance.from_config(str(root / "home")) as instance:
        [backfill] = instance.get_backfills()
        done_statuses = {"COMPLETED", "COMPLETED_SUCCESS"}

        def done() -> bool:
            current = instance.get_backfill(backfill.backfill_id)
            return current is not None and current.status.value in done_statuses

        wait_for("the daemon to finish the backfill", done, DEADLINE_S, root / "dagster-dev.log")
        wall = time.monotonic() - launched
        runs = instance.get_runs(filters=dg.RunsFilter(tags={"dagster/backfill": backfill.backfill_id}))
        assert [run.status for run in runs] == [dg.DagsterRunStatus.SUCCESS]  # one run: single-run policy
        assert (
            runs[0].tags["dagster/asset_partition_range_start"],
            runs[0].tags["dagster/asset_partition_range_end"],
        ) == (days[0], days[-1])
        for table in TABLES:
            assert set(days) <= instance.get_materialized_partitions(dg.AssetKey(table)), table
    for table in TABLES:
        for day in days:
            assert (root / "warehouse" / table / f"{day}.parquet").is_file(), (table, day)

    # What a person then sees: the backfill succeeded, the days are green in the partitions view.
    page.goto(f"{base}/runs/b/{backfill.backfill_id}")
    expect(page.get_by_text("Succeeded", exact=True).first).to_be_visible()
    expect(page.get_by_text("100% completed")).to_be_visible()
    _shoot(page, "backfill-succeeded", shots)
    page.goto(f"{base}/assets/rendered_splits?view=partitions")
    expect(page.get_by_text(f"Materialized ({len(days)})")).to_be_visible()
    _shoot(page, "rendered_splits-partitions", shots)

    with capsys.disabled():
        print(f"\nUI backfill of {len(days)} days done {wall:.0f} s after Launch backfill; screenshots:")
        print(*(f"  {path}" for path in shots), sep="\n")
