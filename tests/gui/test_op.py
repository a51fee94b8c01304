"""Ops, the one way a widget calls the daemon: success to its handler, a failure to a sink that
shows it (never nowhere), and "latest answer wins" for a question asked again."""

from __future__ import annotations

from pathlib import Path

import qasync
from PySide6.QtCore import QEvent
from PySide6.QtWidgets import QApplication, QMainWindow, QVBoxLayout, QWidget
from shiboken6 import Shiboken

from roundhouse.base.paths import resolve_home
from roundhouse.gui.call import Call, Failure
from roundhouse.gui.calls.op import Ops
from roundhouse.gui.daemon_bridge import DaemonBridge
from roundhouse.gui.widgets.notice import Notice
from tests.gui.conftest import wait_until

REFUSED = Failure("Refused", "port taken", 422)


class Page(QWidget):
    """A page that shows its calls' failures in a notice of its own."""

    def __init__(self) -> None:
        super().__init__()
        self.failure_notice = Notice(tone="problem")
        self.section = QWidget()
        layout = QVBoxLayout(self)
        layout.addWidget(self.failure_notice)
        layout.addWidget(self.section)


def test_a_success_reaches_its_handler_and_nothing_is_shown(qapp: QApplication) -> None:
    page = Page()
    ops = Ops(page.section)
    seen: list[object] = []
    call = ops.run(Call("read the settings"), seen.append)
    call.succeed(7)
    assert seen == [7]
    assert page.failure_notice.isHidden()


def test_a_failure_without_a_handler_reaches_the_pages_notice(qapp: QApplication) -> None:
    page = Page()
    Ops(page.section).run(Call("save a preset"), lambda _: None).fail(REFUSED)
    assert not page.failure_notice.isHidden()
    assert page.failure_notice.text() == "Could not save a preset: Refused: port taken"


def test_a_failure_outside_a_page_with_a_notice_reaches_the_windows_status_bar(
    qapp: QApplication,
) -> None:
    window = QMainWindow()
    widget = QWidget()
    window.setCentralWidget(widget)
    Ops(widget).run(Call("list the conversations")).fail(REFUSED)
    assert window.statusBar().currentMessage() == (
        "Could not list the conversations: Refused: port taken"
    )
    window.close()


def test_a_failure_goes_to_on_failure_or_say_when_the_widget_shows_its_own(
    qapp: QApplication,
) -> None:
    page = Page()
    handled: list[Failure] = []
    Ops(page.section).run(Call("fit"), on_failure=handled.append).fail(REFUSED)
    said: list[str] = []
    Ops(page.section, say=said.append).run(Call("list the local models")).fail(REFUSED)
    assert handled == [REFUSED]
    assert said == ["Could not list the local models: Refused: port taken"]
    assert page.failure_notice.isHidden()


def test_latest_answer_wins_a_stale_answer_is_dropped(qapp: QApplication) -> None:
    page = Page()
    ops = Ops(page.section)
    seen: list[object] = []
    first = ops.run(Call("estimate"), seen.append, latest="fit")
    second = ops.run(Call("estimate"), seen.append, latest="fit")
    assert ops.waiting("fit")
    second.succeed("second")
    # The first question was asked before the second: its answer, late, is dropped, and so
    # is its failure (the user no longer waits for it).
    first.succeed("first")
    assert seen == ["second"] and not ops.waiting("fit")
    third = ops.run(Call("estimate"), seen.append, latest="fit")
    ops.forget("fit")
    third.fail(REFUSED)
    fourth = ops.run(Call("estimate"), seen.append, latest="fit")
    stale = ops.run(Call("other"), seen.append, latest="other")
    fourth.succeed("fourth")
    stale.succeed("other")
    assert seen == ["second", "fourth", "other"]
    assert page.failure_notice.isHidden()


def test_busy_holds_from_the_start_until_the_handlers_ran(qapp: QApplication) -> None:
    page = Page()
    changes: list[bool] = []
    ops: Ops = Ops(page.section, on_busy=lambda: changes.append(ops.busy))
    seen: list[bool] = []
    call = ops.run(Call("check for updates"), lambda _: seen.append(ops.busy), busy=True)
    assert ops.busy and changes == [True]
    call.succeed(None)
    assert seen == [True] and changes == [True, False] and not ops.busy


def test_an_answer_after_the_widget_is_gone_reaches_nothing(qapp: QApplication) -> None:
    widget = QWidget()
    seen: list[object] = []
    call = Ops(widget).run(Call("read"), seen.append)
    widget.deleteLater()
    # deleteLater runs on a posted event of its own kind.
    QApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
    assert not Shiboken.isValid(widget)
    call.succeed(1)
    assert seen == []


def test_a_real_call_that_could_not_be_sent_is_shown_not_dropped(
    qloop: qasync.QEventLoop, home_root: Path
) -> None:
    """Through the bridge, before it connected: the call answers "not connected" from the
    loop, and that reaches the page's notice."""
    bridge = DaemonBridge(resolve_home(home_root), auto_start=False)
    page = Page()
    call = Ops(page.section).run(bridge.settings.get(), lambda _: None)

    qloop.run_until_complete(wait_until(lambda: call.done, 5, "the call answered"))
    assert page.failure_notice.text().startswith(
        "Could not read the settings: Not connected to the daemon"
    )
