"""The gateway's state: routing, just-in-time starts, residency, queues, idle unloading."""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Callable, Collection
from dataclasses import replace

from roundhouse.api.engines import EngineId
from roundhouse.api.gateway import CircuitState, GatewayModelList, GatewayRoutes
from roundhouse.api.gateway import InstanceUsage as UsageReport
from roundhouse.api.instances import InstanceInfo, InstanceStatus
from roundhouse.api.settings import Settings
from roundhouse.base.tasks import cancel_and_wait
from roundhouse.core.gateway.active import listed_name, resolve_active, served_by
from roundhouse.core.gateway.budget import ContextBudget
from roundhouse.core.gateway.choice import Load
from roundhouse.core.gateway.errors import (
    GatewayError,
    ModelNotFound,
    ModelNotReady,
    QueueTimeout,
    StartFailed,
    UpstreamFailed,
)
from roundhouse.core.gateway.failover import (
    RETRY_STATUSES,
    FailedBeforeReply,
    NoHealthyInstance,
    pick,
)
from roundhouse.core.gateway.health import Health
from roundhouse.core.gateway.jit import POLL_S, READY_MARGIN_S, Starter
from roundhouse.core.gateway.library import (
    LibraryStartables,
    StartableSource,
    combined,
    find,
    preset_library,
)
from roundhouse.core.gateway.listing import Listed, list_models, with_aliases
from roundhouse.core.gateway.live import LiveStats
from roundhouse.core.gateway.native import NativeApis
from roundhouse.core.gateway.remote import NoRemote, RemoteInstances, is_peer
from roundhouse.core.gateway.residency import expired
from roundhouse.core.gateway.router import COMING, Route, held_back, route, serving
from roundhouse.core.gateway.routes import routes_report
from roundhouse.core.gateway.scheduler import Lease, Scheduler
from roundhouse.core.gateway.upstream import (
    HEADERS_TIMEOUT_S,
    REQUEST_HEADERS,
    UPSTREAM_ERRORS,
    Upstream,
    UpstreamReply,
)
from roundhouse.core.gateway.usage import UsageCounter
from roundhouse.core.instances.service import InstanceService

log = logging.getLogger(__name__)

# A request whose instance vanished right after its start is started again once, not more.
MAX_STARTS_PER_REQUEST = 2


# A request for an unknown model looks again at most this often; a listing, less often.
EXTERNALS_MAX_AGE_ON_MISS_S = 2.0
EXTERNALS_MAX_AGE_ON_LIST_S = 15.0


class Gateway:
    """Routes a model name to an instance, starting one just in time when the library can;
    admits requests through each instance's queue; unloads what it started once idle."""

    def __init__(
        self,
        instances: InstanceService,
        upstream: Upstream | None = None,
        *,
        settings: Callable[[], Settings] = Settings,
        library: StartableSource | None = None,
        local: LibraryStartables | None = None,
        clock: Callable[[], float] = time.time,
        remote: RemoteInstances | None = None,
    ) -> None:
        self.instances = instances
        # Instances on paired machines: routed to like this machine's, never unloaded here.
        self.remote = remote or NoRemote()
        self.upstream = upstream or Upstream(self.remote.context)
        self.usage = UsageCounter()
        # What the gateway sees of each stream, for the metrics (time to first token, ...).
        self.live = LiveStats()
        # Read at each decision: PUT /api/v1/settings replaces the daemon's settings object.
        self._settings = settings
        # Presets decide which names an engine we did not start may not take (`_is_preset`);
        # the local library's models are startable too, after them (`local`).
        self.presets = library or preset_library(instances.presets)
        self.local = local
        self.library = self.presets if local is None else combined(self.presets, local)
        self.scheduler = Scheduler(lambda: self._settings().gateway.max_concurrent, clock)
        self.starter = Starter(instances, self.scheduler, settings)
        # Each instance's circuit, and the health checks of open ones (failover).
        self.health = Health(lambda: self._settings().gateway, self._check_health)
        self.load = Load(lambda i: self.health.breaker(i).state, self._busy)
        self._reaper: asyncio.Task[None] | None = None
        # Keys per instance: engines' derived ones, and added endpoints' read from the
        # keyring once rather than per request.
        self._keys: dict[str, str | None] = {}
        self.native = NativeApis()
        self.budget = ContextBudget(self.upstream, lambda info: self._headers(info, stream=False))
        # When engines running without us were last looked at again (monotonic seconds);
        # never, so far: the daemon's scan at start may be older than what is asked now.
        self._externals_at = -math.inf

    async def refresh_externals(self, max_age_s: float) -> bool:
        """Look again at engines running without us, at most once per `max_age_s`: what they
        serve changes behind our back (a model pulled into Ollama is served at once), and a
        scan on demand costs nothing while nobody asks. True when it looked."""
        now = time.monotonic()
        if now - self._externals_at < max_age_s:
            return False
        self._externals_at = now
        try:
            await self.instances.scan_external()
        except Exception:
            log.exception("Looking again at engines running without Roundhouse failed")
        if self.local is not None:
            # Models downloaded, imported or deleted since are served by name from now on.
            try:
                await self.local.refresh()
            except Exception:
                log.exception("Looking again at the model library failed")
        return True

    # -- what it serves -------------------------------------------------------------------

    def candidates(self) -> list[InstanceInfo]:
        """Every instance a request may go to: this machine's, then paired machines'."""
        return [*self.instances.all(memory=False), *self.remote.instances()]

    def candidates_for(self, model: str) -> list[InstanceInfo]:
        """The instances a request for `model` may go to: a name this machine can start stays
        this machine's (a paired machine's instance of it is reached as `machine/name`)."""
        remote = self.remote.instances()
        if remote and find(self.library(), model) is not None:
            remote = []
        return [*self.instances.all(memory=False), *remote]

    def listed(self) -> list[Listed]:
        """Serving, loading and startable models, each id once, then the aliases."""
        found = list_models(self.candidates(), self.library(), self.starter.loading)
        return with_aliases(found, self._settings().gateway.aliases)

    def _circuits(self) -> dict[str, CircuitState]:
        # Read after every instance change (the change feed): a restarted one starts afresh.
        self.health.sync(self.candidates())
        return self.health.circuits()

    def model_list(self) -> GatewayModelList:
        settings = self._settings()
        listed = self.listed()
        return GatewayModelList(
            models=[entry.model for entry in listed],
            active_model=resolve_active(settings.chat.active_model, listed),
            default_model=settings.gateway.default_model,
            circuits=self._circuits(),
        )

    def model_of(self, instance_id: str) -> str | None:
        """The id the gateway lists the instance's model under, if it lists it."""
        return served_by(self.listed(), instance_id)

    def listed_as(self, name: str | None) -> str | None:
        """The id the gateway lists the model a request named under; None if none."""
        return listed_name(self.listed(), name) if name else None

    def pass_through(self) -> bool:
        """Whether an API the engine serves itself goes to it untranslated (a setting)."""
        return self._settings().gateway.pass_through

    def route(self, model: str) -> Route:
        name, via = self.aliased(model)
        found = route(self.candidates_for(name), name, self._is_preset)
        return replace(found, model=name, via=via)

    def aliased(self, model: str) -> tuple[str, str]:
        """The name an alias stands for (and "alias"), else the name itself (and "")."""
        target = self._settings().gateway.aliases.get(model)
        return (target, "alias") if target else (model, "")

    def default_for(self, model: str) -> str | None:
        """The model an unknown name is served by, when the user chose a default."""
        default = self._settings().gateway.default_model
        return default if default and default != model else None

    def _is_preset(self, model: str) -> bool:
        """Whether a saved preset starts `model`: then only an engine Roundhouse runs, or
        one the user allowed, may serve it (`router.serving`)."""
        return find(self.presets(), model) is not None

    # -- admitting a request --------------------------------------------------------------

    async def acquire(self, model: str, avoid: frozenset[str] = frozenset()) -> tuple[Route, Lease]:
        """The instance to send a request for `model` to, and a slot on it held until the
        reply ends: starts the model first when that is on and the library can. Not one of
        `avoid`: those the request failed on already."""
        self.start()
        config = self._settings().gateway
        deadline = self.scheduler.clock() + config.queue_timeout_s
        target = await self._resolve(
            model,
            deadline,
            jit=config.just_in_time,
            limit=config.max_concurrent + config.queue_size,
            avoid=avoid,
        )
        # No await between routing and taking the slot: an instance with a slot taken is
        # never idle, so nothing unloads it under the request.
        lease = await self.scheduler.acquire(
            target.instance.id, queue_size=config.queue_size, deadline=deadline
        )
        return target, lease

    async def serve(self, model: str) -> InstanceInfo:
        """Make sure a ready instance serves `model`, starting one with the library's preset
        (asked for explicitly, so even with just-in-time starts off)."""
        self.start()
        wait = self._settings().engines.ready_timeout_s + READY_MARGIN_S
        target = await self._resolve(model, self.scheduler.clock() + wait, jit=True, limit=None)
        self.scheduler.touch(target.instance.id)
        return target.instance

    async def _resolve(
        self,
        asked: str,
        deadline: float,
        *,
        jit: bool,
        limit: int | None,
        avoid: frozenset[str] = frozenset(),
    ) -> Route:
        """The route for `asked`: an alias replaced by its target, and a name nothing lists
        or starts by the default model when one is set."""
        model, via = self.aliased(asked)
        starts = 0
        started: InstanceInfo | None = None
        rescanned = False
        while True:
            instances = self.candidates_for(model)
            picked = self._pick(instances, model, avoid)
            if picked is not None:
                return picked if picked.via else replace(picked, via=via)
            try:
                return replace(route(instances, model, self._is_preset), model=model, via=via)
            except ModelNotReady as exc:
                if not jit:
                    raise
                await self._wait_coming(model, instances, deadline, exc, limit)
            except ModelNotFound:
                if not rescanned and started is None:
                    rescanned = True
                    # Perhaps an engine running without us serves it since we last looked.
                    if await self.refresh_externals(EXTERNALS_MAX_AGE_ON_MISS_S):
                        continue
                startable = find(self.library(), model)
                if startable is None and started is None and not via:
                    default = self.default_for(model)
                    if default is not None:
                        # Unknown: served by the model the user chose for that (setting).
                        model, via = self.aliased(default)[0], "default"
                        continue
                if startable is not None and startable.id != model:
                    # Named otherwise (its library id): route by its id, which an instance
                    # started for it serves, before starting another one.
                    model = startable.id
                    continue
                if not jit:
                    raise
                if startable is None:
                    raise ModelNotFound(self._not_found(asked)) from None
                if started is not None and any(
                    i.id == started.id and i.status == InstanceStatus.READY for i in instances
                ):
                    listed = ", ".join(f"'{m}'" for m in started.models) or "nothing"
                    raise StartFailed(
                        f"The {started.engine.value} instance {started.id} started for '{model}' "
                        f"is running but does not serve that name (it lists {listed}). Check the "
                        "preset's model."
                    ) from None
                if starts >= MAX_STARTS_PER_REQUEST:
                    raise StartFailed(
                        f"'{model}' was started but its instance ended before it could answer. "
                        "Its log says why: `roundhouse engines ps`, then `roundhouse engines logs`."
                    ) from None
                starts += 1
                try:
                    started = await self.starter.ensure(startable, deadline, limit=limit)
                except StartFailed as exc:
                    # An engine the user runs may list the model: say how to let it serve.
                    if hint := held_back(instances, model):
                        raise StartFailed(exc.message + hint, exc.headers) from exc
                    raise

    async def _wait_coming(
        self,
        model: str,
        instances: list[InstanceInfo],
        deadline: float,
        exc: GatewayError,
        limit: int | None,
    ) -> None:
        """Wait for an instance that is starting or loading the model."""
        startable = find(self.library(), model)
        if startable is not None and self.starter.loading(startable):
            # A start runs for it: wait with that start, and hear its error if it fails.
            await self.starter.ensure(startable, deadline, limit=limit)
            return
        if self.scheduler.clock() >= deadline:
            raise QueueTimeout(
                f"{exc.message.removesuffix(' Retry in a moment.')} The request waited the "
                "longest the gateway allows (setting queue_timeout_s); retry in a moment."
            )
        info = next(i for i in serving(instances, model, self._is_preset) if i.status in COMING)
        with self.scheduler.pending(info.id):
            await asyncio.sleep(POLL_S)

    def _pick(
        self, instances: list[InstanceInfo], model: str, avoid: frozenset[str]
    ) -> Route | None:
        """The healthy least busy instance for `model`, or a fallback's (failover.pick)."""
        self.health.sync(instances)
        return pick(
            instances,
            model,
            self.load,
            avoid=avoid,
            fallbacks=self._settings().gateway.fallbacks.get(model, []),
            aliased=lambda name: self.aliased(name)[0],
            is_preset=self._is_preset,
            startable=find(self.library(), model) is not None,
        )

    def elsewhere(self, asked: str, tried: Collection[str]) -> bool:
        """Whether an instance not in `tried` (or a fallback's) takes a request for `asked`
        now: then one that failed before its reply is sent there."""
        try:
            return (
                self._pick(self.candidates(), self.aliased(asked)[0], frozenset(tried)) is not None
            )
        except NoHealthyInstance:
            return False

    def routes(self) -> GatewayRoutes:
        """Per model: its instances in the order a request tries them, their circuit and
        load, and its fallbacks (`GET /api/v1/gateway/routes`)."""
        instances = self.candidates()
        self.health.sync(instances)
        return routes_report(
            instances,
            self.load,
            self.health,
            self._settings().gateway.fallbacks,
            self.budget.known_context,
            self._is_preset,
        )

    def failed(self, info: InstanceInfo, why: str) -> None:
        """A request failed on the instance's side: counted by its circuit."""
        self.health.failed(info.id, why, (info.pid, info.started_at))

    def _busy(self, instance_id: str) -> int:
        """Requests in flight on the instance and waiting for it."""
        scheduler = self.scheduler
        waiting = scheduler.queued(instance_id) + self.starter.waiting_for(instance_id)
        return scheduler.in_flight(instance_id) + waiting

    async def _check_health(self, instance_id: str) -> bool:
        """Whether the instance answers its readiness probe: the supervisor's probe for an
        engine this daemon runs; for another, whether it is listed ready (a scan, or its
        machine, says so), and the next request's outcome settles the circuit."""
        probed = await self.instances.check_health(instance_id)
        if probed is not None:
            return probed
        return any(
            i.id == instance_id and i.status == InstanceStatus.READY for i in self.candidates()
        )

    def _not_found(self, model: str) -> str:
        names = [f"'{e.model.id}'" for e in self.listed()]
        offer = ", ".join(names) if names else "none"
        return (
            f"The model '{model}' is not served by any running instance, and it is neither in "
            f"the model library nor saved as a preset. Models available: {offer}. Download it "
            "(`roundhouse models pull`), add its folder to the library, or set a default model "
            "for unknown names (`roundhouse gateway default MODEL`)."
        ) + self._exo_hint()

    def _exo_hint(self) -> str:
        """exo lists every model card it knows but serves only those placed on its cluster:
        the name asked may well be one of its cards."""
        if not any(i.engine == EngineId.EXO for i in self.candidates()):
            return ""
        return (
            " An attached exo serves only the models placed on its cluster: place it there "
            "in exo's dashboard, then ask again."
        )

    # -- usage ----------------------------------------------------------------------------

    def usage_report(self) -> list[UsageReport]:
        """Per instance: requests and tokens counted, in flight, waiting, last use, TTL."""
        ttl = self._settings().gateway.idle_ttl_s
        report = []
        for info in self.candidates():
            if info.status == InstanceStatus.FAILED:
                continue
            counted = self.usage.get(info.id)
            report.append(
                UsageReport(
                    instance=info.id,
                    requests=counted.requests,
                    prompt_tokens=counted.prompt_tokens,
                    completion_tokens=counted.completion_tokens,
                    by_api=dict(counted.by_api),
                    in_flight=self.scheduler.in_flight(info.id),
                    queued=self.scheduler.queued(info.id) + self.starter.waiting_for(info.id),
                    last_used_at=self.scheduler.last_used(info.id),
                    idle_ttl_s=ttl if ttl > 0 and info.id in self.starter.started else None,
                )
            )
        return report

    # -- idle unloading -------------------------------------------------------------------

    def start(self) -> None:
        """Run the idle-TTL check in the background (once; later calls do nothing)."""
        if self._reaper is None or self._reaper.done():
            self._reaper = asyncio.create_task(self._unload_idle(), name="gateway-idle-ttl")

    async def _unload_idle(self) -> None:
        while True:
            await asyncio.sleep(check_interval(self._settings().gateway.idle_ttl_s))
            try:
                await self.unload_expired()
            except Exception:  # the check must go on; a bug shows in the log
                log.exception("Unloading idle instances failed")

    async def unload_expired(self) -> list[str]:
        """Stop the instances the gateway started that were idle for `idle_ttl_s`."""
        stopped: list[str] = []
        while True:
            ttl = self._settings().gateway.idle_ttl_s
            instances = self.instances.all(memory=False)
            present = {i.id for i in instances}
            self.starter.started &= present
            self.scheduler.forget_except(present)
            self.health.forget_except({i.id for i in self.candidates()})
            due = expired(instances, self.starter.started, self.scheduler, ttl, self.starter.busy())
            if not due:
                return stopped
            try:
                await self.starter.unload(due[0], f"after {ttl:g} s idle (setting idle_ttl_s)")
            except StartFailed as exc:
                log.warning("%s", exc.message)
                return stopped
            stopped.append(due[0].id)

    # -- forwarding -----------------------------------------------------------------------

    async def _headers(self, info: InstanceInfo, stream: bool) -> dict[str, str]:
        headers = {
            **REQUEST_HEADERS,
            "content-type": "application/json",
            "accept": "text/event-stream" if stream else "application/json",
        }
        # The engine's own key for what Roundhouse started (ADR 21), an added endpoint's key,
        # a paired machine's key (not kept here: unpairing drops it at once).
        if is_peer(info):
            peer_key = self.remote.key(info)
            if peer_key:
                headers["authorization"] = f"Bearer {peer_key}"
            return headers
        if info.id not in self._keys:
            self._keys[info.id] = await self.instances.upstream_key(info.id)
        key = self._keys[info.id]
        if key:
            headers["authorization"] = f"Bearer {key}"
        return headers

    async def open(self, target: Route, path: str, body: bytes, *, stream: bool) -> UpstreamReply:
        """Send `body` to the instance's `/v1/<path>`; the caller reads and closes the reply."""
        info = target.instance
        url = f"{info.base_url.rstrip('/')}/{path}"
        headers = await self._headers(info, stream)
        try:
            # Bounds the send (see HEADERS_TIMEOUT_S): up to the reply's headers only. A
            # request the engine never received is sent once more, on a new connection.
            async with asyncio.timeout(HEADERS_TIMEOUT_S):
                response = await self.upstream.post(info, url, body, headers, stream=stream)
        except UPSTREAM_ERRORS as exc:
            why = f"{info.id} at {info.base_url} did not answer: {_why(exc)}"
            self.failed(info, why)
            # Nothing reached the client: another instance may take the request.
            raise FailedBeforeReply(f"The {info.engine.value} instance {why}.", info.id) from exc
        if response.status in RETRY_STATUSES:
            self.failed(info, f"it answered {response.status}")
        else:
            self.health.succeeded(info.id)
        if 300 <= response.status < 400:
            # Not followed: the request, and an endpoint's key, go only where the user chose.
            location = response.headers.get("location")
            response.close()
            raise UpstreamFailed(redirect_refused(info, location))
        return UpstreamReply(response)

    async def aclose(self) -> None:
        if self._reaper is not None:
            await cancel_and_wait(self._reaper)
            self._reaper = None
        await self.starter.aclose()
        await self.health.aclose()
        await self.upstream.aclose()


def check_interval(ttl_s: float) -> float:
    """How often idle instances are checked: a quarter of the TTL, within 0.25 s and 5 s."""
    if ttl_s <= 0:
        return 5.0
    return min(5.0, max(0.25, ttl_s / 4))


def redirect_refused(info: InstanceInfo, location: str | None) -> str:
    """Why a reply that redirects elsewhere is not followed, and what to do."""
    # The server writes the address: it is shown cut short, never followed.
    where = f" to {location[:200]}" if location else ""
    return (
        f"The {info.engine.value} instance {info.id} at {info.base_url} answered with a "
        f"redirect{where}. The gateway does not follow redirects, so that a request and its "
        "key go only to the address you chose: attach the address it redirects to instead, "
        "if you trust it."
    )


def _why(exc: BaseException) -> str:
    """An upstream failure in words: aiohttp's timeouts often carry no message."""
    if isinstance(exc, TimeoutError) and not str(exc):
        return f"it took more than {HEADERS_TIMEOUT_S:g} s to take the request and start a reply"
    return f"{exc.__class__.__name__}: {exc or 'no detail'}"
