"""Light and dark themes against a real daemon: every page (and the first-run guide) with no
unreadable text in either scheme, the switch from Settings reaching every page and the
daemon's settings, the OS's scheme followed while the choice is "system", the sidebar's
icons drawn in both schemes."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
import qasync
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QFont, QKeySequence, QPalette
from PySide6.QtTest import QTest
from PySide6.QtWidgets import (
    QAbstractButton,
    QApplication,
    QComboBox,
    QDialog,
    QGroupBox,
    QLabel,
    QLineEdit,
    QWidget,
)
from pytestqt.qtbot import QtBot

from roundhouse.api.settings import ThemeChoice
from roundhouse.client import DaemonClient
from roundhouse.gui.app import Ui
from roundhouse.gui.calls.models import ModelsCalls
from roundhouse.gui.calls.peers import PeersCalls
from roundhouse.gui.daemon_bridge import ConnectionState
from roundhouse.gui.dialogs.attach_dialog import AttachDialog
from roundhouse.gui.dialogs.hub_token_dialog import HubTokenDialog
from roundhouse.gui.dialogs.pair_dialog import PairDialog
from roundhouse.gui.dialogs.start_dialog import StartDialog
from roundhouse.gui.dialogs.use_with_dialog import UseWithDialog
from roundhouse.gui.main_window import PAGE_ICONS
from roundhouse.gui.pages.engines_page import EnginesPage
from roundhouse.gui.pages.settings_page import SettingsPage
from roundhouse.gui.theme.contrast import BODY_TEXT_MINIMUM, contrast_ratio, hex_rgb
from roundhouse.gui.theme.manager import CHOICES, ThemeManager, theme_manager
from roundhouse.gui.theme.tokens import DARK, LIGHT, Colours, Scheme
from roundhouse.gui.widgets.badge import Badge
from tests.daemon_process import DaemonProcess
from tests.gui.conftest import close_bridge, wait_until

TONES_WITH_FILLS = ("info", "success", "warning", "danger", "neutral")
TEXT_WIDGETS = (QLabel, QAbstractButton, QLineEdit, QComboBox, QGroupBox)


@pytest.fixture
def theme(qapp: QApplication) -> Iterator[ThemeManager]:
    manager = theme_manager(qapp)
    yield manager
    # The application outlives the test: leave it as the other tests expect it.
    manager.set_choice(ThemeChoice.LIGHT)
    manager.set_choice(ThemeChoice.SYSTEM)


def _rgb(colour: QColor) -> tuple[int, int, int]:
    return colour.red(), colour.green(), colour.blue()


def _text(widget: QWidget) -> str:
    if isinstance(widget, QGroupBox):
        return widget.title()
    if isinstance(widget, QComboBox):
        return widget.currentText()
    if isinstance(widget, QLineEdit):
        return widget.text() or widget.placeholderText()
    assert isinstance(widget, QLabel | QAbstractButton)
    return widget.text()


def unreadable(root: QWidget) -> list[str]:
    """Each visible, enabled text widget under `root` whose foreground role reads below
    4.5:1 on its background role, as the palette has them after the stylesheet."""
    found = []
    for widget in [root, *root.findChildren(QWidget)]:
        if not isinstance(widget, TEXT_WIDGETS) or not widget.isVisible():
            continue
        if not widget.isEnabled() or not _text(widget).strip():
            continue  # disabled text is exempt (WCAG 1.4.3); nothing drawn, nothing to read
        palette = widget.palette()
        fg = palette.color(QPalette.ColorGroup.Active, widget.foregroundRole())
        bg = palette.color(QPalette.ColorGroup.Active, widget.backgroundRole())
        ratio = contrast_ratio(_rgb(fg), _rgb(bg))
        if ratio < BODY_TEXT_MINIMUM:
            name = widget.objectName() or type(widget).__name__
            found.append(f"{name} {_text(widget)[:40]!r}: {fg.name()} on {bg.name()} = {ratio:.2f}")
    return found


async def _connect(ui: Ui) -> None:
    # build_ui quits with the last window (no tray): the test closes the window itself.
    QApplication.setQuitOnLastWindowClosed(False)
    ui.bridge.start()
    await wait_until(lambda: ui.bridge.state == ConnectionState.CONNECTED, 20, "connected")


async def _choose(ui: Ui, daemon: DaemonProcess, choice: ThemeChoice) -> None:
    """Pick `choice` in Settings → Appearance, as the user does, and wait until it is saved
    (the daemon's settings are the app's: what they say is applied)."""
    page = ui.window.show_page("Settings")
    assert isinstance(page, SettingsPage)
    box = page.appearance.theme
    box.setCurrentIndex(box.findData(choice.value))
    box.activated.emit(box.currentIndex())
    async with DaemonClient(daemon.url, daemon.token) as client:
        for _ in range(200):
            if (await client.settings()).ui.theme == choice:
                break
            await asyncio.sleep(0.05)
        assert (await client.settings()).ui.theme == choice, "the theme was not saved"
    await wait_until(lambda: ui.bridge.ui_settings.theme == choice, 10, "the change fed back")


def _dialogs(ui: Ui) -> list[tuple[str, QDialog]]:
    """The main dialogs, as the pages open them."""
    engines = ui.window.show_page("Engines")
    assert isinstance(engines, EnginesPage)
    parent = ui.window
    return [
        ("start", StartDialog(ui.bridge, engines.installed_engines(), None, parent)),
        ("attach", AttachDialog(ui.bridge, parent)),
        ("use with", UseWithDialog(ui.bridge, None, parent)),
        ("pair", PairDialog(PeersCalls(ui.bridge), parent)),
        ("hub token", HubTokenDialog(ModelsCalls(ui.bridge), None, parent)),
    ]


def _pages(ui: Ui) -> list[QWidget]:
    stack = ui.window.pages
    return [page for row in range(stack.count()) if (page := stack.widget(row)) is not None]


def _titles(ui: Ui) -> list[str]:
    nav = ui.window.navigation
    return [item.text() for row in range(nav.count()) if (item := nav.item(row)) is not None]


@pytest.mark.parametrize("choice", [ThemeChoice.LIGHT, ThemeChoice.DARK])
def test_every_page_and_the_guide_is_readable(
    qloop: qasync.QEventLoop,
    daemon: DaemonProcess,
    ui: Ui,
    theme: ThemeManager,
    choice: ThemeChoice,
    qapp: QApplication,
) -> None:
    async def scenario() -> None:
        await _connect(ui)
        await _choose(ui, daemon, choice)
        expected = DARK if choice == ThemeChoice.DARK else LIGHT
        problems: dict[str, list[str]] = {}
        for title in _titles(ui):
            page = ui.window.show_page(title)
            await wait_until(page.isVisible, 5, f"the {title} page shown")
            await asyncio.sleep(0.1)
            assert page.palette().color(QPalette.ColorRole.Window).name() == expected.window
            if found := unreadable(ui.window):
                problems[title] = found
        assert ui.first_run is not None
        wizard = ui.first_run.open()
        await wait_until(wizard.isVisible, 5, "the guide shown")
        await asyncio.sleep(0.1)
        if found := unreadable(wizard):
            problems["first-run guide"] = found
        wizard.hide()  # closing it would save "guide skipped" in the settings
        for name, dialog in _dialogs(ui):
            dialog.show()
            await wait_until(dialog.isVisible, 5, f"the {name} dialog shown")
            await asyncio.sleep(0.2)
            if found := unreadable(dialog):
                problems[name] = found
            dialog.hide()
            dialog.deleteLater()
        assert not problems, problems

    try:
        qloop.run_until_complete(scenario())
    finally:
        close_bridge(qloop, ui.bridge)
        if ui.first_run and ui.first_run.wizard:
            ui.first_run.wizard.deleteLater()


def test_the_switch_in_settings_reaches_every_page_and_is_saved(
    qloop: qasync.QEventLoop, daemon: DaemonProcess, ui: Ui, theme: ThemeManager
) -> None:
    async def scenario() -> None:
        await _connect(ui)
        await _choose(ui, daemon, ThemeChoice.LIGHT)
        page = ui.window.show_page("Settings")
        assert isinstance(page, SettingsPage)
        box = page.appearance.theme
        box.setCurrentIndex(box.findData(ThemeChoice.DARK.value))
        box.activated.emit(box.currentIndex())
        # At once, before the daemon has answered.
        assert theme.scheme == Scheme.DARK
        for widget in _pages(ui):
            assert widget.palette().color(QPalette.ColorRole.Window).name() == DARK.window
        async with DaemonClient(daemon.url, daemon.token) as client:
            for _ in range(200):
                if (await client.settings()).ui.theme == ThemeChoice.DARK:
                    break
                await asyncio.sleep(0.05)
            assert (await client.settings()).ui.theme == ThemeChoice.DARK, "not saved"
        # Back to light from the same box: every page follows again.
        box.setCurrentIndex(box.findData(ThemeChoice.LIGHT.value))
        box.activated.emit(box.currentIndex())
        for widget in _pages(ui):
            assert widget.palette().color(QPalette.ColorRole.Window).name() == LIGHT.window

    qloop.run_until_complete(scenario())
    close_bridge(qloop, ui.bridge)


def test_the_os_scheme_is_followed_only_on_system(qapp: QApplication, theme: ThemeManager) -> None:
    hints = qapp.styleHints()
    theme.follow_os()  # as build_ui does once the window is painted
    theme.set_choice(ThemeChoice.SYSTEM)
    try:
        # What the platform sends when the desktop turns dark, then light again.
        hints.colorSchemeChanged.emit(Qt.ColorScheme.Dark)
        assert theme.scheme == Scheme.DARK
        assert qapp.palette().color(QPalette.ColorRole.Window).name() == DARK.window
        hints.colorSchemeChanged.emit(Qt.ColorScheme.Light)
        assert qapp.palette().color(QPalette.ColorRole.Window).name() == LIGHT.window
        # A fixed choice stays put whatever the desktop does.
        theme.set_choice(ThemeChoice.LIGHT)
        hints.colorSchemeChanged.emit(Qt.ColorScheme.Dark)
        assert qapp.palette().color(QPalette.ColorRole.Window).name() == LIGHT.window
    finally:
        hints.colorSchemeChanged.emit(hints.colorScheme())


def test_sidebar_icons_load_in_both_themes(ui: Ui, theme: ThemeManager) -> None:
    nav = ui.window.navigation
    assert set(_titles(ui)) == set(PAGE_ICONS)
    drawn: dict[str, list[QColor]] = {}
    for choice in (ThemeChoice.LIGHT, ThemeChoice.DARK):
        theme.set_choice(choice)
        colours = []
        for row in range(nav.count()):
            item = nav.item(row)
            assert item is not None
            image = item.icon().pixmap(24, 24).toImage()
            assert not image.isNull(), f"{item.text()}: no icon in {choice}"
            inked = [
                image.pixelColor(x, y)
                for x in range(24)
                for y in range(24)
                if image.pixelColor(x, y).alpha() == 255
            ]
            assert inked, f"{item.text()}: the icon draws nothing in {choice}"
            colours.append(inked[0])
        drawn[choice] = colours
    # Recoloured per theme: the glyphs are the text colour of each scheme.
    assert all(c.name() == LIGHT.text for c in drawn[ThemeChoice.LIGHT])
    assert all(c.name() == DARK.text for c in drawn[ThemeChoice.DARK])


def test_the_check_sees_a_colour_a_stylesheet_hard_codes(
    qapp: QApplication, theme: ThemeManager
) -> None:
    """The readability check is not blind: grey text fixed in a widget's own stylesheet,
    as the pages had before the themes, is caught on the dark window."""
    theme.set_choice(ThemeChoice.DARK)
    window = QWidget()
    grey = QLabel("Fits in memory", window)
    grey.setStyleSheet("color: #666666;")
    fine = QLabel("Fits in memory", window)
    fine.setObjectName("hint")
    fine.move(0, 40)
    window.show()
    try:
        found = unreadable(window)
        assert len(found) == 1 and "#666666" in found[0], found
    finally:
        window.close()
        window.deleteLater()


@pytest.mark.parametrize("choice", [ThemeChoice.LIGHT, ThemeChoice.DARK])
def test_a_badge_says_its_state_in_words_colour_and_icon(
    qapp: QApplication, theme: ThemeManager, choice: ThemeChoice
) -> None:
    theme.set_choice(choice)
    roles = DARK if choice == ThemeChoice.DARK else LIGHT
    window = QWidget()
    badge = Badge("good", "Installed", parent=window)
    window.show()
    try:
        for tone, text, fill, has_icon in (
            ("good", "Installed", roles.success_fill, True),
            ("warn", "Not found", roles.warning_fill, True),
            ("bad", "Failed", roles.danger_fill, True),
            ("neutral", "CPU", roles.neutral_fill, False),
        ):
            badge.set(tone, text)
            assert badge.text() == text and badge.accessibleName() == text
            assert badge.property("tone") == tone
            image = badge.grab().toImage()
            # The pill's fill, away from the words and the rounded corner.
            assert image.pixelColor(image.width() - 3, image.height() // 2).name() == fill
            assert badge.icon_label.isVisibleTo(badge) is has_icon
            assert not unreadable(window), unreadable(window)
        with pytest.raises(ValueError, match="one of good"):
            badge.set("green", "Fine")
    finally:
        window.close()
        window.deleteLater()


def test_the_manager_knows_every_choice_of_the_setting(theme: ThemeManager) -> None:
    """The manager keeps the choices as plain strings (no pydantic before the first paint):
    they must be the setting's."""
    assert set(CHOICES) == {choice.value for choice in ThemeChoice}
    with pytest.raises(ValueError, match="one of system"):
        theme.set_choice("sepia")


def test_the_sidebar_is_worked_from_the_keyboard(ui: Ui, qtbot: QtBot) -> None:
    nav = ui.window.navigation
    ui.window.activateWindow()
    # Ctrl+3 opens the third page; the arrow keys move through the list, the page follows.
    QTest.keySequence(ui.window, QKeySequence("Ctrl+3"))
    assert ui.window.pages.currentIndex() == nav.currentRow() == 2
    nav.setFocus()
    QTest.keyClick(nav, Qt.Key.Key_Down)
    assert ui.window.pages.currentIndex() == 3
    QTest.keyClick(nav, Qt.Key.Key_Up)
    QTest.keyClick(nav, Qt.Key.Key_Up)
    assert ui.window.pages.currentIndex() == 1
    assert nav.focusPolicy() & Qt.FocusPolicy.TabFocus, "Tab must reach the sidebar"
    first = nav.item(0)
    assert first is not None and "Ctrl+1" in first.toolTip()


def test_action_icons_are_redrawn_for_each_theme(ui: Ui, theme: ThemeManager) -> None:
    engines = ui.window.show_page("Engines")
    assert isinstance(engines, EnginesPage)
    for choice, roles in ((ThemeChoice.DARK, DARK), (ThemeChoice.LIGHT, LIGHT)):
        theme.set_choice(choice)
        image = engines.refresh_button.icon().pixmap(24, 24).toImage()
        inked = {
            image.pixelColor(x, y).name()
            for x in range(24)
            for y in range(24)
            if image.pixelColor(x, y).alpha() == 255
        }
        assert inked == {roles.text}, (choice, inked)


@pytest.mark.parametrize("roles", [LIGHT, DARK], ids=["light", "dark"])
def test_every_text_role_reads_on_the_surfaces_it_is_drawn_on(roles: Colours) -> None:
    """The tokens themselves: body text, muted text and links on every surface; each tone's
    text on its fill; text on the accent."""
    surfaces = ("window", "surface", "surface_alt", "sidebar", "code_fill", "bubble")
    pairs = [(text, surface) for text in ("text", "text_muted", "link") for surface in surfaces]
    pairs += [(f"{tone}_text", f"{tone}_fill") for tone in TONES_WITH_FILLS]
    pairs += [("accent_text", "accent")]
    table = roles.roles()
    low = {
        (fg, bg): round(ratio, 2)
        for fg, bg in pairs
        if (ratio := contrast_ratio(hex_rgb(table[fg]), hex_rgb(table[bg]))) < BODY_TEXT_MINIMUM
    }
    assert not low, low


def test_text_sizes_follow_the_system_font(qapp: QApplication, theme: ThemeManager) -> None:
    """The type scale is built on the application font: a larger system font makes every
    size larger, the page titles' included."""
    theme.follow_os()
    original = qapp.font()
    title = QLabel("Models")
    title.setObjectName("pageTitle")
    title.show()
    try:
        before = title.font().pointSizeF()
        bigger = QFont(original)
        bigger.setPointSizeF(original.pointSizeF() * 1.5)
        qapp.setFont(bigger)  # what the platform does when the user's text size changes
        title.ensurePolished()
        after = title.font().pointSizeF()
        assert after == pytest.approx(before * 1.5, abs=0.2), (before, after)
    finally:
        qapp.setFont(original)
        title.close()
        title.deleteLater()
