"""Start and stop a real `roundhouse serve` process for tests."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from roundhouse.api.daemon import Discovery
from roundhouse.api.discovery import read_discovery
from roundhouse.api.instances import InstanceInfo, InstanceStatus, StartRequest
from roundhouse.base.paths import Home, resolve_home
from roundhouse.client import DaemonClient
from roundhouse.core.instances.keys import EngineKeys, auth_headers


@dataclass
class DaemonProcess:
    home: Home
    process: subprocess.Popen[bytes]
    discovery: Discovery

    @property
    def url(self) -> str:
        return self.discovery.url

    @property
    def token(self) -> str:
        return self.home.token_file.read_text(encoding="ascii").strip()

    def engine_headers(self, instance_id: str) -> dict[str, str]:
        """What the daemon sends to an engine it started: the instance's key (ADR 21).

        Tests that look at an engine directly (its /metrics, /slots) are its owner too."""
        return auth_headers(EngineKeys(self.home.state_dir).key_for(instance_id))

    def control(self) -> httpx.Client:
        """A client of the daemon's control API, with its token."""
        headers = {"Authorization": f"Bearer {self.token}"}
        return httpx.Client(base_url=self.url, headers=headers, trust_env=False)

    def set_pass_through(self, on: bool) -> None:
        """Turn the gateway's pass-through setting on or off (off: every API translated)."""
        with self.control() as client:
            settings = client.get("/api/v1/settings").json()
            settings["gateway"]["pass_through"] = on
            assert client.put("/api/v1/settings", json=settings).status_code == 200

    def gateway_usage(self, instance_id: str) -> dict[str, Any]:
        """The gateway's usage of one instance (zero counts before its first request)."""
        with self.control() as client:
            reply = client.get("/api/v1/gateway/usage")
        assert reply.status_code == 200, reply.text
        found = [u for u in reply.json()["usage"] if u["instance"] == instance_id]
        return found[0] if found else {"requests": 0, "prompt_tokens": 0, "by_api": {}}

    def stop(self, timeout: float = 15.0) -> int:
        if self.process.poll() is None:
            self.process.terminate()
        return self.process.wait(timeout=timeout)


def serve_argv(root: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "roundhouse", "--home", str(root), "serve", "--port", "0", *extra]


def start_daemon(
    root: Path,
    timeout: float = 30.0,
    env: dict[str, str] | None = None,
    argv: list[str] | None = None,
) -> DaemonProcess:
    """Run `roundhouse serve` on a free port under `root` and wait until it serves.

    `env` is added to this process's environment (e.g. a PATH that finds an engine)."""
    home = resolve_home(root)
    env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
    process = subprocess.Popen(
        argv or serve_argv(root), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env
    )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = read_discovery(home.discovery_file)
        if found is not None and found.pid == process.pid and home.token_file.exists():
            return DaemonProcess(home, process, found)
        if process.poll() is not None:
            output = process.stdout.read().decode() if process.stdout else ""
            raise RuntimeError(f"daemon exited with {process.returncode}: {output}")
        time.sleep(0.05)
    process.kill()
    raise RuntimeError("daemon did not write its discovery file in time")


@contextmanager
def running_daemon(
    root: Path, env: dict[str, str] | None = None, argv: list[str] | None = None
) -> Iterator[DaemonProcess]:
    """A daemon for the length of the block (as `start_daemon`); stopped after, with its
    engines, unless the test stopped it already."""
    daemon = start_daemon(root, env=env, argv=argv)
    try:
        yield daemon
    finally:
        if daemon.process.poll() is None:
            daemon.stop(timeout=60)


def path_with(binary: Path) -> dict[str, str]:
    """An environment whose PATH finds `binary` (a daemon started with it detects it)."""
    return {"PATH": f"{binary.parent}{os.pathsep}{os.environ.get('PATH', '')}"}


async def wait_settled(
    client: DaemonClient, instance_id: str, timeout_s: float = 60.0
) -> InstanceInfo:
    """Poll an instance until it is ready or failed; fail the test after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while True:
        info = await client.instance(instance_id)
        if info.status in (InstanceStatus.READY, InstanceStatus.FAILED):
            return info
        if time.monotonic() > deadline:
            raise AssertionError(f"{instance_id} did not settle in {timeout_s:g} s: {info}")
        await asyncio.sleep(0.05)


async def start_ready(
    daemon: DaemonProcess, request: StartRequest, timeout_s: float = 60.0
) -> InstanceInfo:
    """Start an instance through the daemon and wait until it serves."""
    async with DaemonClient(daemon.url, daemon.token) as client:
        started = await client.start_instance(request)
        info = await wait_settled(client, started.id, timeout_s)
    assert info.status == InstanceStatus.READY, info
    return info
