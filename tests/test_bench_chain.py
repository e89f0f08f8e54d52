"""bench/chain.py's `watched`: a timed run has nothing sampling it, a memory run samples its tree."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

_SPEC = importlib.util.spec_from_file_location(
    "bench_chain", Path(__file__).parents[1] / "bench" / "chain.py"
)
assert _SPEC is not None and _SPEC.loader is not None
chain = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(chain)

# A child that holds ~40 MiB for a moment, then says so.
_HOLD = "import time; block = bytearray(40 << 20); time.sleep(0.4); print('held')"


def _sampled(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """The processes `watched` reads the memory of, in order."""
    read: list[object] = []

    def resident(process: object) -> int:
        read.append(process)
        return int(process.memory_info().rss)  # type: ignore[attr-defined]

    monkeypatch.setattr(chain, "resident", resident)
    return read


def test_a_timed_run_reads_no_memory_and_reports_its_output(monkeypatch: pytest.MonkeyPatch) -> None:
    read = _sampled(monkeypatch)
    seconds, peak, stdout, _, status = chain.watched([sys.executable, "-c", _HOLD], memory=False)
    assert (peak, stdout.strip(), status) == (0.0, "held", 0)
    assert seconds >= 0.4
    assert read == []


def test_a_memory_run_samples_the_process_while_it_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    read = _sampled(monkeypatch)
    _, peak, stdout, _, status = chain.watched([sys.executable, "-c", _HOLD])
    assert (stdout.strip(), status) == ("held", 0)
    assert read
    assert peak >= 40


@pytest.mark.parametrize(
    ("peak_1x", "peak_large", "met"),
    [(391, 436, True), (422, 539, False), (300, 400, False), (512, 512, True), (513, 500, False)],
)
def test_the_memory_target_is_512_mib_at_both_sizes_and_flat(
    peak_1x: float, peak_large: float, met: bool
) -> None:
    assert chain.memory_met(peak_1x, peak_large) == (peak_large / peak_1x, met)
    assert chain.memory_met(0, peak_large) == (float("inf"), False)  # no 1x peak sampled
