"""`roundhouse serve` whose start waits at a gate: `python -m tests.support.gated_daemon HOME
GATE`. The real daemon, whose hardware probe first creates GATE.waiting, then waits until GATE
exists, so a test can act while the daemon is part-way through its start."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from roundhouse.api.settings import Settings
from roundhouse.base.paths import Home
from roundhouse.server.daemon import default_hardware
from roundhouse.server.services import HardwareSource
from tests.support.recorded_daemon import serve_with

GATE_WAIT_S = 60.0


def gated_argv(root: Path, gate: Path) -> list[str]:
    return [sys.executable, "-m", "tests.support.gated_daemon", str(root), str(gate)]


def main(argv: list[str]) -> int:
    home_dir, gate_file = argv
    gate = Path(gate_file)

    def hardware(home: Home, settings: Settings) -> HardwareSource:
        gate.with_suffix(".waiting").touch()
        deadline = time.monotonic() + GATE_WAIT_S
        while not gate.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        return default_hardware(home, settings)

    return serve_with(home_dir, hardware)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
