"""Start an engine like a service manager: free port, spawn, ready, verified, or nothing left."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import httpx

from roundhouse.api.engines import LaunchPlan
from roundhouse.core.infra.ports import PortInUseError, bind_listener
from roundhouse.core.supervise.errors import (
    EngineExitedError,
    EngineNotReadyError,
    PortTakenError,
)
from roundhouse.core.supervise.process import EngineProcess
from roundhouse.core.supervise.readiness import (
    Identity,
    ProbeFailed,
    ProbeTimeout,
    ProcessEnded,
    Progress,
    ProgressCallback,
    check_identity,
    wait_ready,
)

# Cold loads of big models from a slow disk take minutes (llama-swap #92).
DEFAULT_READY_TIMEOUT_S = 600.0


@dataclass(frozen=True)
class RunningEngine:
    process: EngineProcess
    ready: Progress
    identity: Identity


def ensure_port_free(host: str, port: int) -> None:
    """Raise PortTakenError, naming the owner when the OS shows it, if host:port is taken."""
    try:
        listener = bind_listener(host, port)
    except PortInUseError as exc:
        raise PortTakenError(host, port, exc.owner) from exc
    listener.close()


async def start_engine(
    plan: LaunchPlan,
    log_path: Path,
    *,
    ready_timeout_s: float = DEFAULT_READY_TIMEOUT_S,
    poll_s: float = 0.1,
    headers: Mapping[str, str] | None = None,
    on_progress: ProgressCallback | None = None,
    ring_lines: int = 500,
    on_spawn: Callable[[EngineProcess], None] | None = None,
) -> RunningEngine:
    """Start `plan` and return it once it serves and is verified as ours.

    On any failure the process tree is stopped before the error is raised: PortTakenError
    (before launch), EngineExitedError (it ended; how, with its log), EngineNotReadyError
    (timeout), EngineIdentityError (someone else answers on the port). `on_spawn` is
    called with the process as soon as it runs. `headers` go with every probe (the
    instance's key).
    """
    ensure_port_free(plan.host, plan.port)
    process = await EngineProcess.spawn(plan, log_path, ring_lines=ring_lines)
    if on_spawn is not None:
        # The caller may show the output while the model loads.
        on_spawn(process)
    # trust_env=False: a proxy from HTTP(S)_PROXY must never see loopback traffic.
    # verify=False: engines speak plain http here, and building the default TLS context
    # would block the event loop for about 16 ms on every start.
    async with httpx.AsyncClient(trust_env=False, verify=False, headers=headers) as http:
        try:
            ready = await wait_ready(
                plan,
                process.exited,
                http,
                timeout_s=ready_timeout_s,
                poll_s=poll_s,
                on_progress=on_progress,
            )
            identity = await check_identity(plan, process.pid, http)
        except ProcessEnded:
            outcome = await process.stop()
            raise EngineExitedError(outcome) from None
        except ProbeFailed as exc:
            await process.stop()
            raise EngineNotReadyError(
                f"The engine answered that it could not load the model "
                f"({exc.last.last_status}); it has been stopped. Check the model with its log.",
                process.log.tail(20),
            ) from None
        except ProbeTimeout as exc:
            await process.stop()
            raise EngineNotReadyError(
                f"The engine was not ready after {exc.last.elapsed_s:.0f} s "
                f"(last answer: {exc.last.last_status}); it has been stopped. A large model "
                "on a slow disk may need a longer start timeout.",
                process.log.tail(20),
            ) from None
        except BaseException:
            # Identity failures, cancellation: never leave a half-started engine running.
            with contextlib.suppress(Exception):
                await process.stop()
            raise
    return RunningEngine(process, ready, identity)
