"""Engines Roundhouse did not start: found running on this machine, or endpoints users added."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Awaitable, Callable

import psutil

from roundhouse.api.engines import EngineId
from roundhouse.api.external import AttachSource, ExternalEngine
from roundhouse.api.instances import (
    AddEndpointRequest,
    InstanceInfo,
    InstanceOrigin,
    InstanceStatus,
)
from roundhouse.core.engines.attach import RunningEngines, look_for_engines, probe_openai_endpoint
from roundhouse.core.engines.exo import STOP_REFUSED
from roundhouse.core.errors import ConflictError, RoundhouseError
from roundhouse.core.instances.endpoints import (
    EndpointStore,
    PresetRoute,
    SavedEndpoint,
    endpoint_id,
    endpoint_secret_name,
)
from roundhouse.core.instances.entries import InstanceEntry, InstanceTable
from roundhouse.core.instances.exposure import entry_warnings
from roundhouse.core.instances.manager import terminate_tree

log = logging.getLogger(__name__)

# Finds engines already running that are not ours (the pids given are ours), and those it
# leaves out (another user's, listening beyond loopback).
Scanner = Callable[[frozenset[int]], Awaitable[RunningEngines]]
# Reads, writes and deletes secrets (the OS keyring); blocking calls.
SecretGet = Callable[[str], "str | None"]
SecretSet = Callable[[str, str], None]
SecretDelete = Callable[[str], bool]
# An engine we did not start gets this long to stop after SIGTERM.
EXTERNAL_STOP_GRACE_S = 10.0


async def scan_this_machine(ours: frozenset[int]) -> RunningEngines:
    return await look_for_engines(exclude_pids=ours)


class ExternalInstances:
    """Lists engines that run without us and the endpoints users added; stops or forgets them."""

    def __init__(
        self,
        table: InstanceTable,
        *,
        endpoints: EndpointStore | None = None,
        scanner: Scanner = scan_this_machine,
        secrets: tuple[SecretGet, SecretSet, SecretDelete] | None = None,
    ) -> None:
        self._table = table
        self._endpoints = endpoints
        self._scanner = scanner
        self._secrets = secrets
        self._scan_lock = asyncio.Lock()
        # Why the last scan left engines out, in words; each is logged once, when new.
        self.left_out: list[str] = []

    async def scan(self) -> list[InstanceInfo]:
        """Look again for engines that run without us, and re-probe added endpoints."""
        entries = self._table.entries
        async with self._scan_lock:
            ours = frozenset(self._table.running_pids())
            found, endpoints, allowed = await asyncio.gather(
                self._scanner(ours), self._probe_endpoints(), self._preset_routes()
            )
            for old in [e for e in entries.values() if e.origin == InstanceOrigin.EXTERNAL]:
                if old.status != InstanceStatus.STOPPING:
                    entries.pop(old.id, None)
            # Ours again, now: an instance may have been spawned while the scan ran (a
            # just-in-time start), and one spawned but not yet recorded is still our child.
            ours = frozenset(self._table.running_pids())
            for engine in found.engines:
                if engine.pid is not None and (engine.pid in ours or _is_our_child(engine.pid)):
                    continue
                self._add(engine, allowed=allowed)
            for saved, engine in endpoints:
                self._add(engine, saved, allowed=allowed)
            self._note_left_out([str(e) for e in found.left_out if e.pid not in ours])
            self._table.changes.touch()
        return [
            self._table.info(e.id) for e in entries.values() if e.origin == InstanceOrigin.EXTERNAL
        ]

    async def add_endpoint(self, request: AddEndpointRequest) -> InstanceInfo:
        """Probe an OpenAI-compatible server, remember it (its key in the keyring), list it."""
        if self._endpoints is None:
            raise ConflictError("This daemon keeps no endpoints.")
        engine = await probe_openai_endpoint(request.url, request.api_key)
        saved = SavedEndpoint(
            url=engine.base_url,
            name=request.name or engine.base_url,
            has_key=bool(request.api_key),
            engine=engine.engine,
        )
        if request.api_key:
            setter = self._secret_fns()[1]
            await asyncio.to_thread(setter, saved.secret_name, request.api_key)
        await asyncio.to_thread(self._endpoints.save, saved)
        route = PresetRoute(engine=engine.engine, url=engine.base_url)
        await asyncio.to_thread(self._endpoints.allow_presets, route, request.may_serve_presets)
        entry_id = self._add(
            engine, saved, allowed=frozenset({route}) if request.may_serve_presets else frozenset()
        )
        for warning in entry_warnings(self._table.get(entry_id)):
            log.warning("Attached %s: %s", engine.base_url, warning)
        return self._table.info(entry_id)

    async def allow_presets(self, instance_id: str, allowed: bool) -> InstanceInfo:
        """Let an engine Roundhouse did not start serve the models presets start (or stop
        letting it); remembered by its engine and URL across scans and restarts."""
        entry = self._table.get(instance_id)
        if entry.origin != InstanceOrigin.EXTERNAL:
            raise ConflictError(
                f"Roundhouse runs instance {instance_id} itself: it serves preset models "
                "anyway. Only an engine Roundhouse did not start needs to be allowed."
            )
        if self._endpoints is None:
            raise ConflictError("This daemon keeps no settings for engines it did not start.")
        route = PresetRoute(engine=entry.engine, url=entry.base_url)
        await asyncio.to_thread(self._endpoints.allow_presets, route, allowed)
        entry.may_serve_presets = allowed
        self._table.changes.touch()
        log.info(
            "%s at %s %s serve models that presets start",
            entry.engine.value,
            entry.base_url,
            "may now" if allowed else "no longer may",
        )
        return self._table.info(instance_id)

    async def endpoint_key(self, instance_id: str) -> str | None:
        """The API key of an added endpoint (for the gateway), None when it has none."""
        entry = self._table.get(instance_id)
        if self._endpoints is None or entry.found_by != AttachSource.USER_ENDPOINT:
            return None
        if not entry.has_key:
            # No key was given: a machine without a keyring must still reach it.
            return None
        getter = self._secret_fns()[0]
        return await asyncio.to_thread(getter, endpoint_secret_name(entry.base_url))

    async def stop(self, entry: InstanceEntry, force: bool) -> None:
        """Detach an added endpoint; stop an engine found running only with `force`, and
        exo never (a cluster other machines share)."""
        if entry.found_by == AttachSource.USER_ENDPOINT:
            await self._forget_endpoint(entry.base_url, entry.engine)
            return
        if entry.engine == EngineId.EXO:
            raise ConflictError(STOP_REFUSED)
        who = f"pid {entry.pid}" if entry.pid else "an unknown process"
        if not force:
            raise ConflictError(
                f"Roundhouse did not start this {entry.engine.value} ({who} at "
                f"{entry.base_url}), and other programs may use it. Stop it anyway with "
                f"`roundhouse engines stop {entry.id} --force`, or confirm in the app."
            )
        if entry.pid is None:
            raise ConflictError(
                f"The process serving {entry.base_url} is not known (the system hides it), "
                "so Roundhouse cannot stop it: stop it where it was started."
            )
        entry.status = InstanceStatus.STOPPING
        self._table.changes.touch()
        try:
            process = psutil.Process(entry.pid)
        except psutil.NoSuchProcess:
            return
        except psutil.AccessDenied as exc:
            raise ConflictError(
                f"The system does not let Roundhouse stop pid {entry.pid} (another user's?)."
            ) from exc
        await terminate_tree(process, EXTERNAL_STOP_GRACE_S)

    def _note_left_out(self, words: list[str]) -> None:
        """Keep why engines were left out, logging each once: scans repeat every few
        seconds while the gateway looks for a model."""
        for line in words:
            if line not in self.left_out:
                log.info("%s", line)
        self.left_out = words

    async def _preset_routes(self) -> frozenset[PresetRoute]:
        if self._endpoints is None:
            return frozenset()
        return await asyncio.to_thread(self._endpoints.preset_routes)

    async def _probe_endpoints(self) -> list[tuple[SavedEndpoint, ExternalEngine]]:
        if self._endpoints is None:
            return []
        saved = await asyncio.to_thread(self._endpoints.load)

        async def probe(endpoint: SavedEndpoint) -> tuple[SavedEndpoint, ExternalEngine]:
            try:
                key = None
                if endpoint.has_key:
                    key = await asyncio.to_thread(self._secret_fns()[0], endpoint.secret_name)
                return endpoint, await probe_openai_endpoint(endpoint.url, key)
            except RoundhouseError as exc:
                down = ExternalEngine(
                    engine=endpoint.engine,
                    base_url=endpoint.url,
                    found_by=AttachSource.USER_ENDPOINT,
                    healthy=False,
                    status=exc.detail,
                )
                return endpoint, down

        return list(await asyncio.gather(*(probe(e) for e in saved)))

    async def _forget_endpoint(self, url: str, engine: EngineId) -> None:
        assert self._endpoints is not None
        saved = {e.url: e for e in await asyncio.to_thread(self._endpoints.load)}
        endpoint = saved.get(url)
        await asyncio.to_thread(self._endpoints.remove, url)
        route = PresetRoute(engine=engine, url=url)
        await asyncio.to_thread(self._endpoints.allow_presets, route, False)
        if endpoint is not None and endpoint.has_key:
            with contextlib.suppress(RoundhouseError):
                await asyncio.to_thread(self._secret_fns()[2], endpoint.secret_name)

    def _secret_fns(self) -> tuple[SecretGet, SecretSet, SecretDelete]:
        if self._secrets is not None:
            return self._secrets
        from roundhouse.core.infra import secrets

        return (secrets.get_secret, secrets.set_secret, secrets.delete_secret)

    def _add(
        self,
        engine: ExternalEngine,
        saved: SavedEndpoint | None = None,
        *,
        allowed: frozenset[PresetRoute],
    ) -> str:
        entry_id = endpoint_id(engine.base_url)
        host, _, port = engine.base_url.split("://", 1)[1].split("/", 1)[0].rpartition(":")
        self._table.entries[entry_id] = InstanceEntry(
            id=entry_id,
            engine=engine.engine,
            origin=InstanceOrigin.EXTERNAL,
            status=InstanceStatus.READY if engine.healthy else InstanceStatus.UNHEALTHY,
            host=host.strip("[]") or "?",
            port=int(port)
            if port.isdigit()
            else (443 if engine.base_url.startswith("https") else 80),
            base_url=engine.base_url,
            started_at=time.time(),
            model=engine.model_ids[0] if engine.model_ids else None,
            models=tuple(engine.model_ids),
            pid=engine.pid,
            argv=tuple(engine.cmdline),
            found_by=engine.found_by,
            name=saved.name if saved else engine.process_name,
            needs_api_key=engine.needs_api_key,
            has_key=saved.has_key if saved else False,
            probe_status=engine.status or None,
            may_serve_presets=PresetRoute(engine=engine.engine, url=engine.base_url) in allowed,
        )
        self._table.changes.touch()
        return entry_id


def _is_our_child(pid: int) -> bool:
    """Whether `pid` descends from this daemon: then we started it, whatever our records
    say yet."""
    try:
        return any(parent.pid == os.getpid() for parent in psutil.Process(pid).parents())
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return False
