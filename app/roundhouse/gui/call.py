"""One client call in the background, answered once by a signal: its result, or why not."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QObject, Signal

from roundhouse.client import ApiError, ClientError, DaemonUnreachableError


@dataclass(frozen=True)
class Failure:
    """Why a call failed: the daemon's problem (title, detail, HTTP status) or the link's."""

    title: str
    detail: str
    status: int | None = None

    def __str__(self) -> str:
        return f"{self.title}: {self.detail}"

    @classmethod
    def from_error(cls, error: ClientError) -> Failure:
        if isinstance(error, ApiError):
            return cls(error.problem.title, error.problem.detail, error.problem.status)
        if isinstance(error, DaemonUnreachableError):
            return cls("The daemon does not answer", str(error))
        return cls("Not connected to the daemon", str(error))


NOT_CONNECTED = Failure(
    "Not connected to the daemon",
    "Nothing was sent. The app reconnects in the background; try again once it has.",
)


class Call(QObject):
    """Emits `succeeded(result)` or `failed(Failure)`, then `finished()`; each once."""

    succeeded = Signal(object)
    failed = Signal(object)  # Failure
    finished = Signal()

    def __init__(self, what: str) -> None:
        super().__init__()
        self.what = what
        self.done = False
        self.result: Any = None
        self.failure: Failure | None = None

    def succeed(self, result: Any) -> None:
        self.done, self.result = True, result
        self.succeeded.emit(result)
        self.finished.emit()

    def fail(self, failure: Failure) -> None:
        self.done, self.failure = True, failure
        self.failed.emit(failure)
        self.finished.emit()


class Follow(QObject):
    """A stream from the daemon: `received(item)` per item, then `ended()` (the stream ran to
    its end), `failed(Failure)` or `cancelled()`; `finished()` last. Each end comes once."""

    received = Signal(object)
    ended = Signal()
    failed = Signal(object)  # Failure
    cancelled = Signal()
    finished = Signal()

    def __init__(self, what: str) -> None:
        super().__init__()
        self.what = what
        self.done = False
        self.failure: Failure | None = None
        self.last: Any = None
        self._cancel: Callable[[], object] | None = None

    def cancel(self) -> None:
        """Stop following: the stream is closed (for an Ollama pull, the pull stops)."""
        if not self.done and self._cancel is not None:
            self._cancel()

    def bind_cancel(self, cancel: Callable[[], object]) -> None:
        self._cancel = cancel

    def receive(self, item: Any) -> None:
        self.last = item
        self.received.emit(item)

    def end(self) -> None:
        self._finish(self.ended)

    def fail(self, failure: Failure) -> None:
        self.failure = failure
        self._finish(self.failed, failure)

    def mark_cancelled(self) -> None:
        self._finish(self.cancelled)

    def _finish(self, signal: Any, *args: Any) -> None:
        if self.done:
            return
        self.done = True
        signal.emit(*args)
        self.finished.emit()


class CallSlot:
    """One call at a time for a section: its buttons wait while the call runs.

    `on_change` runs when a call begins and when it has ended, after its own handlers, so a
    section re-reads `busy` there to enable its buttons again.
    """

    def __init__(self, on_change: Callable[[], None]) -> None:
        self._on_change = on_change
        self._call: Call | None = None

    @property
    def busy(self) -> bool:
        return self._call is not None

    def run(
        self,
        call: Call,
        on_success: Callable[[Any], None],
        on_failure: Callable[[Failure], None],
    ) -> None:
        self._call = call
        call.succeeded.connect(on_success)
        call.failed.connect(on_failure)
        call.finished.connect(self._on_finished)
        self._on_change()

    def _on_finished(self) -> None:
        self._call = None
        self._on_change()
