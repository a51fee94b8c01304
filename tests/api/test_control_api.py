"""The control API of a real daemon process on loopback: auth, Host guard, problems, data."""

from __future__ import annotations

import json
import sys
import time

import httpx
import pytest

from roundhouse.api.daemon import DaemonStatus, Problem
from roundhouse.api.hardware import HardwareInventory, HardwareSample, SampleHistory
from tests.daemon_process import DaemonProcess


def _client(daemon: DaemonProcess, token: str | None = "own") -> httpx.Client:
    headers = {}
    if token == "own":
        headers["Authorization"] = f"Bearer {daemon.token}"
    elif token is not None:
        headers["Authorization"] = f"Bearer {token}"
    return httpx.Client(base_url=daemon.url, headers=headers, timeout=10, trust_env=False)


def _problem(response: httpx.Response) -> Problem:
    assert response.headers["content-type"].startswith("application/problem+json")
    problem = Problem.model_validate_json(response.content)
    assert problem.status == response.status_code
    assert problem.detail
    return problem


def test_status_answers_with_token(daemon: DaemonProcess) -> None:
    with _client(daemon) as client:
        status = DaemonStatus.model_validate_json(client.get("/api/v1/status").content)
    assert status.running
    assert status.pid == daemon.process.pid
    assert status.url == daemon.url
    assert status.uptime_s is not None and status.uptime_s >= 0


def test_every_api_route_refuses_a_missing_or_wrong_token(daemon: DaemonProcess) -> None:
    with _client(daemon, token=None) as anonymous:
        schema = anonymous.get("/openapi.json").json()
    routes = [
        (method.upper(), path)
        for path, operations in schema["paths"].items()
        # The control API; Ollama's /api/... routes beside it are the gateway's, held to the
        # gateway key (tests/security/test_ollama_port.py).
        if path.startswith("/api/v1/")
        for method in operations
    ]
    assert len(routes) >= 6, routes
    for token in (None, "wrong-token"):
        with _client(daemon, token=token) as client:
            for method, path in routes:
                response = client.request(method, path)
                assert response.status_code == 401, (method, path, response.text)
                assert "token" in _problem(response).detail
    # No request above was allowed through: the daemon still runs.
    assert daemon.process.poll() is None


@pytest.mark.parametrize("path", ["/api/v1/status", "/openapi.json", "/docs"])
def test_foreign_host_header_is_refused(daemon: DaemonProcess, path: str) -> None:
    with _client(daemon) as client:
        response = client.get(path, headers={"Host": "attacker.example:11500"})
    assert response.status_code == 403
    assert "localhost" in _problem(response).detail


def test_localhost_names_are_accepted(daemon: DaemonProcess) -> None:
    port = daemon.url.rsplit(":", 1)[1]
    with _client(daemon) as client:
        for host in (f"localhost:{port}", f"127.0.0.1:{port}"):
            assert client.get("/api/v1/status", headers={"Host": host}).status_code == 200


def test_unknown_route_and_bad_input_are_problems(daemon: DaemonProcess) -> None:
    with _client(daemon) as client:
        missing = client.get("/api/v1/nothing-here")
        assert missing.status_code == 404
        _problem(missing)
        bad = client.put("/api/v1/settings", json={"daemon": {"port": 70000}})
        assert bad.status_code == 422
        assert "daemon.port" in _problem(bad).detail


def test_settings_are_saved_as_toml(daemon: DaemonProcess) -> None:
    with _client(daemon) as client:
        settings = client.get("/api/v1/settings").json()
        settings["ui"]["chart_refresh_hz"] = 3.0
        saved = client.put("/api/v1/settings", json=settings)
        assert saved.status_code == 200
        assert client.get("/api/v1/settings").json()["ui"]["chart_refresh_hz"] == 3.0
    text = daemon.home.settings_file.read_text(encoding="utf-8")
    assert "chart_refresh_hz = 3.0" in text
    assert "schema_version = 1" in text


def test_a_python_that_is_not_there_is_refused(daemon: DaemonProcess) -> None:
    with _client(daemon) as client:
        settings = client.get("/api/v1/settings").json()
        settings["engines"]["python_paths"] = ["/nowhere/bin/python"]
        refused = client.put("/api/v1/settings", json=settings)
        problem = _problem(refused)
        assert problem.status == 422 and "/nowhere/bin/python" in problem.detail
        assert client.get("/api/v1/settings").json()["engines"]["python_paths"] == []
        settings["engines"]["python_paths"] = [sys.executable]
        assert client.put("/api/v1/settings", json=settings).status_code == 200


def test_hardware_inventory(daemon: DaemonProcess) -> None:
    with _client(daemon) as client:
        inventory = HardwareInventory.model_validate_json(client.get("/api/v1/hardware").content)
        again = client.get("/api/v1/hardware", params={"refresh": "true"})
    assert again.status_code == 200
    assert inventory.cpu.logical_cores >= 1
    assert inventory.cpu.brand
    assert inventory.memory.total_bytes > inventory.memory.available_bytes > 0
    assert inventory.recommendations
    assert [r.rank for r in inventory.recommendations] == list(
        range(1, len(inventory.recommendations) + 1)
    )


def test_samples_history_and_stream(daemon: DaemonProcess) -> None:
    with _client(daemon) as client:
        deadline = time.monotonic() + 5
        history = SampleHistory(interval_s=1, capacity=1, samples=[])
        while time.monotonic() < deadline and not history.samples:
            history = SampleHistory.model_validate_json(
                client.get("/api/v1/hardware/samples").content
            )
            time.sleep(0.2)
        assert history.samples, "the sampler produced nothing within 5 s"
        assert history.capacity >= 900, "at least 15 minutes of 1 Hz samples are kept"
        events: list[HardwareSample] = []
        with client.stream("GET", "/api/v1/hardware/samples/stream") as stream:
            assert stream.headers["content-type"].startswith("text/event-stream")
            current_event = None
            for line in stream.iter_lines():
                if line.startswith("event:"):
                    current_event = line.split(":", 1)[1].strip()
                elif line.startswith("data:") and current_event == "sample":
                    events.append(HardwareSample.model_validate(json.loads(line[5:])))
                    if len(events) == 3:
                        break
    times = [e.t for e in events]
    assert times == sorted(times) and len(set(times)) == 3
    assert all(0 <= e.cpu_percent <= 100 and e.ram_total_bytes > 0 for e in events)
