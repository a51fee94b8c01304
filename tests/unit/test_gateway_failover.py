"""The circuit breaker, its health checks with backoff, and the choice among instances and
fallback models, without a server."""

from __future__ import annotations

import asyncio

import pytest

from roundhouse.api.gateway import CircuitState
from roundhouse.api.instances import InstanceInfo, InstanceOrigin, InstanceStatus
from roundhouse.api.settings import GatewaySettings
from roundhouse.core.gateway.choice import Load, choose, ranked
from roundhouse.core.gateway.failover import NoHealthyInstance, pick
from roundhouse.core.gateway.health import Breaker, Health
from tests.unit.builders import ready_instance

CONFIG = GatewaySettings(circuit_failures=2, circuit_backoff_s=1.0, circuit_backoff_max_s=3.0)


def test_the_breaker_opens_after_failures_in_a_row_and_backs_off_to_a_cap() -> None:
    breaker = Breaker()
    assert not breaker.failed("refused", CONFIG, now=0.0)
    assert breaker.takes_requests
    assert breaker.failed("refused", CONFIG, now=0.0)
    assert breaker.state == CircuitState.OPEN and not breaker.takes_requests
    assert breaker.check_at == 1.0
    # Each failed check doubles the wait, up to the cap.
    breaker.checked(False, CONFIG, now=1.0)
    assert (breaker.backoff_s, breaker.check_at) == (2.0, 3.0)
    breaker.checked(False, CONFIG, now=3.0)
    breaker.checked(False, CONFIG, now=6.0)
    assert breaker.backoff_s == 3.0
    # A passing check half-opens it; a failed trial opens it again with a longer wait.
    breaker.checked(True, CONFIG, now=9.0)
    assert breaker.state == CircuitState.HALF_OPEN and breaker.takes_requests
    assert breaker.failed("reset", CONFIG, now=9.5)
    assert breaker.state == CircuitState.OPEN and breaker.backoff_s == 3.0
    breaker.checked(True, CONFIG, now=13.0)
    assert breaker.succeeded()
    assert breaker.state == CircuitState.CLOSED and breaker.failures == 0


def test_a_success_between_failures_starts_the_count_again() -> None:
    breaker = Breaker()
    breaker.failed("x", CONFIG, now=0)
    breaker.succeeded()
    assert not breaker.failed("x", CONFIG, now=0)
    assert breaker.state == CircuitState.CLOSED


def test_an_open_circuit_is_checked_after_its_backoff_until_the_instance_answers() -> None:
    asyncio.run(_checked_until_it_answers())


async def _checked_until_it_answers() -> None:
    answers = [False, True]
    checked: list[float] = []
    loop = asyncio.get_running_loop()

    async def check(_: str) -> bool:
        checked.append(loop.time())
        return answers.pop(0)

    fast = GatewaySettings(circuit_failures=1, circuit_backoff_s=0.1, circuit_backoff_max_s=1)
    health = Health(lambda: fast, check)
    seen = health.changes.version
    began = loop.time()
    health.failed("a", "refused")
    assert health.circuits() == {"a": CircuitState.OPEN}
    assert health.changes.version > seen
    while health.breaker("a").state == CircuitState.OPEN:
        await asyncio.sleep(0.02)
        assert loop.time() - began < 2, "the open circuit was never checked again"
    # Once after 0.1 s (failed), again 0.2 s later (answered): half-open.
    assert len(checked) == 2
    assert checked[0] - began >= 0.09 and checked[1] - checked[0] >= 0.19
    assert health.circuits() == {"a": CircuitState.HALF_OPEN}
    health.succeeded("a")
    assert health.circuits() == {} and health.takes_requests("a")
    await health.aclose()


def _load(circuits: dict[str, CircuitState], busy: dict[str, int]) -> Load:
    return Load(
        lambda i: circuits.get(i, CircuitState.CLOSED),
        lambda i: busy.get(i, 0),
    )


def _served(instance_id: str, model: str = "m", **extra: object) -> InstanceInfo:
    return ready_instance(instance_id, model=None, models=[model], **extra)


def test_the_least_busy_healthy_instance_is_chosen_then_the_started_one() -> None:
    a, b = _served("a"), _served("b", origin=InstanceOrigin.EXTERNAL)
    assert choose([b, a], "m", _load({}, {})).instance.id == "a"  # type: ignore[union-attr]
    assert choose([a, b], "m", _load({}, {"a": 2, "b": 1})).instance.id == "b"  # type: ignore[union-attr]
    # An open circuit takes nothing, however idle; nor does an instance tried already.
    assert choose([a, b], "m", _load({"b": CircuitState.OPEN}, {"a": 5})).instance.id == "a"  # type: ignore[union-attr]
    assert choose([a, b], "m", _load({}, {}), avoid={"a"}).instance.id == "b"  # type: ignore[union-attr]
    assert choose([a, b], "m", _load({}, {}), avoid={"a", "b"}) is None
    loading = _served("c").model_copy(update={"status": InstanceStatus.LOADING})
    assert choose([loading], "m", _load({}, {})) is None
    order = ranked([a, b, loading], "m", _load({"a": CircuitState.OPEN}, {}))
    assert [i.id for i in order] == ["b", "a", "c"]


def test_a_fallback_serves_when_no_instance_of_the_model_is_healthy() -> None:
    a, small = _served("a"), _served("s", model="small")
    args = {
        "fallbacks": ["none", "small"],
        "aliased": lambda name: name,
        "is_preset": lambda _: False,
        "startable": False,
    }
    healthy = pick([a, small], "m", _load({}, {}), avoid=(), **args)  # type: ignore[arg-type]
    assert healthy is not None and healthy.instance.id == "a" and healthy.via == ""
    fell = pick([a, small], "m", _load({"a": CircuitState.OPEN}, {}), avoid=(), **args)  # type: ignore[arg-type]
    assert fell is not None and (fell.instance.id, fell.model, fell.via) == (
        "s",
        "small",
        "fallback",
    )
    with pytest.raises(NoHealthyInstance, match="circuits are open"):
        pick([a], "m", _load({"a": CircuitState.OPEN}, {}), avoid=(), **args)  # type: ignore[arg-type]
    with pytest.raises(NoHealthyInstance, match="failed this request"):
        pick([a], "m", _load({}, {}), avoid={"a"}, **args)  # type: ignore[arg-type]
    # Nothing serves it but the library can start it: the start goes first, not a fallback.
    startable = {**args, "startable": True}
    assert pick([small], "m", _load({}, {}), avoid=(), **startable) is None  # type: ignore[arg-type]


def test_fallbacks_are_set_as_json_and_checked() -> None:
    from roundhouse.api.settings import Settings
    from roundhouse.cli.settings_keys import SettingError, apply_setting

    chains = apply_setting(Settings(), "gateway.fallbacks", '{"big": ["small", "small"]}')
    assert chains.gateway.fallbacks == {"big": ["small"]}
    with pytest.raises(SettingError, match="as JSON"):
        apply_setting(Settings(), "gateway.fallbacks", "big:small")
    with pytest.raises(SettingError, match="itself"):
        apply_setting(Settings(), "gateway.fallbacks", '{"big": ["big"]}')


def test_routes_show_each_instance_in_the_order_tried_with_its_circuit() -> None:
    from rich.console import Console

    from roundhouse.api.gateway import GatewayRoutes
    from roundhouse.cli.gateway_routes_view import routes_view
    from roundhouse.core.gateway.routes import routes_report

    async def report() -> GatewayRoutes:
        health = Health(lambda: CONFIG, _never)
        health.failed("a", "connection refused")
        health.failed("a", "connection refused")
        load = Load(lambda i: health.breaker(i).state, lambda i: {"b": 3}.get(i, 0))
        found = routes_report(
            [_served("a"), _served("b")], load, health, {"m": ["n"]}, lambda _: 512, _no
        )
        await health.aclose()
        return found

    routes = asyncio.run(report())
    [route] = routes.routes
    assert [(e.instance, e.circuit, e.busy) for e in route.instances] == [
        ("b", CircuitState.CLOSED, 3),
        ("a", CircuitState.OPEN, 0),
    ]
    assert route.fallbacks == ["n"] and route.instances[1].last_error == "connection refused"
    console = Console(width=160, record=True)
    console.print(routes_view(routes, width=160))
    text = console.export_text()
    assert "falls back to n" in text and "open (check in 1 s)" in text
    assert "connection refused" in text


async def _never(_: str) -> bool:
    return False


def _no(_: str) -> bool:
    return False


def test_an_instance_running_again_as_a_new_process_starts_with_its_circuit_closed() -> None:
    async def scenario() -> None:
        health = Health(lambda: CONFIG, _never)
        old = _served("a").model_copy(update={"pid": 10, "started_at": 1.0})
        for _ in range(2):
            health.failed("a", "refused", (10, 1.0))
        health.sync([old])
        assert health.circuits() == {"a": CircuitState.OPEN}
        restarting = old.model_copy(update={"pid": 11, "status": InstanceStatus.STARTING})
        health.sync([restarting])
        assert health.circuits() == {"a": CircuitState.OPEN}
        health.sync([restarting.model_copy(update={"status": InstanceStatus.READY})])
        assert health.circuits() == {} and health.takes_requests("a")
        await health.aclose()

    asyncio.run(scenario())
