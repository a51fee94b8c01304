"""The llama.cpp RPC split's tokens/s against one machine, on the tiny model over loopback.

One run of each: llama-server alone, then llama-server with two rpc-servers holding the
model's layers. The figure is the ratio (split / alone); loopback has no network to speak
of, so what it shows is the cost of the RPC round trips per token, not of a LAN.
"""

from __future__ import annotations

import asyncio
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
