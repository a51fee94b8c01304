"""When to restart an engine that ended: transient failures only, with backoff and a budget."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from roundhouse.core.supervise.exits import ExitOutcome


@dataclass(frozen=True)
class RestartDecision:
    restart: bool
    delay_s: float
    reason: str


@dataclass
class RestartPolicy:
    """At most `budget` restarts per `window_s`, each waiting twice as long as the last."""

    budget: int = 3
    window_s: float = 600.0
    base_delay_s: float = 1.0
    max_delay_s: float = 60.0
    clock: Callable[[], float] = time.monotonic
    _recent: deque[float] = field(default_factory=deque, init=False, repr=False)

    def decide(self, outcome: ExitOutcome) -> RestartDecision:
        """Whether to restart after `outcome`; a yes is counted against the budget."""
        if outcome.by_us:
            return RestartDecision(False, 0.0, "stopped on request")
        if not outcome.transient:
            # Deterministic failures (memory, port, model file) would only crash-loop.
            return RestartDecision(False, 0.0, f"not transient: {outcome.kind}")
        now = self.clock()
        while self._recent and now - self._recent[0] >= self.window_s:
            self._recent.popleft()
        if len(self._recent) >= self.budget:
            minutes = self.window_s / 60
            return RestartDecision(
                False, 0.0, f"crashed {len(self._recent) + 1} times in {minutes:g} minutes"
            )
        delay = min(self.max_delay_s, self.base_delay_s * 2 ** len(self._recent))
        self._recent.append(now)
        return RestartDecision(True, delay, f"restart {len(self._recent)} of {self.budget}")

    def reset(self) -> None:
        """Forget past restarts (the user started the engine again by hand)."""
        self._recent.clear()
