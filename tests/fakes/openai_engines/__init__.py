"""STAND-INS for vLLM and SGLang (which cannot be installed here), run as real processes.

`start_standin("vllm", state, port, "serve", "org/model", ...)` runs
`python -m tests.fakes.openai_engines vllm serve org/model --host H --port P ...`;
`start_standin("sglang", state, port, "--model-path", "org/model", ...)` likewise.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from tests.fakes.ollama import REPO_ROOT, OllamaStandin

READY_PATH = {"vllm": "/health", "sglang": "/health_generate"}


@dataclass
class EngineStandin(OllamaStandin):
    """A running vLLM or SGLang stand-in; stop() and log_text() as the Ollama stand-in's."""

    personality: str = "vllm"

    def wait_ready(self, timeout_s: float = 10.0, path: str | None = None) -> None:
        """Poll the readiness path (vLLM /health, SGLang /health_generate) until 200."""
        url = f"{self.base_url}{path or READY_PATH[self.personality]}"
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"stand-in exited {self.proc.returncode}: {self.log_text()}")
            try:
                with urllib.request.urlopen(url, timeout=0.5) as reply:
                    if reply.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.05)
        raise TimeoutError(f"stand-in not ready after {timeout_s}s: {self.log_text()}")


def start_standin(
    personality: str,
    state: Path,
    port: int,
    *args: str,
    host: str = "127.0.0.1",
    env: dict[str, str] | None = None,
    wait: bool = True,
) -> EngineStandin:
    """Start the stand-in in its own session with `args` then --host/--port; wait unless told."""
    state.mkdir(parents=True, exist_ok=True)
    log = state / f"{personality}.log"
    argv = [sys.executable, "-m", "tests.fakes.openai_engines", personality, *args]
    argv += ["--host", host, "--port", str(port)]
    full_env = {**os.environ, **(env or {})}
    with log.open("ab") as out:
        proc = subprocess.Popen(
            argv, cwd=REPO_ROOT, env=full_env, stdout=out, stderr=out, start_new_session=True
        )
    standin = EngineStandin(proc, host, port, state, log, personality)
    if wait:
        try:
            standin.wait_ready()
        except BaseException:
            standin.stop()
            raise
    return standin
