"""rpc-server processes of llama.cpp: bound to one address, ready on accept, stopped by owner."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import socket
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from roundhouse.api.engines import DetectedEngine
from roundhouse.base.files import write_atomic
from roundhouse.core.engines.rpc import (
    RPC_STOP_GRACE_S,
    RpcAddress,
    build_rpc_server,
    check_bind_host,
)
from roundhouse.core.errors import InvalidInputError, NotFoundError
from roundhouse.core.supervise import EngineProcess
from roundhouse.core.supervise.errors import EngineExitedError, EngineNotReadyError
from roundhouse.core.supervise.recorded import recorded_process
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
# In the state folder: the workers running now, so that a daemon started after one that
# died finds those it left (the instances' records are instances.json).
WORKERS_FILE = "rpc-workers.json"


@dataclass
class RpcWorker:
    """One running rpc-server: where, for whom, its process and what it offers."""

    id: str
    address: RpcAddress
    owner: str
    pid: int
    started_at: float
    # Ours: the process we spawned. None: one a dead daemon left that its adopted instance
    # still uses, known by its psutil process only.
    process: EngineProcess | None
    leftover: psutil.Process | None = None
    create_time: float | None = None
    argv: tuple[str, ...] = ()
    free_bytes: int | None = None
    total_bytes: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "owner": self.owner,
            "host": self.address.host,
            "port": self.address.port,
            "pid": self.pid,
            "create_time": self.create_time,
            "argv": list(self.argv),
            "started_at": self.started_at,
        }


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

    def __init__(
        self,
        log_dir: Path,
        state_dir: Path | None = None,
        *,
        ready_timeout_s: float = READY_TIMEOUT_S,
    ) -> None:
        self._log_dir = log_dir
        self._file = state_dir / WORKERS_FILE if state_dir is not None else None
        self._ready_timeout_s = ready_timeout_s
        self._workers: dict[str, RpcWorker] = {}
        self._save_lock = asyncio.Lock()

    def list(self, owner: str | None = None) -> list[RpcWorker]:
        workers = sorted(self._workers.values(), key=lambda w: w.started_at)
        return [w for w in workers if owner is None or w.owner == owner]

    def get(self, worker_id: str) -> RpcWorker:
        try:
            return self._workers[worker_id]
        except KeyError:
            raise NotFoundError(f"No RPC worker has the id {worker_id!r}.") from None

    def pids(self) -> set[int]:
        return {w.pid for w in self._workers.values()}

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
        own = await asyncio.to_thread(_own_ipv4_addresses)
        if address.host not in own:
            raise InvalidInputError(
                f"This machine has no address {address.host}, so rpc-server cannot listen "
                f"there: give one of its own ({', '.join(sorted(own))})."
            )
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
        worker = RpcWorker(
            worker_id,
            address,
            owner,
            process.pid,
            time.time(),
            process,
            create_time=process.create_time,
            argv=plan.argv,
        )
        memory = await self._devices(process)
        if memory is not None:
            worker.free_bytes, worker.total_bytes = memory
        self._workers[worker_id] = worker
        try:
            await self._save()
        except BaseException:
            # A worker no record names would outlive a crash unseen: never run one.
            self._workers.pop(worker_id, None)
            with contextlib.suppress(Exception):
                await process.stop()
            raise
        log.info("RPC worker %s on %s started for %s", worker_id, address, owner)
        return worker

    async def stop(self, worker_id: str) -> None:
        worker = self._workers.pop(worker_id, None)
        if worker is None:
            raise NotFoundError(f"No RPC worker has the id {worker_id!r}.")
        if worker.process is not None:
            await worker.process.stop()
        elif worker.leftover is not None:
            await asyncio.to_thread(_end, worker.leftover)
        await self._save()
        log.info("RPC worker %s on %s stopped", worker.id, worker.address)

    async def recover(self, keep_owners: set[str]) -> tuple[tuple[RpcWorker, ...], tuple[int, ...]]:
        """At daemon start: keep the leftover workers of the instances kept (adopted), end
        every other one a dead daemon left; (the kept, the pids ended)."""
        kept: tuple[RpcWorker, ...] = ()
        ended: tuple[int, ...] = ()
        for record in await asyncio.to_thread(self._load):
            process = await asyncio.to_thread(_still_ours, record)
            if process is None:
                continue
            if record.owner in keep_owners:
                record.leftover = process
                self._workers[record.id] = record
                kept += (record,)
            else:
                log.info(
                    "Stopping RPC worker %s (pid %s) left by an earlier run", record.id, record.pid
                )
                await asyncio.to_thread(_end, process)
                ended += (record.pid,)
        await self._save()
        return kept, ended

    async def _save(self) -> None:
        if self._file is None:
            return
        async with self._save_lock:
            body = {"version": 1, "workers": [w.to_json() for w in self.list()]}
            data = json.dumps(body, indent=2, ensure_ascii=False).encode("utf-8")
            await asyncio.to_thread(write_atomic, self._file, data)

    def _load(self) -> tuple[RpcWorker, ...]:
        """The workers the file names; none when it is missing or not ours (logged)."""
        if self._file is None:
            return ()
        try:
            body = json.loads(self._file.read_bytes().decode("utf-8"))
            return tuple(_from_json(entry) for entry in body["workers"])
        except FileNotFoundError:
            return ()
        except (OSError, ValueError, KeyError, TypeError) as exc:
            log.warning("Ignoring the RPC workers file %s: %s", self._file, exc)
            return ()

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


def _from_json(data: dict[str, Any]) -> RpcWorker:
    create_time = data["create_time"]
    return RpcWorker(
        id=str(data["id"]),
        address=RpcAddress(str(data["host"]), int(data["port"])),
        owner=str(data["owner"]),
        pid=int(data["pid"]),
        started_at=float(data["started_at"]),
        process=None,
        create_time=float(create_time) if create_time is not None else None,
        argv=tuple(str(a) for a in data["argv"]),
    )


def _still_ours(record: RpcWorker) -> psutil.Process | None:
    """The record's process when it still runs as the one started (create time, argv)."""
    return recorded_process(record.pid, record.create_time, record.argv, hidden_argv_is_ours=False)


def _end(process: psutil.Process) -> None:
    """End a worker that is not our child: SIGTERM, then SIGKILL after its grace time."""
    with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
        process.terminate()
    _, alive = psutil.wait_procs([process], timeout=RPC_STOP_GRACE_S)
    for proc in alive:
        with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
            proc.kill()
    psutil.wait_procs(alive, timeout=RPC_STOP_GRACE_S)


def _own_ipv4_addresses() -> set[str]:
    """This machine's IPv4 addresses, loopback included."""
    found = {"127.0.0.1"}
    for addresses in psutil.net_if_addrs().values():
        found.update(a.address for a in addresses if a.family == socket.AF_INET)
    return found


def accepts(address: RpcAddress) -> bool:
    """Whether something listens on `address` now."""
    # Connect and close at once: rpc-server takes one client at a time and drops a client
    # that sends nothing, so the probe never holds it.
    try:
        with socket.create_connection((address.host, address.port), timeout=1.0):
            return True
    except OSError:
        return False
