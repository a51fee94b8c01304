"""The theme in force: Fusion, the palette and the stylesheet of the chosen or the OS's scheme.

One manager per application. It follows the OS's light/dark setting (QStyleHints'
colorScheme and its change signal, Qt 6.5+) while the choice is "system", and applies a new
choice at once: every widget is repolished by Qt when the application's palette and
stylesheet change, so no page has to know.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, QSettings, Qt, Signal
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QApplication, QLabel

from roundhouse.api.settings import ThemeChoice
from roundhouse.gui.theme.palette import build_palette
from roundhouse.gui.theme.stylesheet import build_stylesheet
from roundhouse.gui.theme.tokens import Colours, Scheme, colours

# Where the last choice is kept on this machine: the window is painted in it before the
# daemon's settings arrive (no white flash for a user who chose dark).
STORE_KEY = "ui/theme"
# The style under the stylesheet: the same widgets on every OS, drawn from our palette.
BASE_STYLE = "Fusion"

_managers: dict[int, ThemeManager] = {}


class ThemeManager(QObject):
    """`changed(scheme)` after a new scheme is applied."""

    changed = Signal(str)

    def __init__(self, app: QApplication, store: QSettings | None = None) -> None:
        super().__init__(app)
        self._app = app
        self._store = store
        hints = app.styleHints()
        self._os_scheme = hints.colorScheme()
        # The OS's own palette, before ours replaces it: the tray's panel is the OS's.
        self.os_palette_dark = app.palette().color(QPalette.ColorRole.Window).lightness() < 128
        # Text sizes follow the OS: the type scale is built on the application font.
        self.base_pt = app.font().pointSizeF() if app.font().pointSizeF() > 0 else 10.0
        saved = store.value(STORE_KEY) if store is not None else None
        self._choice = ThemeChoice(saved) if saved in set(ThemeChoice) else ThemeChoice.SYSTEM
        self._applied: Scheme | None = None
        hints.colorSchemeChanged.connect(self._on_os_scheme_changed)

    @property
    def choice(self) -> ThemeChoice:
        return self._choice

    @property
    def scheme(self) -> Scheme:
        """The scheme the choice means now."""
        if self._choice == ThemeChoice.LIGHT:
            return Scheme.LIGHT
        if self._choice == ThemeChoice.DARK:
            return Scheme.DARK
        return self.os_scheme

    @property
    def os_scheme(self) -> Scheme:
        if self._os_scheme == Qt.ColorScheme.Dark:
            return Scheme.DARK
        if self._os_scheme == Qt.ColorScheme.Light:
            return Scheme.LIGHT
        # The platform does not say (older desktops): its palette does.
        return Scheme.DARK if self.os_palette_dark else Scheme.LIGHT

    def set_choice(self, choice: ThemeChoice) -> None:
        if choice == self._choice:
            return
        self._choice = choice
        if self._store is not None:
            self._store.setValue(STORE_KEY, choice.value)
        self.apply()

    def apply(self) -> None:
        """Put the scheme in force; nothing happens when it already is."""
        scheme = self.scheme
        if scheme == self._applied:
            return
        first = self._applied is None
        self._applied = scheme
        if self._app.style().name().lower() != BASE_STYLE.lower():
            self._app.setStyle(BASE_STYLE)
        self._app.setPalette(build_palette(colours(scheme)))
        self._app.setStyleSheet(build_stylesheet(scheme, self.base_pt))
        if not first:
            _refresh_links()
        self.changed.emit(scheme.value)

    def _on_os_scheme_changed(self, scheme: Qt.ColorScheme) -> None:
        self._os_scheme = scheme
        if self._choice == ThemeChoice.SYSTEM:
            self.apply()


def _refresh_links() -> None:
    """A label's rich text keeps the link colour it was laid out with: lay it out again."""
    for widget in QApplication.allWidgets():
        if isinstance(widget, QLabel) and "<a " in (text := widget.text()):
            # setText() of the same text is a no-op: clear it first.
            widget.clear()
            widget.setText(text)


def theme_manager(app: QApplication, store: QSettings | None = None) -> ThemeManager:
    """The application's manager, made and applied on first use."""
    manager = _managers.get(id(app))
    if manager is None:
        manager = _managers[id(app)] = ThemeManager(app, store)
        manager.apply()
    return manager


def current_colours() -> Colours:
    """The colour roles in force (light when no manager exists yet)."""
    return colours(current_scheme())


def current_scheme() -> Scheme:
    """The scheme in force (light when no manager exists yet)."""
    app = QApplication.instance()
    manager = _managers.get(id(app)) if isinstance(app, QApplication) else None
    return manager.scheme if manager is not None else Scheme.LIGHT


def current_stylesheet() -> str:
    """The stylesheet of the scheme in force, as the manager applied it."""
    app = QApplication.instance()
    manager = _managers.get(id(app)) if isinstance(app, QApplication) else None
    if manager is None:
        return build_stylesheet(Scheme.LIGHT, 10.0)
    return build_stylesheet(manager.scheme, manager.base_pt)
