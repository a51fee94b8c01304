"""llama.cpp RPC across paired machines (ADR 40): two real daemons paired on loopback, alpha lends
its rpc-server, beta runs llama-server over it through the mutual-TLS tunnel. The greedy output
is one machine's, and stopping the instance leaves nothing running on alpha."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx
import psutil

from tests.daemon_process import DaemonProcess, path_with
from tests.integration.test_rpc_split import PROMPT, TOKENS, rpc_pids
from tests.processes import alive, assert_nothing_left
from tests.support import cli
from tests.support.peers import pair, peer_daemon

OPTIONS: dict[str, Any] = {"ctx_size": 512, "parallel": 1, "threads": 1}


def wait_ready(daemon: DaemonProcess, instance_id: str, timeout_s: float = 180) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    with daemon.control() as api:
        while True:
            info: dict[str, Any] = api.get(f"/api/v1/instances/{instance_id}").json()
            if info["status"] in ("ready", "failed"):
                assert info["status"] == "ready", info
                return info
            assert time.monotonic() < deadline, info
            time.sleep(0.5)


def complete(daemon: DaemonProcess, info: dict[str, Any]) -> str:
    body = {
        "prompt": PROMPT,
        "n_predict": TOKENS,
        "temperature": 0,
        "seed": 42,
        "top_k": 1,
        "cache_prompt": False,
    }
    answer = httpx.post(
        f"{info['base_url'].removesuffix('/v1')}/completion",
        json=body,
        headers=daemon.engine_headers(info["id"]),
        timeout=120,
        trust_env=False,
    )
    assert answer.status_code == 200, answer.text
    text: str = answer.json()["content"]
    return text


def lent(daemon: DaemonProcess) -> list[dict[str, Any]]:
    with daemon.control() as api:
        workers: list[dict[str, Any]] = api.get("/api/v1/rpc-servers").json()["rpc_servers"]
    return workers


def listening(pid: int) -> set[tuple[str, int]]:
    return {
        (c.laddr.ip, c.laddr.port)
        for c in psutil.Process(pid).net_connections("inet")
        if c.status == psutil.CONN_LISTEN
    }


def test_a_model_split_across_a_paired_machine_answers_as_one_and_leaves_nothing(
    llama_server_binary: Path, rpc_server_binary: Path, tiny_gguf: Path, tmp_path: Path
) -> None:
    env = path_with(llama_server_binary)
    before = set(rpc_pids(rpc_server_binary))
    with (
        peer_daemon(tmp_path / "alpha", "alpha", env=env) as alpha,
        peer_daemon(tmp_path / "beta", "beta", env=env) as beta,
    ):
        pair(beta, alpha)
        with beta.control() as api:
            made = api.post(
                "/api/v1/instances",
                json={"engine": "llama.cpp", "options": {"model": str(tiny_gguf), **OPTIONS}},
            )
            assert made.status_code == 202, made.text
            one = wait_ready(beta, made.json()["id"])
            alone = complete(beta, one)
            assert api.delete(f"/api/v1/instances/{one['id']}").status_code == 200
        assert alone.strip(), "the model said nothing"
        alpha_listens_before = listening(alpha.process.pid)

        # From the CLI: the paired machine by name.
        started = cli.roundhouse(
            beta,
            "engines",
            "start",
            "llama.cpp",
            "-m",
            str(tiny_gguf),
            "-c",
            "512",
            "-np",
            "1",
            "-t",
            "1",
            "--across",
            "alpha",
        )
        assert started.returncode == 0, started.stderr
        # The tiny model fits here, and the CLI says a split would be slower.
        assert "one machine is faster than a split" in started.stderr, started.stderr
        instance_id = started.stdout.split("Instance ")[1].split()[0]
        info = wait_ready(beta, instance_id)
        assert info["options"]["across"] == ["alpha"]

        # alpha runs one rpc-server, on its loopback only, for beta.
        (worker,) = lent(alpha)
        assert worker["host"] == "127.0.0.1" and worker["owner"].startswith("peer:")
        assert listening(worker["pid"]) == {("127.0.0.1", worker["port"])}
        # alpha's daemon now listens on one more port (the relay), on the agreed address.
        relays = listening(alpha.process.pid) - alpha_listens_before
        assert len(relays) == 1 and next(iter(relays))[0] == "127.0.0.1", relays
        # beta's llama-server reaches it through beta's loopback relay, never directly.
        engine_argv = psutil.Process(info["pid"]).cmdline()
        rpc = engine_argv[engine_argv.index("--rpc") + 1]
        assert rpc.startswith("127.0.0.1:") and rpc != f"127.0.0.1:{worker['port']}"

        across = complete(beta, info)
        assert across == alone

        stopped = cli.roundhouse(beta, "engines", "stop", instance_id)
        assert stopped.returncode == 0, stopped.stderr
        assert lent(alpha) == []
        assert not alive(worker["pid"])
        assert listening(alpha.process.pid) == alpha_listens_before
        assert_nothing_left(info["pid"], info["pid"], worker["pid"])
    assert set(rpc_pids(rpc_server_binary)) <= before


def test_a_machine_not_paired_is_refused_in_words(
    llama_server_binary: Path, tiny_gguf: Path, tmp_path: Path
) -> None:
    with peer_daemon(tmp_path / "beta", "beta", env=path_with(llama_server_binary)) as beta:
        started = cli.roundhouse(
            beta, "engines", "start", "llama.cpp", "-m", str(tiny_gguf), "--across", "gamma"
        )
        assert started.returncode != 0
        assert "'gamma' is not a paired machine" in started.stderr, started.stderr
        assert "Traceback" not in started.stderr


def test_a_head_that_dies_leaves_nothing_lent_on_the_other_machine(
    llama_server_binary: Path, rpc_server_binary: Path, tiny_gguf: Path, tmp_path: Path
) -> None:
    """The head's daemon is killed (its relays go with it): the lender sees the connections
    end and, after its grace time, stops the rpc-server and closes the relay by itself."""
    env = path_with(llama_server_binary)
    before = set(rpc_pids(rpc_server_binary))
    with (
        peer_daemon(tmp_path / "alpha", "alpha", env=env) as alpha,
        peer_daemon(tmp_path / "beta", "beta", env=env) as beta,
    ):
        pair(beta, alpha)
        alpha_listens_before = listening(alpha.process.pid)
        options = {
            "model": str(tiny_gguf),
            **OPTIONS,
            "n_gpu_layers": "all",
            "tensor_split": [1.0],
            "across": ["alpha"],
        }
        with beta.control() as api:
            made = api.post("/api/v1/instances", json={"engine": "llama.cpp", "options": options})
        assert made.status_code == 202, made.text
        info = wait_ready(beta, made.json()["id"])
        engine_argv = psutil.Process(info["pid"]).cmdline()
        at = engine_argv.index("--rpc")
        # The split given is kept, after the relay's address.
        assert engine_argv[at + 2 : at + 4] == ["--tensor-split", "1"], engine_argv
        assert complete(beta, info).strip()
        (worker,) = lent(alpha)

        beta.process.kill()
        beta.process.wait(10)
        # Orphaned by its dead daemon: ended here, so the test leaves nothing behind.
        psutil.Process(info["pid"]).kill()
        deadline = time.monotonic() + 60
        while lent(alpha) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert lent(alpha) == []
        assert not alive(worker["pid"])
        assert listening(alpha.process.pid) == alpha_listens_before
    assert set(rpc_pids(rpc_server_binary)) <= before
