"""The Ollama page's choice of Ollama, among those the daemon runs or attached to."""

from __future__ import annotations

from PySide6.QtWidgets import QComboBox, QWidget

from roundhouse.api.engines import EngineId
from roundhouse.api.instances import InstanceInfo

ANY_OLLAMA = "the first one serving"


class OllamaInstanceCombo(QComboBox):
    """Hidden while there is one Ollama or none: nothing to choose."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setToolTip("The Ollama to work on, when Roundhouse knows several")
        self.addItem(ANY_OLLAMA, None)
        self.hide()

    def instance(self) -> str | None:
        """The Ollama instance chosen; None: the daemon picks the first one serving."""
        value = self.currentData()
        return value if isinstance(value, str) else None

    def follow(self, instances: list[InstanceInfo]) -> bool:
        """Offer the Ollamas among `instances`, without signals; True when the chosen one
        has gone (the choice is then the first one serving)."""
        ollamas = [i for i in instances if i.engine == EngineId.OLLAMA]
        wanted = [(None, ANY_OLLAMA)] + [
            (i.id, f"{i.host}:{i.port} ({i.origin.value})") for i in ollamas
        ]
        present = [(self.itemData(i), self.itemText(i)) for i in range(self.count())]
        lost = False
        if wanted != present:
            chosen = self.instance()
            self.blockSignals(True)
            self.clear()
            for data, text in wanted:
                self.addItem(text, data)
            index = self.findData(chosen) if chosen else 0
            self.setCurrentIndex(max(0, index))
            self.blockSignals(False)
            lost = chosen is not None and index < 0
        self.setVisible(len(ollamas) > 1)
        return lost
