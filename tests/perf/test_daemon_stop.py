"""How long a daemon takes to stop (SIGTERM to exit), as `roundhouse serve` runs it, against
the same daemon run through `run_daemon` by a script that leaves the process to Python's own
exit (the interpreter's teardown included): side by side, alternated, one run (ADR 49)."""

from __future__ import annotations

import statistics
import time
from pathlib import Path
from typing import Any

import pytest

from tests.daemon_process import DaemonProcess, start_daemon
from tests.support.gated_daemon import gated_argv

ROUNDS = 8
# Past the start's background work (the model services' imports in their thread).
SETTLE_S = 2.0


def _stop_s(daemon: DaemonProcess) -> float:
    time.sleep(SETTLE_S)
    started = time.monotonic()
    daemon.process.terminate()
    assert daemon.process.wait(timeout=30) == 0
    return time.monotonic() - started


@pytest.mark.perf
def test_daemon_stop_against_a_stop_with_the_interpreters_teardown(
    tmp_path: Path, report: Any
) -> None:
    served: list[float] = []
    torn_down: list[float] = []
    gate = tmp_path / "open"
    gate.touch()  # the gated daemon's start does not wait
    for round_ in range(ROUNDS):
        served.append(_stop_s(start_daemon(tmp_path / f"serve-{round_}")))
        root = tmp_path / f"script-{round_}"
        torn_down.append(_stop_s(start_daemon(root, argv=gated_argv(root, gate))))
    median_served, median_torn = statistics.median(served), statistics.median(torn_down)
    report.add("serve_stop_median_s", round(median_served, 3))
    report.add("teardown_stop_median_s", round(median_torn, 3))
    report.add("ratio", round(median_served / median_torn, 2))
    report.add("budget", "roundhouse serve stops in at most half the time")
    assert median_served <= median_torn / 2
