"""The restart policy, with an injected clock."""

from __future__ import annotations

import signal

from roundhouse.core.supervise.exits import classify_exit
from roundhouse.core.supervise.restart import RestartPolicy
from tests.support.clock import Clock

CRASH = classify_exit(-signal.SIGSEGV, [])
OOM = classify_exit(1, ["cudaMalloc failed: out of memory"])


def test_only_transient_failures_restart() -> None:
    policy = RestartPolicy(clock=Clock(1000.0))
    assert not policy.decide(OOM).restart
    assert "out-of-memory" in policy.decide(OOM).reason
    assert not policy.decide(classify_exit(-signal.SIGTERM, [], by_us=True)).restart
    assert not policy.decide(classify_exit(0, [])).restart
    assert policy.decide(CRASH).restart


def test_backoff_doubles_and_the_budget_runs_out() -> None:
    clock = Clock(1000.0)
    policy = RestartPolicy(budget=3, window_s=600, base_delay_s=1, clock=clock)
    delays = []
    for _ in range(3):
        decision = policy.decide(CRASH)
        assert decision.restart
        delays.append(decision.delay_s)
        clock.now += 10
    assert delays == [1, 2, 4]
    refused = policy.decide(CRASH)
    assert not refused.restart
    assert "4 times in 10 minutes" in refused.reason


def test_the_window_slides() -> None:
    clock = Clock(1000.0)
    policy = RestartPolicy(budget=2, window_s=600, clock=clock)
    assert policy.decide(CRASH).restart
    clock.now += 300
    assert policy.decide(CRASH).restart
    assert not policy.decide(CRASH).restart
    clock.now += 301  # the first restart left the window
    decision = policy.decide(CRASH)
    assert decision.restart
    assert decision.delay_s == 2


def test_delay_is_capped_and_reset_forgets() -> None:
    policy = RestartPolicy(budget=10, base_delay_s=10, max_delay_s=30, clock=Clock(1000.0))
    assert [policy.decide(CRASH).delay_s for _ in range(4)] == [10, 20, 30, 30]
    policy.reset()
    assert policy.decide(CRASH).delay_s == 10
