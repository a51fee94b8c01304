"""When each request is sent: Poisson arrivals (seeded) or all at once for a closed loop."""

from __future__ import annotations

import numpy as np

from roundhouse.api.bench import Convention


def poisson_offsets(
    n: int, rate: float | None, seed: int, convention: Convention = Convention.VLLM
) -> list[float]:
    """Send times in seconds from the start, one per request.

    vLLM draws an exponential gap before every request and rescales the sum so the last
    send lands exactly at n / rate; sglang sends the first at once and keeps the raw gaps.
    No rate: every request at 0 (the concurrency limit paces them).
    """
    if rate is None or n == 0:
        return [0.0] * n
    rng = np.random.default_rng(seed)
    gaps = rng.exponential(1.0 / rate, size=n)
    if convention is Convention.SGLANG:
        return [0.0, *(float(v) for v in np.cumsum(gaps[: n - 1]))]
    times = np.cumsum(gaps)
    scaled = times * ((n / rate) / times[-1])
    return [float(v) for v in scaled]
