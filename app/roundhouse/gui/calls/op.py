"""The one way a widget calls the daemon: `Ops.run` hands a Call's answer to a success handler
and its failure to a sink that shows it (the page's notice, else the window), never nowhere."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, Qt
from PySide6.QtWidgets import QMainWindow, QMessageBox, QWidget

from roundhouse.gui.call import Call, CallSlot, Failure
from roundhouse.gui.widgets.notice import Notice

log = logging.getLogger(__name__)

FailureSink = Callable[[Failure], None]
# Where a widget's failure sentences go when it shows them itself (a label's setText).
Say = Callable[[str], None]
# How long a failure stays in the window's status bar when no page notice shows it.
STATUS_MS = 15_000


def failure_text(what: str, failure: Failure) -> str:
    """The sentence a failure is shown with: "Could not <what>: <title>: <detail>"."""
    return f"Could not {what}: {failure}"


def show_failure(owner: QObject, what: str, failure: Failure) -> None:
    """The default sink: the `failure_notice` (a Notice) of the nearest widget up from `owner`
    that has one (a page), else the main window's status bar, else a message box."""
    text = failure_text(what, failure)
    log.info("%s", text)
    node: QObject | None = owner
    window: QWidget | None = None
    while node is not None:
        notice = getattr(node, "failure_notice", None)
        if isinstance(notice, Notice):
            notice.show_text(text)
            return
        if isinstance(node, QWidget) and window is None:
            window = node.window()
        node = node.parent()
    if isinstance(window, QMainWindow):
        window.statusBar().showMessage(text, STATUS_MS)
        return
    # A dialog or a window of its own (quick chat): a box beside it, never a nested loop.
    box = QMessageBox(QMessageBox.Icon.Warning, "Roundhouse", text, parent=window)
    box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    box.open()


class Ops:
    """A widget's calls of the daemon: each answered by its success handler or a failure sink.

    A failure goes to the call's `on_failure` when given, else as a sentence ("Could not
    <what>: ...") to `say` when the widget shows its own, else to `show_failure`.

    `latest="key"` makes calls under one key "latest answer wins": an answer to a call asked
    before the last one under that key is dropped (the question changed since). `busy=True`
    makes the call the section's one call at a time: `busy` holds from its start until its
    handlers ran, and `on_busy` runs at both ends so the section enables its buttons again.
    """

    def __init__(
        self,
        owner: QObject,
        *,
        say: Say | None = None,
        on_busy: Callable[[], None] | None = None,
    ) -> None:
        self._owner = owner
        self._say = say
        self._slot = CallSlot(on_busy or (lambda: None))
        self._latest: dict[str, Call] = {}

    @property
    def busy(self) -> bool:
        """Whether a `busy=True` call runs (its handlers included)."""
        return self._slot.busy

    def run(
        self,
        call: Call,
        on_success: Callable[[Any], None] | None = None,
        *,
        on_failure: FailureSink | None = None,
        latest: str | None = None,
        busy: bool = False,
    ) -> Call:
        """Answer `call` (from a call group) with `on_success(result)`, or its failure with
        `on_failure` when given, else `say` or `show_failure`. Returns the call."""
        if latest is not None:
            self._latest[latest] = call
        answer = _Answer(self, call, on_success, on_failure, latest)
        if busy:
            self._slot.run(call, answer.succeeded, answer.failed)
        else:
            call.succeeded.connect(answer.succeeded)
            call.failed.connect(answer.failed)
        call.finished.connect(answer.deleteLater)
        return call

    def forget(self, latest: str) -> None:
        """Drop the answer still due under `latest` (what it asked no longer holds)."""
        self._latest.pop(latest, None)

    def waiting(self, latest: str) -> bool:
        """Whether an answer under `latest` is still due."""
        return latest in self._latest

    def fail(self, what: str, failure: Failure) -> None:
        """Show a failure the way this widget's calls show theirs."""
        if self._say is not None:
            self._say(failure_text(what, failure))
            return
        show_failure(self._owner, what, failure)

    def _is_current(self, call: Call, latest: str | None) -> bool:
        if latest is None:
            return True
        if self._latest.get(latest) is not call:
            return False
        del self._latest[latest]
        return True


class _Answer(QObject):
    """One call's handlers, a child of the owner: Qt drops its connections with the owner,
    so an answer that comes after the widget has gone reaches nothing."""

    def __init__(
        self,
        ops: Ops,
        call: Call,
        on_success: Callable[[Any], None] | None,
        on_failure: FailureSink | None,
        latest: str | None,
    ) -> None:
        super().__init__(ops._owner)
        self._ops = ops
        self._call = call
        self._on_success = on_success
        self._on_failure = on_failure
        self._latest = latest

    def succeeded(self, result: Any) -> None:
        if not self._ops._is_current(self._call, self._latest):
            return
        if self._on_success is not None:
            self._on_success(result)

    def failed(self, failure: Failure) -> None:
        if not self._ops._is_current(self._call, self._latest):
            return
        if self._on_failure is not None:
            self._on_failure(failure)
        else:
            self._ops.fail(self._call.what, failure)
