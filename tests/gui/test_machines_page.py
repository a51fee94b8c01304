"""The Machines page against two real daemons paired on loopback over TLS: the app's daemon
(beta) pairs with alpha from the page's dialog, the page shows alpha's hardware and what it
can start (from the change feed, no polling), starts the tiny model there with the real
llama-server, shows the instance and its live charts (and `roundhouse peers show` its
figures), stops it, and unpairs."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import qasync
from PySide6.QtWidgets import QApplication, QMessageBox

from roundhouse.api.settings import ModelsSettings
from roundhouse.gui.app import build_ui
from roundhouse.gui.daemon_bridge import ConnectionState
from roundhouse.gui.dialogs.pair_dialog import PairDialog
from roundhouse.gui.pages.machines_page import MachinesPage
from roundhouse.gui.widgets.machine_card import MachineCard
from tests.daemon_process import DaemonProcess, path_with
from tests.gui.conftest import close_bridge, wait_until
from tests.support import cli
from tests.support.peers import open_code, peer_daemon, peers_of

MODEL = "tiny-machine"
READY_S = 90.0


@dataclass
class Pair:
    alpha: DaemonProcess  # has the model and llama-server
    beta: DaemonProcess  # the app's daemon


@pytest.fixture
def machines(llama_server_binary: Path, tiny_gguf: Path, tmp_path: Path) -> Iterator[Pair]:
    folder = tmp_path / "models"
    folder.mkdir()
    shutil.copy(tiny_gguf, folder / f"{MODEL}.gguf")
    env = {**path_with(llama_server_binary), "HF_HUB_CACHE": str(tmp_path / "hf")}
    library = ModelsSettings(library_folders=[str(folder)])
    with (
        peer_daemon(
            tmp_path / "alpha", "alpha", env=env, models=library, models_dir=str(tmp_path / "hf")
        ) as alpha,
        peer_daemon(tmp_path / "beta", "beta", models_dir=str(tmp_path / "hf-b")) as beta,
    ):
        yield Pair(alpha, beta)


def _status_of(card: MachineCard, instance: str) -> str | None:
    for row in range(card.table.rowCount()):
        item = card.table.item(row, 0)
        status = card.table.item(row, 2)
        if item is not None and status is not None and item.data(256) == instance:
            return status.text()
    return None


def test_pair_start_chart_stop_and_unpair_from_the_machines_page(
    qapp: QApplication, qloop: qasync.QEventLoop, machines: Pair
) -> None:
    alpha, beta = machines.alpha, machines.beta
    ui = build_ui(qapp, beta.home, auto_start=False, tray_available=False)
    page = ui.window.show_page(MachinesPage.title)
    assert isinstance(page, MachinesPage)
    ui.window.show()

    async def scenario() -> None:
        ui.bridge.start()
        await wait_until(lambda: ui.bridge.state == ConnectionState.CONNECTED, 20, "connected")
        await wait_until(lambda: page.view is not None, 15, "the paired machines")
        assert page.cards == {} and page.empty_label.isVisibleTo(page)
        # Shown before it connected: nothing failed, so nothing is said.
        assert not page.failure_notice.isVisibleTo(page), page.failure_notice.text()
        await wait_until(lambda: "RAM" in page.local_card.hardware_label.text(), 20, "hardware")

        # Pair from the page's dialog with the code alpha shows.
        offer = open_code(alpha)
        page.open_pair_dialog()
        dialog = page.pair_dialog
        assert isinstance(dialog, PairDialog)
        dialog.address_edit.setText(f"127.0.0.1:{offer['port']}")
        dialog.code_edit.setText(offer["code"])
        dialog.pair_button.click()
        # The card comes from the change feed's peers event: the page asks nothing again.
        await wait_until(lambda: len(page.cards) == 1, 60, "alpha's card")
        dialog.close()
        ((alpha_id, card),) = page.cards.items()
        assert card.peer_name == "alpha" and not page.empty_label.isVisibleTo(page)
        await wait_until(lambda: card.startable_box.count() > 0, 30, "what alpha can start")
        assert "Reachable at 127.0.0.1" in card.state_label.text()
        hardware = card.hardware_label.text()
        assert "RAM" in hardware and "threads" in hardware, hardware
        startable = [card.startable_box.itemText(i) for i in range(card.startable_box.count())]
        assert MODEL in startable

        # Start the model there, from the card.
        card.startable_box.setCurrentText(MODEL)
        assert card.start_button.isEnabled()
        card.start_button.click()
        assert not card.start_button.isEnabled()

        def started() -> list[str]:
            with alpha.control() as client:
                listed = client.get("/api/v1/instances").json()["instances"]
            return [i["id"] for i in listed if i["origin"] == "started"]

        await wait_until(lambda: bool(started()), READY_S, "the start on alpha")
        (instance,) = started()
        await wait_until(lambda: _status_of(card, instance) == "ready", READY_S, "ready")
        await wait_until(
            lambda: f"{MODEL} is ready on alpha" in page.action_label.text(), 20, "the answer"
        )
        # Served there now, so no longer among what it can start.
        await wait_until(lambda: card.startable_box.findText(MODEL) < 0, 20, "startable")

        # Its live charts: picked in the table, read from alpha through this daemon.
        card.select_instance(instance)
        assert page.charted == (alpha_id, instance) and page.charts.isVisibleTo(page)
        await wait_until(
            lambda: page.charts.memory_chart.point_count() > 0, 30, "the instance's memory"
        )
        assert "alpha" in page.charts.title_label.text()
        # The same figures from the command line.
        shown = cli.roundhouse(beta, "peers", "show", alpha_id, no_color=True)
        assert shown.returncode == 0, shown.stderr
        (figures,) = [x for x in shown.stdout.splitlines() if x.startswith("Figures now:")]
        assert f"{instance}: " in figures and "tok/s" in figures and "resident" in figures

        # Stop it from the card.
        assert card.stop_button.isEnabled()
        card.stop_button.click()
        await wait_until(
            lambda: _status_of(card, instance) not in ("ready", "starting", "loading"),
            30,
            "the instance to stop",
        )
        await wait_until(lambda: "Stopped" in page.action_label.text(), 20, "the stop")

        # A refusal there is said in words, in the page's notice; the card is usable again.
        page.start_on(alpha_id, "no-such-model")
        await wait_until(lambda: page.failure_notice.isVisibleTo(page), 30, "the refusal")
        said = page.failure_notice.text()
        assert said.startswith("Could not start no-such-model on the machine: "), said
        assert "Traceback" not in said
        assert card.unpair_button.isEnabled()

        # Unpair, confirmed: both machines forget each other and the card goes.
        card.unpair_button.click()
        box = page.findChild(QMessageBox)
        assert isinstance(box, QMessageBox)
        (confirm,) = [b for b in box.buttons() if b.text() == "Unpair"]
        confirm.click()
        await wait_until(lambda: page.cards == {}, 30, "the card to go")
        assert page.charted is None and not page.charts.isVisibleTo(page)
        assert page.empty_label.isVisibleTo(page)
        assert "it forgot this machine too" in page.action_label.text()
        assert peers_of(beta) == [] and peers_of(alpha) == []

    try:
        qloop.run_until_complete(scenario())
    finally:
        close_bridge(qloop, ui.bridge)
        ui.window.deleteLater()
