"""The process scan: engine processes on this machine and the ports they listen on (blocking)."""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

import psutil

from roundhouse.api.engines import EngineCatalog, EngineId, EngineSpec
from roundhouse.core.engines.attach.cmdline import ProcessPattern, flag_value, match_cmdline
from roundhouse.core.engines.attach.trust import exposure_problem, not_adopted, owner_problem
from roundhouse.core.engines.exo import EXPOSED

# Ports tried per process: engines listen on one, but workers may add a few internal ones.
MAX_PORTS_PER_PROCESS = 4
# Where an engine listens without --host: loopback, except vLLM, which binds every address,
# and exo, which always does.
_DEFAULT_HOST = {EngineId.VLLM: "0.0.0.0", EngineId.EXO: "0.0.0.0"}
# The flags that set the port: exo's is --api-port.
_PORT_FLAGS = ("--port", "--api-port")


@dataclass
class Candidate:
    """An engine process the scan found, with where to probe it."""

    pattern: ProcessPattern
    pid: int
    name: str
    cmdline: list[str]
    ancestors: list[int]
    # (host to connect to, port), the preferred first.
    endpoints: list[tuple[str, int]] = field(default_factory=list)
    # Why it is not adopted (another user's, listening beyond loopback); None: adopt it.
    left_out: str | None = None


def _connect_host(ip: str) -> str:
    """Where to connect to reach a listener bound to `ip` (0.0.0.0 and :: mean loopback)."""
    try:
        addr = ipaddress.ip_address(ip.split("%", 1)[0])
    except ValueError:
        return "127.0.0.1"
    if addr.is_unspecified:
        return "127.0.0.1" if addr.version == 4 else "::1"
    return addr.compressed


def listen_addresses(proc: psutil.Process) -> list[tuple[str, int]]:
    """(address, port) of each socket `proc` listens on; psutil's errors pass through (a
    process of another user's is AccessDenied on most systems)."""
    # psutil 6 renamed connections() to net_connections(); the project allows 5.9.
    method = getattr(proc, "net_connections", None) or proc.connections
    return [
        (c.laddr.ip, c.laddr.port)
        for c in method(kind="inet")
        if c.status == psutil.CONN_LISTEN and c.laddr
    ]


class _ListenTable:
    """Listening sockets by pid: per process where allowed, else the system table (once)."""

    def __init__(self) -> None:
        self._system: dict[int, list[tuple[str, int]]] | None = None

    def of(self, proc: psutil.Process) -> list[tuple[str, int]]:
        try:
            return listen_addresses(proc)
        except (psutil.AccessDenied, psutil.ZombieProcess, PermissionError):
            return self._system_table().get(proc.pid, [])
        except psutil.NoSuchProcess:
            return []

    def _system_table(self) -> dict[int, list[tuple[str, int]]]:
        if self._system is None:
            self._system = {}
            try:
                conns = psutil.net_connections(kind="inet")
            except (psutil.AccessDenied, PermissionError):
                conns = []  # macOS without root: only the command line's --port is left
            for c in conns:
                if c.status == psutil.CONN_LISTEN and c.laddr and c.pid is not None:
                    self._system.setdefault(c.pid, []).append((c.laddr.ip, c.laddr.port))
        return self._system


def _endpoints(
    listening: list[tuple[str, int]], cmdline: Sequence[str], spec: EngineSpec
) -> list[tuple[str, int]]:
    """Host and port pairs to probe, best guess first; IPv4 before IPv6 on one port."""
    flag_port = flag_value(cmdline, *_PORT_FLAGS)
    wanted = int(flag_port) if flag_port and flag_port.isdigit() else None
    if not listening:
        # Not listening yet (vLLM loads first), or the OS hides its sockets: trust the
        # command line, else the engine's default port.
        port = wanted or spec.default_port
        host = _host_flag(cmdline, spec)
        return [(_connect_host(host) if _is_ip(host) else host, port)] if port else []
    by_port: dict[int, str] = {}
    for ip, port in sorted(listening, key=lambda pair: ":" in pair[0]):
        by_port.setdefault(port, _connect_host(ip))
    order = sorted(by_port, key=lambda p: (p != wanted, p != spec.default_port, p))
    return [(by_port[p], p) for p in order[:MAX_PORTS_PER_PROCESS]]


def _host_flag(cmdline: Sequence[str], spec: EngineSpec) -> str:
    return flag_value(cmdline, "--host") or _DEFAULT_HOST.get(spec.id, "127.0.0.1")


def _left_out(
    proc: psutil.Process, listening: list[tuple[str, int]], cmdline: Sequence[str], spec: EngineSpec
) -> str | None:
    """Why the scan must not adopt this engine: another user's, or reachable from elsewhere
    (judged by its sockets, or by its command line while they are not open or hidden)."""
    if not listening:
        flag_port = flag_value(cmdline, *_PORT_FLAGS)
        port = int(flag_port) if flag_port and flag_port.isdigit() else spec.default_port or 0
        listening = [(_host_flag(cmdline, spec), port)]
    owner, exposure = owner_problem(proc), exposure_problem(listening)
    if spec.id == EngineId.EXO and exposure and not owner:
        # exo cannot be told to listen on loopback: the way to use it is by address.
        return EXPOSED
    return not_adopted(owner, exposure)


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def scan(
    catalog: EngineCatalog, patterns: Sequence[ProcessPattern], exclude: Collection[int]
) -> list[Candidate]:
    """Engine processes outside `exclude` (and not started by one of them), topmost only;
    those not to adopt (another user's, listening beyond loopback) carry why in `left_out`."""
    table = _ListenTable()
    found: list[Candidate] = []
    me = os.getpid()
    for proc in psutil.process_iter(["name", "cmdline"]):
        try:
            if proc.pid == me or proc.pid in exclude:
                continue
            name = proc.info.get("name") or ""
            cmdline = list(proc.info.get("cmdline") or [])
            # Without the command line (another user's process) only the name is left.
            pattern = match_cmdline(cmdline or [name], patterns)
            if pattern is None:
                continue
            ancestors = [p.pid for p in proc.parents()]
            if any(pid in exclude for pid in ancestors):
                continue
            candidate = Candidate(pattern, proc.pid, name, cmdline, ancestors)
            spec = catalog.spec(pattern.engine)
            listening = table.of(proc)
            candidate.endpoints = _endpoints(listening, cmdline, spec)
            candidate.left_out = _left_out(proc, listening, cmdline, spec)
            found.append(candidate)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    # Forked workers repeat their parent's command line: keep the topmost of each engine.
    pids = {(c.pattern.engine, c.pid) for c in found}
    return [c for c in found if not any((c.pattern.engine, a) in pids for a in c.ancestors)]
