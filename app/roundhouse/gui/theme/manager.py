"""The theme in force: Fusion, the palette and the stylesheet of the chosen or the OS's scheme.

One manager per application. It follows the OS's light/dark setting (QStyleHints'
colorScheme and its change signal, Qt 6.5+) while the choice is "system", and applies a new
choice at once: every widget is repolished by Qt when the application's palette and
stylesheet change, so no page has to know.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, QSettings, Signal
from PySide6.QtGui import QFont, QPalette
from PySide6.QtWidgets import QApplication, QLabel

from roundhouse.gui.theme.palette import build_palette
from roundhouse.gui.theme.tokens import Colours, Scheme, colours

# The choices of `ui.theme` (api.settings.ThemeChoice, a str enum): plain strings here, as
# the manager runs before the first paint and the settings' module imports pydantic (~0.2 s).
SYSTEM, LIGHT, DARK = "system", "light", "dark"
CHOICES = (SYSTEM, LIGHT, DARK)
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
        # Not asked before the first paint: reading QStyleHints.colorScheme() builds PySide's
        # whole Qt namespace (~25 ms). Until follow_os(), the OS's palette says.
        self._os_scheme: Scheme | None = None
        self._following = False
        # The OS's own palette, before ours replaces it: the tray's panel is the OS's.
        self.os_palette_dark = app.palette().color(QPalette.ColorRole.Window).lightness() < 128
        # Text sizes follow the OS: the type scale is built on the application font.
        self.base_pt = app.font().pointSizeF() if app.font().pointSizeF() > 0 else 10.0
        saved = store.value(STORE_KEY) if store is not None else None
        self._choice = str(saved) if saved in CHOICES else SYSTEM
        self._applied: Scheme | None = None

    @property
    def choice(self) -> str:
        return self._choice

    @property
    def scheme(self) -> Scheme:
        """The scheme the choice means now."""
        if self._choice == LIGHT:
            return Scheme.LIGHT
        if self._choice == DARK:
            return Scheme.DARK
        return self.os_scheme

    @property
    def os_scheme(self) -> Scheme:
        if self._os_scheme is not None:
            return self._os_scheme
        # The platform does not say (older desktops), or was not asked yet: its palette does.
        return Scheme.DARK if self.os_palette_dark else Scheme.LIGHT

    def follow_os(self) -> None:
        """Ask the OS for its scheme and follow its changes (once the window is painted)."""
        if self._following:
            return
        self._following = True
        hints = self._app.styleHints()
        hints.colorSchemeChanged.connect(self._on_os_scheme_changed)
        # The system's text size changed (or the app's font was set): scale the type again.
        self._app.fontChanged.connect(self._on_font_changed)
        self._on_os_scheme_changed(hints.colorScheme())

    def set_choice(self, choice: str) -> None:
        """`choice`: system, light or dark (a ThemeChoice is one of these strings)."""
        if choice not in CHOICES:
            raise ValueError(f"a theme is one of {', '.join(CHOICES)}, not {choice!r}")
        if choice == self._choice:
            return
        self._choice = str(choice)
        if self._store is not None:
            self._store.setValue(STORE_KEY, self._choice)
        self.apply()

    def apply_palette(self) -> None:
        """Only the scheme's palette: the window's first paint is in its colours (no white
        flash for a dark choice), without Fusion and the stylesheet (~15 ms), which apply()
        adds right after the paint, before the pages are built."""
        self._app.setPalette(build_palette(colours(self.scheme)))

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
        # Imported here: it brings string, tempfile and the glyph files, none of which the
        # first paint needs.
        from roundhouse.gui.theme.stylesheet import build_stylesheet

        self._app.setStyleSheet(build_stylesheet(scheme, self.base_pt))
        if not first:
            _refresh_links()
        self.changed.emit(scheme.value)

    def _on_font_changed(self, font: QFont) -> None:
        size = font.pointSizeF()
        if size <= 0 or size == self.base_pt:
            return
        self.base_pt = size
        if self._applied is not None:
            from roundhouse.gui.theme.stylesheet import build_stylesheet

            self._app.setStyleSheet(build_stylesheet(self._applied, size))

    def _on_os_scheme_changed(self, scheme: object) -> None:
        # Qt.ColorScheme by name: Dark, Light or Unknown (then the palette says).
        name = getattr(scheme, "name", "")
        self._os_scheme = {"Dark": Scheme.DARK, "Light": Scheme.LIGHT}.get(name)
        if self._choice == SYSTEM:
            self.apply()


def _refresh_links() -> None:
    """A label's rich text keeps the link colour it was laid out with: lay it out again.

    Walked from the top-level windows down, not through QApplication.allWidgets(): that list
    also holds widgets in the middle of their destruction (a page closed by deleteLater),
    whose text() crashed the process."""
    from shiboken6 import isValid

    for window in QApplication.topLevelWidgets():
        for label in window.findChildren(QLabel):
            if isValid(label) and "<a " in (text := label.text()):
                # setText() of the same text is a no-op: clear it first.
                label.clear()
                label.setText(text)


def theme_manager(
    app: QApplication, store: QSettings | None = None, *, palette_only: bool = False
) -> ThemeManager:
    """The application's manager, made on first use and applied (whole, unless
    `palette_only`: before the first paint)."""
    manager = _managers.get(id(app))
    if manager is None:
        manager = _managers[id(app)] = ThemeManager(app, store)
    if palette_only and manager._applied is None:
        manager.apply_palette()
    else:
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
    from roundhouse.gui.theme.stylesheet import build_stylesheet

    app = QApplication.instance()
    manager = _managers.get(id(app)) if isinstance(app, QApplication) else None
    if manager is None:
        return build_stylesheet(Scheme.LIGHT, 10.0)
    return build_stylesheet(manager.scheme, manager.base_pt)
