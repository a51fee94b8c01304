"""Supervise engine processes: start, readiness, identity, stop, exit classification, restarts.

Floor 2 of roundhouse.core: it may use infra and core.errors; it knows processes, not
engines.
"""

from roundhouse.core.supervise.errors import (
    EngineExitedError,
    EngineIdentityError,
    EngineNotReadyError,
    PortTakenError,
)
from roundhouse.core.supervise.exits import ExitKind, ExitOutcome, classify_exit
from roundhouse.core.supervise.process import EngineProcess
from roundhouse.core.supervise.readiness import Identity, Listener, Phase, Progress
from roundhouse.core.supervise.restart import RestartDecision, RestartPolicy
from roundhouse.core.supervise.supervisor import RunningEngine, ensure_port_free, start_engine

__all__ = [
    "EngineExitedError",
    "EngineIdentityError",
    "EngineNotReadyError",
    "EngineProcess",
    "ExitKind",
    "ExitOutcome",
    "Identity",
    "Listener",
    "Phase",
    "PortTakenError",
    "Progress",
    "RestartDecision",
    "RestartPolicy",
    "RunningEngine",
    "classify_exit",
    "ensure_port_free",
    "start_engine",
]
