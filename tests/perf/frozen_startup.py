"""Benchmark: the frozen Linux app against the same app run from source.

    .venv/bin/python -m tests.perf.frozen_startup [--runs 10] [--app-dir FOLDER]

Reports the size of the frozen folder and of its tarball, and the start-up to the first
painted window of `roundhouse` (frozen) and `python -m roundhouse` (source), run side by
side, alternating, offscreen, with the app's own self-check (ROUNDHOUSE_SMOKE_TEST=1:
prints `smoke: first paint` at the main window's first paint, `smoke: ok` once every page
is built, then quits; it starts no daemon). Medians and the frozen/source ratio are printed
and saved in tests/perf/results/frozen_startup.json. Without --app-dir, the build of
tests/installers (cached by its inputs, built when missing) is unpacked into a temp folder.
The file cache is warm after the first run of each: this is a start, not a cold boot.
"""

from __future__ import annotations

import argparse
import compileall
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import roundhouse
from tests.installers.frozen_build import frozen_tarball
from tests.perf.conftest import Report

MARKS = ("smoke: first paint", "smoke: ok")


def timed(argv: list[str], home: Path) -> dict[str, float]:
    """Seconds from spawning `argv` to each mark on its stdout."""
    env = {
        **os.environ,
        "QT_QPA_PLATFORM": "offscreen",
        "ROUNDHOUSE_SMOKE_TEST": "1",
        "XDG_CONFIG_HOME": str(home / "config"),
    }
    started = time.perf_counter()
    proc = subprocess.Popen(
        [*argv, "--home", str(home / "home")],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    assert proc.stdout is not None
    seen: dict[str, float] = {}
    for line in proc.stdout:
        mark = next((m for m in MARKS if line.startswith(m)), None)
        if mark is not None and mark not in seen:
            seen[mark] = time.perf_counter() - started
    if proc.wait(timeout=60) != 0 or set(seen) != set(MARKS):
        raise RuntimeError(f"{argv[0]} exited {proc.returncode} after {sorted(seen)}")
    return seen


def folder_size(folder: Path) -> int:
    return sum(p.lstat().st_size for p in folder.rglob("*") if p.is_file())


def measure(app_dir: Path, tarball: Path | None, runs: int, scratch: Path) -> Report:
    report = Report("frozen_startup")
    report.add("frozen_folder_mib", round(folder_size(app_dir) / 2**20, 1))
    if tarball is not None:
        report.add("tarball_mib", round(tarball.stat().st_size / 2**20, 1))
    # A wheel is installed with its bytecode compiled: give the source run the same.
    compileall.compile_dir(Path(roundhouse.__file__).parent, quiet=1)
    frozen_argv = [str(app_dir / "roundhouse")]
    source_argv = [sys.executable, "-m", "roundhouse"]
    first = {"frozen": timed(frozen_argv, scratch), "source": timed(source_argv, scratch)}
    samples: dict[str, list[dict[str, float]]] = {"frozen": [], "source": []}
    for _ in range(runs):
        samples["frozen"].append(timed(frozen_argv, scratch))
        samples["source"].append(timed(source_argv, scratch))
    report.add("runs_each", runs)
    for kind in ("frozen", "source"):
        report.add(f"{kind}_first_run_paint_ms", round(1000 * first[kind][MARKS[0]]))
        for mark, label in zip(MARKS, ("first_paint", "all_pages_built"), strict=True):
            median = statistics.median(s[mark] for s in samples[kind])
            report.add(f"{kind}_{label}_ms_median", round(1000 * median))
    for mark, label in zip(MARKS, ("first_paint", "all_pages_built"), strict=True):
        frozen = statistics.median(s[mark] for s in samples["frozen"])
        source = statistics.median(s[mark] for s in samples["source"])
        report.add(f"ratio_frozen_over_source_{label}", round(frozen / source, 2))
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="runs of each, alternating")
    parser.add_argument("--app-dir", type=Path, help="an unpacked frozen app folder")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="frozen-startup-") as tmp:
        scratch = Path(tmp)
        tarball = None
        app_dir = args.app_dir
        if app_dir is None:
            tarball = frozen_tarball()
            with tarfile.open(tarball) as tar:
                tar.extractall(scratch / "app", filter="data")
            app_dir = scratch / "app" / tarball.name.removesuffix(".tar.gz")
        report = measure(app_dir.resolve(), tarball, args.runs, scratch)
    print(f"saved {report.save()}")


if __name__ == "__main__":
    main()
