"""The vLLM stand-in across nodes, as real processes: its checks of the node flags, the head
that waits for every follower, and each side ending when the other goes."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import httpx
import pytest

from tests.fakes.ollama import REPO_ROOT
from tests.processes import free_port

STANDIN = [sys.executable, "-m", "tests.fakes.openai_engines", "vllm", "serve", "org/m"]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*STANDIN, *args], cwd=REPO_ROOT, capture_output=True, text=True, timeout=30
    )


def spawn(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*STANDIN, *args], cwd=REPO_ROOT, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL,
        text=True,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("--nnodes", "2", "--node-rank", "0", "--headless"), "--headless is for the other"),
        (("--nnodes", "2", "--node-rank", "2", "--headless"), "--node-rank 2 must be in [0, 2)"),
        (("--nnodes", "2", "--node-rank", "1"), "node rank 1 runs --headless"),
        (
            ("--nnodes", "2", "--distributed-executor-backend", "ray"),
            "nnodes > 1 can only be set when distributed executor backend is mp",
        ),
        (("--nnodes", "2", "-tp", "3", "-pp", "1"), "world size 3 (-tp 3 x -pp 1) does not"),
    ],
)
def test_inconsistent_node_flags_are_refused(args: tuple[str, ...], words: str) -> None:
    done = run(*args)
    assert done.returncode == 2
    assert words in done.stderr


def test_the_head_serves_once_every_follower_joined_and_ends_when_one_goes() -> None:
    port, master = free_port(), free_port()
    node = ("--port", str(port), "-tp", "1", "-pp", "3", "--nnodes", "3",
            "--master-port", str(master), "--load-seconds", "0.1")  # fmt: skip
    head = spawn(*node, "--node-rank", "0")
    followers = [spawn(*node, "--node-rank", str(r), "--headless") for r in (1,)]
    try:
        time.sleep(1.0)
        # Two of three nodes: the head still waits, its API closed.
        with pytest.raises(httpx.ConnectError):
            httpx.get(f"http://127.0.0.1:{port}/health", timeout=1, trust_env=False)
        followers.append(spawn(*node, "--node-rank", "2", "--headless"))
        deadline = time.monotonic() + 15
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1, trust_env=False):
                    break
            except httpx.HTTPError:
                assert time.monotonic() < deadline, "the head never opened its API"
                time.sleep(0.1)
        followers[0].send_signal(signal.SIGKILL)
        assert head.wait(timeout=15) == 1
        assert followers[1].wait(timeout=15) == 1  # its head went away
    finally:
        for proc in (head, *followers):
            if proc.poll() is None:
                proc.kill()
            proc.wait()
    assert head.stderr is not None and followers[1].stderr is not None
    assert "the workers of node rank 1 died" in head.stderr.read()
    assert "the head node went away" in followers[1].stderr.read()


def test_a_follower_alone_gives_up_after_its_join_timeout() -> None:
    done = run("--nnodes", "2", "--node-rank", "1", "--headless", "-pp", "2", "--master-port",
               str(free_port()), "--join-timeout", "0.5")  # fmt: skip
    assert done.returncode == 1
    assert "could not reach the head node" in done.stderr


def test_a_follower_stopped_by_a_signal_exits_cleanly() -> None:
    follower = spawn("--nnodes", "2", "--node-rank", "1", "--headless", "-pp", "2",
                     "--master-port", str(free_port()))  # fmt: skip
    time.sleep(1.0)
    follower.send_signal(signal.SIGTERM)
    assert follower.wait(timeout=10) == 0
    assert follower.stderr is not None
    follower.stderr.close()
