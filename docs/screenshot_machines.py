"""Screenshot step of the Machines page: a second daemon ("gpu-box") with its peer listener on
loopback, paired through the real flow, runs the tiny model started from here; its card, and
the live charts of that instance while chats stream through it."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from screenshot_steps import REPO, Grab, wait_until

if TYPE_CHECKING:
    from roundhouse.gui.app import Ui

PEER_NAME = "gpu-box"


def start_peer(
    tmp: Path,
    model: Path,
    env: dict[str, str],
    start_daemon: Callable[..., subprocess.Popen[bytes]],
    llama_server: Path,
) -> subprocess.Popen[bytes]:
    """The second machine: its own home, keyring file and peer listener, the model in its
    library."""
    from roundhouse.api.settings import ModelsSettings, PeersSettings, Settings
    from roundhouse.base.paths import resolve_home
    from roundhouse.core.infra.settings import save_settings

    sys.path.insert(0, str(REPO))
    from tests.processes import free_port

    root = tmp / PEER_NAME
    home = resolve_home(root)
    home.ensure()
    save_settings(
        home.settings_file,
        Settings(
            peers=PeersSettings(listen_host="127.0.0.1", port=free_port(), name=PEER_NAME),
            models=ModelsSettings(library_folders=[str(model.parent)]),
        ),
    )
    peer_env = {**env, "ROUNDHOUSE_TEST_KEYRING": str(tmp / f"{PEER_NAME}-keyring.json")}
    return start_daemon(root, llama_server, peer_env)


async def take_machines(ui: Ui, peer_root: Path, model: Path, grab: Grab) -> None:
    """Pair with the peer (a code there, typed here), start the model on it from here, and
    show its card with the instance's charts."""
    from roundhouse.base.paths import resolve_home
    from roundhouse.client import DaemonClient
    from roundhouse.gui.pages.machines_page import MachinesPage

    async with DaemonClient.for_home(resolve_home(peer_root)) as peer:
        offer = await peer.open_pairing_code()
    async with DaemonClient.for_home(ui.bridge.home) as here:
        paired = await here.pair("127.0.0.1", offer.port, offer.code)
        started = await here.peer_start(paired.id, model.stem)
        base_url = str(here.base_url)
    page = ui.window.show_page("Machines")
    assert isinstance(page, MachinesPage)
    await wait_until(lambda: paired.id in page.cards, 20, "the paired machine's card")
    card = page.cards[paired.id]
    await wait_until(lambda: started.id in card.instance_ids(), 20, "its instance")
    card.select_instance(started.id)
    # This machine can start the model too, so its plain name stays here: the paired
    # machine's is `gpu-box/<name>`.
    await _chats(base_url, f"{PEER_NAME}/{model.stem}", 12.0)
    await wait_until(lambda: page.chart_loads >= 2, 20, "the instance's charts")
    await asyncio.sleep(2.5)
    grab("machines.png")


async def _chats(base_url: str, model_id: str, seconds: float) -> None:
    """Chats through this machine's gateway to the paired machine for `seconds`."""
    import httpx

    body = {
        "model": model_id,
        "messages": [{"role": "user", "content": "Tell me about trains."}],
        "max_tokens": 200,
        "stream": True,
    }
    until = time.monotonic() + seconds
    async with httpx.AsyncClient(base_url=base_url, timeout=60) as http:
        while time.monotonic() < until:
            async with http.stream("POST", "/v1/chat/completions", json=body) as reply:
                if reply.status_code != 200:
                    raise RuntimeError(
                        f"a chat through the paired machine: {await reply.aread()!r}"
                    )
                async for _ in reply.aiter_bytes():
                    pass
