"""The Use with… window against a real daemon and the real llama-server: opened from the chosen
instance, it names that instance's model; every client of the shared table shows the settings
`roundhouse launch` would use, the key masked until shown, and Copy gives the real ones."""

from __future__ import annotations

import asyncio
import shlex
from collections.abc import Iterator
from pathlib import Path

import pytest
import qasync
from PySide6.QtGui import QGuiApplication

from roundhouse.api.clients import GatewayTarget, client_table, client_text, mask_key
from roundhouse.api.engines import EngineId, InstanceOptions
from roundhouse.api.instances import StartRequest
from roundhouse.client import DaemonClient
from roundhouse.gui.app import Ui
from roundhouse.gui.daemon_bridge import ConnectionState
from roundhouse.gui.pages.engines_page import EnginesPage
from tests.daemon_process import DaemonProcess, path_with, running_daemon, start_ready
from tests.gui.conftest import wait_until
from tests.support.standins import keyring_env

KEY = "rh-use-with-test-key-0123456789abcdef"


@pytest.fixture
def keyed_llama_daemon(
    llama_server_binary: Path, home_root: Path, tmp_path: Path
) -> Iterator[DaemonProcess]:
    env = {**path_with(llama_server_binary), **keyring_env(tmp_path)}
    with running_daemon(home_root, env=env) as proc:
        yield proc


def test_use_with_shows_each_clients_settings_for_the_chosen_model(
    ui: Ui, qloop: qasync.QEventLoop, keyed_llama_daemon: DaemonProcess, tiny_gguf: Path
) -> None:
    daemon = keyed_llama_daemon
    options = InstanceOptions(model=str(tiny_gguf), ctx_size=512, parallel=1)
    info = asyncio.run(
        start_ready(daemon, StartRequest(engine=EngineId.LLAMA_CPP, options=options))
    )

    async def model_id() -> str:
        async with DaemonClient(daemon.url, daemon.token) as client:
            listed = await client.gateway_models()
        return next(m.id for m in listed.models if m.instance == info.id)

    model = asyncio.run(model_id())
    table = client_table()

    async def scenario() -> None:
        page = ui.window.show_page("Engines")
        assert isinstance(page, EnginesPage)
        ui.bridge.start()
        await wait_until(lambda: ui.bridge.state == ConnectionState.CONNECTED, 20, "connected")
        section = page.instances
        await wait_until(lambda: section.select_instance(info.id), 20, "the instance's row")
        assert section.use_button.isEnabled()
        # No key yet: the placeholder, said as such.
        section.use_button.click()
        dialog = section.use_with_dialog
        assert dialog is not None and dialog.isVisible()
        await wait_until(lambda: dialog.model_combo.count() > 0, 10, "the models")
        assert dialog.model_combo.currentText() == model
        assert "No gateway key is set" in dialog.status.text()
        assert dialog.key_label.text() == "roundhouse"
        dialog.close()

        async with DaemonClient(daemon.url, daemon.token) as client:
            await client.set_gateway_key(KEY)
        section.use_button.click()
        dialog = section.use_with_dialog
        assert dialog is not None
        await wait_until(lambda: dialog.model_combo.count() > 0, 10, "the models")
        assert dialog.status.text() == ""
        masked = GatewayTarget(root=daemon.url, key=mask_key(KEY), model=model)
        real = masked.model_copy(update={"key": KEY})
        assert dialog.base_url.text() == f"{daemon.url}/v1"
        assert dialog.key_label.text() == mask_key(KEY)
        names = [dialog.clients.item(i).text() for i in range(dialog.clients.count())]
        assert names == [spec.name for spec in table.values()]
        for expected in (
            "Claude Code", "Codex", "OpenCode", "OpenAI SDK (Python)", "Anthropic SDK (Python)",
            "Open WebUI", "Continue",
        ):  # fmt: skip
            assert expected in names
        for row, spec in enumerate(table.values()):
            dialog.clients.setCurrentRow(row)
            shown = dialog.text.toPlainText()
            assert shown == client_text(spec, masked), spec.name
            assert KEY not in shown and mask_key(KEY) in shown, spec.name
            dialog.copy_button.click()
            assert QGuiApplication.clipboard().text() == client_text(spec, real), spec.name
        # Open WebUI: its OpenAI connection at /v1, its Ollama connection at the root.
        dialog.clients.setCurrentRow(names.index("Open WebUI"))
        shown = dialog.text.toPlainText()
        assert f"URL:     {daemon.url}/v1\n" in shown and f"URL:     {daemon.url}\n" in shown

        dialog.show_key.setChecked(True)
        assert KEY in dialog.text.toPlainText() and dialog.key_label.text() == KEY
        dialog.copy_key_button.click()
        assert QGuiApplication.clipboard().text() == KEY
        dialog.copy_url_button.click()
        assert QGuiApplication.clipboard().text() == f"{daemon.url}/v1"
        dialog.close()

    try:
        qloop.run_until_complete(scenario())
    finally:
        qloop.run_until_complete(ui.bridge.aclose())


def test_use_with_from_the_library_names_the_models_short_id(
    ui: Ui, qloop: qasync.QEventLoop, tiny_gguf: Path, home_root: Path, tmp_path: Path
) -> None:
    from roundhouse.gui.pages.models_page import ModelsPage
    from tests.processes import free_port

    env = {
        **keyring_env(tmp_path),
        "HF_HOME": str(tmp_path / "hf"),
        # No Ollama answers there: the library holds the imported file only.
        "OLLAMA_HOST": f"127.0.0.1:{free_port()}",
    }

    async def scenario() -> None:
        page = ui.window.show_page("Models")
        assert isinstance(page, ModelsPage)
        ui.bridge.start()
        await wait_until(lambda: ui.bridge.state == ConnectionState.CONNECTED, 20, "connected")
        library = page.library
        page.show_tab(page.tabs.indexOf(library))
        library.import_file(str(tiny_gguf))
        await wait_until(lambda: library.models.rowCount() == 1, 20, "the imported model")
        model = library.find_model(lambda m: True)
        assert model is not None and model.served_id
        assert not library.use_button.isEnabled(), "nothing chosen yet"
        assert library.select_model(model.id) and library.use_button.isEnabled()
        library.use_button.click()
        dialog = library.use_with_dialog
        assert dialog is not None and dialog.isVisible()
        await wait_until(lambda: dialog.model_combo.count() > 0, 10, "the models")
        # No preset and nothing running: the library model is served by its short name.
        assert dialog.model_combo.currentText() == model.served_id
        lines = dialog.settings_text(revealed=False).splitlines()
        assert f"export ANTHROPIC_MODEL={shlex.quote(model.served_id)}" in lines
        dialog.close()

    with running_daemon(home_root, env=env):
        try:
            qloop.run_until_complete(scenario())
        finally:
            qloop.run_until_complete(ui.bridge.aclose())
