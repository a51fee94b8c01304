"""The "Active model" menu: the models the gateway can serve, the active one checked."""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtGui import QAction, QActionGroup
from PySide6.QtWidgets import QMenu, QWidget

from roundhouse.gui.active_model import ActiveModel


class ActiveModelMenu(QMenu):
    """Lists on opening; `chosen(model_id)` when the user picks one, `engines_requested()`
    when there is none and the user asks where to start one."""

    chosen = Signal(str)
    engines_requested = Signal()

    def __init__(self, active_model: ActiveModel, parent: QWidget | None = None) -> None:
        super().__init__("Active model", parent)
        self._active = active_model
        self._group = QActionGroup(self)
        self.aboutToShow.connect(active_model.refresh)
        active_model.changed.connect(self.fill)

    def fill(self) -> None:
        """Show what the active model object last heard (it lists anew when opened)."""
        for old in self._group.actions():
            self._group.removeAction(old)
        self.clear()
        listing = self._active
        active = listing.active
        if active and listing.loaded and listing.find(active) is None:
            # Chosen before, served by nothing now: say so rather than show no choice.
            gone = self.addAction(f"{active} (nothing serves it now)")
            gone.setCheckable(True)
            gone.setChecked(True)
            gone.setEnabled(False)
        if not listing.models:
            self.addAction("No model yet" if listing.loaded else "Loading the models…").setEnabled(
                False
            )
            if listing.loaded:
                hint = self.addAction("Start one on the Engines page…")
                hint.triggered.connect(self.engines_requested)
            return
        for model in listing.models:
            action = QAction(f"{model.id} — {model.engine.value}", self)
            action.setCheckable(True)
            action.setChecked(model.id == active)
            action.setData(model.id)
            action.triggered.connect(lambda _=False, mid=model.id: self.chosen.emit(mid))
            self._group.addAction(action)
            self.addAction(action)
