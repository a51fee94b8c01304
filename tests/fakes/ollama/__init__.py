"""A STAND-IN for `ollama serve` (which cannot be installed here), run as a real process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[3]


@dataclass
class OllamaStandin:
    """A running stand-in process: its base URL, and how to stop it."""

    proc: subprocess.Popen[bytes]
    host: str
    port: int
    state: Path
    log: Path

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def wait_ready(self, timeout_s: float = 10.0) -> None:
        """Poll `GET /` until it answers "Ollama is running" (bounded)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"stand-in exited {self.proc.returncode}: {self.log_text()}")
            try:
                with urllib.request.urlopen(f"{self.base_url}/", timeout=0.5) as reply:
                    if reply.read() == b"Ollama is running":
                        return
            except OSError:
                pass
            time.sleep(0.05)
        raise TimeoutError(f"stand-in not ready after {timeout_s}s: {self.log_text()}")

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def stop(self, timeout_s: float = 5.0) -> int:
        """SIGTERM, then SIGKILL the whole group if it lingers; returns the exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        return self.proc.returncode


def start_standin(
    state: Path,
    port: int,
    *flags: str,
    host: str = "127.0.0.1",
    env: dict[str, str] | None = None,
    wait: bool = True,
    bind_flags: bool = True,
) -> OllamaStandin:
    """Start `python -m tests.fakes.ollama` in its own session; wait for `GET /` unless told.

    With `bind_flags=False` no --host/--port is passed: `OLLAMA_HOST` in `env` must match.
    """
    state.mkdir(parents=True, exist_ok=True)
    log = state / "standin.log"
    argv = [sys.executable, "-m", "tests.fakes.ollama", "serve"]
    if bind_flags:
        argv += ["--host", host, "--port", str(port)]
    argv += ["--state", str(state), *flags]
    full_env = {**os.environ, **(env or {})}
    with log.open("ab") as out:
        proc = subprocess.Popen(
            argv, cwd=REPO_ROOT, env=full_env, stdout=out, stderr=out, start_new_session=True
        )
    standin = OllamaStandin(proc, host, port, state, log)
    if wait:
        try:
            standin.wait_ready()
        except BaseException:
            standin.stop()
            raise
    return standin
