"""The Settings page's "Ollama's address" option against a real daemon: off by default,
saved with the page, the daemon then answering Ollama's API on that port (a free one here,
set beforehand as the CLI or API would, never a real 11434), its state under Listening, a
refusal in words while something else holds the port, and off again."""

from __future__ import annotations

import socket
from pathlib import Path

import httpx
import qasync
from PySide6.QtWidgets import QApplication

from roundhouse.api.settings import GatewaySettings, Settings
from roundhouse.base.paths import resolve_home
from roundhouse.client import DaemonClient
from roundhouse.core.infra.settings import save_settings
from roundhouse.gui.app import Ui
from tests.daemon_process import running_daemon
from tests.gui.conftest import open_gateway_settings, wait_until
from tests.processes import free_port


def test_the_ollama_address_option(
    ui: Ui, qloop: qasync.QEventLoop, home_root: Path, qapp: QApplication
) -> None:
    port = free_port()
    home = resolve_home(home_root)
    home.ensure()
    save_settings(home.settings_file, Settings(gateway=GatewaySettings(ollama_port=port)))
    url = f"http://127.0.0.1:{port}"

    async def scenario(process_url: str, token: str) -> None:
        page, section = await open_gateway_settings(ui)
        assert not section.ollama_port.isChecked()
        assert f"127.0.0.1:{port}" in section.ollama_port.text()
        assert url not in section.listeners_text()

        section.ollama_port.setChecked(True)
        assert page.save_button.isEnabled()
        page.save_button.click()
        await wait_until(lambda: page.message.text().startswith("Saved"), 10, "the save")
        await wait_until(lambda: f"{url} (no key)" in section.listeners_text(), 10, "listening")
        async with httpx.AsyncClient(trust_env=False) as http:
            reply = await http.get(url + "/api/version")
        assert reply.status_code == 200 and reply.json()["version"]
        async with DaemonClient(process_url, token) as client:
            saved = (await client.settings()).gateway
        assert saved.ollama_port_enabled and saved.ollama_port == port

        section.ollama_port.setChecked(False)
        page.save_button.click()
        await wait_until(lambda: url not in section.listeners_text(), 10, "stopped")

        # Something else on the port: saved all the same, and the reason shown in words.
        with socket.socket() as holder:
            holder.bind(("127.0.0.1", 0))
            holder.listen(1)
            taken = holder.getsockname()[1]
            async with DaemonClient(process_url, token) as client:
                current = await client.settings()
                gateway = current.gateway.model_copy(update={"ollama_port": taken})
                await client.put_settings(current.model_copy(update={"gateway": gateway}))
            page.show_settings(await _settings(process_url, token))
            section.ollama_port.setChecked(True)
            page.save_button.click()
            await wait_until(
                lambda: "gateway.ollama_port" in section.listeners_text(), 10, "the refusal"
            )
        assert f"http://127.0.0.1:{taken}" in section.listeners_text()

    with running_daemon(home_root) as process:
        qloop.run_until_complete(scenario(process.url, process.token))


async def _settings(url: str, token: str) -> Settings:
    async with DaemonClient(url, token) as client:
        return await client.settings()
