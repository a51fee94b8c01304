"""Typed errors of starting an engine, each carrying what a person needs to act."""

from __future__ import annotations

from roundhouse.core.errors import ConflictError, RoundhouseError
from roundhouse.core.infra.ports import PortOwner
from roundhouse.core.supervise.exits import ExitOutcome


class PortTakenError(ConflictError):
    """The engine's port is taken before launch; `owner` is None when the OS hides it."""

    title = "Port already in use"

    def __init__(self, host: str, port: int, owner: PortOwner | None) -> None:
        who = f"by {owner}" if owner else "by another program"
        super().__init__(
            f"Port {port} on {host} is already taken {who}. "
            "Stop that program or choose another port."
        )
        self.host = host
        self.port = port
        self.owner = owner


class EngineExitedError(RoundhouseError):
    """The engine ended before it was ready; `outcome` says how, with its last log lines."""

    title = "Engine stopped while starting"
    status = 502

    def __init__(self, outcome: ExitOutcome) -> None:
        super().__init__(str(outcome))
        self.outcome = outcome


class EngineNotReadyError(RoundhouseError):
    """The engine did not answer as ready in time; it has been stopped."""

    title = "Engine did not become ready"
    status = 504

    def __init__(self, detail: str, log_tail: tuple[str, ...] = ()) -> None:
        if log_tail:
            detail += "\nLast log lines:\n" + "\n".join(log_tail)
        super().__init__(detail)
        self.log_tail = log_tail


class EngineIdentityError(ConflictError):
    """What answers on the port is not the engine we started (or not its model)."""

    title = "Another server answers on the engine's port"
