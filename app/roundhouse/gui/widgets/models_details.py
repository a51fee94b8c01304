"""A Hub model's page: card summary, license, gated notice, files by quantization with their fit,
and a Download button for the chosen group."""

from __future__ import annotations

import html

from PySide6.QtCore import QItemSelection, Qt, Signal
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QStackedWidget,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from roundhouse.api.downloads import DownloadQueueView, DownloadRequest
from roundhouse.api.fit import FitQuery
from roundhouse.api.hub import HubModelDetails, QuantGroup
from roundhouse.base.units import format_bytes
from roundhouse.gui.call import Failure
from roundhouse.gui.calls.models import ModelsCalls
from roundhouse.gui.calls.op import Ops
from roundhouse.gui.widgets.keyed_table_model import Row
from roundhouse.gui.widgets.link_prompt import ask_to_open
from roundhouse.gui.widgets.models_badge import BadgeDelegate, BadgeTableModel
from roundhouse.gui.widgets.models_fit import FitCache, repo_key
from roundhouse.gui.widgets.models_words import (
    KIND_NAMES,
    count_in_words,
    date_in_words,
    fit_details_html,
    params_in_words,
)
from roundhouse.gui.widgets.reply_html import LocalOnlyBrowser
from roundhouse.gui.widgets.table_view import table_view

HEADERS = ("Quantization", "Kind", "Files", "Size", "Fit")
_EMPTY, _CONTENT = 0, 1


def group_row(group: QuantGroup) -> Row:
    files = f"{group.shards} parts" if group.shards > 1 else f"{len(group.files)} file(s)"
    texts = (
        group.name,
        KIND_NAMES.get(group.kind, group.kind.value),
        files,
        format_bytes(group.size),
        "",
    )
    tooltip = "\n".join(f"{f.path} ({format_bytes(f.size)})" for f in group.files)
    return Row(group.name, texts, group, (tooltip, None, tooltip))


def meta_in_words(details: HubModelDetails) -> str:
    facts = [
        f"by {details.author}" if details.author else "",
        f"license {details.license}" if details.license else "no license given",
        f"{count_in_words(details.downloads)} downloads",
        f"{count_in_words(details.likes)} likes",
        f"updated {date_in_words(details.updated)}" if details.updated else "",
        details.architecture or "",
        f"{params_in_words(details.parameter_count)} parameters" if details.parameter_count else "",
        f"context {details.context_length:,}" if details.context_length else "",
    ]
    return " · ".join(fact for fact in facts if fact)


class ModelDetailsView(QStackedWidget):
    """Empty until a model is chosen; then its page, loaded from the daemon."""

    token_requested = Signal()
    download_queued = Signal(object)  # DownloadQueueView

    def __init__(self, calls: ModelsCalls, fits: FitCache, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._calls = calls
        self._fits = fits
        # The page shown is the latest asked for; one download queued at a time.
        self._ops = Ops(self, on_busy=self._update_actions)
        self.repo: str | None = None
        self.details: HubModelDetails | None = None
        empty = QLabel("Select a model to see its files and whether it fits this machine.")
        empty.setObjectName("hint")
        empty.setAlignment(Qt.AlignmentFlag.AlignCenter)
        empty.setWordWrap(True)
        self.addWidget(empty)

        self.title = QLabel()
        self.title.setObjectName("sectionTitle")
        self.title.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.meta = QLabel()
        self.meta.setObjectName("hint")
        self.meta.setWordWrap(True)
        self.gated_label = QLabel()
        self.gated_label.setWordWrap(True)
        self.gated_label.setOpenExternalLinks(True)
        self.token_button = QPushButton("Set token…")
        self.token_button.setToolTip("Store a Hugging Face token in the system keyring")
        self.token_button.clicked.connect(self.token_requested)
        self.gated_box = QFrame()
        # Its colours (a warning's) come from app.qss, in the theme in force.
        self.gated_box.setObjectName("gatedNotice")
        gated = QHBoxLayout(self.gated_box)
        gated.addWidget(self.gated_label, 1)
        gated.addWidget(self.token_button)
        # The model card is the repository owner's text: nothing it names is loaded.
        self.summary = LocalOnlyBrowser()
        self.summary.setFrameShape(QFrame.Shape.NoFrame)
        # Read as part of the pane, not as an input box.
        self.summary.setStyleSheet("QTextBrowser { background: transparent; }")
        # Its links are the owner's too: the whole address is shown before any opens.
        self.summary.setOpenLinks(False)
        self.summary.anchorClicked.connect(lambda url: ask_to_open(self, url.toString()))

        self.groups = BadgeTableModel(HEADERS, frozenset({3}), self)
        self.groups_view: QTableView = table_view(self.groups)
        self.groups_view.setItemDelegateForColumn(self.groups.badge_column, BadgeDelegate(self))
        self.groups_view.selectionModel().selectionChanged.connect(self._on_groups_selection)
        self.groups_view.setMinimumHeight(110)
        self.fit_label = QLabel()
        self.fit_label.setWordWrap(True)
        self.fit_label.setTextFormat(Qt.TextFormat.RichText)
        self.fit_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.download_button = QPushButton("Download")
        self.download_button.clicked.connect(self.download_selected)
        self.message_label = QLabel()
        self.message_label.setWordWrap(True)
        self.message_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.error_label = QLabel()
        self.error_label.setObjectName("dialogError")
        self.error_label.setWordWrap(True)
        self.error_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        actions = QHBoxLayout()
        actions.addWidget(self.message_label, 1)
        actions.addWidget(self.download_button)

        # Left: what the model is; right: which files, whether they fit, and Download.
        about = QVBoxLayout()
        about.addWidget(self.title)
        about.addWidget(self.meta)
        about.addWidget(self.gated_box)
        about.addWidget(self.summary, 1)
        about.addWidget(self.error_label)
        about.addStretch(0)
        files = QVBoxLayout()
        files.addWidget(self.groups_view, 1)
        files.addWidget(self.fit_label)
        files.addLayout(actions)
        files.addStretch(0)
        content = QWidget()
        layout = QHBoxLayout(content)
        layout.setContentsMargins(0, 4, 0, 0)
        layout.addLayout(about, 2)
        layout.addSpacing(8)
        layout.addLayout(files, 3)
        self.addWidget(content)
        fits.changed.connect(self._on_fits_changed)
        self._clear()

    # -- what the page, tests and the screenshots use -----------------------------------

    def show_model(self, repo: str, revision: str = "main") -> None:
        """Load the model's page; an answer for a model no longer chosen is dropped."""
        self.repo = repo
        self.details = None
        self._clear()
        self.setCurrentIndex(_CONTENT)
        self.title.setText(repo)
        self.meta.setText("Reading its page on Hugging Face…")
        self.meta.show()
        self._ops.run(
            self._calls.model(repo, revision),
            self._on_model_loaded,
            on_failure=self._on_model_failed,
            latest="model",
        )

    def reload(self) -> None:
        if self.repo is not None:
            self.show_model(self.repo)

    def select_group(self, name: str) -> bool:
        row = self.groups.row_of(name)
        if row is not None:
            self.groups_view.selectRow(row)
        return row is not None

    def selected_group(self) -> QuantGroup | None:
        rows = self.groups_view.selectionModel().selectedRows()
        item = self.groups.row(rows[0].row()).item if rows else None
        return item if isinstance(item, QuantGroup) else None

    def download_selected(self) -> None:
        details, group = self.details, self.selected_group()
        if details is None or group is None or self._ops.busy:
            return
        request = DownloadRequest(
            repo=details.id, revision=details.revision, files=[f.path for f in group.files]
        )
        self.error_label.hide()
        self.message_label.setText(f"Queueing {group.name}…")
        self._ops.run(
            self._calls.add_download(request),
            lambda view: self._on_download_queued(group, view),
            on_failure=self._on_download_refused,
            busy=True,
        )

    # -- answers ------------------------------------------------------------------------

    def _on_model_loaded(self, details: HubModelDetails) -> None:
        self.details = details
        self.title.setText(details.id)
        projectors = f" · {len(details.projectors)} projector file(s)" if details.projectors else ""
        self.meta.setText(meta_in_words(details) + projectors)
        page = f"https://huggingface.co/{html.escape(details.id)}"
        self.gated_label.setText(
            "<b>Gated model.</b> Accept its license on "
            f'<a href="{page}">its Hugging Face page</a>, then set a token that can read it.'
            if details.gated
            else "<b>Private model.</b> Only a token of an account with access reads it."
        )
        self.gated_box.setVisible(details.gated or details.private)
        self.summary.setPlainText(details.summary or "The model card says nothing more.")
        self.summary.show()
        self.groups.set_rows([group_row(group) for group in details.groups])
        for group in details.groups:
            key = repo_key(details.id, details.revision, group.name)
            query = FitQuery(repo=details.id, revision=details.revision, group=group.name)
            self._fits.request(key, query, first=True)
            self.groups.set_badge(group.name, self._fits.badge(key))
        self.groups_view.show()
        if details.groups:
            self.groups_view.selectRow(0)
        else:
            self.message_label.setText("No files a local engine can run were found here.")
        self._update_actions()

    def _on_model_failed(self, failure: Failure) -> None:
        self.meta.hide()
        self._show_error(failure)
        if failure.status in (401, 403):
            self.gated_label.setText("<b>Gated or private?</b> A token that can read it opens it.")
            self.gated_box.show()

    def _on_download_queued(self, group: QuantGroup, view: DownloadQueueView) -> None:
        files = f"{group.shards} parts" if group.shards > 1 else f"{len(group.files)} file(s)"
        self.message_label.setText(
            f"Queued {group.name} ({files}, {format_bytes(group.size)}): see Downloads."
        )
        self.download_queued.emit(view)

    def _on_download_refused(self, failure: Failure) -> None:
        self.message_label.setText("")
        self._show_error(failure)

    def _on_fits_changed(self, key: str) -> None:
        details = self.details
        if details is None or not key.startswith(repo_key(details.id, details.revision) + "#"):
            return
        name = key.partition("#")[2]
        self.groups.set_badge(name, self._fits.badge(key))
        group = self.selected_group()
        if group is not None and group.name == name:
            self._show_fit(group)

    def _on_groups_selection(self, _selected: QItemSelection, _: QItemSelection) -> None:
        group = self.selected_group()
        if group is not None:
            self._show_fit(group)
        self._update_actions()

    # -- showing ------------------------------------------------------------------------

    def _show_fit(self, group: QuantGroup) -> None:
        details = self.details
        if details is None:
            return
        key = repo_key(details.id, details.revision, group.name)
        fit = self._fits.fit(key)
        badge = self._fits.badge(key)
        self.fit_label.setToolTip(badge.tooltip if badge is not None else "")
        if fit is not None:
            self.fit_label.setText(fit_details_html(fit.report))
        elif badge is not None:
            self.fit_label.setText(html.escape(badge.tooltip))
        else:
            self.fit_label.setText("")
        self.fit_label.setVisible(bool(self.fit_label.text()))

    def _show_error(self, failure: Failure) -> None:
        self.error_label.setText(f"{failure.title}: {failure.detail}")
        self.error_label.show()

    def error_text(self) -> str:
        return "" if self.error_label.isHidden() else self.error_label.text()

    def _clear(self) -> None:
        self.groups.set_rows([])
        for widget in (self.gated_box, self.summary, self.groups_view, self.fit_label):
            widget.hide()
        self.error_label.hide()
        self.message_label.setText("")
        self._update_actions()

    def _update_actions(self) -> None:
        group = self.selected_group()
        self.download_button.setEnabled(group is not None and not self._ops.busy)
        if group is not None:
            self.download_button.setText(f"Download {group.name} ({format_bytes(group.size)})")
        else:
            self.download_button.setText("Download")
