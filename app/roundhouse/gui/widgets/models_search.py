"""Search Hugging Face: a query, a kind and an order; results with a fit badge per visible row."""

from __future__ import annotations

from PySide6.QtCore import QItemSelection, Qt, QTimer, Signal
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from roundhouse.api.fit import FitQuery
from roundhouse.api.hub import (
    UNREACHABLE_TITLES,
    HubModelKind,
    HubModelSummary,
    HubSearchRequest,
    HubSearchResult,
    HubSort,
)
from roundhouse.gui.call import Call, Failure
from roundhouse.gui.calls.models import ModelsCalls
from roundhouse.gui.calls.op import Ops
from roundhouse.gui.icons import set_icon
from roundhouse.gui.widgets.keyed_table_model import Row
from roundhouse.gui.widgets.models_badge import BadgeDelegate, BadgeTableModel, visible_rows
from roundhouse.gui.widgets.models_fit import FitCache, repo_key
from roundhouse.gui.widgets.models_words import (
    count_in_words,
    date_in_words,
    kinds_in_words,
    params_in_words,
)
from roundhouse.gui.widgets.notice import Notice
from roundhouse.gui.widgets.table_view import table_view

HEADERS = ("Model", "Kinds", "Parameters", "Downloads", "Likes", "Updated", "Access", "Fit")
KIND_CHOICES: tuple[tuple[str, tuple[HubModelKind, ...]], ...] = (
    ("Every kind", ()),
    ("GGUF", (HubModelKind.GGUF,)),
    ("MLX", (HubModelKind.MLX,)),
    ("safetensors", (HubModelKind.SAFETENSORS,)),
)
SORT_CHOICES = (
    ("Most downloaded", HubSort.DOWNLOADS),
    ("Most liked", HubSort.LIKES),
    ("Recently updated", HubSort.UPDATED),
)
# Rows scrolled into view get their estimates once scrolling rests this long.
VISIBLE_SETTLE_MS = 150
OFFLINE_WORDS = (
    "Import a model file or add a models folder instead; search again once the connection is back."
)


def failure_in_words(failure: Failure) -> str:
    """A search's failure, said for the page: no connection at all is said as such."""
    if failure.title in UNREACHABLE_TITLES:
        needs = "it" if "Hugging Face" in failure.title else "Hugging Face"
        return f"{failure.title}: search needs {needs}. {OFFLINE_WORDS}"
    return f"Not searched: {failure.detail}"


def result_row(model: HubModelSummary) -> Row:
    access = ", ".join(
        word for word, on in (("gated", model.gated), ("private", model.private)) if on
    )
    texts = (
        model.id,
        kinds_in_words(model.kinds),
        params_in_words(model.parameter_count),
        count_in_words(model.downloads),
        count_in_words(model.likes),
        date_in_words(model.updated),
        access,
        "",
    )
    about = [model.pipeline_tag, model.library_name, ", ".join(model.tags[:12])]
    tooltip = "\n".join([model.id, *(line for line in about if line)])
    gated_tip = "Accept its license on huggingface.co, then set a token" if model.gated else None
    return Row(model.id, texts, model, (tooltip, None, None, None, None, None, gated_tip))


class ModelSearchView(QWidget):
    """Searches when asked (Enter, the button, a changed filter); one search at a time."""

    model_selected = Signal(object)  # HubModelSummary
    # The offline notice's buttons: the Library acts on them.
    import_requested = Signal()
    folder_requested = Signal()

    def __init__(self, calls: ModelsCalls, fits: FitCache, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._ops = Ops(self)
        self._calls = calls
        self._fits = fits
        self._call: Call | None = None
        self.result: HubSearchResult | None = None
        self.query_edit = QLineEdit()
        self.query_edit.setPlaceholderText("Search Hugging Face: qwen3, llama 3.2, gemma…")
        self.query_edit.setClearButtonEnabled(True)
        self.query_edit.returnPressed.connect(self.search)
        self.kind_combo = QComboBox()
        for text, kinds in KIND_CHOICES:
            self.kind_combo.addItem(text, kinds)
        self.kind_combo.setToolTip("Only models a local engine can run are listed")
        self.sort_combo = QComboBox()
        for text, sort in SORT_CHOICES:
            self.sort_combo.addItem(text, sort)
        self.search_button = QPushButton("Search")
        set_icon(self.search_button, "search")
        self.search_button.clicked.connect(self.search)
        for combo in (self.kind_combo, self.sort_combo):
            combo.activated.connect(self.search)
        row = QHBoxLayout()
        row.addWidget(self.query_edit, 1)
        row.addWidget(self.kind_combo)
        row.addWidget(self.sort_combo)
        row.addWidget(self.search_button)

        self.results = BadgeTableModel(HEADERS, frozenset({2, 3, 4}), self)
        self.view: QTableView = table_view(self.results)
        self.view.setItemDelegateForColumn(self.results.badge_column, BadgeDelegate(self.view))
        self.view.selectionModel().selectionChanged.connect(self._on_view_selection_changed)
        self.status_label = QLabel()
        self.status_label.setObjectName("hint")
        self.status_label.setWordWrap(True)
        self.status_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        # A failed search, above the results: offline, what to do instead.
        self.notice = Notice(tone="problem")
        self.import_button = self.notice.add_action(
            "Import a model file…", self.import_requested.emit
        )
        self.folder_button = self.notice.add_action(
            "Add a models folder…", self.folder_requested.emit
        )
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(row)
        layout.addWidget(self.notice)
        layout.addWidget(self.view, 1)
        layout.addWidget(self.status_label)

        self._visible_timer = QTimer(self)
        self._visible_timer.setSingleShot(True)
        self._visible_timer.setInterval(VISIBLE_SETTLE_MS)
        self._visible_timer.timeout.connect(self.request_visible_fits)
        self.view.verticalScrollBar().valueChanged.connect(self._settle_visible)
        self.results.rowsInserted.connect(self._settle_visible)
        fits.changed.connect(self._on_fits_changed)

    @property
    def busy(self) -> bool:
        return self._call is not None

    def request(self) -> HubSearchRequest:
        kinds = self.kind_combo.currentData() or ()
        return HubSearchRequest(
            query=self.query_edit.text().strip()[:200],
            kinds=list(kinds),
            sort=self.sort_combo.currentData(),
        )

    def search(self) -> None:
        """Ask the daemon; a search already under way is answered but no longer shown."""
        self._call = call = self._calls.search(self.request())
        self.status_label.setText("Searching Hugging Face…")
        self.search_button.setEnabled(False)
        self._ops.run(
            call,
            lambda result: self._on_search_succeeded(call, result),
            on_failure=lambda failure: self._on_search_failed(call, failure),
        )

    def select_repo(self, repo: str) -> bool:
        row = self.results.row_of(repo)
        if row is not None:
            self.view.selectRow(row)
        return row is not None

    def selected(self) -> HubModelSummary | None:
        rows = self.view.selectionModel().selectedRows()
        item = self.results.row(rows[0].row()).item if rows else None
        return item if isinstance(item, HubModelSummary) else None

    def set_connected(self, connected: bool) -> None:
        self.search_button.setEnabled(connected and self._call is None)

    def request_visible_fits(self) -> None:
        """Estimates for the rows on screen only: a long list costs nothing scrolled away."""
        visible = [self.results.row(index).key for index in visible_rows(self.view)]
        if not visible:
            return
        listed = self.results.keys()
        self._fits.drop_queued(repo_key(repo) for repo in listed)
        for repo in visible:
            self._fits.request(repo_key(repo), FitQuery(repo=repo))

    def refresh_badges(self) -> None:
        listed = self.results.keys()
        for repo in listed:
            self.results.set_badge(repo, self._fits.badge(repo_key(repo)))

    # -- answers ------------------------------------------------------------------------

    def _on_search_succeeded(self, call: Call, result: HubSearchResult) -> None:
        if call is not self._call:
            return
        self._call = None
        self.search_button.setEnabled(True)
        self.notice.hide()
        self.result = result
        self.results.set_rows([result_row(model) for model in result.models])
        self.refresh_badges()
        count = len(result.models)
        if count == 0:
            self.status_label.setText("No model matches: try fewer words or every kind.")
        else:
            models = "1 model" if count == 1 else f"{count} models"
            self.status_label.setText(f"{models}. Select one for its files and whether it fits.")
        self._visible_timer.start()

    def _on_search_failed(self, call: Call, failure: Failure) -> None:
        if call is not self._call:
            return
        self._call = None
        self.search_button.setEnabled(True)
        self.status_label.setText("")
        offline = failure.title in UNREACHABLE_TITLES
        for button in (self.import_button, self.folder_button):
            button.setVisible(offline)
        # The daemon's own words (which address, what to check) stay a hover away.
        self.notice.show_text(failure_in_words(failure), failure.detail)

    def _on_fits_changed(self, key: str) -> None:
        repo, _, revision = key.partition("@")
        if revision == "main" and self.results.row_of(repo) is not None:
            self.results.set_badge(repo, self._fits.badge(key))

    def _on_view_selection_changed(self, _selected: QItemSelection, _: QItemSelection) -> None:
        model = self.selected()
        if model is not None:
            self.model_selected.emit(model)

    def _settle_visible(self, *_: object) -> None:
        """Estimates follow once scrolling rests (the signals' arguments are not a delay)."""
        self._visible_timer.start()

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._visible_timer.start()
