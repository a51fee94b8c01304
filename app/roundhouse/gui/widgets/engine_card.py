"""One catalog engine in a box: found where and which version, or why not, and what it serves."""

from __future__ import annotations

import html
from pathlib import PurePath

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QToolButton,
    QWidget,
)

from roundhouse.api.engines import (
    DetectedEngine,
    EngineSpec,
    MissingEngine,
    ModelFormat,
    Platform,
    SupportLevel,
)

OS_NAMES = {"Darwin": "macOS", "Linux": "Linux", "Windows": "Windows"}
FORMAT_NAMES = {
    ModelFormat.GGUF: "GGUF",
    ModelFormat.SAFETENSORS: "safetensors",
    ModelFormat.MLX: "MLX",
    ModelFormat.OLLAMA: "Ollama models",
}


def found_in_words(hit: DetectedEngine) -> str:
    """'llama-server 0.5.0-dev on PATH (/usr/local/bin/llama-server)', support when not full."""
    name = PurePath(hit.path).name if hit.path else (hit.module or hit.id.value)
    words = " ".join(part for part in (name, hit.version, hit.where) if part)
    if hit.path and hit.path not in hit.where:
        words += f" ({hit.path})"
    if hit.support == SupportLevel.EXPERIMENTAL:
        words += " (experimental here)"
    return words


def platform_in_words(place: Platform) -> str:
    words = f"{OS_NAMES[place.os]} {place.arch}"
    return words + " (experimental)" if place.support == SupportLevel.EXPERIMENTAL else words


def _label(text: str = "", *, rich: bool = False) -> QLabel:
    label = QLabel(text)
    label.setWordWrap(True)
    label.setTextFormat(Qt.TextFormat.RichText if rich else Qt.TextFormat.PlainText)
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextBrowserInteraction)
    return label


class EngineCard(QGroupBox):
    """Fixed rows (status, formats, platforms, homepage); 'looked in' folds out on demand.

    A found engine offers "Start…", which asks the page to open the start dialog for it.
    """

    start_requested = Signal(object)  # EngineId

    def __init__(self, spec: EngineSpec, parent: QWidget | None = None) -> None:
        super().__init__(spec.title, parent)
        self.spec = spec
        self.start_button = QPushButton("Start…")
        self.start_button.setToolTip(f"Start {spec.title} with a model")
        self.start_button.clicked.connect(lambda: self.start_requested.emit(self.spec.id))
        self.start_button.hide()
        status_row = QWidget()
        status_layout = QHBoxLayout(status_row)
        status_layout.setContentsMargins(0, 0, 0, 0)
        self.status = _label(rich=True)
        self.build = _label()
        self.notes = _label()
        self.formats = _label(", ".join(FORMAT_NAMES.get(f, f.value) for f in spec.formats))
        self.platforms = _label(", ".join(platform_in_words(p) for p in spec.platforms))
        link = html.escape(spec.homepage, quote=True)
        homepage = _label(f'<a href="{link}">{html.escape(spec.homepage)}</a>', rich=True)
        homepage.setOpenExternalLinks(True)
        self.looked_in_button = QToolButton()
        self.looked_in_button.setCheckable(True)
        self.looked_in_button.setAutoRaise(True)
        self.looked_in_button.setStyleSheet("QToolButton { border: none; }")
        self.looked_in_button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.looked_in_button.toggled.connect(self._on_looked_in_button_toggled)
        self.looked_in = _label()
        self.looked_in.setIndent(18)
        self.looked_in.hide()

        self._form = QFormLayout(self)
        self._form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        # A label beside a wrapped value lines up with its first line, not its middle.
        self._form.setLabelAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
        status_layout.addWidget(self.status, 1)
        status_layout.addWidget(self.start_button, 0, Qt.AlignmentFlag.AlignTop)
        self._form.addRow("Status:", status_row)
        self._form.addRow("Build:", self.build)
        self._form.addRow("Notes:", self.notes)
        self._form.addRow("Formats:", self.formats)
        self._form.addRow("Platforms:", self.platforms)
        self._form.addRow("Homepage:", homepage)
        self._form.addRow(self.looked_in_button)
        self._form.addRow(self.looked_in)
        self._status_text = ""
        self.show_unknown()

    def show_unknown(self) -> None:
        self._show("Waiting for the daemon…", None, [], [])
        self.start_button.hide()

    def show_found(self, hits: list[DetectedEngine]) -> None:
        """Every copy found, best first (the one Roundhouse would use)."""
        lines = [f"Found: {found_in_words(hit)}" for hit in hits]
        notes = [note for hit in hits for note in hit.notes]
        self._show("\n".join(lines), hits[0].build_info if hits else None, notes, [])
        self.start_button.setVisible(bool(hits))

    def show_missing(self, missing: MissingEngine) -> None:
        self._show(f"Not found: {missing.why}", None, [], missing.looked_in)
        self.start_button.hide()

    def status_text(self) -> str:
        """The status row as plain text, one line per copy found."""
        return self._status_text

    def _show(self, status: str, build: str | None, notes: list[str], looked_in: list[str]) -> None:
        self._status_text = status
        # The first word ("Found:", "Not found:") in bold, the rest as plain text.
        lines = [line.partition(": ") for line in status.splitlines()]
        self.status.setText(
            "<br>".join(
                f"<b>{html.escape(head)}:</b> {html.escape(rest)}" if sep else html.escape(head)
                for head, sep, rest in lines
            )
        )
        self.build.setText(build or "")
        self._form.setRowVisible(self.build, bool(build))
        self.notes.setText("\n".join(notes))
        self._form.setRowVisible(self.notes, bool(notes))
        self.looked_in.setText("\n".join(f"• {place}" for place in looked_in))
        places = "1 place" if len(looked_in) == 1 else f"{len(looked_in)} places"
        self.looked_in_button.setText(f"Looked in {places}")
        self.looked_in_button.setVisible(bool(looked_in))
        self.looked_in_button.setChecked(False)
        self._on_looked_in_button_toggled(False)

    def _on_looked_in_button_toggled(self, checked: bool) -> None:
        arrow = Qt.ArrowType.DownArrow if checked else Qt.ArrowType.RightArrow
        self.looked_in_button.setArrowType(arrow)
        self.looked_in.setVisible(checked and bool(self.looked_in.text()))
