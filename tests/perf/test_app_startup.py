"""Start-up of the desktop app against a bare PySide6 window, measured side by side."""

from __future__ import annotations

import compileall
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import roundhouse
from tests.daemon_process import start_daemon

PROBE = Path(__file__).with_name("startup_probe.py")
ROUNDS = 15


def _timed(argv: list[str], marks: tuple[str, ...]) -> dict[str, float]:
    env = {**os.environ, "QT_QPA_PLATFORM": os.environ.get("QT_QPA_PLATFORM", "offscreen")}
    started = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None
    seen: dict[str, float] = {}
    for line in proc.stdout:
        word = line.strip()
        if word in marks and word not in seen:
            seen[word] = time.perf_counter() - started
    assert proc.wait(timeout=60) == 0
    assert set(seen) == set(marks), seen
    return seen


@pytest.fixture(autouse=True)
def _bytecode_compiled() -> None:
    # An installed wheel has its bytecode compiled by pip; a checkout run with
    # PYTHONDONTWRITEBYTECODE (as CI machines are) would compile every module on each start.
    compileall.compile_dir(Path(roundhouse.__file__).parent, quiet=1)


@pytest.mark.perf
def test_first_paint_against_bare_window(tmp_path: Path, report: Any) -> None:
    daemon = start_daemon(tmp_path / "home")
    home = str(tmp_path / "home")
    bare: list[float] = []
    app_paint: list[float] = []
    app_ready: list[float] = []
    try:
        _timed([sys.executable, str(PROBE), "bare"], ("painted",))  # warm the file cache
        for _ in range(ROUNDS):
            bare.append(_timed([sys.executable, str(PROBE), "bare"], ("painted",))["painted"])
            seen = _timed([sys.executable, str(PROBE), "app", home], ("painted", "ready"))
            app_paint.append(seen["painted"])
            app_ready.append(seen["ready"])
    finally:
        daemon.stop()
    ratio = statistics.median(app_paint) / statistics.median(bare)
    report.add("rounds", ROUNDS)
    report.add("bare_window_first_paint_ms_median", round(1000 * statistics.median(bare)))
    report.add("app_first_paint_ms_median", round(1000 * statistics.median(app_paint)))
    report.add("app_inventory_shown_ms_median", round(1000 * statistics.median(app_ready)))
    report.add("ratio_app_over_bare", round(ratio, 2))
    report.add("budget", "ratio <= 1.5")
    assert ratio <= 1.5


@pytest.mark.perf
def test_cold_start_spawning_the_daemon(tmp_path: Path, report: Any) -> None:
    home = tmp_path / "cold"
    try:
        seen = _timed([sys.executable, str(PROBE), "app", str(home)], ("painted", "ready"))
    finally:
        subprocess.run(
            [sys.executable, "-m", "roundhouse", "--home", str(home), "stop"],
            capture_output=True,
            timeout=60,
        )
    report.add("cold_first_paint_ms", round(1000 * seen["painted"]))
    report.add("cold_daemon_spawned_and_inventory_shown_ms", round(1000 * seen["ready"]))
