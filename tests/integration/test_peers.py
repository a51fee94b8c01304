"""Two real daemons on loopback paired through the real flow (a code on one, `peers add` on
the other) over TLS: each lists the other, one sees the other's hardware, starts a real
llama-server there on a library model and stops it; unpair from either side, also when the
other side is gone."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from roundhouse.api.settings import ModelsSettings
from tests.daemon_process import DaemonProcess, path_with
from tests.processes import free_port
from tests.support import cli
from tests.support.peers import open_code, pair, peer_daemon, peers_of

MODEL = "tiny-peer"


@dataclass
class Pair:
    alpha: DaemonProcess  # has the model and llama-server
    beta: DaemonProcess


@pytest.fixture(scope="module")
def machines(
    llama_server_binary: Path, tiny_gguf: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Pair]:
    base = tmp_path_factory.mktemp("peers")
    folder = base / "models"
    folder.mkdir()
    shutil.copy(tiny_gguf, folder / f"{MODEL}.gguf")
    env = {**path_with(llama_server_binary), "HF_HUB_CACHE": str(base / "hf")}
    library = ModelsSettings(library_folders=[str(folder)])
    with (
        peer_daemon(
            base / "alpha", "alpha", env=env, models=library, models_dir=str(base / "hf")
        ) as alpha,
        peer_daemon(base / "beta", "beta", models_dir=str(base / "hf-b")) as beta,
    ):
        yield Pair(alpha, beta)


def _cli(daemon: DaemonProcess, *args: str) -> subprocess.CompletedProcess[str]:
    return cli.roundhouse(daemon, *args, stdin=subprocess.DEVNULL, no_color=True)


def _json(daemon: DaemonProcess, *args: str) -> object:
    done = _cli(daemon, *args, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _started(instances: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [i for i in instances if i["origin"] == "started"]


def test_paired_with_the_cli_each_lists_the_other_and_a_model_starts_there(
    machines: Pair,
) -> None:
    alpha, beta = machines.alpha, machines.beta
    # The code on alpha, as a person reads it.
    shown = _cli(alpha, "peers", "code")
    assert shown.returncode == 0, shown.stderr
    offer = _json(alpha, "peers", "code")
    assert isinstance(offer, dict) and offer["listening"] is True
    code, port = offer["code"], offer["port"]
    assert len(code) == 11 and code[5] == "-"

    added = _cli(beta, "peers", "add", f"127.0.0.1:{port}", "--code", code.lower())
    assert added.returncode == 0, added.stderr
    assert "Paired with alpha" in added.stdout

    on_beta = peers_of(beta, check=True)
    assert [(p["name"], p["reachable"]) for p in on_beta] == [("alpha", True)]
    assert on_beta[0]["fingerprint"] == offer["fingerprint"]
    alpha_id = on_beta[0]["id"]
    on_alpha = peers_of(alpha, check=True)
    assert [(p["name"], p["reachable"]) for p in on_alpha] == [("beta", True)]
    beta_id = on_alpha[0]["id"]

    listed = _cli(beta, "peers", "list")
    assert listed.returncode == 0 and "alpha" in listed.stdout and alpha_id in listed.stdout

    state = _json(beta, "peers", "show", alpha_id)
    assert isinstance(state, dict)
    assert state["name"] == "alpha" and state["hardware"]["cpu"]["logical_cores"] > 0
    # (Engines other tests run on this machine may show as external: not this test's.)
    assert MODEL in state["startable"] and _started(state["instances"]) == []
    assert "Can start" in _cli(beta, "peers", "show", alpha_id).stdout

    started = _json(beta, "peers", "start", alpha_id, MODEL)
    assert isinstance(started, dict) and started["status"] == "ready"
    with alpha.control() as client:
        mine = _started(client.get("/api/v1/instances").json()["instances"])
    assert [i["id"] for i in mine] == [started["id"]]
    state = _json(beta, "peers", "show", alpha_id)
    assert isinstance(state, dict)
    assert [i["id"] for i in _started(state["instances"])] == [started["id"]]
    assert started["id"] in [entry["instance"] for entry in state["load"]]

    stopped = _cli(beta, "peers", "stop", alpha_id, started["id"])
    assert stopped.returncode == 0, stopped.stderr
    with alpha.control() as client:
        left = _started(client.get("/api/v1/instances").json()["instances"])
    assert [i for i in left if i["status"] in ("ready", "starting", "loading")] == []

    # Unpaired from alpha's side: beta is told and forgets alpha too.
    removed = _json(alpha, "peers", "remove", beta_id)
    assert isinstance(removed, dict) and removed["told_peer"] is True
    assert peers_of(alpha) == [] and peers_of(beta) == []


def test_unpair_from_the_other_side_and_when_the_other_is_gone(machines: Pair) -> None:
    alpha, beta = machines.alpha, machines.beta
    # This time alpha types the code beta shows.
    seen = pair(alpha, beta)
    assert seen["name"] == "beta"
    alpha_id = peers_of(beta)[0]["id"]
    with beta.control() as client:
        removed = client.delete(f"/api/v1/peers/{alpha_id}", timeout=60).json()
    assert removed["told_peer"] is True
    assert peers_of(alpha) == [] and peers_of(beta) == []

    pair(alpha, beta)
    alpha_id = peers_of(beta)[0]["id"]
    # alpha's peer listener goes off: beta unpairs anyway, and says alpha was not told.
    with alpha.control() as client:
        settings = client.get("/api/v1/settings").json()
        port = settings["peers"]["listen_host"]
        settings["peers"]["listen_host"] = ""
        assert client.put("/api/v1/settings", json=settings).status_code == 200
    try:
        status = peers_of(beta, check=True)[0]
        assert status["reachable"] is False and "refused the connection" in status["error"]
        done = _cli(beta, "peers", "remove", alpha_id)
        assert done.returncode == 0, done.stderr
        assert "could not be told" in done.stdout
        assert peers_of(beta) == []
        # alpha still lists beta, whose key no longer works there: alpha removes it too.
        beta_id = peers_of(alpha)[0]["id"]
        with alpha.control() as client:
            gone = client.delete(f"/api/v1/peers/{beta_id}", timeout=60).json()
        assert gone["told_peer"] is False
        assert peers_of(alpha) == []
    finally:
        with alpha.control() as client:
            settings = client.get("/api/v1/settings").json()
            settings["peers"]["listen_host"] = port
            assert client.put("/api/v1/settings", json=settings).status_code == 200
    assert open_code(alpha)["listening"] is True


def test_discovery_on_loopback_is_not_advertised_and_says_why(machines: Pair) -> None:
    # mDNS multicasts: the listener here is on loopback, so nothing is sent, and it says so.
    with machines.beta.control() as client:
        settings = client.get("/api/v1/settings").json()
        settings["peers"]["discovery"] = True
        assert client.put("/api/v1/settings", json=settings).status_code == 200
        listener = client.get("/api/v1/peers", params={"check": "false"}).json()["listener"]
        settings["peers"]["discovery"] = False
        assert client.put("/api/v1/settings", json=settings).status_code == 200
    assert listener["error"] is None and listener["url"].startswith("https://127.0.0.1:")
    assert listener["discovery"].startswith("Not advertised: the listener is on 127.0.0.1")


def test_a_machine_that_moved_is_found_again_with_its_own_certificate_only(
    machines: Pair,
) -> None:
    alpha, beta = machines.alpha, machines.beta
    pair(beta, alpha)
    alpha_id = peers_of(beta)[0]["id"]
    new_port = free_port()
    with alpha.control() as client:
        settings = client.get("/api/v1/settings").json()
        old_port = settings["peers"]["port"]
        settings["peers"]["port"] = new_port
        assert client.put("/api/v1/settings", json=settings, timeout=30).status_code == 200
    try:
        assert peers_of(beta, check=True)[0]["reachable"] is False
        # Another daemon's listener (beta's own) is not alpha: refused, nothing changes.
        with beta.control() as client:
            beta_port = client.get("/api/v1/settings").json()["peers"]["port"]
        wrong = _cli(beta, "peers", "move", alpha_id, f"127.0.0.1:{beta_port}")
        assert wrong.returncode == 1 and "different certificate" in wrong.stderr
        assert peers_of(beta)[0]["port"] == old_port
        moved = _cli(beta, "peers", "move", alpha_id, f"127.0.0.1:{new_port}")
        assert moved.returncode == 0, moved.stderr
        assert f"127.0.0.1:{new_port}" in moved.stdout
        status = peers_of(beta, check=True)[0]
        assert status["port"] == new_port and status["reachable"] is True
        # Unpaired where alpha is now: alpha is told.
        with beta.control() as client:
            gone = client.delete(f"/api/v1/peers/{alpha_id}", timeout=60).json()
        assert gone["told_peer"] is True
        assert peers_of(alpha) == [] and peers_of(beta) == []
    finally:
        with alpha.control() as client:
            settings["peers"]["port"] = old_port
            assert client.put("/api/v1/settings", json=settings, timeout=30).status_code == 200
