"""vLLM across paired machines with the user's Ray cluster: two real daemons on loopback,
paired the real way, each with a recorded 2 x H100 inventory, the vLLM stand-in as its vLLM
and the Ray stand-in as the `ray` beside it. With no cluster, or one a machine has not
joined, the start is refused in words with the `ray start` lines; with the cluster up (the
plan's own lines run), vLLM runs on the head only, holds the cluster's GPUs, serves through
the gateway as one instance and stops alone, leaving Ray to the user; the cluster's end
fails the instance."""

from __future__ import annotations

import json
import socket
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest

from tests.daemon_process import DaemonProcess
from tests.fakes.launchers import console_script
from tests.processes import assert_nothing_left, free_port, wait_for
from tests.support import cli
from tests.support.peers import pair, peer_daemon
from tests.support.recorded_daemon import recorded_machine
from tests.unit.engines.test_vllm_nodes import h100_box

pytestmark = pytest.mark.skipif(not hasattr(socket, "AF_UNIX"), reason="POSIX process groups")
MODEL = "org/across-ray"


@dataclass
class Machines:
    head: DaemonProcess
    twin: DaemonProcess
    ray: Path  # the Ray stand-in's `ray`


@pytest.fixture(scope="module")
def machines(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Machines]:
    base = tmp_path_factory.mktemp("ray")
    vllm = console_script(base / "bin", "vllm", "tests.fakes.openai_engines", "vllm")
    # Beside vLLM, as pip installs Ray's console script into vLLM's environment.
    ray = console_script(base / "bin", "ray", "tests.fakes.ray", None)
    # Only the stand-ins' folder and the system's: a real Ray on PATH is not found first.
    env = {"PATH": f"{vllm.parent}:/usr/bin:/bin"}
    made = {name: recorded_machine(base, name, h100_box(2), (MODEL,)) for name in ("head", "twin")}

    def daemon(name: str) -> Any:
        home, argv, models = made[name]
        return peer_daemon(home, name, env=env, argv=argv, models_dir=str(models))

    with daemon("head") as head, daemon("twin") as twin:
        pair(head, twin)
        yield Machines(head, twin, ray)


def _cli(daemon: DaemonProcess, *args: str) -> subprocess.CompletedProcess[str]:
    return cli.roundhouse(daemon, *args, stdin=subprocess.DEVNULL, no_color=True)


def _across(machines: Machines, ray_port: int, *more: str) -> subprocess.CompletedProcess[str]:
    return _cli(
        machines.head, "engines", "across", "vllm", MODEL, "--peers", "twin",
        "--executor", "ray", "--ray-port", str(ray_port), *more,
    )  # fmt: skip


class Cluster:
    """The Ray stand-in started with the plan's own `ray start` lines, one per machine."""

    def __init__(self, ray: Path, lines: list[list[str]]) -> None:
        self.processes: list[subprocess.Popen[bytes]] = []
        self.ray = ray
        self.lines = lines

    def start(self, rank: int) -> None:
        line = self.lines[rank]
        assert line[0] == "ray", line
        # The stand-in runs in the foreground and detects no GPU: 2 per recorded machine.
        argv = [str(self.ray), *line[1:], "--num-gpus=2", "--block"]
        self.processes.append(subprocess.Popen(argv, stdout=subprocess.DEVNULL))

    def status(self, address: str) -> str:
        done = subprocess.run(
            [str(self.ray), "status", f"--address={address}"], capture_output=True, text=True
        )
        return done.stdout + done.stderr

    def stop(self) -> None:
        for process in reversed(self.processes):
            process.terminate()
            process.wait(10)


@pytest.fixture
def planned(machines: Machines) -> tuple[int, dict[str, Any]]:
    ray_port = free_port()
    done = _across(machines, ray_port, "--plan", "--json")
    assert done.returncode == 0, done.stderr
    plan: dict[str, Any] = json.loads(done.stdout)
    return ray_port, plan


@pytest.fixture
def cluster(machines: Machines, planned: tuple[int, dict[str, Any]]) -> Iterator[Cluster]:
    _, plan = planned
    made = Cluster(machines.ray, [node["ray_command"] for node in plan["nodes"]])
    try:
        yield made
    finally:
        made.stop()


def _vllm_processes() -> list[psutil.Process]:
    found = []
    for process in psutil.process_iter(["cmdline"]):
        argv = process.info["cmdline"] or []
        if MODEL in argv and "--distributed-executor-backend" in argv:
            found.append(process)
    return found


def _instances(daemon: DaemonProcess) -> list[dict[str, Any]]:
    done = _cli(daemon, "engines", "ps", "--json")
    assert done.returncode == 0, done.stderr
    found: list[dict[str, Any]] = json.loads(done.stdout)["instances"]
    return [i for i in found if i["origin"] == "started"]


def test_the_plan_runs_vllm_on_the_head_only_joined_to_the_planned_cluster(
    planned: tuple[int, dict[str, Any]],
) -> None:
    ray_port, plan = planned
    assert plan["executor"] == "ray"
    head, twin = plan["nodes"]
    assert head["argv"][-2:] == ["--distributed-executor-backend", "ray"]
    assert head["env"]["RAY_ADDRESS"] == f"127.0.0.1:{ray_port}"
    assert twin["argv"] == []  # Ray runs the workers there, not Roundhouse
    assert twin["ray_command"][:3] == ["ray", "start", f"--address=127.0.0.1:{ray_port}"]


def test_refused_in_words_with_the_ray_lines_until_every_machine_joined(
    machines: Machines, planned: tuple[int, dict[str, Any]], cluster: Cluster
) -> None:
    ray_port, _ = planned
    done = _across(machines, ray_port)
    said = " ".join(done.stderr.split())
    assert done.returncode == 1, done.stdout
    assert f"No Ray cluster answers at 127.0.0.1:{ray_port}" in said, said
    assert f"on head: ray start --head --port={ray_port}" in said
    assert f"on twin: ray start --address=127.0.0.1:{ray_port}" in said
    assert "Traceback" not in done.stderr
    assert _vllm_processes() == [] and _instances(machines.head) == []

    cluster.start(0)  # the head only: the twin has not joined
    address = f"127.0.0.1:{ray_port}"
    wait_for(lambda: "Active:" in cluster.status(address), "the Ray head answers")
    done = _across(machines, ray_port)
    said = " ".join(done.stderr.split())
    assert done.returncode == 1, done.stdout
    assert "too small for this split: 1 of the 2 machines have joined it" in said, said
    assert "it has 2 GPUs and the split needs 4" in said
    assert _vllm_processes() == [] and _instances(machines.head) == []


def test_started_on_the_cluster_it_serves_as_one_and_stops_without_touching_ray(
    machines: Machines, planned: tuple[int, dict[str, Any]], cluster: Cluster
) -> None:
    ray_port, _ = planned
    address = f"127.0.0.1:{ray_port}"
    cluster.start(0)
    wait_for(lambda: "Active:" in cluster.status(address), "the Ray head answers")
    cluster.start(1)
    wait_for(lambda: " 0.0/4.0 GPU" in cluster.status(address), "the twin joins")

    done = _across(machines, ray_port, "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    info = json.loads(done.stdout)["instance"]
    assert info["status"] == "ready", info
    assert "Roundhouse does not start or stop Ray" in info["launch_note"], info
    # One vLLM, under the head's daemon; nothing started on the twin.
    (vllm,) = _vllm_processes()
    assert machines.head.process.pid in [p.pid for p in vllm.parents()]
    assert " 4.0/4.0 GPU" in cluster.status(address)  # its placement group
    assert [i["id"] for i in _instances(machines.head)] == [info["id"]]
    with httpx.Client(base_url=machines.head.url, timeout=60, trust_env=False) as client:
        reply = client.post(
            "/v1/chat/completions",
            json={"model": MODEL, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4},
        )
    assert reply.status_code == 200, reply.text
    assert reply.headers["x-roundhouse-instance"].startswith(info["id"])

    stopped = _cli(machines.head, "engines", "stop", info["id"])
    assert stopped.returncode == 0, stopped.stderr
    assert_nothing_left(vllm.pid, vllm.pid, timeout_s=20)
    assert _instances(machines.head) == []
    # Ray is the user's: still up, every GPU free again.
    assert all(p.poll() is None for p in cluster.processes)
    wait_for(lambda: " 0.0/4.0 GPU" in cluster.status(address), "the GPUs are free again")


def test_the_clusters_end_fails_the_instance(
    machines: Machines, planned: tuple[int, dict[str, Any]], cluster: Cluster
) -> None:
    ray_port, _ = planned
    address = f"127.0.0.1:{ray_port}"
    cluster.start(0)
    wait_for(lambda: "Active:" in cluster.status(address), "the Ray head answers")
    cluster.start(1)
    wait_for(lambda: " 0.0/4.0 GPU" in cluster.status(address), "the twin joins")
    done = _across(machines, ray_port, "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    info = json.loads(done.stdout)["instance"]
    (vllm,) = _vllm_processes()
    cluster.stop()

    def failed() -> bool:
        with machines.head.control() as client:
            now: dict[str, Any] = client.get(f"/api/v1/instances/{info['id']}").json()
        return bool(now["status"] == "failed")

    wait_for(failed, "the instance fails with its cluster", within_s=30)
    assert_nothing_left(vllm.pid, vllm.pid, timeout_s=20)
    assert _cli(machines.head, "engines", "stop", info["id"]).returncode == 0
