"""The Machines page: this machine and each paired one (whether it answers, its hardware,
instances, load and the models it can start), start and stop there, pair and unpair, and the
live charts of a paired machine's instance. Kept current by the change feed's peers event."""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from roundhouse.api.instances import InstanceInfo, InstanceOrigin
from roundhouse.api.metrics import MetricsHistory
from roundhouse.api.peers import PeerInfo, PeerStopped, PeersView, Unpaired
from roundhouse.gui.call import Failure
from roundhouse.gui.calls.op import FailureSink, Ops
from roundhouse.gui.calls.peers import PeersCalls
from roundhouse.gui.daemon_bridge import ConnectionState, DaemonBridge
from roundhouse.gui.widgets.confirm import ask_to_confirm
from roundhouse.gui.widgets.machine_card import MachineCard
from roundhouse.gui.widgets.machines_words import NO_PEERS, model_text
from roundhouse.gui.widgets.notice import Notice
from roundhouse.gui.widgets.peer_charts import WINDOW_S, PeerInstanceCharts

# How often the picked instance's figures are asked of its machine while the page shows.
CHART_MS = 2000


class MachinesPage(QWidget):
    title = "Machines"

    def __init__(self, bridge: DaemonBridge, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._bridge = bridge
        self._calls = PeersCalls(bridge)
        self._ops = Ops(self)
        self.view: PeersView | None = None
        self.cards: dict[str, MachineCard] = {}
        # The paired machine's instance charted: (peer id, instance id as the peer knows it).
        self.charted: tuple[str, str] | None = None
        self.chart_loads = 0

        heading = QLabel(self.title)
        heading.setObjectName("pageTitle")
        self.status_label = QLabel("Waiting for the daemon…")
        self.status_label.setWordWrap(True)
        self.pair_button = QPushButton("Pair a machine…")
        self.pair_button.setToolTip(
            "Show a code for another machine to type, or type the code another machine shows"
        )
        self.pair_button.clicked.connect(self.open_pair_dialog)
        header = QHBoxLayout()
        header.addWidget(heading)
        header.addSpacing(16)
        header.addWidget(self.status_label, 1)
        header.addWidget(self.pair_button)
        self.listener_label = QLabel()
        self.listener_label.setObjectName("hint")
        self.listener_label.setWordWrap(True)
        self.failure_notice = Notice(tone="problem")
        # What the last start, stop, pairing or unpairing did (the feed shows the result).
        self.action_label = QLabel()
        self.action_label.setWordWrap(True)
        self.action_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)

        self.local_card = MachineCard(None)
        self.empty_label = QLabel(NO_PEERS)
        self.empty_label.setWordWrap(True)
        self._cards_layout = QVBoxLayout()
        self._cards_layout.setSpacing(12)
        cards = QWidget()
        column = QVBoxLayout(cards)
        column.addWidget(self.local_card)
        column.addLayout(self._cards_layout)
        column.addWidget(self.empty_label)
        column.addStretch(1)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setWidget(cards)
        self.charts = PeerInstanceCharts()
        self.charts.hide()

        layout = QVBoxLayout(self)
        layout.addLayout(header)
        layout.addWidget(self.listener_label)
        layout.addWidget(self.action_label)
        layout.addWidget(self.failure_notice)
        layout.addWidget(scroll, 1)
        layout.addWidget(self.charts)

        self.chart_timer = QTimer(self)
        self.chart_timer.setInterval(CHART_MS)
        self.chart_timer.timeout.connect(self._load_chart)

        bridge.peers_changed.connect(self.show_view)
        bridge.feed_reset.connect(self.load)
        bridge.instances_changed.connect(lambda _: self._show_local())
        bridge.inventory_changed.connect(lambda _: self._show_local())
        bridge.settings_changed.connect(lambda _: self._show_local())
        bridge.disconnected.connect(self._on_disconnected)
        self._show_local()
        if bridge.peers is not None:
            self.show_view(bridge.peers)

    # -- what it shows -----------------------------------------------------------------------

    def load(self) -> None:
        """Read the paired machines again (after a reset of the feed); events keep them."""
        self._ops.run(self._calls.machines(), self._on_loaded, latest="machines")

    def _on_loaded(self, view: PeersView) -> None:
        # Listed again: a failure to list them no longer holds.
        self.failure_notice.hide()
        self.show_view(view)

    def show_view(self, view: PeersView) -> None:
        self._ops.forget("machines")
        self.view = view
        seen = {s.id: s for s in view.seen}
        for gone in set(self.cards) - {p.id for p in view.peers}:
            card = self.cards.pop(gone)
            card.deleteLater()
            if self.charted is not None and self.charted[0] == gone:
                self._chart(None)
        for peer in view.peers:
            shown = self.cards.get(peer.id) or self._new_card(peer.id)
            shown.show_peer(peer, seen.get(peer.id))
        self.empty_label.setVisible(not view.peers)
        listener = view.listener
        if listener.url is None:
            self.listener_label.setText(
                "This machine's peer listener is off: another machine can pair with it once "
                "peers.listen_host is set (Settings). Pairing from here works regardless."
            )
        elif listener.error:
            self.listener_label.setText(f"This machine's peer listener: {listener.error}")
        else:
            self.listener_label.setText(f"Other machines reach this one at {listener.url}.")
        count = len(view.peers)
        self.status_label.setText(
            "No paired machines" if not count else f"{count} paired machine{'s' * (count > 1)}"
        )

    def _new_card(self, peer_id: str) -> MachineCard:
        card = MachineCard(peer_id)
        card.start_requested.connect(self.start_on)
        card.stop_requested.connect(self.stop_on)
        card.unpair_requested.connect(self.unpair)
        card.instance_selected.connect(self._on_instance_selected)
        self._cards_layout.addWidget(card)
        self.cards[peer_id] = card
        return card

    def _show_local(self) -> None:
        settings = self._bridge.settings_full
        name = settings.peers.name.strip() if settings is not None else ""
        own = [i for i in self._bridge.instances or [] if i.origin != InstanceOrigin.PEER]
        self.local_card.show_local(name, self._bridge.inventory, own)

    def _on_disconnected(self, message: str) -> None:
        self.status_label.setText("Showing the last known machines: not connected to the daemon.")

    # -- actions ---------------------------------------------------------------------------------

    def open_pair_dialog(self) -> None:
        from roundhouse.gui.dialogs.pair_dialog import PairDialog

        dialog = PairDialog(self._calls, self)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.paired.connect(self._on_paired)
        self.pair_dialog = dialog
        dialog.open()

    def _on_paired(self, peer: PeerInfo) -> None:
        self.action_label.setText(f"Paired with {peer.name}.")

    def start_on(self, peer: str, model: str) -> None:
        card = self.cards[peer]
        self.failure_notice.hide()
        card.set_busy(True)
        self.action_label.setText(f"Starting {model} on {card.peer_name}…")
        call = self._calls.start(peer, model)

        def started(info: InstanceInfo) -> None:
            card.set_busy(False)
            self.action_label.setText(f"{model} is ready on {card.peer_name}.")

        self._ops.run(call, started, on_failure=self._failed_on(card, call.what))

    def stop_on(self, peer: str, instance: str) -> None:
        card = self.cards[peer]
        self.failure_notice.hide()
        card.set_busy(True)
        self.action_label.setText(f"Stopping {instance} on {card.peer_name}…")
        call = self._calls.stop(peer, instance)

        def stopped(answer: PeerStopped) -> None:
            card.set_busy(False)
            self.action_label.setText(f"Stopped {answer.instance} on {card.peer_name}.")

        self._ops.run(call, stopped, on_failure=self._failed_on(card, call.what))

    def unpair(self, peer: str) -> None:
        card = self.cards[peer]
        card.set_busy(True)
        ask_to_confirm(
            self,
            title="Unpair a machine",
            text=f"Unpair {card.peer_name}?",
            detail=(
                "This machine forgets it and its key, and tells it to forget this one. Its "
                "models are no longer served here. Pairing again needs a new code."
            ),
            action="Unpair",
            on_confirm=lambda: self._unpair(peer),
            on_closed=lambda: card.set_busy(False),
        )

    def _unpair(self, peer: str) -> None:
        card = self.cards[peer]
        self.failure_notice.hide()
        card.set_busy(True)
        call = self._calls.unpair(peer)

        def unpaired(answer: Unpaired) -> None:
            card.set_busy(False)
            self.action_label.setText(answer.message)

        self._ops.run(call, unpaired, on_failure=self._failed_on(card, call.what))

    def _failed_on(self, card: MachineCard, what: str) -> FailureSink:
        def failed(failure: Failure) -> None:
            card.set_busy(False)
            self.action_label.setText("")
            self._ops.fail(what, failure)

        return failed

    # -- the charts of a paired machine's instance ------------------------------------------------

    def _on_instance_selected(self, peer: str, instance: str) -> None:
        if instance:
            for other_id, other in self.cards.items():
                if other_id != peer:
                    other.table.clearSelection()
        self._chart((peer, instance) if instance else None)

    def _chart(self, target: tuple[str, str] | None) -> None:
        if target == self.charted:
            return
        self.charted = target
        self._ops.forget("chart")
        if target is None:
            self.charts.hide()
            self.chart_timer.stop()
            return
        peer, instance = target
        card = self.cards[peer]
        shown = instance
        if self.view is not None:
            state = next((s.state for s in self.view.seen if s.id == peer), None)
            info = next((i for i in state.instances if i.id == instance), None) if state else None
            if info is not None:
                shown = model_text(info)
        self.charts.follow(card.peer_name, instance, shown)
        self.charts.show()
        self._load_chart()
        self.chart_timer.start()

    def _load_chart(self) -> None:
        if self.charted is None or not self.isVisible() or self._ops.waiting("chart"):
            return
        peer, instance = self.charted
        self._ops.run(
            self._calls.metrics(peer, instance, WINDOW_S),
            self._on_chart_loaded,
            on_failure=self._on_chart_failed,
            latest="chart",
        )

    def _on_chart_loaded(self, history: MetricsHistory) -> None:
        self.chart_loads += 1
        self.charts.show_history(history)

    def _on_chart_failed(self, failure: Failure) -> None:
        for chart in (self.charts.tps_chart, self.charts.memory_chart):
            chart.show_message(f"No figures from the machine: {failure}")

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        connected = self._bridge.state == ConnectionState.CONNECTED
        if connected and self.view is None and self._bridge.peers is None:
            self.load()
        if self.charted is not None:
            self._load_chart()
