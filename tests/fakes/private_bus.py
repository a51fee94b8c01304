"""A private D-Bus session bus with one stand-in service on it, recording the calls it gets:
the base of the notification and the desktop portal stand-ins."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from types import TracebackType
from typing import Any, Self


class PrivateBus:
    """`with Sub(folder) as bus:` dbus-daemon on its own address (`bus.address`), and the
    stand-in `module` run on it (`python -m module ADDRESS RECORD *service_args()`) unless
    `service_args()` is None; what the service was sent is in `bus.calls()`."""

    module = ""
    record_name = "calls.jsonl"
    what = "the stand-in"

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.record = folder / self.record_name
        self.address = ""
        self._processes: list[subprocess.Popen[str]] = []

    def service_args(self) -> list[str] | None:
        return []

    def __enter__(self) -> Self:
        self.folder.mkdir(parents=True, exist_ok=True)
        daemon = subprocess.Popen(
            ["dbus-daemon", "--session", "--nofork", "--print-address"],
            stdout=subprocess.PIPE,
            text=True,
        )
        self._processes.append(daemon)
        assert daemon.stdout is not None
        self.address = daemon.stdout.readline().strip()
        assert self.address, "dbus-daemon printed no address"
        extra = self.service_args()
        if extra is None:
            return self
        service = subprocess.Popen(
            [sys.executable, "-m", self.module, self.address, str(self.record), *extra],
            stdout=subprocess.PIPE,
            text=True,
            cwd=Path(__file__).resolve().parents[2],
        )
        self._processes.append(service)
        assert service.stdout is not None
        line = service.stdout.readline().strip()
        assert line == "ready", f"{self.what} did not start: {line!r}"
        return self

    def calls(self) -> list[dict[str, Any]]:
        if not self.record.exists():
            return []
        lines = self.record.read_text(encoding="utf-8").splitlines()
        return [json.loads(line) for line in lines if line.strip()]

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        for process in reversed(self._processes):
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(5)
