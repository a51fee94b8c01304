"""rpc-server processes of llama.cpp: bound to one address, ready on accept, stopped by owner."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import socket
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from roundhouse.api.engines import DetectedEngine
from roundhouse.core.engines.rpc import RpcAddress, build_rpc_server, check_bind_host
from roundhouse.core.errors import InvalidInputError, NotFoundError
from roundhouse.core.supervise import EngineProcess
from roundhouse.core.supervise.errors import EngineExitedError, EngineNotReadyError
from roundhouse.core.supervise.supervisor import ensure_port_free

log = logging.getLogger(__name__)

# rpc-server opens its port within a second; a machine busy loading may take longer.
READY_TIMEOUT_S = 30.0
# Its device lines are printed (buffered) before it listens and flushed at its first client:
# after the readiness probe they come within this.
DEVICES_WAIT_S = 2.0
# "  CPU: AMD Ryzen 9 (64215 MiB, 60123 MiB free)", one line per device it offers.
_DEVICE_LINE = re.compile(r"^\s+(\S+): .*\((\d+) MiB, (\d+) MiB free\)\s*$")
MIB = 1024 * 1024


@dataclass
class RpcWorker:
    """One running rpc-server: where, for whom, its process and what it offers."""

    id: str
    address: RpcAddress
    owner: str
    process: EngineProcess
    started_at: float
    free_bytes: int | None = None
    total_bytes: int | None = None


def no_rpc_server(detected: DetectedEngine) -> str:
    return (
        f"The llama.cpp at {detected.path} has no rpc-server beside it (a build without "
        "GGML_RPC): install a llama.cpp release from the Engines page, which includes it, "
        "or build llama.cpp with -DGGML_RPC=ON."
    )


def device_memory(lines: Sequence[str]) -> tuple[int, int] | None:
    """(free, total) bytes over the devices an rpc-server's start lines list; None: none yet."""
    free = total = 0
    found = False
    for line in lines:
        # Log lines may carry a time stamp in front: look from the device name on.
        match = _DEVICE_LINE.match(line.split("] ", 1)[-1] if "] " in line else line)
        if match:
            found = True
            total += int(match.group(2)) * MIB
            free += int(match.group(3)) * MIB
    return (free, total) if found else None


class RpcWorkers:
    """The rpc-servers this daemon runs, each owned by an instance or by the API (a peer)."""

    def __init__(self, log_dir: Path, *, ready_timeout_s: float = READY_TIMEOUT_S) -> None:
        self._log_dir = log_dir
        self._ready_timeout_s = ready_timeout_s
        self._workers: dict[str, RpcWorker] = {}

    def list(self, owner: str | None = None) -> list[RpcWorker]:
        workers = sorted(self._workers.values(), key=lambda w: w.started_at)
        return [w for w in workers if owner is None or w.owner == owner]

    def get(self, worker_id: str) -> RpcWorker:
        try:
            return self._workers[worker_id]
        except KeyError:
            raise NotFoundError(f"No RPC worker has the id {worker_id!r}.") from None

    def pids(self) -> set[int]:
        return {w.process.pid for w in self._workers.values()}

    async def start(
        self,
        binary: str,
        address: RpcAddress,
        *,
        owner: str,
        threads: int | None = None,
        cache: bool = False,
        devices: Sequence[str] = (),
    ) -> RpcWorker:
        """Start rpc-server bound to `address` only, and return it once its port accepts.

        Raises, with nothing left running: InvalidInputError (an address it may not bind),
        PortTakenError, EngineExitedError (it ended: a device it lacks, a bad address),
        EngineNotReadyError (its port never accepted).
        """
        check_bind_host(address.host)
        if any(w.address == address for w in self._workers.values()):
            raise InvalidInputError(
                f"An RPC worker already runs on {address}: use it, or stop it first."
            )
        plan = build_rpc_server(binary, address, threads=threads, cache=cache, devices=devices)
        ensure_port_free(address.host, address.port)
        worker_id = uuid.uuid4().hex[:12]
        log_path = self._log_dir / f"rpc-server-{worker_id}.log"
        process = await EngineProcess.spawn(plan, log_path)
        try:
            await self._wait_accepts(process, address)
        except BaseException:
            with contextlib.suppress(Exception):
                await process.stop()
            raise
        worker = RpcWorker(worker_id, address, owner, process, time.time())
        memory = await self._devices(process)
        if memory is not None:
            worker.free_bytes, worker.total_bytes = memory
        self._workers[worker_id] = worker
        log.info("RPC worker %s on %s started for %s", worker_id, address, owner)
        return worker

    async def stop(self, worker_id: str) -> None:
        worker = self._workers.pop(worker_id, None)
        if worker is None:
            raise NotFoundError(f"No RPC worker has the id {worker_id!r}.")
        await worker.process.stop()
        log.info("RPC worker %s on %s stopped", worker.id, worker.address)

    async def stop_owned(self, owner: str) -> None:
        """Stop every worker `owner` started (an instance's, when it stops or fails)."""
        ids = [w.id for w in self._workers.values() if w.owner == owner]
        results = await asyncio.gather(*(self.stop(i) for i in ids), return_exceptions=True)
        for result in results:
            if isinstance(result, Exception) and not isinstance(result, NotFoundError):
                log.warning("Stopping an RPC worker of %s failed: %s", owner, result)

    async def stop_all(self) -> None:
        for owner in {w.owner for w in self._workers.values()}:
            await self.stop_owned(owner)

    async def _wait_accepts(self, process: EngineProcess, address: RpcAddress) -> None:
        deadline = time.monotonic() + self._ready_timeout_s
        while True:
            if process.exited.done():
                outcome = await process.stop()
                raise EngineExitedError(outcome)
            if await asyncio.to_thread(accepts, address):
                return
            if time.monotonic() >= deadline:
                raise EngineNotReadyError(
                    f"The RPC worker did not open {address} within "
                    f"{self._ready_timeout_s:.0f} s; it has been stopped.",
                    process.log.tail(20),
                )
            await asyncio.sleep(0.1)

    async def _devices(self, process: EngineProcess) -> tuple[int, int] | None:
        deadline = time.monotonic() + DEVICES_WAIT_S
        while time.monotonic() < deadline:
            memory = device_memory(process.log.tail(50))
            if memory is not None:
                return memory
            await asyncio.sleep(0.05)
        return None


def accepts(address: RpcAddress) -> bool:
    """Whether something listens on `address` now."""
    # Connect and close at once: rpc-server takes one client at a time and drops a client
    # that sends nothing, so the probe never holds it.
    try:
        with socket.create_connection((address.host, address.port), timeout=1.0):
            return True
    except OSError:
        return False
