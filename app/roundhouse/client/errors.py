"""Errors a client meets, each with a message a user can act on."""

from __future__ import annotations

from roundhouse.api.daemon import Problem


class ClientError(Exception):
    """Base of the client's errors; str() is the message for the user."""


class DaemonNotRunningError(ClientError):
    """No daemon serves this home."""


class DaemonUnreachableError(ClientError):
    """A daemon is recorded, but it does not answer."""


class ApiError(ClientError):
    """The daemon answered with a problem response."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(f"{problem.title}: {problem.detail}")
        self.problem = problem

    @property
    def status(self) -> int:
        return self.problem.status
