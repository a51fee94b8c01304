"""The instance manager with the real llama-server: leftovers of a dead daemon reaped or adopted."""

from __future__ import annotations

import asyncio
import gc
import json
from pathlib import Path

import httpx
import pytest

from roundhouse.api.engines import DetectedEngine, EngineId, FoundBy, LaunchParams
from roundhouse.core.engines.catalog import load_catalog
from roundhouse.core.instances import InstanceManager, InstanceState, OnLeftover, RecordStore
from roundhouse.core.supervise import EngineExitedError
from tests.processes import alive, assert_nothing_left, free_port


def _manager(root: Path, on_leftover: OnLeftover) -> InstanceManager:
    return InstanceManager(
        root / "state", root / "logs", on_leftover=on_leftover, ready_timeout_s=60
    )


async def _start_two_then_die(binary: Path, model: Path, root: Path) -> list[int]:
    """Start two instances, then drop the manager without stopping them, as a crash would.

    The engines run in sessions of their own, so they outlive the daemon that started them.
    """
    spec = load_catalog().spec(EngineId.LLAMA_CPP)
    detected = DetectedEngine(
        id=EngineId.LLAMA_CPP, found_by=FoundBy.PATH, path=str(binary), where="test build"
    )
    first = _manager(root, "reap")
    started = [
        await first.start(
            spec, detected, LaunchParams(model=str(model), port=free_port(), ctx_size=512)
        )
        for _ in range(2)
    ]
    assert [i.state for i in started] == [InstanceState.RUNNING] * 2
    pids = [i.pid for i in started]
    saved = RecordStore(root / "state").load()
    assert [(r.id, r.pid) for r in saved] == [(i.id, i.pid) for i in started]
    assert all(r.create_time is not None and r.model == str(model) for r in saved)
    del first, started
    gc.collect()
    assert all(alive(pid) for pid in pids)
    return pids


def test_a_new_daemon_reaps_what_a_dead_one_left(
    llama_server_binary: Path, tiny_gguf: Path, home_root: Path
) -> None:
    async def main() -> list[int]:
        pids = await _start_two_then_die(llama_server_binary, tiny_gguf, home_root)
        recovery = await _manager(home_root, "reap").recover()
        assert sorted(r.pid for r in recovery.reaped) == sorted(pids)
        assert recovery.adopted == () and recovery.stale == ()
        return pids

    pids = asyncio.run(main())
    for pid in pids:
        assert_nothing_left(pid, pid)
    assert RecordStore(home_root / "state").load() == []


def test_a_new_daemon_adopts_what_a_dead_one_left_then_stops_it(
    llama_server_binary: Path, tiny_gguf: Path, home_root: Path
) -> None:
    async def main() -> list[int]:
        pids = await _start_two_then_die(llama_server_binary, tiny_gguf, home_root)
        instances = _manager(home_root, "adopt")
        try:
            recovery = await instances.recover()
            assert sorted(i.pid for i in recovery.adopted) == sorted(pids)
            listed = instances.list()
            assert sorted(i.pid for i in listed) == sorted(pids)
            assert all(i.state == InstanceState.ADOPTED and i.healthy for i in listed)
            async with httpx.AsyncClient(trust_env=False, timeout=10) as http:
                for instance in listed:
                    health = await http.get(instance.record.probe_url)
                    assert health.status_code == 200, health.text
                    url = f"{instance.record.base_url}/models"
                    # The adopting daemon derives the key the dead one started it with.
                    assert (await http.get(url)).status_code == 401
                    key = {"authorization": f"Bearer {instances.engine_key(instance.id)}"}
                    models = await http.get(url, headers=key)
                    assert models.json()["data"][0]["id"] == str(tiny_gguf)
                    assert await instances.check_health(instance.id)
            # Still recorded: a third daemon would find them again.
            assert len(RecordStore(home_root / "state").load()) == 2
        finally:
            await instances.stop_all()
        assert instances.list() == []
        return pids

    pids = asyncio.run(main())
    for pid in pids:
        assert_nothing_left(pid, pid)
    body = json.loads((home_root / "state" / "instances.json").read_text(encoding="utf-8"))
    assert body["instances"] == []


def test_a_failed_start_leaves_no_record(
    llama_server_binary: Path, tmp_path: Path, home_root: Path
) -> None:
    bogus = tmp_path / "not a model.gguf"
    bogus.write_bytes(b"PK\x03\x04" + b"\0" * 4096)
    spec = load_catalog().spec(EngineId.LLAMA_CPP)
    detected = DetectedEngine(
        id=EngineId.LLAMA_CPP, found_by=FoundBy.PATH, path=str(llama_server_binary), where="t"
    )
    instances = _manager(home_root, "reap")
    params = LaunchParams(model=str(bogus), port=free_port(), ctx_size=512)
    with pytest.raises(EngineExitedError):
        asyncio.run(instances.start(spec, detected, params))
    assert instances.list() == []
    assert RecordStore(home_root / "state").load() == []
