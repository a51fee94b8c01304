"""The llama.cpp RPC split's tokens/s against one machine, on the tiny model over loopback.

One run of each: llama-server alone, then llama-server with two rpc-servers holding the
model's layers. The figure is the ratio (split / alone); loopback has no network to speak
of, so what it shows is the cost of the RPC round trips per token, not of a LAN.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from roundhouse.api.engines import DetectedEngine, EngineId, FoundBy, LaunchParams
from roundhouse.core.engines.catalog import load_catalog
from roundhouse.core.instances import InstanceManager
from tests.processes import free_port

TOKENS = 128


async def _tokens_per_s(base_url: str, key: str) -> float:
    body = {
        "prompt": "Once upon a time",
        "n_predict": TOKENS,
        "temperature": 0,
        "seed": 42,
        "cache_prompt": False,
        # The tiny random model may end early: ask for every token.
        "ignore_eos": True,
    }
    headers = {"authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(trust_env=False, timeout=300) as http:
        # A first short request warms the engine (and the workers' graphs) up.
        warm = {**body, "n_predict": 4}
        (await http.post(f"{base_url}/completion", json=warm, headers=headers)).raise_for_status()
        answer = await http.post(f"{base_url}/completion", json=body, headers=headers)
    answer.raise_for_status()
    timings = answer.json()["timings"]
    speed: float = timings["predicted_per_second"]
    return speed


@pytest.mark.perf
def test_rpc_split_tokens_per_second_against_one_machine(
    llama_server_binary: Path,
    rpc_server_binary: Path,
    tiny_gguf: Path,
    tmp_path: Path,
    report: Any,
) -> None:
    spec = load_catalog().spec(EngineId.LLAMA_CPP)
    engine = DetectedEngine(
        id=EngineId.LLAMA_CPP,
        found_by=FoundBy.PATH,
        path=str(llama_server_binary),
        rpc_server=str(rpc_server_binary),
        where="test build",
    )
    alone = LaunchParams(model=str(tiny_gguf), port=free_port(), ctx_size=512, parallel=1)
    workers = (f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}")
    split = alone.model_copy(
        update={
            "port": free_port(),
            "n_gpu_layers": "all",
            "rpc": workers,
            "tensor_split": (1.0, 1.0),
        }
    )

    async def measure(params: LaunchParams) -> float:
        instances = InstanceManager(
            tmp_path / "state", tmp_path / "logs", on_leftover="reap", ready_timeout_s=120
        )
        instance = await instances.start(spec, engine, params)
        try:
            return await _tokens_per_s(instance.record.base_url, instances.engine_key(instance.id))
        finally:
            await instances.stop(instance.id)

    one = asyncio.run(measure(alone))
    across = asyncio.run(measure(split))
    ratio = across / one
    report.add("one_machine_tokens_per_s", round(one, 1))
    report.add("split_over_two_rpc_servers_tokens_per_s", round(across, 1))
    report.add("split_over_one_machine_ratio", round(ratio, 3))
    print(f"RPC split / one machine: {ratio:.3f} ({across:.1f} vs {one:.1f} tokens/s)")
    assert one > 0 and across > 0


def _started(daemon: Any, options: dict[str, Any]) -> dict[str, Any]:
    with daemon.control() as api:
        made = api.post("/api/v1/instances", json={"engine": "llama.cpp", "options": options})
        assert made.status_code == 202, made.text
        deadline = time.monotonic() + 180
        while True:
            info: dict[str, Any] = api.get(f"/api/v1/instances/{made.json()['id']}").json()
            if info["status"] in ("ready", "failed"):
                assert info["status"] == "ready", info
                return info
            assert time.monotonic() < deadline, info
            time.sleep(0.5)


def _stop(daemon: Any, instance_id: str) -> None:
    with daemon.control() as api:
        assert api.delete(f"/api/v1/instances/{instance_id}").status_code == 200


@pytest.mark.perf
def test_rpc_split_across_a_paired_machine_against_one_machine(
    llama_server_binary: Path,
    rpc_server_binary: Path,
    tiny_gguf: Path,
    tmp_path: Path,
    report: Any,
) -> None:
    """The same split, but the worker lent by a paired daemon (ADR 40): llama-server reaches
    it through this daemon's loopback relay and the lender's mutual-TLS relay. Alternated
    three times; the median of each."""
    from tests.daemon_process import path_with
    from tests.support.peers import pair, peer_daemon

    env = path_with(llama_server_binary)
    options = {"model": str(tiny_gguf), "ctx_size": 512, "parallel": 1, "n_gpu_layers": "all"}
    ones: list[float] = []
    directs: list[float] = []
    acrosses: list[float] = []
    with (
        peer_daemon(tmp_path / "alpha", "alpha", env=env) as alpha,
        peer_daemon(tmp_path / "beta", "beta", env=env) as beta,
    ):
        pair(beta, alpha)
        for _ in range(3):
            # One machine; an rpc-server on loopback reached directly (no tunnel); the
            # paired machine's through the tunnel.
            variants: tuple[tuple[dict[str, Any], list[float]], ...] = (
                ({}, ones),
                ({"rpc": [f"127.0.0.1:{free_port()}"]}, directs),
                ({"across": ["alpha"]}, acrosses),
            )
            for extra, into in variants:
                info = _started(beta, {**options, **extra})
                try:
                    base = info["base_url"].removesuffix("/v1")
                    key = beta.engine_headers(info["id"])["authorization"].split()[-1]
                    into.append(asyncio.run(_tokens_per_s(base, key)))
                finally:
                    _stop(beta, info["id"])
    one, direct = statistics.median(ones), statistics.median(directs)
    across_speed = statistics.median(acrosses)
    ratio = across_speed / one
    report.add("one_machine_tokens_per_s", round(one, 1))
    report.add("split_direct_loopback_tokens_per_s", round(direct, 1))
    report.add("split_across_paired_machine_tokens_per_s", round(across_speed, 1))
    report.add("split_across_paired_machine_over_one_machine_ratio", round(ratio, 3))
    report.add("tunnel_over_direct_split_ratio", round(across_speed / direct, 3))
    print(
        f"RPC split across a paired machine (mutual-TLS tunnel) / one machine: {ratio:.3f} "
        f"({across_speed:.1f} vs {one:.1f} tokens/s; the same split without the tunnel "
        f"{direct:.1f}, tunnel / direct {across_speed / direct:.3f})"
    )
    assert one > 0 and across_speed > 0
