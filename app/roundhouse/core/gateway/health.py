"""Each instance's health as the gateway sees it: a circuit breaker, and checks with backoff."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from roundhouse.api.gateway import CircuitState
from roundhouse.api.instances import InstanceInfo, InstanceStatus
from roundhouse.api.settings import GatewaySettings
from roundhouse.base.tasks import cancel_and_wait
from roundhouse.core.infra.changes import Changes

log = logging.getLogger(__name__)

# Whether an instance answers its readiness probe now.
Check = Callable[[str], Awaitable[bool]]


@dataclass
class Breaker:
    """One instance's circuit: closed, open after `circuit_failures` failures in a row,
    half-open once a health check finds it answering, closed again on a success."""

    state: CircuitState = CircuitState.CLOSED
    failures: int = 0
    last_error: str | None = None
    # The wait before the next health check, doubled after each failed one (up to a cap).
    backoff_s: float = 0.0
    # When the next health check is due (monotonic seconds); None while none is.
    check_at: float | None = None
    # The run of the instance (pid, start time) that failed: a new run starts afresh.
    run: tuple[int | None, float] | None = None

    def failed(self, why: str, config: GatewaySettings, now: float) -> bool:
        """Count a failure; True when it opened the circuit."""
        self.failures += 1
        self.last_error = why
        if self.state == CircuitState.HALF_OPEN:
            # The trial failed: open again, and wait longer before the next check.
            self._open(min(config.circuit_backoff_max_s, self.backoff_s * 2), now)
            return True
        if self.state == CircuitState.CLOSED and self.failures >= config.circuit_failures:
            self._open(config.circuit_backoff_s, now)
            return True
        return False

    def _open(self, backoff_s: float, now: float) -> None:
        self.state = CircuitState.OPEN
        self.backoff_s = backoff_s
        self.check_at = now + backoff_s

    def checked(self, healthy: bool, config: GatewaySettings, now: float) -> None:
        """The outcome of a health check of an open circuit."""
        if healthy:
            self.state = CircuitState.HALF_OPEN
            self.check_at = None
        else:
            self._open(min(config.circuit_backoff_max_s, self.backoff_s * 2), now)

    def succeeded(self) -> bool:
        """A reply came; True when that closed the circuit."""
        was = self.state
        self.state = CircuitState.CLOSED
        self.failures = 0
        self.backoff_s = 0.0
        self.check_at = None
        return was != CircuitState.CLOSED

    @property
    def takes_requests(self) -> bool:
        return self.state != CircuitState.OPEN


class Health:
    """The breakers of every instance, and the health checks of open ones, each in its own
    task that waits the breaker's backoff before it probes."""

    def __init__(
        self,
        settings: Callable[[], GatewaySettings],
        check: Check,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._settings = settings
        self._check = check
        self._clock = clock
        self._breakers: dict[str, Breaker] = {}
        self._checks: dict[str, asyncio.Task[None]] = {}
        # Touched when a circuit opens, half-opens or closes: the change feed follows it.
        self.changes = Changes()

    def breaker(self, instance_id: str) -> Breaker:
        return self._breakers.get(instance_id) or Breaker()

    def takes_requests(self, instance_id: str) -> bool:
        breaker = self._breakers.get(instance_id)
        return breaker is None or breaker.takes_requests

    def circuits(self) -> dict[str, CircuitState]:
        """The instances whose circuit is not closed."""
        return {i: b.state for i, b in self._breakers.items() if b.state != CircuitState.CLOSED}

    def next_check_in(self, instance_id: str) -> float | None:
        breaker = self._breakers.get(instance_id)
        if breaker is None or breaker.check_at is None:
            return None
        return max(0.0, breaker.check_at - self._clock())

    def failed(
        self, instance_id: str, why: str, run: tuple[int | None, float] | None = None
    ) -> None:
        """A request to the instance failed on the instance's side (no connection, 502 or
        503, a stream broken off); `run`: which run of it (pid, start time)."""
        breaker = self._breakers.setdefault(instance_id, Breaker())
        breaker.run = run
        if breaker.failed(why, self._settings(), self._clock()):
            log.warning(
                "The gateway sends no requests to instance %s for now (circuit open after %d "
                "failures in a row; last: %s); a health check follows in %g s",
                instance_id,
                breaker.failures,
                why,
                breaker.backoff_s,
            )
            self._schedule(instance_id)
            self.changes.touch()

    def succeeded(self, instance_id: str) -> None:
        breaker = self._breakers.get(instance_id)
        if breaker is None:
            return
        if breaker.succeeded():
            log.info("Instance %s answered again: its circuit is closed", instance_id)
            self.changes.touch()
        del self._breakers[instance_id]

    def sync(self, instances: list[InstanceInfo]) -> None:
        """Start afresh with an instance that runs again as a new process (restarted, by
        its supervisor or a user) and is ready: its failures were the old process's."""
        for info in instances:
            breaker = self._breakers.get(info.id)
            if breaker is None or breaker.run is None or info.status != InstanceStatus.READY:
                continue
            if breaker.run != (info.pid, info.started_at):
                log.info("Instance %s runs again: its circuit is closed", info.id)
                self._drop(info.id)

    def forget_except(self, instance_ids: set[str]) -> None:
        """Drop what is known of instances that are gone."""
        for gone in [i for i in self._breakers if i not in instance_ids]:
            self._drop(gone)

    def _drop(self, instance_id: str) -> None:
        del self._breakers[instance_id]
        task = self._checks.pop(instance_id, None)
        if task is not None:
            task.cancel()
        self.changes.touch()

    def _schedule(self, instance_id: str) -> None:
        running = self._checks.get(instance_id)
        if running is None or running.done():
            self._checks[instance_id] = asyncio.create_task(
                self._check_until_up(instance_id), name=f"gateway-health-{instance_id}"
            )

    async def _check_until_up(self, instance_id: str) -> None:
        """Probe the open circuit's instance after each backoff until it answers."""
        while (breaker := self._open(instance_id)) is not None and breaker.check_at is not None:
            await asyncio.sleep(max(0.0, breaker.check_at - self._clock()))
            if self._open(instance_id) is not breaker:
                return  # gone, or a request's outcome settled it meanwhile
            try:
                healthy = await self._check(instance_id)
            except Exception:  # a probe's bug must not stop the checks; the log says it
                log.exception("The health check of instance %s failed", instance_id)
                healthy = False
            if self._open(instance_id) is not breaker:
                return
            breaker.checked(healthy, self._settings(), self._clock())
            if healthy:
                log.info("Instance %s answers its health check: requests try it again", instance_id)
                self.changes.touch()
                return

    def _open(self, instance_id: str) -> Breaker | None:
        """The instance's breaker while its circuit is open."""
        breaker = self._breakers.get(instance_id)
        return breaker if breaker is not None and breaker.state == CircuitState.OPEN else None

    async def aclose(self) -> None:
        for task in self._checks.values():
            with contextlib.suppress(Exception):
                await cancel_and_wait(task, reraise=False)
        self._checks.clear()
