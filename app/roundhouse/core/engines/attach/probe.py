"""Asking a server over HTTP, bounded: its answer or why there is none; an engine's readiness."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx

from roundhouse.api.engines import EngineId, EngineSpec
from roundhouse.core.engines.exo import served_models
from roundhouse.core.supervise.readiness import model_ids

REFUSED = "connection refused"


@dataclass
class Probe:
    """What one engine's endpoint said about itself."""

    answered: bool = False
    healthy: bool = False
    status: str = "no answer"
    version: str | None = None
    model_ids: list[str] = field(default_factory=list)
    needs_api_key: bool = False


def http_url(host: str, port: int) -> str:
    """http://host:port, with an IPv6 host in brackets."""
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


async def get_or_reason(
    http: httpx.AsyncClient, url: str, timeout_s: float, headers: Mapping[str, str] | None = None
) -> httpx.Response | str:
    """The answer, or in words why there is none; bounded even against a slow-drip server."""
    try:
        async with asyncio.timeout(timeout_s):
            return await http.get(url, timeout=timeout_s, headers=headers)
    except httpx.ConnectError as exc:
        return _connect_failure(exc)
    except (TimeoutError, httpx.TimeoutException):
        return f"no answer within {timeout_s:g} s"
    except httpx.HTTPError as exc:
        return f"no answer ({type(exc).__name__})"


def _connect_failure(exc: BaseException) -> str:
    """Why a connection failed, in words; the cause sits deep in httpx's exception chain."""
    seen: BaseException | None = exc
    for _ in range(12):  # a bound, not a count: chains are short but could be made to loop
        if seen is None:
            break
        if isinstance(seen, ConnectionRefusedError):
            return REFUSED
        if isinstance(seen, ssl.SSLError):
            return f"a TLS error ({seen})"
        seen = seen.__cause__ or seen.__context__
    return f"no connection ({exc})"


def json_or_none(response: httpx.Response) -> Any:
    """The response's JSON body, or None when it is not JSON."""
    try:
        return response.json()
    except ValueError:
        return None


async def probe_engine(
    http: httpx.AsyncClient, spec: EngineSpec, base_url: str, timeout_s: float
) -> Probe:
    """Readiness, model list and version of one engine at `base_url`, asked at once."""
    readiness = spec.readiness
    version_url = f"{base_url}{spec.version_path}" if spec.version_path else None
    ready, models, version = await asyncio.gather(
        get_or_reason(http, f"{base_url}{readiness.path}", timeout_s),
        get_or_reason(http, f"{base_url}{spec.models_path}", timeout_s),
        get_or_reason(http, version_url, timeout_s) if version_url else asyncio.sleep(0, "none"),
    )
    probe = Probe()
    if isinstance(ready, str):
        loading = ready == REFUSED and readiness.refused_while_loading
        # vLLM and SGLang open their port only once the model is loaded.
        probe.status = "loading (port not open yet)" if loading else ready
    else:
        probe.answered = True
        code = ready.status_code
        if code == readiness.ready_status and (
            readiness.expect_text is None or readiness.expect_text in ready.text
        ):
            probe.healthy, probe.status = True, "ready"
        elif code in readiness.loading_statuses:
            probe.status = f"loading ({code})"
        else:
            probe.status = f"not ready ({code} on {readiness.path})"
    if isinstance(models, httpx.Response):
        probe.answered = True
        if models.status_code in (401, 403):
            probe.needs_api_key = True
        elif models.status_code == 200:
            # exo's models path is its cluster state: the models placed on it.
            parse = served_models if spec.id == EngineId.EXO else model_ids
            probe.model_ids = parse(json_or_none(models))
    if isinstance(version, httpx.Response) and version.status_code == 200:
        body = json_or_none(version)
        if isinstance(body, dict):
            found = body.get("version") or body.get("build_info")
            probe.version = str(found) if found else None
    return probe
