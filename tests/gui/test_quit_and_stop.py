"""Quit, then "Stop and quit", 20 times in a row against real processes: the app (run as
`roundhouse` runs it, with a tray, the Monitor following its stream and quick chat open),
its daemon and the daemon's llama-server all end every time."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from roundhouse.api.engines import EngineId, InstanceOptions
from roundhouse.api.instances import StartRequest
from tests.daemon_process import path_with, start_daemon, start_ready

ROUNDS = 20
# The app has stopped the daemon (and it its engine) before it exits; a second of slack.
GONE_WITHIN_S = 1.0


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


# About 5 s a round here: a daemon, its engine and the app each start anew.
@pytest.mark.timeout(480)
def test_stop_and_quit_ends_the_app_the_daemon_and_its_engine_every_time(
    home_root: Path, llama_server_binary: Path, tiny_gguf: Path, tmp_path: Path
) -> None:
    options = InstanceOptions(model=str(tiny_gguf), ctx_size=256, parallel=1, threads=1)
    request = StartRequest(engine=EngineId.LLAMA_CPP, options=options)
    app_env = {
        **os.environ,
        "QT_QPA_PLATFORM": "offscreen",
        # The window's geometry is kept in Qt's settings: in a folder of the test's own.
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
    }
    timings: list[float] = []
    for round_ in range(1, ROUNDS + 1):
        daemon = start_daemon(home_root, env=path_with(llama_server_binary))
        try:
            if round_ == 1:
                # The first-run guide would open on the first launch: it was done.
                with daemon.control() as http:
                    settings = http.get("/api/v1/settings").json()
                    settings["ui"]["first_run_done"] = True
                    assert http.put("/api/v1/settings", json=settings).status_code == 200
            engine = asyncio.run(start_ready(daemon, request)).pid
            assert engine is not None and not _gone(engine)
            started = time.monotonic()
            app = subprocess.run(
                [sys.executable, "-m", "tests.gui.quit_driver", str(home_root)],
                env=app_env,
                capture_output=True,
                text=True,
                timeout=60,
            )
            timings.append(time.monotonic() - started)
            said = f"round {round_}: {app.stdout}{app.stderr}"
            assert app.returncode == 0, said
            assert "Traceback" not in app.stderr and "driver:" not in app.stderr, said
            deadline = time.monotonic() + GONE_WITHIN_S
            while not (_gone(daemon.process.pid) and _gone(engine)):
                assert time.monotonic() < deadline, f"round {round_}: the daemon or engine runs"
                time.sleep(0.05)
            assert daemon.process.wait(timeout=1) == 0, said
        finally:
            if daemon.process.poll() is None:
                daemon.stop(timeout=30)
    assert len(timings) == ROUNDS
    # The app's whole life, start to exit, each round: none waited out a timeout.
    assert max(timings) < 30, [round(t, 1) for t in timings]
