"""Is a started engine serving, and is it ours: the readiness probe and the identity check."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import httpx
import psutil

from roundhouse.api.engines import LaunchPlan
from roundhouse.core.supervise.errors import EngineIdentityError

# The first wait between probes; it doubles up to the caller's poll interval. A small model
# from a warm cache is ready tens of milliseconds after the port opens: a fixed 0.1 s poll
# would add up to 0.1 s to every such start, while a long load is still polled at poll_s.
FIRST_POLL_S = 0.01


class Phase(StrEnum):
    # Nothing answers on the port yet.
    STARTING = "starting"
    # It answers "alive, still loading" (or keeps its port closed while it loads).
    LOADING = "loading"
    READY = "ready"
    # It answers that loading failed, yet keeps running.
    FAILED = "failed"


@dataclass(frozen=True)
class Progress:
    elapsed_s: float
    phase: Phase
    last_status: str


ProgressCallback = Callable[[Progress], None]


class ProbeTimeout(Exception):
    """Not ready within the timeout; `last` is the last progress seen."""

    def __init__(self, last: Progress) -> None:
        super().__init__(last.last_status)
        self.last = last


class ProbeFailed(Exception):
    """The engine answered that it failed to load; `last` is what it said."""

    def __init__(self, last: Progress) -> None:
        super().__init__(last.last_status)
        self.last = last


class ProcessEnded(Exception):
    """The process ended while we waited for it to be ready."""


async def wait_ready(
    plan: LaunchPlan,
    exited: asyncio.Future[int],
    http: httpx.AsyncClient,
    *,
    timeout_s: float,
    poll_s: float = 0.1,
    request_timeout_s: float = 5.0,
    on_progress: ProgressCallback | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> Progress:
    """Poll `plan.probe_url` until it answers as ready; stop at once if `exited` is done.

    The polls come quickly at first, then every `poll_s`.

    Raises ProbeTimeout after `timeout_s`, ProbeFailed when it answers that loading failed,
    and ProcessEnded when the process ends first.
    """
    start = clock()
    interval = min(FIRST_POLL_S, poll_s)
    while True:
        if exited.done():
            raise ProcessEnded
        phase, status = await _probe_once(plan, http, request_timeout_s)
        progress = Progress(clock() - start, phase, status)
        if on_progress is not None:
            on_progress(progress)
        if phase == Phase.READY:
            return progress
        if phase == Phase.FAILED:
            raise ProbeFailed(progress)
        if progress.elapsed_s >= timeout_s:
            raise ProbeTimeout(progress)
        # The poll interval, cut short by the process's exit; readiness itself only ever
        # comes from an answer.
        await asyncio.wait({exited}, timeout=interval)
        interval = min(2 * interval, poll_s)


async def _probe_once(
    plan: LaunchPlan, http: httpx.AsyncClient, request_timeout_s: float
) -> tuple[Phase, str]:
    probe = plan.readiness
    try:
        response = await http.get(plan.probe_url, timeout=request_timeout_s)
    except httpx.ConnectError:
        phase = Phase.LOADING if probe.refused_while_loading else Phase.STARTING
        return phase, "connection refused"
    except httpx.TransportError as exc:
        # A timeout or a reset: a busy engine loading a model, keep asking.
        return Phase.LOADING, f"no answer ({type(exc).__name__})"
    status = f"{response.status_code} {response.text[:120].strip()}".strip()
    if response.status_code == probe.ready_status:
        if probe.expect_text is None or probe.expect_text in response.text:
            return Phase.READY, status
        return Phase.STARTING, f"{status} (not the expected {probe.expect_text!r})"
    if response.status_code in probe.loading_statuses:
        return Phase.LOADING, status
    if response.status_code in probe.failed_statuses:
        return Phase.FAILED, status
    return Phase.STARTING, status


class Listener(StrEnum):
    OURS = "ours"
    # The OS did not say which process listens (macOS without root, some containers).
    UNVERIFIED = "unverified"


@dataclass(frozen=True)
class Identity:
    model_ids: tuple[str, ...]
    listener: Listener
    listener_pid: int | None


async def check_identity(plan: LaunchPlan, pid: int, http: httpx.AsyncClient) -> Identity:
    """The engine lists the expected model and its port is held by `pid` or its descendants.

    Raises EngineIdentityError when either is shown wrong; an unknown listener is reported
    as unverified, not as an error.
    """
    # The socket scan reads the whole system's table (tens of ms): run it while we ask.
    lookup = asyncio.ensure_future(asyncio.to_thread(_listener, plan.port, pid))
    try:
        response = await http.get(plan.models_url, timeout=10.0)
        if response.status_code != 200:
            raise EngineIdentityError(
                f"{plan.models_url} answered {response.status_code}, not the model list."
            )
        try:
            body = response.json()
        except ValueError:
            # mlx_lm.server answers an empty body when its Hugging Face cache folder is missing.
            raise EngineIdentityError(
                f"{plan.models_url} did not answer a model list (not JSON): the engine cannot "
                "list its models."
            ) from None
        ids = model_ids(body)
        if plan.expected_model_id is not None and plan.expected_model_id not in ids:
            listed = ", ".join(ids) or "no model"
            raise EngineIdentityError(
                f"The server on port {plan.port} serves {listed}, "
                f"not {plan.expected_model_id}: another program may own that port."
            )
        listener, listener_pid = await lookup
    finally:
        lookup.cancel()
    return Identity(tuple(ids), listener, listener_pid)


def model_ids(body: Any) -> list[str]:
    """Model ids from OpenAI's `{"data": [{"id"}]}` or Ollama's `{"models": [{"name",
    "model"}]}` (which llama-server also sends), each once, in order."""
    ids: list[str] = []
    if not isinstance(body, dict):
        return ids
    # OpenAI's {"data": [{"id"}]}; llama-server also sends Ollama's {"models": [{"model"}]}.
    for entry in body.get("data") or []:
        if isinstance(entry, dict) and isinstance(entry.get("id"), str):
            ids.append(entry["id"])
    for entry in body.get("models") or []:
        if isinstance(entry, dict):
            ids += [v for k in ("model", "name") if isinstance(v := entry.get(k), str)]
    return list(dict.fromkeys(ids))


def _listener(port: int, pid: int) -> tuple[Listener, int | None]:
    try:
        root = psutil.Process(pid)
        ours = {pid, *(p.pid for p in root.children(recursive=True))}
        connections = psutil.net_connections(kind="inet")
    except (psutil.AccessDenied, PermissionError):
        return Listener.UNVERIFIED, None
    except psutil.NoSuchProcess as exc:
        raise EngineIdentityError(f"The engine (pid {pid}) is gone.") from exc
    holders = {
        c.pid
        for c in connections
        if c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port
    }
    foreign = {p for p in holders if p is not None and p not in ours}
    if foreign:
        raise EngineIdentityError(
            f"Port {port} is held by {_describe(foreign)}, not by the engine we started."
        )
    mine = sorted(p for p in holders if p is not None)
    if mine:
        return Listener.OURS, mine[0]
    return Listener.UNVERIFIED, None


def _describe(pids: Iterable[int]) -> str:
    names = []
    for pid in sorted(pids):
        try:
            names.append(f"{psutil.Process(pid).name()} (pid {pid})")
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            names.append(f"pid {pid}")
    return ", ".join(names)
