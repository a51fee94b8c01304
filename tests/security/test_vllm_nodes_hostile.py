"""Hostile requests to the node routes of the peer listener (/peer/v1/nodes), real daemons on
loopback with the vLLM stand-in: no key or a stranger's key, a command the machine did not
build (another program, an added flag), a rendezvous elsewhere than the caller, extra
arguments, and one paired machine reaching another's node. None of them runs anything."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import psutil
import pytest

from roundhouse.core.peers.tls import CERT_FILE, pinned_context
from tests.daemon_process import DaemonProcess, path_with
from tests.fakes.launchers import console_script
from tests.support import cli
from tests.support.peers import pair, peer_daemon, peer_key, peers_of
from tests.support.recorded_daemon import recorded_machine
from tests.unit.engines.test_vllm_nodes import h100_box

MODEL = "org/hostile-big"
GROUP = "0123456789ab"


@dataclass
class Three:
    head: DaemonProcess  # paired with twin
    twin: DaemonProcess  # paired with head and with third
    third: DaemonProcess  # paired with twin only


@pytest.fixture(scope="module")
def three(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Three]:
    base = tmp_path_factory.mktemp("nodes-hostile")
    env = path_with(console_script(base / "bin", "vllm", "tests.fakes.openai_engines", "vllm"))

    def daemon(name: str) -> Any:
        home, argv, models = recorded_machine(base, name, h100_box(2), (MODEL,))
        return peer_daemon(home, name, env=env, argv=argv, models_dir=str(models))

    with daemon("head") as head, daemon("twin") as twin, daemon("third") as third:
        pair(head, twin)
        pair(third, twin)
        yield Three(head, twin, third)


def _listener(daemon: DaemonProcess) -> httpx.Client:
    with daemon.control() as client:
        port = client.get("/api/v1/settings").json()["peers"]["port"]
    cert = (daemon.home.data_dir / CERT_FILE).read_text()
    return httpx.Client(
        base_url=f"https://127.0.0.1:{port}", verify=pinned_context(cert), trust_env=False
    )


def _key(of: DaemonProcess, to: str) -> dict[str, str]:
    """The key `of` calls the paired machine named `to` with, as a header."""
    peer = next(p["id"] for p in peers_of(of) if p["name"] == to)
    return {"authorization": f"Bearer {peer_key(of, peer)}"}


def _planned(three: Three) -> dict[str, Any]:
    """A start request for node 1 exactly as the head plans it for the twin."""
    done = cli.roundhouse(
        three.head, "engines", "across", "vllm", MODEL, "--peers", "twin", "--plan", "--json",
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)
    head, follower = plan["nodes"]
    return {
        "group": GROUP,
        "rank": 1,
        "nnodes": 2,
        "master_addr": plan["master_addr"],
        "master_port": plan["master_port"],
        "address": follower["address"],
        "port": int(head["argv"][head["argv"].index("--port") + 1]),
        "options": {"model": MODEL},
        "argv": follower["argv"],
    }


def _nodes_running() -> list[int]:
    return [
        p.pid
        for p in psutil.process_iter(["cmdline"])
        if "--headless" in (p.info["cmdline"] or []) and MODEL in (p.info["cmdline"] or [])
    ]


def test_the_node_routes_need_a_paired_machines_key(three: Three) -> None:
    with _listener(three.twin) as twin:
        key = _key(three.head, "twin")
        facts = twin.get("/peer/v1/nodes/vllm", params={"model": MODEL}, headers=key)
        assert facts.status_code == 200, facts.text
        assert facts.json()["has_model"] is True and facts.json()["vllm"]
        asked = _planned(three)
        for headers in ({}, {"authorization": "Bearer " + "x" * 43},
                        {"authorization": f"Bearer {three.third.token}"}):  # fmt: skip
            assert twin.get("/peer/v1/nodes/vllm", params={"model": MODEL},
                            headers=headers).status_code == 401  # fmt: skip
            assert twin.post("/peer/v1/nodes/vllm", json=asked, headers=headers).status_code == 401
    assert _nodes_running() == []


def test_a_command_the_machine_did_not_build_is_refused(three: Three) -> None:
    asked = _planned(three)
    argv = asked["argv"]
    bad = {
        "another program": {**asked, "argv": ["/bin/sh", "-c", "touch /tmp/owned", *argv[1:]]},
        "an added flag": {**asked, "argv": [*argv, "--trust-remote-code"]},
        "a flag changed": {**asked, "argv": [a if a != "--headless" else "--served" for a in argv]},
        "rank 0 asked of it": {**asked, "rank": 0},
        "a rendezvous elsewhere": {**asked, "master_addr": "10.9.9.9"},
        "extra arguments": {**asked, "options": {"model": MODEL, "extra_args": ["--x"]}},
        "a model it lacks": {**asked, "options": {"model": "org/other"}},
    }
    with _listener(three.twin) as twin:
        key = _key(three.head, "twin")
        for what, body in bad.items():
            reply = twin.post("/peer/v1/nodes/vllm", json=body, headers=key)
            assert reply.status_code in (403, 409, 422), (what, reply.status_code, reply.text)
            assert "Traceback" not in reply.text
        refused = twin.post("/peer/v1/nodes/vllm", json=bad["an added flag"], headers=key)
        assert "is not the one twin builds for node 1" in refused.json()["detail"]
    assert _nodes_running() == []


def test_a_node_is_its_callers_only(three: Three) -> None:
    asked = _planned(three)
    with _listener(three.twin) as twin:
        key = _key(three.head, "twin")
        started = twin.post("/peer/v1/nodes/vllm", json=asked, headers=key)
        assert started.status_code == 200, started.text
        node = started.json()
        assert node["running"] is True and node["pid"] in _nodes_running()
        # The third machine, paired with the twin too, neither sees nor stops it.
        other = _key(three.third, "twin")
        assert twin.get(f"/peer/v1/nodes/{node['id']}", headers=other).status_code == 404
        assert twin.delete(f"/peer/v1/nodes/{node['id']}", headers=other).status_code == 404
        assert psutil.pid_exists(node["pid"])
        stopped = twin.delete(f"/peer/v1/nodes/{node['id']}", headers=key)
        assert stopped.status_code == 200, stopped.text
        assert stopped.json()["running"] is False and stopped.json()["exit"]["by_us"] is True
    assert _nodes_running() == []
