"""Find engines that already run on this machine: Ollama on its port, engine processes.

    engines = await find_running_engines(load_catalog(), exclude_pids=our_engine_pids)

`find_running_engines` never raises and never hangs: it asks Ollama at OLLAMA_HOST (default
127.0.0.1:11434) for `GET /` and its version, and, at the same time, scans processes for
engine command lines (`llama-server`, `ollama serve`, `vllm serve`, `python -m
vllm.entrypoints.openai.api_server`, `python -m sglang.launch_server`, `mlx_lm.server`,
`mlx_lm server`), then probes each one's listening port with the catalog's readiness path and
model list, all concurrently, each request bounded by `timeout_s`. Processes in
`exclude_pids`, or started by one of them, are left out: the daemon passes the engines it
runs itself so that none is listed twice. Engines of another user, or listening beyond
loopback, are never probed nor returned: `look_for_engines` says why for each (see
`trust`). Secret flag values (`--api-key X`) never leave here: command lines are redacted.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import httpx
import psutil

from roundhouse.api.engines import EngineCatalog, EngineId, EngineSpec
from roundhouse.api.external import AttachSource, ExternalEngine
from roundhouse.base.hosts import is_loopback_host
from roundhouse.core.engines.attach.cmdline import ProcessPattern, process_patterns, redact_cmdline
from roundhouse.core.engines.attach.probe import http_url, probe_engine
from roundhouse.core.engines.attach.scan import Candidate, listen_addresses, scan
from roundhouse.core.engines.attach.trust import (
    UNKNOWN_OWNER,
    exposure_problem,
    not_adopted,
    owner_problem,
    socket_listeners,
    uid_problem,
)
from roundhouse.core.engines.catalog import load_catalog
from roundhouse.core.engines.ollama_api import ollama_base_url
from roundhouse.core.errors import RoundhouseError
from roundhouse.core.infra.ports import port_owner

PROBE_TIMEOUT_S = 1.5


@dataclass(frozen=True)
class LeftOut:
    """An engine found running that Roundhouse does not use, and why, in words."""

    engine: EngineId
    pid: int | None
    ports: tuple[int, ...]
    why: str

    def __str__(self) -> str:
        who = f"pid {self.pid}" if self.pid is not None else "an unknown process"
        ports = f" on port {', '.join(map(str, self.ports))}" if self.ports else ""
        return f"{self.engine.value} ({who}{ports}) is not used: {self.why}."


@dataclass
class RunningEngines:
    """What a look around this machine found: engines to adopt, and those left out."""

    engines: list[ExternalEngine] = field(default_factory=list)
    left_out: list[LeftOut] = field(default_factory=list)


async def _probe_candidate(
    http: httpx.AsyncClient, spec: EngineSpec, candidate: Candidate, timeout_s: float
) -> ExternalEngine | None:
    if not candidate.endpoints or candidate.left_out:
        return None
    urls = [http_url(host, port) for host, port in candidate.endpoints]
    probes = await asyncio.gather(*(probe_engine(http, spec, url, timeout_s) for url in urls))
    # The best guess that is ready, else the best that answered, else the best guess.
    ranked = sorted(
        range(len(urls)), key=lambda i: (not probes[i].healthy, not probes[i].answered, i)
    )
    best = ranked[0]
    probe = probes[best]
    return ExternalEngine(
        engine=spec.id,
        base_url=urls[best],
        found_by=AttachSource.PROCESS_SCAN,
        healthy=probe.healthy,
        status=probe.status,
        pid=candidate.pid,
        process_name=candidate.name or None,
        cmdline=redact_cmdline(candidate.cmdline),
        version=probe.version,
        model_ids=probe.model_ids,
        needs_api_key=probe.needs_api_key,
    )


async def _scan_and_probe(
    http: httpx.AsyncClient,
    catalog: EngineCatalog,
    patterns: Sequence[ProcessPattern],
    exclude: Collection[int],
    timeout_s: float,
) -> RunningEngines:
    try:
        candidates = await asyncio.to_thread(scan, catalog, patterns, exclude)
    except (psutil.Error, OSError):
        # No process table to read (a locked-down container): nothing found.
        return RunningEngines()
    found = await asyncio.gather(
        *(_probe_candidate(http, catalog.spec(c.pattern.engine), c, timeout_s) for c in candidates)
    )
    left_out = [
        LeftOut(c.pattern.engine, c.pid, tuple(port for _, port in c.endpoints), c.left_out)
        for c in candidates
        if c.left_out
    ]
    return RunningEngines([engine for engine in found if engine is not None], left_out)


async def _probe_ollama_port(
    http: httpx.AsyncClient, spec: EngineSpec, env: Mapping[str, str], timeout_s: float
) -> ExternalEngine | None:
    try:
        base_url = ollama_base_url(env.get("OLLAMA_HOST"))
    except RoundhouseError:
        base_url = ollama_base_url(None)  # a broken OLLAMA_HOST: look where Ollama defaults
    probe = await probe_engine(http, spec, base_url, timeout_s)
    if not probe.healthy:
        # Only a server that says "Ollama is running" counts: 11434 may be someone else's.
        return None
    return ExternalEngine(
        engine=EngineId.OLLAMA,
        base_url=base_url,
        found_by=AttachSource.OLLAMA_PORT,
        healthy=True,
        status=probe.status,
        version=probe.version,
        model_ids=probe.model_ids,
    )


def _port_of(url: str) -> tuple[str, int | None]:
    parts = urlsplit(url)
    return parts.hostname or "", parts.port


def _ancestors(pid: int) -> list[int]:
    try:
        return [p.pid for p in psutil.Process(pid).parents()]
    except (psutil.Error, OSError):
        return []  # no process table to read (a locked-down container): nothing found


def _port_problem(pid: int | None, port: int) -> str | None:
    """Why the process behind Ollama's port must not be adopted (blocking): the scan's
    rules, read from the process when the system shows it, else from Linux's socket table."""
    if pid is not None:
        try:
            process = psutil.Process(pid)
            return not_adopted(owner_problem(process), exposure_problem(listen_addresses(process)))
        except psutil.NoSuchProcess:
            return "ended while Roundhouse looked at it"
        except psutil.AccessDenied:
            pass  # another user's process: the socket table may still say whose
    sockets = socket_listeners(port)
    if not sockets:
        return not_adopted(UNKNOWN_OWNER, None)
    owner = next((p for p in (uid_problem(uid) for _, uid in sockets) if p), None)
    return not_adopted(owner, exposure_problem((ip, port) for ip, _ in sockets))


async def _attach_owner(
    ollama: ExternalEngine, found: RunningEngines, exclude: Collection[int]
) -> ExternalEngine | None:
    """Fill in the process behind Ollama's port; drop it when it is one of ours, or when it
    must not be adopted (then `found.left_out` says why). Takes the scan's entry for the
    same process out of `found.engines`: it is listed once, as Ollama at its port."""
    host, port = _port_of(ollama.base_url)
    if not is_loopback_host(host) or port is None:
        # OLLAMA_HOST names another machine: the user chose it; there is no process to see.
        return ollama
    same = [
        e for e in found.engines if e.engine == EngineId.OLLAMA and _port_of(e.base_url)[1] == port
    ]
    if same:
        owner = same[0]
        found.engines.remove(owner)
        return ollama.model_copy(
            update={"pid": owner.pid, "process_name": owner.process_name, "cmdline": owner.cmdline}
        )
    if any(e.engine == EngineId.OLLAMA and port in e.ports for e in found.left_out):
        return None  # the scan left this very process out already, and said why
    holder = await asyncio.to_thread(port_owner, port)
    pid = holder.pid if holder is not None else None
    if pid is not None and (
        pid in exclude or any(p in exclude for p in await asyncio.to_thread(_ancestors, pid))
    ):
        return None
    why = await asyncio.to_thread(_port_problem, pid, port)
    if why is not None:
        found.left_out.append(LeftOut(EngineId.OLLAMA, pid, (port,), why))
        return None
    if holder is None:
        return ollama
    cmdline: list[str] = []
    with contextlib.suppress(psutil.Error):
        cmdline = redact_cmdline(psutil.Process(holder.pid).cmdline())
    return ollama.model_copy(
        update={"pid": holder.pid, "process_name": holder.name, "cmdline": cmdline}
    )


async def look_for_engines(
    catalog: EngineCatalog | None = None,
    *,
    exclude_pids: Collection[int] = frozenset(),
    env: Mapping[str, str] | None = None,
    timeout_s: float = PROBE_TIMEOUT_S,
    patterns: Sequence[ProcessPattern] | None = None,
    scan_processes: bool = True,
) -> RunningEngines:
    """Engines already serving on this machine that Roundhouse did not start and may use,
    and those it left out with why. Never raises.

    `env` is where OLLAMA_HOST is read (default: this process's environment); `patterns`
    replaces the command lines recognised (default: `process_patterns(catalog)`).
    """
    catalog = catalog or load_catalog()
    env = os.environ if env is None else env
    patterns = process_patterns(catalog) if patterns is None else patterns
    exclude = frozenset(exclude_pids)
    # Redirects are never followed: an answer comes from the address probed, or none does.
    async with httpx.AsyncClient(
        trust_env=False, timeout=timeout_s, follow_redirects=False
    ) as http:
        ollama_task = _probe_ollama_port(http, catalog.spec(EngineId.OLLAMA), env, timeout_s)
        scan_task = (
            _scan_and_probe(http, catalog, patterns, exclude, timeout_s)
            if scan_processes
            else asyncio.sleep(0, RunningEngines())
        )
        ollama, found = await asyncio.gather(ollama_task, scan_task)
    if ollama is not None:
        ollama = await _attach_owner(ollama, found, exclude)
    found.engines.sort(key=lambda e: (e.engine.value, e.base_url))
    if ollama is not None:
        found.engines.insert(0, ollama)
    return found


async def find_running_engines(
    catalog: EngineCatalog | None = None,
    *,
    exclude_pids: Collection[int] = frozenset(),
    env: Mapping[str, str] | None = None,
    timeout_s: float = PROBE_TIMEOUT_S,
    patterns: Sequence[ProcessPattern] | None = None,
    scan_processes: bool = True,
) -> list[ExternalEngine]:
    """The engines `look_for_engines` adopts, without a word on those it left out."""
    found = await look_for_engines(
        catalog,
        exclude_pids=exclude_pids,
        env=env,
        timeout_s=timeout_s,
        patterns=patterns,
        scan_processes=scan_processes,
    )
    return found.engines
