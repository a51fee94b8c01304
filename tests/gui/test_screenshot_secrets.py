"""The screenshot script's masking: a generated key, a token or an endpoint key in a shown
field or label is masked while the screen is grabbed and put back after; a key elsewhere on
screen is reported, so the script stops instead of saving it."""

from __future__ import annotations

import importlib.util
import secrets
from collections.abc import Iterator
from types import ModuleType

import pytest
from PySide6.QtWidgets import QApplication, QLabel, QLineEdit, QPlainTextEdit, QVBoxLayout, QWidget

from tests.gui.conftest import GUI_DIR

SCRIPT = GUI_DIR.parent.parent / "docs" / "screenshot_secrets.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("screenshot_secrets", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


shots = _load()
MASK: str = shots.MASK
KEY = "rh-" + secrets.token_urlsafe(32)
TOKEN = "hf_" + secrets.token_hex(17)


@pytest.fixture
def window(qapp: QApplication) -> Iterator[QWidget]:
    shown = QWidget()
    QVBoxLayout(shown)
    shown.show()
    yield shown
    shown.deleteLater()


def _add(window: QWidget, widget: QWidget) -> QWidget:
    layout = window.layout()
    assert layout is not None
    layout.addWidget(widget)
    widget.show()
    return widget


def test_keys_in_fields_and_labels_are_masked_then_put_back(window: QWidget) -> None:
    field = _add(window, QLineEdit(KEY))
    label = _add(window, QLabel(f"Your token: {TOKEN} (kept in the keyring)"))
    password = _add(window, QLineEdit("sk-" + "x" * 40))
    assert isinstance(field, QLineEdit) and isinstance(label, QLabel)
    assert isinstance(password, QLineEdit)
    password.setEchoMode(QLineEdit.EchoMode.Password)  # shows dots already: left alone
    plain = _add(window, QLineEdit("rh-short and sk-learn"))  # not shaped like a key
    assert isinstance(plain, QLineEdit)

    masked = shots.mask_secrets([window])
    assert field.text() == f"rh-{MASK}"
    assert label.text() == f"Your token: hf_{MASK} (kept in the keyring)"
    assert password.text() == "sk-" + "x" * 40 and plain.text() == "rh-short and sk-learn"
    assert shots.shown_secrets([window]) == []

    shots.restore(masked)
    assert field.text() == KEY and TOKEN in label.text()


def test_a_key_the_masking_cannot_reach_is_reported(window: QWidget) -> None:
    _add(window, QPlainTextEdit(f"export OPENAI_API_KEY={KEY}"))
    shots.mask_secrets([window])
    (leak,) = shots.shown_secrets([window])
    assert leak.startswith("QPlainTextEdit: export OPENAI_API_KEY=rh-")


def test_hidden_windows_are_not_searched(qapp: QApplication) -> None:
    hidden = QWidget()
    QVBoxLayout(hidden).addWidget(QLineEdit(KEY))
    assert shots.mask_secrets([hidden]) == [] and shots.shown_secrets([hidden]) == []
    hidden.deleteLater()
