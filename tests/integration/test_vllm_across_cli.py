"""`roundhouse engines across vllm --plan` against a real daemon that finds the vLLM stand-in."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.daemon_process import DaemonProcess, path_with, running_daemon
from tests.fakes.launchers import console_script
from tests.support import cli
from tests.unit.engines.test_vllm_nodes import h100_box

MODEL = "meta-llama/Llama-3.1-70B-Instruct"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DaemonProcess]:
    root = tmp_path_factory.mktemp("across")
    vllm = console_script(root / "bin", "vllm", "tests.fakes.openai_engines", "vllm")
    with running_daemon(root / "home", env=path_with(vllm)) as daemon:
        yield daemon


@pytest.fixture(scope="module")
def boxes(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Two machines' hardware as `roundhouse hw --json` saves it: four H100 each, two."""
    root = tmp_path_factory.mktemp("hw")
    four, two = root / "four.json", root / "two.json"
    four.write_text(h100_box(4).model_dump_json())
    two.write_text(h100_box(2).model_dump_json())
    return four, two


def test_plan_prints_every_node_command_in_start_order(
    served: DaemonProcess, boxes: tuple[Path, Path]
) -> None:
    four, _ = boxes
    done = cli.roundhouse(
        served, "engines", "across", "vllm", "-m", MODEL,
        "--node", "gpu-a@192.168.1.10", "--node", "gpu-b@192.168.1.11",
        "--hardware", f"gpu-a={four}", "--hardware", f"gpu-b={four}",
        "--interface", "gpu-b=enp5s0", "--port", "41010", "--plan",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "tensor parallel 4 (NVIDIA H100 80GB HBM3) x pipeline parallel 2" in out
    lines = out.splitlines()
    head = lines.index("# node 0 (head): gpu-a at 192.168.1.10")
    follower = lines.index("# node 1 (follower): gpu-b at 192.168.1.11")
    assert head < follower
    assert lines[head + 1].startswith("VLLM_HOST_IP=192.168.1.10 vllm serve " + MODEL)
    assert (
        "--nnodes 2 --node-rank 0 --master-addr 192.168.1.10 --master-port 29501" in lines[head + 1]
    )
    assert lines[follower + 1].startswith(
        "GLOO_SOCKET_IFNAME=enp5s0 NCCL_SOCKET_IFNAME=enp5s0 VLLM_HOST_IP=192.168.1.11 vllm serve"
    )
    assert lines[follower + 1].endswith("--node-rank 1 --master-addr 192.168.1.10 "
                                        "--master-port 29501 --headless")  # fmt: skip

    as_json = cli.roundhouse(
        served, "engines", "across", "vllm", "-m", MODEL, "--executor", "ray",
        "--node", "a@10.0.0.1", "--node", "b@10.0.0.2",
        "--hardware", f"a={four}", "--hardware", f"b={four}", "--plan", "--json",
    )  # fmt: skip
    plan = json.loads(as_json.stdout)
    assert [n["argv"] == [] for n in plan["nodes"]] == [False, True]
    assert plan["nodes"][1]["ray_command"][:2] == ["ray", "start"]


def test_refusals_come_in_words(served: DaemonProcess, boxes: tuple[Path, Path]) -> None:
    four, two = boxes
    differ = cli.roundhouse(
        served, "engines", "across", "vllm", "-m", MODEL,
        "--node", "a@10.0.0.1", "--node", "b@10.0.0.2", "--node", "c@10.0.0.3",
        "--hardware", f"a={four}", "--hardware", f"b={two}", "--hardware", f"c={four}",
        "--without-model", "c", "--plan",
    )  # fmt: skip
    assert differ.returncode == 1
    assert "The nodes differ in GPU kind or count" in differ.stderr
    assert "c does not have the model" in differ.stderr
    assert "Traceback" not in differ.stderr

    # A node without --hardware is this machine, which has no CUDA or ROCm GPU.
    here = cli.roundhouse(
        served, "engines", "across", "vllm", "-m", MODEL,
        "--node", "here@10.0.0.1", "--node", "b@10.0.0.2", "--hardware", f"b={four}", "--plan",
    )  # fmt: skip
    assert here.returncode == 1
    assert "here has no CUDA or ROCm GPU" in here.stderr

    bad = cli.roundhouse(served, "engines", "across", "vllm", "-m", MODEL, "--node", "x", "--plan")
    assert bad.returncode == 1 and "--node takes NAME@ADDRESS" in bad.stderr
    nofile = cli.roundhouse(
        served, "engines", "across", "vllm", "-m", MODEL,
        "--node", "a@10.0.0.1", "--hardware", "a=/nowhere.json", "--plan",
    )  # fmt: skip
    assert nofile.returncode == 1 and "cannot be read from /nowhere.json" in nofile.stderr
    started = cli.roundhouse(
        served, "engines", "across", "vllm", "-m", MODEL, "--node", "a@10.0.0.1"
    )
    assert started.returncode == 1 and "add --plan" in started.stderr
