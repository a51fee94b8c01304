"""Engines through the daemon: the catalog, and the real llama-server found on PATH."""

from __future__ import annotations

import json
from pathlib import Path

import httpx

from roundhouse.api.engines import EngineId, EnginesOverview
from tests.daemon_process import DaemonProcess
from tests.support.cli import roundhouse


def test_engines_route_lists_the_catalog_and_finds_llama_server(
    llama_daemon: DaemonProcess, llama_server_binary: Path
) -> None:
    daemon = llama_daemon
    response = httpx.get(
        f"{daemon.url}/api/v1/engines",
        headers={"Authorization": f"Bearer {daemon.token}"},
        trust_env=False,
        timeout=60,
    )
    assert response.status_code == 200, response.text
    overview = EnginesOverview.model_validate_json(response.content)
    ids = {spec.id for spec in overview.catalog.engines}
    assert {EngineId.LLAMA_CPP, EngineId.OLLAMA, EngineId.MLX, EngineId.VLLM} <= ids
    llama = [e for e in overview.detection.found if e.id == EngineId.LLAMA_CPP]
    assert llama, overview.detection
    assert llama[0].path == str(llama_server_binary)
    assert llama[0].version
    # Every runnable engine is either found or missing with a reason, never silently absent.
    accounted = {e.id for e in overview.detection.found} | {
        m.id for m in overview.detection.missing
    }
    assert {s.id for s in overview.catalog.engines if s.launch.value != "attach"} <= accounted
    assert all(m.why for m in overview.detection.missing)


def test_cli_engines_table_and_json(llama_daemon: DaemonProcess) -> None:
    as_json = roundhouse(llama_daemon, "engines", "list", "--json")
    assert as_json.returncode == 0, as_json.stderr
    found = json.loads(as_json.stdout)["detection"]["found"]
    assert any(e["id"] == "llama.cpp" for e in found)
    table = roundhouse(llama_daemon, "engines", "--refresh")
    assert table.returncode == 0, table.stderr
    assert "llama.cpp" in table.stdout and "found" in table.stdout
    assert "not found" in table.stdout  # vLLM and SGLang cannot be installed here
