"""vLLM across paired machines: three real daemons on loopback, each with a recorded GPU
inventory as its hardware and the vLLM stand-in as its vLLM, paired the real way. The head
starts the model with its paired machine as one instance, serves it through its gateway,
fails as one when the follower is killed, stops every node when stopped, and refuses, by
machine and why, GPUs that differ and a model one of them lacks."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest

from tests.daemon_process import DaemonProcess, path_with
from tests.fakes.launchers import console_script
from tests.processes import assert_nothing_left, free_port
from tests.support import cli
from tests.support.peers import pair, peer_daemon, peers_of
from tests.support.recorded_daemon import recorded_machine
from tests.unit.engines.test_vllm_nodes import h100_box

pytestmark = pytest.mark.skipif(not hasattr(socket, "AF_UNIX"), reason="POSIX process groups")
MODEL = "org/across-big"


@dataclass
class Machines:
    head: DaemonProcess  # 2 x H100, has the model
    twin: DaemonProcess  # 2 x H100, has the model
    other: DaemonProcess  # 4 x H100, lacks the model
    root: Path


@pytest.fixture(scope="module")
def machines(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Machines]:
    base = tmp_path_factory.mktemp("across")
    vllm = console_script(base / "bin", "vllm", "tests.fakes.openai_engines", "vllm")
    env = path_with(vllm)
    made = {
        name: recorded_machine(base, name, h100_box(gpus), (MODEL,) if has else ())
        for name, gpus, has in (("head", 2, True), ("twin", 2, True), ("other", 4, False))
    }

    def daemon(name: str) -> Any:
        home, argv, models = made[name]
        return peer_daemon(home, name, env=env, argv=argv, models_dir=str(models))

    with daemon("head") as head, daemon("twin") as twin, daemon("other") as other:
        pair(head, twin)
        pair(head, other)
        yield Machines(head, twin, other, base)


def _cli(daemon: DaemonProcess, *args: str) -> subprocess.CompletedProcess[str]:
    return cli.roundhouse(daemon, *args, stdin=subprocess.DEVNULL, no_color=True)


def _instances(daemon: DaemonProcess) -> list[dict[str, Any]]:
    done = _cli(daemon, "engines", "ps", "--json")
    assert done.returncode == 0, done.stderr
    found: list[dict[str, Any]] = json.loads(done.stdout)["instances"]
    return [i for i in found if i["origin"] == "started"]


def _nodes(master_port: int) -> dict[str, psutil.Process]:
    """The stand-in's node processes of the group at `master_port`, by rank."""
    found: dict[str, psutil.Process] = {}
    for process in psutil.process_iter(["cmdline"]):
        argv = process.info["cmdline"] or []
        if "--master-port" in argv and argv[argv.index("--master-port") + 1] == str(master_port):
            found[argv[argv.index("--node-rank") + 1]] = process
    return found


def _start(machines: Machines, master_port: int) -> dict[str, Any]:
    done = _cli(
        machines.head, "engines", "across", "vllm", MODEL, "--peers", "twin",
        "--master-port", str(master_port), "--json",
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    answer: dict[str, Any] = json.loads(done.stdout)
    return answer


def _settled(daemon: DaemonProcess, instance: str, timeout_s: float = 30) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with daemon.control() as client:
            info: dict[str, Any] = client.get(f"/api/v1/instances/{instance}").json()
        if info["status"] == "failed":
            return info
        time.sleep(0.1)
    raise AssertionError(f"{instance} did not fail in {timeout_s} s")


def test_started_across_two_machines_it_serves_as_one_and_stops_every_node(
    machines: Machines,
) -> None:
    master_port = free_port()
    answer = _start(machines, master_port)
    info = answer["instance"]
    assert info["status"] == "ready", info
    assert info["name"] == "vLLM across head, twin"
    plan = answer["plan"]
    assert [n["name"] for n in plan["nodes"]] == ["head", "twin"]
    assert plan["tensor_parallel"] == 2 and plan["pipeline_parallel"] == 2
    nodes = _nodes(master_port)
    assert set(nodes) == {"0", "1"}
    assert "--headless" in nodes["1"].cmdline() and "--headless" not in nodes["0"].cmdline()
    # Each node runs under its own machine's daemon.
    head_pid, twin_pid = machines.head.process.pid, machines.twin.process.pid
    assert head_pid in [p.pid for p in nodes["0"].parents()]
    assert twin_pid in [p.pid for p in nodes["1"].parents()]
    # The follower's log is kept on its machine.
    logs = list((machines.twin.home.log_dir).rglob("vllm-node1-*.log"))
    assert logs and "joined the head node" in logs[0].read_text()

    # One instance in this machine's list; served through the gateway.
    listed = _instances(machines.head)
    assert [i["id"] for i in listed] == [info["id"]]
    shown = _cli(machines.head, "engines", "ps")
    assert f"{info['id']}: vLLM across head, twin" in shown.stdout, shown.stdout
    with httpx.Client(base_url=machines.head.url, timeout=60, trust_env=False) as client:
        reply = client.post(
            "/v1/chat/completions",
            json={"model": MODEL, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4},
        )
    assert reply.status_code == 200, reply.text
    assert reply.headers["x-roundhouse-instance"].startswith(info["id"])

    again = _cli(machines.head, "engines", "restart", info["id"])
    assert again.returncode == 1 and "An instance across machines starts anew" in again.stderr

    stopped = _cli(machines.head, "engines", "stop", info["id"])
    assert stopped.returncode == 0, stopped.stderr
    for process in nodes.values():
        assert_nothing_left(process.pid, process.pid, timeout_s=20)
    assert _instances(machines.head) == []


def test_a_killed_follower_fails_the_instance_and_stops_the_head(machines: Machines) -> None:
    master_port = free_port()
    info = _start(machines, master_port)["instance"]
    nodes = _nodes(master_port)
    os.kill(nodes["1"].pid, signal.SIGKILL)
    failed = _settled(machines.head, info["id"])
    assert "the follower" in failed["error"] or "the head" in failed["error"], failed
    assert "the other nodes have been stopped" in failed["error"]
    for process in nodes.values():
        assert_nothing_left(process.pid, process.pid, timeout_s=20)
    assert _cli(machines.head, "engines", "stop", info["id"]).returncode == 0


def test_refusals_name_the_machine_and_why(machines: Machines) -> None:
    done = _cli(machines.head, "engines", "across", "vllm", MODEL, "--peers", "twin,other")
    assert done.returncode == 1
    said = " ".join(done.stderr.split())
    assert "The nodes differ in GPU kind or count" in said
    assert "head: 2 x NVIDIA H100" in said and "other: 4 x NVIDIA H100" in said
    assert "other does not have the model" in said
    assert "Traceback" not in done.stderr
    # Nothing was started anywhere.
    assert _instances(machines.head) == []
    unknown = _cli(machines.head, "engines", "across", "vllm", MODEL, "--peers", "nobody")
    assert unknown.returncode == 1 and "No paired machine is called 'nobody'" in unknown.stderr
    # The plan alone, with every node's command, starts nothing.
    planned = _cli(machines.head, "engines", "across", "vllm", MODEL, "--peers", "twin", "--plan")
    assert planned.returncode == 0, planned.stderr
    assert "# node 1 (follower): twin at 127.0.0.1" in planned.stdout
    assert _instances(machines.head) == []
    assert len(peers_of(machines.head)) == 2


def test_the_followers_machine_unpairing_stops_its_node_and_fails_the_instance(
    machines: Machines,
) -> None:
    # Last in this module: the head and the twin are no longer paired after it.
    master_port = free_port()
    info = _start(machines, master_port)["instance"]
    nodes = _nodes(master_port)
    head_id = next(p["id"] for p in peers_of(machines.twin) if p["name"] == "head")
    removed = _cli(machines.twin, "peers", "remove", head_id)
    assert removed.returncode == 0, removed.stderr
    assert_nothing_left(nodes["1"].pid, nodes["1"].pid, timeout_s=20)
    failed = _settled(machines.head, info["id"])
    assert "the other nodes have been stopped" in failed["error"]
    assert_nothing_left(nodes["0"].pid, nodes["0"].pid, timeout_s=20)


def test_a_follower_machine_that_goes_away_fails_the_instance(tmp_path: Path) -> None:
    """The twin's daemon killed outright: the head hears nothing more from it, fails the
    instance naming it, and stops its own node (whose follower then ends by itself)."""
    env = path_with(console_script(tmp_path / "bin", "vllm", "tests.fakes.openai_engines", "vllm"))

    def daemon(name: str) -> Any:
        home, argv, models = recorded_machine(tmp_path, name, h100_box(2), (MODEL,))
        return peer_daemon(home, name, env=env, argv=argv, models_dir=str(models))

    with daemon("head") as head, daemon("twin") as twin:
        pair(head, twin)
        master_port = free_port()
        done = _cli(head, "engines", "across", "vllm", MODEL, "--peers", "twin",
                    "--master-port", str(master_port), "--json")  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        info = json.loads(done.stdout)["instance"]
        nodes = _nodes(master_port)
        twin.process.kill()
        twin.process.wait(10)
        failed = _settled(head, info["id"], timeout_s=40)
        assert "Node 1 (twin, the follower) ended" in failed["error"], failed
        assert "could not be reached on twin any more" in failed["error"]
        assert "still running" not in failed["error"]
        assert "the other nodes have been stopped" in failed["error"]
        for process in nodes.values():
            assert_nothing_left(process.pid, process.pid, timeout_s=40)
