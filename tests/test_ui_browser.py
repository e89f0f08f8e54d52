"""The Dagster UI after `make demo`, in a real browser: what a person opening `make ui` looks for.

`dagster dev` serves the instance the demo wrote (the `demo_run` fixture in conftest.py, shared
with tests/test_demo.py) on a free port of 127.0.0.1; headless Chromium, driven by Playwright,
visits the catalog, both asset groups' lineage, `lora_adapter` and `replay_eval` with its checks.
Full-page screenshots land in test-artifacts/ui/. Chromium is Debian's (`make test` installs the
`chromium` package where apt-get can); without it Playwright's own download is tried, else the
test is skipped.

    .venv/bin/python -m pytest tests/test_ui_browser.py -s
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Locator, Page, Playwright, expect, sync_playwright
from playwright.sync_api import Error as PlaywrightError

from tests.conftest import REPO_ROOT, DemoRun
from trajectory_pipeline.ingest.formats import SOURCES
from trajectory_pipeline.sample.corpus import SOURCE_FOLDERS

CHROMIUM = Path("/usr/bin/chromium")
# The background-networking flags keep Chromium off the network it cannot reach here. Playwright
# gives every launch a fresh temporary profile (--user-data-dir) of its own.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SCREENSHOTS = REPO_ROOT / "test-artifacts" / "ui"
LOCATION = "trajectory_pipeline"
DAILY = ("raw_sessions", "mined_trajectories", "decision_points", "rendered_splits")
WEEKLY = ("lora_adapter", "replay_eval")
WEEK = "2026-11-22"
SERVER_START_S = 180  # the webserver, the daemon and a code server importing mlx, on two busy cores
UI_TIMEOUT_MS = 60_000
# Assertions wait as long as page actions: on two busy cores the graph's nodes load their
# partition status for several seconds ("Loading..."), past Playwright's 5 s default.
expect.set_options(timeout=UI_TIMEOUT_MS)
LOCATION_QUERY = """{ workspaceOrError { __typename ... on Workspace { locationEntries {
    name loadStatus locationOrLoadError { __typename ... on PythonError { message } } } } } }"""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _demo_env(demo: DemoRun) -> dict[str, str]:
    """The environment `trajectory-pipeline demo` loaded the definitions with (demo._point_sources_at)."""
    corpus = demo.root / "corpus"
    sources = {
        f"TRAJECTORY_{source.upper()}_ROOT": str(corpus / SOURCE_FOLDERS[source])
        if source in SOURCE_FOLDERS
        else ""
        for source in SOURCES
    }
    return {
        **os.environ,
        **sources,
        "DAGSTER_HOME": str(demo.home),
        "TRAJECTORY_DATA_DIR": str(demo.root / "warehouse"),
        "TRAJECTORY_BASE_MODEL": str(demo.root / "tiny-model"),
    }


def _location_status(base: str) -> tuple[str, str | None]:
    """The code location's load status, and its error message when it failed to load."""
    request = urllib.request.Request(
        f"{base}/graphql",
        data=json.dumps({"query": LOCATION_QUERY}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        workspace = json.load(response)["data"]["workspaceOrError"]
    entry = next(e for e in workspace.get("locationEntries", []) if e["name"] == LOCATION)
    error = entry["locationOrLoadError"] or {}
    return entry["loadStatus"], error.get("message")


def _wait_until_loaded(base: str, server: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + SERVER_START_S
    status: tuple[str, str | None] = ("not answering", None)
    while time.monotonic() < deadline and server.poll() is None:
        try:
            status = _location_status(base)
        except (OSError, urllib.error.URLError, KeyError, StopIteration):
            status = ("not answering", None)
        if status[0] == "LOADED":
            if status[1] is not None:
                pytest.fail(f"code location {LOCATION} failed to load: {status[1]}")
            return
        time.sleep(1)
    tail = log.read_text(errors="replace")[-3000:]
    state = f"exited with {server.returncode}" if server.poll() is not None else status[0]
    pytest.fail(f"dagster dev at {base} not ready after {SERVER_START_S}s ({state}); its log:\n{tail}")


@pytest.fixture(scope="module")
def dagster_ui(demo_run: DemoRun) -> Iterator[str]:
    """`dagster dev` on the demo's instance; yields its base URL and stops its process group."""
    if demo_run.result.returncode != 0:
        pytest.fail(f"the demo failed, nothing to look at:\n{demo_run.result.stderr[-3000:]}")
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    log = demo_run.root / "dagster-dev.log"
    dagster = Path(sys.executable).with_name("dagster")
    command = [
        str(dagster),
        "dev",
        "-h",
        "127.0.0.1",
        "-p",
        str(port),
        "-w",
        str(REPO_ROOT / "workspace.yaml"),
    ]
    with log.open("wb") as out:
        server = subprocess.Popen(
            command,
            cwd=demo_run.root,
            env=_demo_env(demo_run),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: the webserver, the daemon, code servers
        )
    try:
        _wait_until_loaded(base, server, log)
        yield base
    finally:
        # dagster dev stops its webserver, daemon and code servers itself on SIGTERM; the group's
        # SIGKILL is for whatever is left (it ignores SIGTERM when started with SIGINT ignored).
        server.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            server.wait(timeout=60)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server.pid, signal.SIGKILL)
        server.wait()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    # `make test` preloads OpenBLAS for mlx; Playwright's node driver cannot start threads under that
    # preload (pthread_create: Invalid argument), so the driver and the browser start without it.
    preload = os.environ.pop("LD_PRELOAD", None)
    try:
        playwright_manager = sync_playwright().start()
    finally:
        if preload is not None:
            os.environ["LD_PRELOAD"] = preload
    with _stopping(playwright_manager) as playwright:
        # Debian's chromium; where it is missing, the browser of `playwright install chromium`, if any.
        executable = str(CHROMIUM) if CHROMIUM.exists() else None
        try:
            launched = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        except PlaywrightError as err:
            pytest.skip(
                f"no Chromium to drive: {CHROMIUM} is missing or does not start (apt-get install chromium, "
                f"or .venv/bin/playwright install chromium): {str(err).splitlines()[0]}"
            )
        yield launched
        launched.close()


@contextlib.contextmanager
def _stopping(playwright: Playwright) -> Iterator[Playwright]:
    try:
        yield playwright
    finally:
        playwright.stop()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1600, "height": 1000})
    context.set_default_timeout(UI_TIMEOUT_MS)
    page = context.new_page()
    # On a fresh instance the UI asks once to join the community; a person clicks Skip.
    community = page.get_by_role("dialog").filter(has_text="Join the Dagster community")
    page.add_locator_handler(community, lambda _: page.get_by_role("button", name="Skip").click())
    yield page
    context.close()


def _shoot(page: Page, name: str, shots: list[Path]) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{len(shots) + 1:02d}-{name}.png"
    page.screenshot(path=path, full_page=True, animations="disabled")  # dialogs fully faded in
    shots.append(path)


def _metadata_row(page: Page, key: str) -> Locator:
    """The row of the latest materialization's metadata table holding `key`."""
    return page.get_by_role("row").filter(has=page.get_by_text(key, exact=True))


def _open_markdown(page: Page, key: str) -> Locator:
    """Markdown metadata shows as a link that opens it in a dialog."""
    _metadata_row(page, key).get_by_text("[Show Markdown]").click()
    dialog = page.get_by_role("dialog").filter(has_text=key)
    expect(dialog).to_be_visible()
    return dialog


@pytest.mark.slow
def test_the_ui_shows_the_demo_assets_checks_and_charts(
    browser: Browser,  # before dagster_ui: without Chromium the test skips before a server starts
    dagster_ui: str,
    demo_run: DemoRun,
    page: Page,
    capsys: pytest.CaptureFixture[str],
) -> None:
    promotion = next(line for line in demo_run.result.stdout.splitlines() if line.startswith("Promotion: "))
    decision, reason = promotion.removeprefix("Promotion: ").split(": ", 1)
    shots: list[Path] = []

    # The catalog: every asset, 14 daily partitions or the one week materialized (the green count).
    page.goto(f"{dagster_ui}/assets")
    for asset, materialized in [*((a, 14) for a in DAILY), *((a, 1) for a in WEEKLY)]:
        link = page.locator(f'a[href="/assets/{asset}"]')
        row = link.locator("xpath=ancestor::div[.//*[@aria-label='partition_success']][1]")
        expect(row).to_be_visible()
        count = row.get_by_role("img", name="partition_success").first.locator("xpath=..")
        expect(count, f"{asset}: materialized partitions").to_have_text(str(materialized))
    _shoot(page, "catalog", shots)

    # The asset graph of each group: every node materialized, its checks passed (none for some),
    # but adapter_promoted, which fails (a warning) when the adapter was rejected.
    promoted = "1 / 1" if decision == "promoted" else "0 / 1"
    for group, assets in (("ingest", DAILY), ("training", WEEKLY)):
        page.goto(f"{dagster_ui}/locations/{LOCATION}/asset-groups/{group}")
        for asset in assets:
            node = page.get_by_text(asset, exact=True).locator(
                "xpath=ancestor::div[contains(., 'Latest event')][1]"
            )
            expect(node, f"{asset} in the {group} graph").to_contain_text(
                re.compile(r"Latest event\s*\S.* ago")
            )
            checks = rf"{promoted} Passed" if asset == "replay_eval" else r"(–|(\d+) / \2 Passed)"
            expect(node).to_contain_text(re.compile(rf"Asset checks\s*{checks}"))
        _shoot(page, f"graph-{group}", shots)

    # lora_adapter: the week's materialization with its loss curve and losses table.
    page.goto(f"{dagster_ui}/assets/lora_adapter")
    expect(page.get_by_text("Latest materialization")).to_be_visible()
    expect(page.get_by_text(WEEK, exact=True).first).to_be_visible()
    expect(_metadata_row(page, "loss_curve")).to_contain_text("validation loss")
    expect(_metadata_row(page, "losses")).to_contain_text("val_loss")
    _shoot(page, "lora_adapter", shots)

    # replay_eval: the promotion decision, the report and the pass-rate chart.
    page.goto(f"{dagster_ui}/assets/replay_eval")
    expect(_metadata_row(page, "decision")).to_contain_text(decision)
    report = _open_markdown(page, "report")
    expect(report).to_contain_text(f"Replay eval: candidate {decision}")
    _shoot(page, "replay_eval-report", shots)
    page.keyboard.press("Escape")
    chart = _open_markdown(page, "chart")
    image = chart.get_by_role("img", name="pass rate per model and lane")
    expect(image).to_have_attribute("src", re.compile(r"^data:image/png;base64,"))
    # Decoded, not a broken-image icon: the browser knows its pixel size.
    page.wait_for_function("img => img.complete && img.naturalWidth > 0", arg=image.element_handle())
    _shoot(page, "replay_eval-chart", shots)
    page.keyboard.press("Escape")

    # The adapter_promoted check: failed (a warning) when the adapter was rejected.
    page.goto(f"{dagster_ui}/assets/replay_eval?view=checks")
    expect(page.get_by_text("adapter_promoted").first).to_be_visible()
    expect(page.get_by_text("This is a non-blocking asset check.")).to_be_visible()
    expect(page.get_by_text(reason).first).to_be_visible()
    verdict = "Passed" if decision == "promoted" else "Failed"
    expect(page.get_by_text(verdict, exact=True).first).to_be_visible()
    _shoot(page, "replay_eval-checks", shots)

    with capsys.disabled():
        print("\nUI screenshots:", *(f"  {path}" for path in shots), sep="\n")
