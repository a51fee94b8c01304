"""The window builds a page the first time it is shown (ADR 42): at start only the Hardware
page exists; each other page is built once, under the title its class gives."""

from __future__ import annotations

import importlib

from PySide6.QtWidgets import QWidget

from roundhouse.gui.app import Ui

PAGES = {
    "Hardware": "hardware_page.HardwarePage",
    "Engines": "engines_page.EnginesPage",
    "Models": "models_page.ModelsPage",
    "Ollama": "ollama_page.OllamaPage",
    "Chat": "chat_page.ChatPage",
    "Benchmark": "bench_page.BenchPage",
    "Monitor": "monitor_page.MonitorPage",
    "Machines": "machines_page.MachinesPage",
    "Settings": "settings_page.SettingsPage",
}


def _page_class(dotted: str) -> type[QWidget]:
    module, name = dotted.split(".")
    found = getattr(importlib.import_module(f"roundhouse.gui.pages.{module}"), name)
    assert isinstance(found, type) and issubclass(found, QWidget)
    return found


def test_only_the_first_page_is_built_at_start_and_each_other_once_when_shown(ui: Ui) -> None:
    window = ui.window
    stack = window.pages
    titles = [window.navigation.item(row).text() for row in range(window.navigation.count())]
    assert titles == list(PAGES)
    classes = {title: _page_class(dotted) for title, dotted in PAGES.items()}
    # At start: the Hardware page, and a bare placeholder in every other row.
    assert isinstance(stack.widget(0), classes["Hardware"])
    assert not any(isinstance(stack.widget(row), tuple(classes.values())) for row in range(1, 9))

    for row, title in enumerate(titles):
        page = window.show_page(title)
        assert isinstance(page, classes[title]) and getattr(page, "title", None) == title
        assert stack.widget(row) is page and stack.currentWidget() is page
        assert window.navigation.currentRow() == row
        # Shown again (from the sidebar this time): the same page, not another one.
        window.navigation.setCurrentRow(0)
        window.navigation.setCurrentRow(row)
        assert stack.widget(row) is page and stack.count() == len(titles)
    # page() builds without showing.
    window.navigation.setCurrentRow(0)
    assert window.page("Chat") is stack.widget(titles.index("Chat"))
    assert stack.currentIndex() == 0
