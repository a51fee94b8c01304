"""Read an engine's Prometheus text metrics: the named series, summed over their labels."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

import httpx

from roundhouse.core.errors import RoundhouseError

FETCH_TIMEOUT_S = 5.0


class MetricsError(RoundhouseError):
    title = "Metrics not available"
    status = 502


def parse_prometheus(text: str, names: Iterable[str]) -> dict[str, float]:
    """The values of `names` in a Prometheus text exposition; series with labels are summed.

    Comments, other series and values that are not numbers are skipped.
    """
    wanted = set(names)
    values: dict[str, float] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        name_end = len(line)
        for stop in ("{", " "):
            found = line.find(stop)
            if found != -1:
                name_end = min(name_end, found)
        name = line[:name_end]
        if name not in wanted:
            continue
        rest = line[name_end:]
        if rest.startswith("{"):
            close = rest.find("}")
            if close == -1:
                continue
            rest = rest[close + 1 :]
        fields = rest.split()
        if not fields:
            continue
        try:
            value = float(fields[0])
        except ValueError:
            continue
        if math.isnan(value):
            continue
        values[name] = values.get(name, 0.0) + value
    return values


async def fetch_metrics(
    url: str, names: Iterable[str], headers: Mapping[str, str] | None = None
) -> dict[str, float]:
    """GET `url` (with `headers`: the engine's key) and parse it; MetricsError in words when
    the engine does not serve them."""
    async with httpx.AsyncClient(trust_env=False, verify=False, timeout=FETCH_TIMEOUT_S) as http:
        try:
            response = await http.get(url, headers=headers)
        except httpx.HTTPError as exc:
            raise MetricsError(f"{url} did not answer ({type(exc).__name__}).") from exc
    if response.status_code == 501:
        # llama-server without --metrics.
        raise MetricsError(
            f"{url} says metrics are off: start the instance with metrics on (the default)."
        )
    if response.status_code != 200:
        raise MetricsError(f"{url} answered {response.status_code}, not metrics.")
    return parse_prometheus(response.text, names)
