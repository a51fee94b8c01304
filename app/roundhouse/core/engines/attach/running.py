"""Find engines that already run on this machine: Ollama on its port, engine processes.

    engines = await find_running_engines(load_catalog(), exclude_pids=our_engine_pids)

`find_running_engines` never raises and never hangs: it asks Ollama at OLLAMA_HOST (default
127.0.0.1:11434) for `GET /` and its version, and, at the same time, scans processes for
engine command lines (`llama-server`, `ollama serve`, `vllm serve`, `python -m
vllm.entrypoints.openai.api_server`, `python -m sglang.launch_server`, `mlx_lm.server`,
`mlx_lm server`), then probes each one's listening port with the catalog's readiness path and
model list, all concurrently, each request bounded by `timeout_s`. Processes in
`exclude_pids`, or started by one of them, are left out: the daemon passes the engines it
runs itself so that none is listed twice. Secret flag values (`--api-key X`) never leave
here: command lines are redacted.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Collection, Mapping, Sequence
from urllib.parse import urlsplit

import httpx
import psutil

from roundhouse.api.engines import EngineCatalog, EngineId, EngineSpec
from roundhouse.api.external import AttachSource, ExternalEngine
from roundhouse.core.engines.attach.cmdline import ProcessPattern, process_patterns, redact_cmdline
from roundhouse.core.engines.attach.probe import http_url, is_local_host, probe_engine
from roundhouse.core.engines.attach.scan import Candidate, scan
from roundhouse.core.engines.catalog import load_catalog
from roundhouse.core.engines.ollama_api import ollama_base_url
from roundhouse.core.errors import RoundhouseError
from roundhouse.core.ports import port_owner

PROBE_TIMEOUT_S = 1.5


async def _probe_candidate(
    http: httpx.AsyncClient, spec: EngineSpec, candidate: Candidate, timeout_s: float
) -> ExternalEngine | None:
    if not candidate.endpoints:
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
) -> list[ExternalEngine]:
    try:
        candidates = await asyncio.to_thread(scan, catalog, patterns, exclude)
    except (psutil.Error, OSError):
        return []  # no process table to read (a locked-down container): nothing found
    found = await asyncio.gather(
        *(_probe_candidate(http, catalog.spec(c.pattern.engine), c, timeout_s) for c in candidates)
    )
    return [engine for engine in found if engine is not None]


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


async def _attach_owner(
    ollama: ExternalEngine, scanned: list[ExternalEngine], exclude: Collection[int]
) -> tuple[ExternalEngine | None, list[ExternalEngine]]:
    """Fill in the process behind Ollama's port; drop it when it is one of ours."""
    host, port = _port_of(ollama.base_url)
    if not is_local_host(host) or port is None:
        return ollama, scanned
    same = [e for e in scanned if e.engine == EngineId.OLLAMA and _port_of(e.base_url)[1] == port]
    if same:
        owner = same[0]
        rest = [e for e in scanned if e is not owner]
        return ollama.model_copy(
            update={"pid": owner.pid, "process_name": owner.process_name, "cmdline": owner.cmdline}
        ), rest
    found = await asyncio.to_thread(port_owner, port)
    if found is None:
        return ollama, scanned
    if found.pid in exclude or any(
        p in exclude for p in await asyncio.to_thread(_ancestors, found.pid)
    ):
        return None, scanned
    cmdline: list[str] = []
    with contextlib.suppress(psutil.Error):
        cmdline = redact_cmdline(psutil.Process(found.pid).cmdline())
    return ollama.model_copy(
        update={"pid": found.pid, "process_name": found.name, "cmdline": cmdline}
    ), scanned


async def find_running_engines(
    catalog: EngineCatalog | None = None,
    *,
    exclude_pids: Collection[int] = frozenset(),
    env: Mapping[str, str] | None = None,
    timeout_s: float = PROBE_TIMEOUT_S,
    patterns: Sequence[ProcessPattern] | None = None,
    scan_processes: bool = True,
) -> list[ExternalEngine]:
    """Engines already serving on this machine that Roundhouse did not start. Never raises.

    `env` is where OLLAMA_HOST is read (default: this process's environment); `patterns`
    replaces the command lines recognised (default: `process_patterns(catalog)`).
    """
    catalog = catalog or load_catalog()
    env = os.environ if env is None else env
    patterns = process_patterns(catalog) if patterns is None else patterns
    exclude = frozenset(exclude_pids)
    async with httpx.AsyncClient(trust_env=False, timeout=timeout_s) as http:
        ollama_task = _probe_ollama_port(http, catalog.spec(EngineId.OLLAMA), env, timeout_s)
        scan_task = (
            _scan_and_probe(http, catalog, patterns, exclude, timeout_s)
            if scan_processes
            else asyncio.sleep(0, [])
        )
        ollama, scanned = await asyncio.gather(ollama_task, scan_task)
    if ollama is not None:
        ollama, scanned = await _attach_owner(ollama, scanned, exclude)
    scanned.sort(key=lambda e: (e.engine.value, e.base_url))
    return ([ollama] if ollama is not None else []) + scanned
