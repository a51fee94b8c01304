"""The app does not pay PySide6's source scan of every module imported after it."""

from __future__ import annotations

import importlib
import linecache
import sys
from pathlib import Path

import pytest

from roundhouse.gui.pyside_tax import skip_feature_source_scan


def test_modules_imported_after_pyside_are_not_read_as_source(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Fails if a PySide6 update moves the internal: the workaround would then do nothing.
    assert skip_feature_source_scan()
    module_file = tmp_path / "freshly_imported_module.py"
    module_file.write_text("VALUE = 42\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    linecache.clearcache()
    try:
        module = importlib.import_module("freshly_imported_module")
        assert module.VALUE == 42
        assert str(module_file) not in linecache.cache
    finally:
        sys.modules.pop("freshly_imported_module", None)


def test_the_lines_the_scan_read_before_are_dropped() -> None:
    # As the scan leaves it for the modules imported before the app replaced it.
    assert linecache.getlines(__file__)
    assert __file__ in linecache.cache
    assert skip_feature_source_scan()
    assert __file__ not in linecache.cache
