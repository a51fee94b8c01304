"""The instance service with scripted engines: transient crashes restarted with backoff
within a budget, then failed with the reason; stop while starting leaves nothing."""

from __future__ import annotations

import asyncio
import socket
import sys
import time
from pathlib import Path

import pytest

from roundhouse.api.engines import DetectedEngine, EngineId, FoundBy, InstanceOptions
from roundhouse.api.instances import InstanceStatus, StartRequest
from roundhouse.core.engines.catalog import load_catalog
from roundhouse.core.instances.manager import InstanceManager
from roundhouse.core.instances.presets import PresetStore
from roundhouse.core.instances.service import InstanceService
from roundhouse.core.supervise import RestartPolicy
from tests.fakes.engines import MODEL_ID, SCRIPTS
from tests.processes import alive

pytestmark = pytest.mark.skipif(not hasattr(socket, "AF_UNIX"), reason="POSIX scripts")


def _fake_llama_server(folder: Path, script: str) -> Path:
    """An executable named llama-server that runs `script` with llama-server's arguments."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "llama-server"
    path.write_text(
        f"#!{sys.executable}\n"
        "import runpy, sys\n"
        f"sys.path.insert(0, {str(SCRIPTS)!r})\n"
        f"runpy.run_path({str(SCRIPTS / script)!r}, run_name='__main__')\n"
    )
    path.chmod(0o755)
    return path


def _service(tmp_path: Path, binary: Path, policy: RestartPolicy) -> InstanceService:
    spec = load_catalog().spec(EngineId.LLAMA_CPP)
    detected = DetectedEngine(
        id=EngineId.LLAMA_CPP, found_by=FoundBy.PATH, path=str(binary), where="test"
    )

    async def resolve(engine: EngineId) -> tuple[object, DetectedEngine]:
        return spec, detected

    manager = InstanceManager(tmp_path / "state", tmp_path / "logs", on_leftover="reap")
    return InstanceService(
        manager,
        PresetStore(tmp_path / "config"),
        resolve,  # type: ignore[arg-type]
        restart_policy=lambda: policy,
    )


def _request(tmp_path: Path) -> StartRequest:
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    return StartRequest(
        engine=EngineId.LLAMA_CPP,
        options=InstanceOptions(model=str(model), served_name=MODEL_ID, metrics=False),
    )


def test_a_crashing_engine_is_restarted_within_its_budget_then_fails(tmp_path: Path) -> None:
    binary = _fake_llama_server(tmp_path / "bin", "ready_then_crash.py")
    policy = RestartPolicy(budget=2, base_delay_s=0.05)

    async def main() -> None:
        service = _service(tmp_path, binary, policy)
        await service.recover()
        started = await service.start(_request(tmp_path))
        seen: list[InstanceStatus] = []
        pids: set[int] = set()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            info = service.info(started.id)
            if not seen or seen[-1] != info.status:
                seen.append(info.status)
            if info.pid:
                pids.add(info.pid)
            if info.status == InstanceStatus.FAILED:
                break
            await asyncio.sleep(0.01)
        info = service.info(started.id)
        assert info.status == InstanceStatus.FAILED, seen
        assert info.restarts == 2
        assert InstanceStatus.RESTARTING in seen and seen.count(InstanceStatus.READY) == 3
        assert info.last_exit is not None and info.last_exit.kind == "crash"
        assert info.last_exit.transient and "about to crash" in info.last_exit.log_tail
        assert info.error and "crashed" in info.error
        assert len(pids) == 3 and not any(alive(p) for p in pids)
        # The failed instance stays listed until dismissed.
        assert [i.id for i in service.all()] == [started.id]
        await service.stop(started.id)
        assert service.all() == []
        await service.stop_all()

    asyncio.run(main())


def test_stop_while_starting_stops_the_engine(tmp_path: Path) -> None:
    binary = _fake_llama_server(tmp_path / "bin", "never_ready_llama.py")

    async def main() -> None:
        service = _service(tmp_path, binary, RestartPolicy())
        await service.recover()
        started = await service.start(_request(tmp_path))
        deadline = time.monotonic() + 10
        while service.info(started.id).pid is None and time.monotonic() < deadline:  # noqa: ASYNC110 - polling as a client would
            await asyncio.sleep(0.01)
        pid = service.info(started.id).pid
        assert pid is not None and alive(pid)
        stopped = await service.stop(started.id)
        assert stopped.last_exit is not None and stopped.last_exit.by_us
        assert not alive(pid)

    asyncio.run(main())
