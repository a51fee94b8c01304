"""Engines Roundhouse did not start, as the Engines page shows them (made-up instances, no
daemon): the unprotected badge and what to do, the menu that lets one serve preset models,
the attach dialog's warning before a key would travel in clear text, and what a scan left out.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import qasync
from PySide6.QtCore import Qt
from pytestqt.qtbot import QtBot

from roundhouse.api.engines import EngineId
from roundhouse.api.external import AttachSource
from roundhouse.api.instances import InstanceInfo, InstanceList, InstanceOrigin, InstanceStatus
from roundhouse.base.paths import resolve_home
from roundhouse.gui.daemon_bridge import DaemonBridge
from roundhouse.gui.dialogs.attach_dialog import AttachDialog
from roundhouse.gui.theme.roles import role_colour
from roundhouse.gui.widgets.instances_model import (
    UNPROTECTED_ROLE,
    Column,
    InstancesModel,
)
from roundhouse.gui.widgets.instances_section import InstancesSection

WORDS = (
    "Not protected by Roundhouse: any program on this machine (and a web page, if it sends "
    "CORS headers) can use it. Start the model from Roundhouse instead, or put a key on it."
)
CLEAR = "Its API key travels in clear text: http://192.168.1.9:1234 is plain http://."


def _info(instance_id: str, **changes: object) -> InstanceInfo:
    values: dict[str, object] = {
        "id": instance_id,
        "engine": EngineId.VLLM,
        "model": "org/tiny",
        "origin": InstanceOrigin.STARTED,
        "status": InstanceStatus.READY,
        "host": "127.0.0.1",
        "port": 8000,
        "url": "http://127.0.0.1:8000",
        "base_url": "http://127.0.0.1:8000/v1",
        "started_at": 0.0,
    }
    values.update(changes)
    return InstanceInfo.model_validate(values)


def _external(instance_id: str = "x1", **changes: object) -> InstanceInfo:
    fields: dict[str, object] = {
        "origin": InstanceOrigin.EXTERNAL,
        "unprotected": WORDS,
        "may_serve_presets": False,
    }
    return _info(instance_id, **{**fields, **changes})


@pytest.fixture
def bridge(qloop: qasync.QEventLoop, home_root: Path) -> Iterator[DaemonBridge]:
    made = DaemonBridge(resolve_home(home_root), auto_start=False)
    yield made
    qloop.run_until_complete(made.aclose())


def test_an_external_row_is_badged_unprotected_with_what_to_do(qtbot: QtBot) -> None:
    model = InstancesModel()
    model.set_instances([_info("ours"), _external(warnings=[CLEAR])])
    ours, external = model.index(0, Column.ORIGIN), model.index(1, Column.ORIGIN)
    assert model.data(ours) == "started"
    assert model.data(external) == "external · unprotected"
    assert model.data(external, Qt.ItemDataRole.ForegroundRole) == role_colour(UNPROTECTED_ROLE)
    assert model.data(external, Qt.ItemDataRole.DecorationRole) is not None
    assert model.data(ours, Qt.ItemDataRole.DecorationRole) is None
    tip = model.data(external, Qt.ItemDataRole.ToolTipRole)
    assert WORDS in tip and CLEAR in tip
    assert "never serves a model one of your presets starts" in tip
    allowed = InstancesModel()
    allowed.set_instances([_external(may_serve_presets=True)])
    tip = allowed.data(allowed.index(0, Column.ORIGIN), Qt.ItemDataRole.ToolTipRole)
    assert "It may serve the models your presets start" in tip


def test_the_row_menu_lets_only_an_external_engine_serve_presets(
    qtbot: QtBot, bridge: DaemonBridge
) -> None:
    section = InstancesSection(bridge)
    qtbot.addWidget(section)
    section.model.set_instances([_info("ours"), _external(), _external("x2", status="failed")])
    assert section.select_instance("ours")
    assert not section.presets_action.isVisible()
    assert section.message_label.text() != WORDS
    assert section.select_instance("x1")
    assert section.presets_action.isVisible() and not section.presets_action.isChecked()
    # What the badge means shows where it is read without hovering.
    assert section.message_label.text() == WORDS
    assert section.select_instance("x2")
    assert not section.presets_action.isVisible()
    section.model.set_instances([_info("ours"), _external(may_serve_presets=True)])
    assert section.select_instance("x1") and section.presets_action.isChecked()


def test_a_scan_says_which_engines_it_left_out_and_why(qtbot: QtBot, bridge: DaemonBridge) -> None:
    section = InstancesSection(bridge)
    qtbot.addWidget(section)
    left_out = "vllm (pid 7 on port 8000) is not used: it runs as another user (bob)."
    section._on_scan_succeeded(InstanceList(instances=[_external()], left_out=[left_out]))
    assert section.message_label.text() == (
        f"Running without Roundhouse: vllm on port 8000.\n{left_out}"
    )
    section._on_scan_succeeded(InstanceList(instances=[], left_out=[left_out]))
    assert section.message_label.text().endswith(left_out)


def test_attaching_warns_before_a_key_would_travel_in_clear_text(
    qtbot: QtBot, bridge: DaemonBridge
) -> None:
    dialog = AttachDialog(bridge)
    qtbot.addWidget(dialog)
    dialog.url_edit.setText("http://192.168.1.9:1234")
    assert dialog.warning_label.isHidden(), "no key, nothing at risk"
    dialog.key_edit.setText("sk-123")
    assert not dialog.warning_label.isHidden()
    assert "clear text" in dialog.warning_label.text()
    assert "https://" in dialog.warning_label.text()
    assert dialog.attach_button.isEnabled(), "a warning, not a refusal"
    for safe in ("https://192.168.1.9:1234", "http://127.0.0.1:1234", "http://localhost:1"):
        dialog.url_edit.setText(safe)
        assert dialog.warning_label.isHidden(), safe

    assert not dialog.request().may_serve_presets
    dialog.presets_box.setChecked(True)
    assert dialog.request().may_serve_presets


def test_the_attached_message_carries_the_daemons_warning(
    qtbot: QtBot, bridge: DaemonBridge
) -> None:
    section = InstancesSection(bridge)
    qtbot.addWidget(section)
    info = _external(
        found_by=AttachSource.USER_ENDPOINT, name="Box", models=["m"], warnings=[CLEAR]
    )
    section.model.set_instances([info])
    section._on_attach_dialog_attached(info)
    assert section.message_label.text() == f"Attached Box: m.\n{CLEAR}"
