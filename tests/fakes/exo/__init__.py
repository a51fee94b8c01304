"""A STAND-IN for exo's API (exo runs Mac clusters; it cannot run here), as a real process.

`start_exo(state, port, "--standin-place", "org/model")` runs it as `exo --api-port PORT ...`
from a console script named `exo`, the way `uv run exo` shows in the process table, and
waits until `GET /node_id` answers.
"""

from __future__ import annotations

import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from tests.fakes.launchers import _popen, _ready, console_script
from tests.fakes.ollama import OllamaStandin


@dataclass
class ExoStandin(OllamaStandin):
    """A running exo stand-in; stop() and log_text() as the Ollama stand-in's."""

    def wait_ready(self, timeout_s: float = 10.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"stand-in exited {self.proc.returncode}: {self.log_text()}")
            try:
                with urllib.request.urlopen(f"{self.base_url}/node_id", timeout=0.5) as reply:
                    if reply.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.05)
        raise TimeoutError(f"stand-in not ready after {timeout_s}s: {self.log_text()}")


def start_exo(state: Path, port: int, *flags: str, wait: bool = True) -> ExoStandin:
    """`exo --api-port PORT FLAGS` (the stand-in), ready if `wait`."""
    state.mkdir(parents=True, exist_ok=True)
    script = console_script(state / "bin", "exo", "tests.fakes.exo", None)
    log = state / "exo.log"
    argv = [str(script), "--api-port", str(port), *flags]
    standin = ExoStandin(_popen(argv, log, None), "127.0.0.1", port, state, log)
    return _ready(standin) if wait else standin
