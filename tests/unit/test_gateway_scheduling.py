"""The gateway's scheduling without a server: queue and slots, residency and the idle TTL
on an injected clock, the library of startable models, shared just-in-time starts."""

from __future__ import annotations

import asyncio
import time
from typing import Any, cast

import pytest

from roundhouse.api.engines import EngineId, InstanceOptions
from roundhouse.api.gateway import ModelState
from roundhouse.api.instances import (
    InstanceInfo,
    InstanceOrigin,
    InstanceStatus,
    Preset,
    StartRequest,
)
from roundhouse.api.settings import GatewaySettings, Settings
from roundhouse.core.errors import NotFoundError
from roundhouse.core.gateway.errors import ModelNotReady, QueueFull, QueueTimeout, StartFailed
from roundhouse.core.gateway.gateway import Gateway
from roundhouse.core.gateway.jit import Starter
from roundhouse.core.gateway.library import Startable, find, from_presets
from roundhouse.core.gateway.listing import list_models
from roundhouse.core.gateway.residency import expired, least_recently_used_idle, resident
from roundhouse.core.gateway.scheduler import Scheduler
from roundhouse.core.instances.service import InstanceService
from tests.support.clock import Clock

A = InstanceOptions(model="/m/a.gguf")


def _info(
    id: str,
    model: str = "/m/a.gguf",
    status: InstanceStatus = InstanceStatus.READY,
    origin: InstanceOrigin = InstanceOrigin.STARTED,
    ready_at: float = 0.0,
) -> InstanceInfo:
    return InstanceInfo(
        id=id,
        engine=EngineId.LLAMA_CPP,
        model=model,
        origin=origin,
        status=status,
        host="127.0.0.1",
        port=1,
        url="http://127.0.0.1:1",
        base_url="http://127.0.0.1:1/v1",
        started_at=ready_at,
        ready_at=ready_at if status == InstanceStatus.READY else None,
        models=[model] if status == InstanceStatus.READY else [],
        options=InstanceOptions(model=model),
    )


def _preset(model: str, name: str = "default", served_name: str | None = None) -> Preset:
    options = InstanceOptions(model=model, ctx_size=512, served_name=served_name)
    return Preset(engine=EngineId.LLAMA_CPP, model=model, name=name, options=options)


# -- queue and slots ----------------------------------------------------------------------


def test_a_full_queue_is_refused_and_a_released_slot_goes_to_the_first_waiter() -> None:
    async def main() -> None:
        scheduler = Scheduler(lambda: 1)
        deadline = time.time() + 5
        first = await scheduler.acquire("i", queue_size=1, deadline=deadline)
        second = asyncio.create_task(scheduler.acquire("i", queue_size=1, deadline=deadline))
        await asyncio.sleep(0)
        assert (scheduler.in_flight("i"), scheduler.queued("i")) == (1, 1)
        with pytest.raises(QueueFull) as refused:
            await scheduler.acquire("i", queue_size=1, deadline=deadline)
        assert refused.value.status == 429 and refused.value.headers["retry-after"] == "1"
        assert not scheduler.idle("i")
        first.release()
        first.release()  # a second release changes nothing
        lease = await asyncio.wait_for(second, 1)
        assert (scheduler.in_flight("i"), scheduler.queued("i")) == (1, 0)
        lease.release()
        assert scheduler.idle("i") and scheduler.in_flight("i") == 0

    asyncio.run(main())


def test_a_request_that_waits_past_its_deadline_gets_503_and_leaves_the_queue() -> None:
    async def main() -> None:
        scheduler = Scheduler(lambda: 1)
        held = await scheduler.acquire("i", queue_size=4, deadline=time.time() + 5)
        with pytest.raises(QueueTimeout) as late:
            await scheduler.acquire("i", queue_size=4, deadline=time.time() + 0.05)
        assert late.value.status == 503 and "queue_timeout_s" in late.value.message
        assert scheduler.queued("i") == 0
        # A waiter cancelled (its client went away) leaves the queue too.
        waiting = asyncio.create_task(
            scheduler.acquire("i", queue_size=4, deadline=time.time() + 5)
        )
        await asyncio.sleep(0)
        waiting.cancel()
        await asyncio.gather(waiting, return_exceptions=True)
        assert scheduler.queued("i") == 0
        held.release()
        assert scheduler.in_flight("i") == 0

    asyncio.run(main())


def test_a_raised_concurrency_setting_counts_at_the_next_request() -> None:
    limit = [1]

    async def main() -> None:
        scheduler = Scheduler(lambda: limit[0])
        await scheduler.acquire("i", queue_size=0, deadline=time.time() + 1)
        with pytest.raises(QueueFull):
            await scheduler.acquire("i", queue_size=0, deadline=time.time() + 1)
        limit[0] = 2
        await scheduler.acquire("i", queue_size=0, deadline=time.time() + 1)
        assert scheduler.in_flight("i") == 2

    asyncio.run(main())


# -- residency and idle TTL on an injected clock ------------------------------------------


def test_only_instances_roundhouse_runs_count_and_the_least_recently_used_idle_goes() -> None:
    clock = Clock(1000.0)
    scheduler = Scheduler(lambda: 1, clock)
    old, recent, busy = _info("old"), _info("recent"), _info("busy")
    loading = _info("loading", status=InstanceStatus.LOADING)
    external = _info("ext", origin=InstanceOrigin.EXTERNAL)
    failed = _info("failed", status=InstanceStatus.FAILED)
    # Never used through the gateway: idle since it became ready.
    adopted = _info("adopted", origin=InstanceOrigin.ADOPTED, ready_at=1015.0)
    instances = [old, recent, busy, loading, external, failed, adopted]
    assert {i.id for i in resident(instances)} == {"old", "recent", "busy", "loading", "adopted"}
    for at, name in ((1000.0, "busy"), (1010.0, "old"), (1020.0, "recent")):
        clock.now = at
        scheduler.touch(name)

    async def hold_busy() -> None:
        await scheduler.acquire("busy", queue_size=0, deadline=clock.now + 1)

    asyncio.run(hold_busy())

    def lru(among: list[InstanceInfo], waited_for: frozenset[str] = frozenset()) -> str | None:
        found = least_recently_used_idle(among, scheduler, waited_for)
        return found.id if found else None

    assert lru(instances) == "old"
    # Requests waiting for it (a start that just finished) keep it.
    assert lru(instances, frozenset({"old"})) == "adopted"
    assert lru([busy, loading, external, failed]) is None


def test_idle_ttl_stops_only_what_the_gateway_started_after_the_ttl() -> None:
    clock = Clock(1000.0)
    scheduler = Scheduler(lambda: 1, clock)
    jit, by_hand = _info("jit", ready_at=clock.now), _info("hand", ready_at=clock.now)
    started = {"jit"}
    clock.now += 59
    assert expired([jit, by_hand], started, scheduler, ttl_s=60) == []
    clock.now += 1
    assert [i.id for i in expired([jit, by_hand], started, scheduler, ttl_s=60)] == ["jit"]
    assert expired([jit, by_hand], started, scheduler, ttl_s=0) == []
    # A use resets the idle time; one in flight is never idle.
    scheduler.touch("jit")
    clock.now += 30
    assert expired([jit], started, scheduler, ttl_s=60) == []

    async def in_flight() -> None:
        await scheduler.acquire("jit", queue_size=0, deadline=clock.now + 1)

    asyncio.run(in_flight())
    clock.now += 600
    assert expired([jit], started, scheduler, ttl_s=60) == []


# -- the library and the listing -----------------------------------------------------------


def test_the_library_lists_each_model_once_by_its_served_name_or_file_stem() -> None:
    presets = [
        _preset("/m/a.gguf", name="fast"),
        _preset("/m/a.gguf", name="default"),
        _preset("/m/b.gguf", name="long"),
        _preset("org/repo", served_name="alias"),
    ]
    library = {s.id: s for s in from_presets(presets)}
    assert set(library) == {"a", "b", "alias"}
    assert library["a"].preset == "default" and library["b"].preset == "long"
    for name in ("a", "a.gguf", "/m/a.gguf"):
        assert find(list(library.values()), name) == library["a"]
    assert find(list(library.values()), "org/repo") == library["alias"]
    assert find(list(library.values()), "c") is None
    assert asyncio.run(library["b"].launch()).request == StartRequest(
        engine=EngineId.LLAMA_CPP, preset="long", options=InstanceOptions(model="/m/b.gguf")
    )


def test_a_running_library_model_keeps_its_name_and_the_rest_are_startable() -> None:
    library = from_presets([_preset("/m/a.gguf"), _preset("/m/b.gguf"), _preset("/m/c.gguf")])
    serving = _info("i1", model="/m/a.gguf")
    loading = _info("i2", model="/m/b.gguf", status=InstanceStatus.LOADING)
    other = _info("i3", model="/x/own.gguf")
    listed = list_models([serving, loading, other], library, lambda s: False)
    states = {e.model.id: (e.model.state, e.model.instance) for e in listed}
    assert states == {
        "a": (ModelState.SERVING, "i1"),
        "b": (ModelState.LOADING, "i2"),
        # Started on a file without a preset: listed by the file's stem, never its path.
        "own": (ModelState.SERVING, "i3"),
        "c": (ModelState.STARTABLE, None),
    }


# -- just-in-time starts against a stand-in instance service -------------------------------


class FakeInstances:
    """Starts "load" in `load_s`; a model named *broken* fails."""

    def __init__(self, load_s: float = 0.05) -> None:
        self.load_s = load_s
        self.entries: dict[str, InstanceInfo] = {}
        self.started: list[StartRequest] = []
        self.stopped: list[str] = []

    async def start(self, request: StartRequest) -> InstanceInfo:
        self.started.append(request)
        model = request.options.model or ""
        info = _info(f"i{len(self.started)}", model=model, status=InstanceStatus.LOADING)
        self.entries[info.id] = info
        asyncio.get_running_loop().call_later(self.load_s, self._loaded, info.id, model)
        return info

    def _loaded(self, instance_id: str, model: str) -> None:
        if instance_id not in self.entries:
            return
        if "broken" in model:
            failed = self.entries[instance_id].model_copy(
                update={"status": InstanceStatus.FAILED, "error": "the model file is broken"}
            )
            self.entries[instance_id] = failed
        else:
            self.entries[instance_id] = _info(instance_id, model=model, ready_at=time.time())

    def info(self, instance_id: str, *, memory: bool = True) -> InstanceInfo:
        try:
            return self.entries[instance_id]
        except KeyError:
            raise NotFoundError(instance_id) from None

    def all(self, *, memory: bool = True) -> list[InstanceInfo]:
        return list(self.entries.values())

    async def stop(self, instance_id: str, *, force: bool = False) -> InstanceInfo:
        self.stopped.append(instance_id)
        return self.entries.pop(instance_id)


def _starter(fake: FakeInstances, **gateway: Any) -> Starter:
    settings = Settings(gateway=GatewaySettings(**gateway))
    scheduler = Scheduler(lambda: settings.gateway.max_concurrent)
    return Starter(cast(InstanceService, fake), scheduler, lambda: settings, poll_s=0.01)


def test_concurrent_requests_share_one_start_and_a_second_model_evicts_the_idle_first() -> None:
    fake = FakeInstances()
    library = {s.id: s for s in from_presets([_preset("/m/a.gguf"), _preset("/m/b.gguf")])}

    async def main() -> None:
        starter = _starter(fake, max_resident=1)
        deadline = time.time() + 5
        infos = await asyncio.gather(*(starter.ensure(library["a"], deadline) for _ in range(5)))
        assert {i.id for i in infos} == {"i1"} and len(fake.started) == 1
        assert starter.started == {"i1"}
        b = await starter.ensure(library["b"], deadline)
        assert fake.stopped == ["i1"] and b.status == InstanceStatus.READY
        assert starter.started == {"i2"}

    asyncio.run(main())


def test_no_room_when_every_resident_instance_is_busy_answers_503_in_words() -> None:
    fake = FakeInstances()
    library = {s.id: s for s in from_presets([_preset("/m/a.gguf"), _preset("/m/b.gguf")])}

    async def main() -> None:
        starter = _starter(fake, max_resident=1, queue_timeout_s=1)
        a = await starter.ensure(library["a"], time.time() + 5)
        lease = await starter._scheduler.acquire(a.id, queue_size=1, deadline=time.time() + 5)
        with pytest.raises(StartFailed, match="max_resident") as refused:
            await starter.ensure(library["b"], time.time() + 5)
        assert refused.value.status == 503 and fake.stopped == []
        lease.release()

    asyncio.run(main())


def test_a_failed_start_answers_503_with_the_instances_error() -> None:
    fake = FakeInstances()
    broken = from_presets([_preset("/m/broken.gguf")])[0]

    async def main() -> None:
        starter = _starter(fake)
        with pytest.raises(StartFailed, match="the model file is broken") as failed:
            await starter.ensure(broken, time.time() + 5)
        assert failed.value.status == 503 and starter.started == set()

    asyncio.run(main())


def test_a_request_for_a_loading_instance_waits_for_it_only_with_just_in_time_on() -> None:
    fake = FakeInstances(load_s=0.2)
    settings = Settings()

    async def main() -> None:
        gateway = Gateway(cast(InstanceService, fake), settings=lambda: settings, library=list)
        try:
            settings.gateway.just_in_time = False
            loading = await fake.start(StartRequest(engine=EngineId.LLAMA_CPP, options=A))
            with pytest.raises(ModelNotReady):
                await gateway.acquire("a")
            settings.gateway.just_in_time = True
            target, lease = await gateway.acquire("a")
            assert target.instance.id == loading.id
            assert target.instance.status == InstanceStatus.READY
            lease.release()
            assert gateway.starter.started == set()  # started by hand: no idle TTL
        finally:
            await gateway.aclose()

    asyncio.run(main())


def test_a_started_instance_that_does_not_serve_the_name_is_not_started_again() -> None:
    fake = FakeInstances()
    ghost = Startable(
        id="ghost",
        engine=EngineId.LLAMA_CPP,
        model="/m/x.gguf",
        preset="default",
        names=frozenset({"ghost"}),
    )

    async def main() -> None:
        gateway = Gateway(cast(InstanceService, fake), library=lambda: [ghost])
        try:
            with pytest.raises(StartFailed, match="does not serve that name"):
                await gateway.acquire("ghost")
            assert len(fake.started) == 1
        finally:
            await gateway.aclose()

    asyncio.run(main())
