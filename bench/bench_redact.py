"""Secret-redaction throughput: our Redactor against the pattern libraries we considered.

Text: the string values of the real transcripts in ../shared/corpus/real (what an
event's text or tool input holds; values under 32 characters, such as ids and
timestamps, are left out), with a planted secret in one value of every 50. Every
tool runs over the same deterministic sample; ours also runs over the whole corpus.
Each figure is the median of 5 runs. "planted" is how many of the planted secrets a
tool reports; "on real text" is how many findings it reports on the sample without
the plants (the corpus holds no secrets, so these are false positives; ours counts
only secret kinds, not e-mails or home folders).

detect-secrets (in the dev extra) is measured two ways: `scan_line` with its default
plugins and filters, which is how the library is meant to be used, and its regex
plugins' `denylist` patterns alone applied with `re.sub`, the fastest way to reuse
its patterns. credsweeper and trufflehog3 are measured when installed (they pin old
dependencies, so keep them out of the project environment):

    python bench/bench_redact.py
    /path/to/other-venv/bin/python bench/bench_redact.py   # with credsweeper, trufflehog3

`--against REV` instead compares our redactor with trajectory_pipeline/ingest/redact.py
as it was at git revision REV, on the same texts, with and without the prefilter, in
CPU time (the best of 9 runs, so that a busy machine's other processes count less), and
writes nothing:

    python bench/bench_redact.py --against main
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import importlib.util
import json
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from unittest import mock

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sections import write_section  # noqa: E402  (bench/sections.py, beside this script)

from trajectory_pipeline import settings  # noqa: E402
from trajectory_pipeline.ingest.redact import Redactor  # noqa: E402

CORPUS = settings.real_corpus()
SAMPLE_BYTES = 200_000
RUNS = 5
PERSONAL = ("email", "home_user")


def corpus_texts() -> list[str]:
    def walk(value: Any, out: list[str]) -> None:
        if isinstance(value, str):
            if len(value) >= 32:
                out.append(value)
        elif isinstance(value, dict):
            for item in value.values():
                walk(item, out)
        elif isinstance(value, list):
            for item in value:
                walk(item, out)

    texts: list[str] = []
    for path in sorted(p for p in CORPUS.rglob("*") if p.is_file() and p.name != "SOURCES.md"):
        raw = path.read_text(encoding="utf-8")
        if path.suffix == ".jsonl":
            for line in raw.splitlines():
                if line.strip():
                    walk(json.loads(line), texts)
        elif path.suffix in (".json", ".traj"):
            walk(json.loads(raw), texts)
        else:
            texts.append(raw)
    return texts


def planted_secrets() -> list[str]:
    """One line per format; built by concatenation so this file trips no scanner."""
    body = "aB3xY7kQ9" * 12
    return [
        "export AWS_ACCESS_KEY_ID=AKIA" + "QZ7K" * 4,
        "git push https://gh" + "p_" + body[:36] + "@github.com/o/r",
        "GITLAB_TOKEN=gl" + "pat-" + body[:20],
        "ANTHROPIC_API_KEY=sk-" + "ant-api03-" + body[:93] + "AA",
        "OPENAI_API_KEY=sk-" + body[:20] + "T3Blbk" + "FJ" + body[:20],
        "SLACK=xo" + "xb-1234567890-1234567890123-" + body[:24],
        "https://hooks.slack.com/services/T0" + body[:8] + "/B0" + body[:8] + "/" + body[:24],
        "maps?key=AI" + "za" + body[:35],
        "stripe.api_key = 'sk" + "_live_" + body[:24] + "'",
        "//registry.npmjs.org/:_authToken=np" + "m_" + body[:36],
        "-----BEGIN RSA " + "PRIVATE KEY-----\nMIIEow" + body + "\n-----END RSA " + "PRIVATE KEY-----",
        "Cookie: t=eyJ" + "hbGciOiJIUzI1NiJ9.eyJ" + "zdWIiOiIxMjM0NTY3ODkwIn0." + body[:43],
        'curl -H "Authorization: Bearer ' + body[:40] + '"',
        "DATABASE_URL=postgres://app:s3cr3t" + "-Pw9@db:5432/app",
        "password=" + "hunter" + "2",
        'config = {"db_password": "c0rrect-' + 'h0rse"}',
        # Shapes added after the planted-secrets audit.
        "sg = SendGridAPIClient('SG." + body[:22] + "." + body[:43] + "')",
        'client = Client("A' + "C" + "0a1b2c3d4e5f6789" * 2 + '", "' + "9f8e7d6c5b4a3210" * 2 + '")',
        "twine upload -u __token__ -p py" + "pi-AgEIcHlwaS5vcmc" + body[:100],
        "export DO_TOKEN=do" + "p_v1_" + "0a1b2c3d4e5f6789" * 4,
        "curl https://api.telegram.org/bot6104773925:" + "AA" + body[:33] + "/getMe",
        "vault login hv" + "s." + body[:90],
        "mysql -h db -u app -p" + "Qm4tz8W" + "x shop",
        "ADMIN_PASSWORD=$" + "Wq7vN2" + "xTz",
        "Cookie: sessionid=" + body[:24] + "; theme=dark",
        "card 4716" + "2829" + "5520" + "0127 exp 12/29",
    ]


def build_sample(texts: list[str], secrets: list[str]) -> tuple[list[str], list[str]]:
    """A sample of about SAMPLE_BYTES of real text, and the same with the secrets planted."""
    rng = random.Random(20261129)
    sample: list[str] = []
    size = 0
    for text in rng.sample(texts, len(texts)):
        if size >= SAMPLE_BYTES:
            break
        sample.append(text)
        size += len(text.encode())
    planted = list(sample)
    for n, secret in enumerate(secrets):
        i = (n * 50) % len(planted)
        planted[i] = planted[i][:40] + "\n" + secret + "\n" + planted[i][40:]
    return sample, planted


Tool = Callable[[str], int]  # scans one text and returns its number of findings


def ours(_: contextlib.ExitStack) -> Tool:
    redactor = Redactor()

    def scan(text: str) -> int:
        counts = redactor.redact(text)[1]
        return sum(n for kind, n in counts.items() if kind not in PERSONAL)

    return scan


def ours_without_prefilter(stack: contextlib.ExitStack) -> Tool:
    """Every pass on every text, as on a machine without hyperscan."""
    from trajectory_pipeline.ingest import redact

    if redact._prefilter() is None:
        raise ImportError("hyperscan is not installed: the row above already runs every pass")
    stack.enter_context(mock.patch.object(redact, "_prefilter", lambda: None))
    return ours(stack)


def detect_secrets_scan_line(stack: contextlib.ExitStack) -> Tool:
    from detect_secrets.core.scan import scan_line
    from detect_secrets.settings import default_settings

    stack.enter_context(default_settings())  # its plugins are configured globally

    def scan(text: str) -> int:
        return sum(1 for line in text.splitlines() for _ in scan_line(line))

    return scan


def detect_secrets_regexes(_: contextlib.ExitStack) -> Tool:
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.plugins.base import RegexBasedDetector
    from detect_secrets.plugins.ip_public import IPPublicDetector

    patterns = [
        pattern
        for plugin in get_mapping_from_secret_type_to_class().values()
        if issubclass(plugin, RegexBasedDetector) and plugin is not IPPublicDetector
        for pattern in plugin().denylist
    ]

    def scan(text: str) -> int:
        found = 0
        for pattern in patterns:
            text, n = pattern.subn("[REDACTED]", text)
            found += n
        return found

    return scan


def credsweeper(_: contextlib.ExitStack) -> Tool:
    from credsweeper import CredSweeper
    from credsweeper.file_handler.string_content_provider import StringContentProvider

    sweeper = CredSweeper()

    def scan(text: str) -> int:
        return len(sweeper.file_scan(StringContentProvider(text.splitlines(), file_path="event.txt")))

    return scan


def trufflehog3(_: contextlib.ExitStack) -> Tool:
    from trufflehog3 import DEFAULT_RULES_FILE
    from trufflehog3.core import load_rules
    from trufflehog3.models import File
    from trufflehog3.search import search

    rules = load_rules(DEFAULT_RULES_FILE)

    def scan(text: str) -> int:
        return len(search(File("event.txt", content=text), rules))

    return scan


TOOLS: list[tuple[str, Callable[[contextlib.ExitStack], Tool]]] = [
    ("trajectory_pipeline.ingest.redact (ours)", ours),
    ("ours without the hyperscan prefilter", ours_without_prefilter),
    ("detect-secrets regex plugins, re.sub", detect_secrets_regexes),
    ("detect-secrets scan_line (default plugins)", detect_secrets_scan_line),
    ("credsweeper file_scan (no ML)", credsweeper),
    ("trufflehog3 search (default rules)", trufflehog3),
]


def median_mb_s(scan: Tool, texts: list[str]) -> float:
    megabytes = sum(len(t.encode()) for t in texts) / 1e6
    seconds = []
    for _ in range(RUNS):
        started = time.perf_counter()
        for text in texts:
            scan(text)
        seconds.append(time.perf_counter() - started)
    return megabytes / statistics.median(seconds)


def main() -> None:
    texts = corpus_texts()
    secrets = planted_secrets()
    sample, planted = build_sample(texts, secrets)
    megabytes = sum(len(t.encode()) for t in sample) / 1e6
    print(f"sample: {len(sample)} texts, {megabytes:.2f} MB, {len(secrets)} planted")
    print(f"{'tool':46s} {'MB/s':>10s} {'planted':>9s} {'on real text':>13s}")
    rows = []
    for name, make in TOOLS:
        with contextlib.ExitStack() as stack:
            try:
                scan = make(stack)
            except ImportError:
                print(f"{name:46s} {'not installed':>10s}")
                continue
            mb_s = median_mb_s(scan, planted)
            caught = sum(1 for secret in secrets if scan(secret) > 0)
            false_positives = sum(scan(text) for text in sample)
        print(f"{name:46s} {mb_s:10.2f} {caught:>5d}/{len(secrets):<3d} {false_positives:>13d}")
        rows.append(f"| {name} | {mb_s:.2f} | {caught}/{len(secrets)} | {false_positives:,} |")
    whole = sum(len(t.encode()) for t in texts) / 1e6
    with contextlib.ExitStack() as stack:
        mb_s = median_mb_s(ours(stack), texts)
    print(f"ours over the whole corpus ({len(texts)} texts, {whole:.1f} MB): {mb_s:.1f} MB/s")
    write_section(
        ROOT / "bench" / "RESULTS.md",
        "bench_redact",
        "\n".join(
            [
                f"## Secret redaction ({dt.date.today()}, {platform.machine()}, "
                f"Python {platform.python_version()})",
                "",
                "`python bench/bench_redact.py`",
                "",
                "String values of the real corpus (32 characters and longer), a "
                f"{megabytes:.2f} MB sample of {len(sample)} texts with {len(secrets)} secrets planted; "
                f"medians of {RUNS} runs. "
                "`on real text`: findings on the sample without the plants, which holds no secret "
                "(ours counts secret kinds only, not e-mails or home folders).",
                "",
                "| tool | MB/s | planted found | findings on real text |",
                "| --- | --- | --- | --- |",
                *rows,
                "",
                f"Ours over the whole corpus ({len(texts):,} texts, {whole:.1f} MB): {mb_s:.1f} MB/s.",
            ]
        ),
    )


def redactor_at(revision: str) -> Any:
    """trajectory_pipeline/ingest/redact.py as it was at git `revision`, as a module."""
    source = subprocess.run(
        ["git", "show", f"{revision}:trajectory_pipeline/ingest/redact.py"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(source)
    spec = importlib.util.spec_from_file_location(f"redact_at_{revision}", f.name)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    Path(f.name).unlink()
    return module


def cpu_mb_s(module: Any, texts: list[str], prefilter: bool, runs: int = 9) -> float:
    redactor = module.Redactor()
    megabytes = sum(len(t.encode()) for t in texts) / 1e6
    seconds = []
    with contextlib.ExitStack() as stack:
        if not prefilter:
            stack.enter_context(mock.patch.object(module, "_prefilter", lambda: None))
        for _ in range(runs):
            started = time.process_time()
            for text in texts:
                redactor.redact(text)
            seconds.append(time.process_time() - started)
    return megabytes / min(seconds)


def compare(revision: str) -> None:
    from trajectory_pipeline.ingest import redact

    before = redactor_at(revision)
    texts = corpus_texts()
    sample, planted = build_sample(texts, planted_secrets())
    print(f"{'texts':34s} {'prefilter':>9s} {revision:>10s} {'now':>10s}  MB/s, CPU time")
    for name, data, runs in (
        ("sample with plants (the table's)", planted, 9),
        ("sample without plants", sample, 9),
        ("whole corpus", texts, 3),
    ):
        for prefilter in (True, False):
            old, new = cpu_mb_s(before, data, prefilter, runs), cpu_mb_s(redact, data, prefilter, runs)
            switch = "on" if prefilter else "off"
            print(f"{name:34s} {switch:>9s} {old:10.1f} {new:10.1f}  ({new / old - 1:+.0%})")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", metavar="REV", help="compare with redact.py at this git revision")
    arguments = parser.parse_args()
    if arguments.against:
        compare(arguments.against)
    else:
        main()
