"""A real llama.cpp RPC split on loopback: two rpc-servers started with the instance, llama-server
with --rpc, the same greedy output as one machine, and nothing left once it stops or fails."""

from __future__ import annotations

import asyncio
import gc
import json
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest

from roundhouse.api.engines import DetectedEngine, EngineId, FoundBy, LaunchParams
from roundhouse.core.engines.catalog import load_catalog
from roundhouse.core.engines.rpc import RpcAddress
from roundhouse.core.errors import InvalidInputError
from roundhouse.core.instances import InstanceManager, OnLeftover
from roundhouse.core.instances.rpc_workers import RpcWorkers
from roundhouse.core.supervise import EngineExitedError
from roundhouse.core.supervise.errors import PortTakenError
from tests.daemon_process import DaemonProcess
from tests.processes import alive, assert_nothing_left, free_port
from tests.support import cli

PROMPT = "The quick brown fox"
TOKENS = 24


def detected(llama_server: Path, rpc_server: Path | None) -> DetectedEngine:
    return DetectedEngine(
        id=EngineId.LLAMA_CPP,
        found_by=FoundBy.PATH,
        path=str(llama_server),
        rpc_server=str(rpc_server) if rpc_server else None,
        where="test build",
    )


def manager(root: Path) -> InstanceManager:
    return InstanceManager(root / "state", root / "logs", on_leftover="reap", ready_timeout_s=120)


async def complete(base_url: str, key: str) -> str:
    """The model's greedy continuation: temperature 0, a fixed seed, one slot."""
    body = {
        "prompt": PROMPT,
        "n_predict": TOKENS,
        "temperature": 0,
        "seed": 42,
        "top_k": 1,
        "cache_prompt": False,
    }
    headers = {"authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(trust_env=False, timeout=120) as http:
        answer = await http.post(f"{base_url}/completion", json=body, headers=headers)
    assert answer.status_code == 200, answer.text
    text: str = answer.json()["content"]
    return text


def rpc_pids(binary: Path) -> list[int]:
    """Every running process of this rpc-server binary (none may outlive its instance)."""
    found = []
    for proc in psutil.process_iter(["exe", "status"]):
        if proc.info["exe"] == str(binary) and proc.info["status"] != psutil.STATUS_ZOMBIE:
            found.append(proc.pid)
    return found


def test_split_over_two_rpc_servers_answers_as_one_machine_and_leaves_nothing(
    llama_server_binary: Path, rpc_server_binary: Path, tiny_gguf: Path, home_root: Path
) -> None:
    spec = load_catalog().spec(EngineId.LLAMA_CPP)
    engine = detected(llama_server_binary, rpc_server_binary)
    before = set(rpc_pids(rpc_server_binary))

    async def main() -> tuple[str, str, list[int], int]:
        instances = manager(home_root)
        alone_params = LaunchParams(
            model=str(tiny_gguf), port=free_port(), ctx_size=512, parallel=1, threads=1
        )
        one = await instances.start(spec, engine, alone_params)
        try:
            alone = await complete(one.record.base_url, instances.engine_key(one.id))
        finally:
            await instances.stop(one.id)
        workers = (f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}")
        split = alone_params.model_copy(
            update={
                "port": free_port(),
                "n_gpu_layers": "all",
                "rpc": workers,
                "tensor_split": (1.0, 1.0),
                # Info level: llama-server names each device's buffers after the load.
                "memory_report": True,
            }
        )
        instance = await instances.start(spec, engine, split)
        try:
            owned = instances.rpc_workers.list(owner=instance.id)
            assert sorted(str(w.address) for w in owned) == sorted(workers)
            worker_pids = [w.pid for w in owned]
            assert all(alive(pid) for pid in worker_pids)
            argv = instance.record.argv
            at = argv.index("--rpc")
            assert argv[at : at + 4] == ("--rpc", ",".join(workers), "--tensor-split", "1,1")
            # Each worker offered this machine's CPU and said how much it had free.
            assert all(w.free_bytes and w.free_bytes > 0 for w in owned)
            across = await complete(instance.record.base_url, instances.engine_key(instance.id))
            # llama-server put the model's layers on the two RPC devices.
            assert instance.engine is not None
            log = "\n".join(instance.engine.process.log.tail(500))
            assert all(f"[{w}]" in log for w in workers), log[-3000:]
        finally:
            await instances.stop(instance.id)
        assert instances.rpc_workers.list() == []
        return alone, across, worker_pids, instance.pid

    alone, across, worker_pids, engine_pid = asyncio.run(main())
    assert alone.strip(), "the model said nothing"
    assert across == alone
    assert_nothing_left(engine_pid, engine_pid, *worker_pids)
    assert set(rpc_pids(rpc_server_binary)) <= before


def test_a_failed_start_stops_the_workers_it_started(
    llama_server_binary: Path, rpc_server_binary: Path, tmp_path: Path, home_root: Path
) -> None:
    bogus = tmp_path / "not a model.gguf"
    bogus.write_bytes(b"PK\x03\x04" + b"\0" * 4096)
    spec = load_catalog().spec(EngineId.LLAMA_CPP)
    engine = detected(llama_server_binary, rpc_server_binary)
    before = set(rpc_pids(rpc_server_binary))
    instances = manager(home_root)
    workers = (f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}")
    params = LaunchParams(model=str(bogus), port=free_port(), ctx_size=512, rpc=workers)
    with pytest.raises(EngineExitedError):
        asyncio.run(instances.start(spec, engine, params))
    assert instances.rpc_workers.list() == [] and instances.list() == []
    assert set(rpc_pids(rpc_server_binary)) <= before


def test_a_build_without_rpc_server_is_refused_in_words(
    llama_server_binary: Path, tiny_gguf: Path, home_root: Path
) -> None:
    spec = load_catalog().spec(EngineId.LLAMA_CPP)
    params = LaunchParams(model=str(tiny_gguf), port=free_port(), rpc=(f"127.0.0.1:{free_port()}",))
    with pytest.raises(InvalidInputError, match="has no rpc-server beside it"):
        asyncio.run(manager(home_root).start(spec, detected(llama_server_binary, None), params))


def test_a_worker_binds_its_address_only_and_refuses_every_interface(
    rpc_server_binary: Path, tmp_path: Path
) -> None:
    async def main() -> None:
        workers = RpcWorkers(tmp_path)
        port = free_port()
        with pytest.raises(InvalidInputError, match="never bound to every interface"):
            await workers.start(str(rpc_server_binary), RpcAddress("0.0.0.0", port), owner="t")
        # TEST-NET-3 (RFC 5737): an address no machine of ours has.
        with pytest.raises(InvalidInputError, match=r"This machine has no address 203\.0\.113\.9"):
            await workers.start(str(rpc_server_binary), RpcAddress("203.0.113.9", port), owner="t")
        worker = await workers.start(
            str(rpc_server_binary), RpcAddress("127.0.0.1", port), owner="peer-a"
        )
        try:
            listening = [
                c.laddr
                for c in psutil.Process(worker.pid).net_connections("inet")
                if c.status == psutil.CONN_LISTEN
            ]
            assert [(a.ip, a.port) for a in listening] == [("127.0.0.1", port)]
            with pytest.raises(PortTakenError):
                await RpcWorkers(tmp_path).start(
                    str(rpc_server_binary), RpcAddress("127.0.0.1", port), owner="other"
                )
        finally:
            await workers.stop_owned("peer-a")
        assert workers.list() == []
        assert_nothing_left(worker.pid, worker.pid)

    asyncio.run(main())


def listed_workers(api: httpx.Client) -> list[dict[str, Any]]:
    answer = api.get("/api/v1/rpc-servers")
    assert answer.status_code == 200, answer.text
    workers: list[dict[str, Any]] = answer.json()["rpc_servers"]
    return workers


def test_the_daemon_runs_workers_for_a_peer_and_splits_from_the_cli(
    llama_daemon: DaemonProcess, rpc_server_binary: Path, tiny_gguf: Path
) -> None:
    before = set(rpc_pids(rpc_server_binary))
    # Detection reports the worker beside llama-server.
    listed = cli.roundhouse(llama_daemon, "engines", columns=400, no_color=True)
    assert listed.returncode == 0, listed.stderr
    assert "rpc-server beside it" in listed.stdout, listed.stdout
    with llama_daemon.control() as api:
        wide = api.post("/api/v1/rpc-servers", json={"host": "0.0.0.0", "port": free_port()})
        assert wide.status_code == 422
        assert "never bound to every interface" in wide.json()["detail"]
        port = free_port()
        made = api.post(
            "/api/v1/rpc-servers", json={"host": "127.0.0.1", "port": port, "owner": "peer-b"}
        )
        assert made.status_code == 201, made.text
        worker = made.json()
        assert worker["address"] == f"127.0.0.1:{port}" and alive(worker["pid"])
        assert [w["id"] for w in listed_workers(api)] == [worker["id"]]

        # The split the fit estimate proposes with what the worker has free: the tiny model
        # fits here, so it says one machine is faster.
        proposal = api.post(
            "/api/v1/rpc-servers/split",
            json={
                "fit": {"path": str(tiny_gguf)},
                "workers": [{"address": worker["address"], "free_bytes": worker["free_bytes"]}],
            },
        )
        assert proposal.status_code == 200, proposal.text
        split = proposal.json()
        assert [s["machine"] for s in split["shares"]] == ["this machine", worker["address"]]
        assert split["fits"]
        assert "one machine is faster" in split["slower"] or "not speed" in split["slower"]

        # From the CLI: a split over that worker and one the daemon starts with the instance.
        own = f"127.0.0.1:{free_port()}"
        started = cli.roundhouse(
            llama_daemon,
            "engines",
            "start",
            "llama.cpp",
            "-m",
            str(tiny_gguf),
            "-c",
            "512",
            "-np",
            "1",
            "-ngl",
            "all",
            "--rpc",
            f"127.0.0.1:{port},{own}",
            "--split",
            "1,1",
        )
        assert started.returncode == 0, started.stderr
        # The fit estimate is this machine's alone, and says so.
        assert "This machine alone; split with 2 RPC workers" in started.stderr, started.stderr
        instance_id = started.stdout.split("Instance ")[1].split()[0]
        instance = api.get(f"/api/v1/instances/{instance_id}").json()
        assert instance["status"] == "ready"
        assert instance["options"]["rpc"] == [f"127.0.0.1:{port}", own]
        running = listed_workers(api)
        assert sorted(w["address"] for w in running) == sorted([f"127.0.0.1:{port}", own])
        started_with = next(w for w in running if w["address"] == own)
        assert started_with["owner"] == instance["id"]

        stopped = cli.roundhouse(llama_daemon, "engines", "stop", instance["id"])
        assert stopped.returncode == 0, stopped.stderr
        # The instance's own worker went with it; the peer's stays until asked.
        assert [w["id"] for w in listed_workers(api)] == [worker["id"]]
        assert not alive(started_with["pid"]) and alive(worker["pid"])
        gone = api.delete(f"/api/v1/rpc-servers/{worker['id']}")
        assert gone.status_code == 200, gone.text
        assert listed_workers(api) == []

        # The same from the CLI: a worker bound to one address, listed, stopped; every
        # interface refused in words.
        wide_cli = cli.roundhouse(llama_daemon, "engines", "rpc-server", "start", "0.0.0.0:5")
        assert wide_cli.returncode != 0
        assert "never bound to every interface" in wide_cli.stderr, wide_cli.stderr
        assert "Traceback" not in wide_cli.stderr
        address = f"127.0.0.1:{free_port()}"
        lent = cli.roundhouse(llama_daemon, "engines", "rpc-server", "start", address)
        assert lent.returncode == 0, lent.stderr
        assert f"listens on {address}" in lent.stdout and "no authentication" in lent.stderr
        table = cli.roundhouse(llama_daemon, "engines", "rpc-server", "list", "--json")
        (cli_worker,) = json.loads(table.stdout)["rpc_servers"]
        assert cli_worker["address"] == address and cli_worker["owner"] == "cli"
        ended = cli.roundhouse(llama_daemon, "engines", "rpc-server", "stop", cli_worker["id"])
        assert ended.returncode == 0 and f"Stopped the RPC worker on {address}" in ended.stdout
        assert not alive(cli_worker["pid"]) and listed_workers(api) == []
    assert_nothing_left(worker["pid"], worker["pid"], started_with["pid"])
    assert set(rpc_pids(rpc_server_binary)) <= before


@pytest.mark.parametrize("on_leftover", ["reap", "adopt"])
def test_workers_a_dead_daemon_left_are_ended_or_kept_with_their_instance(
    llama_server_binary: Path,
    rpc_server_binary: Path,
    tiny_gguf: Path,
    home_root: Path,
    on_leftover: OnLeftover,
) -> None:
    spec = load_catalog().spec(EngineId.LLAMA_CPP)
    engine = detected(llama_server_binary, rpc_server_binary)
    before = set(rpc_pids(rpc_server_binary))

    async def crash() -> tuple[str, int, list[int]]:
        """Start a split instance, then drop the manager without stopping anything."""
        first = manager(home_root)
        params = LaunchParams(
            model=str(tiny_gguf),
            port=free_port(),
            ctx_size=512,
            n_gpu_layers="all",
            rpc=(f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}"),
        )
        instance = await first.start(spec, engine, params)
        return instance.id, instance.pid, [w.pid for w in first.rpc_workers.list()]

    instance_id, engine_pid, worker_pids = asyncio.run(crash())
    gc.collect()
    assert alive(engine_pid) and all(alive(pid) for pid in worker_pids)

    async def next_daemon() -> None:
        second = InstanceManager(home_root / "state", home_root / "logs", on_leftover=on_leftover)
        await second.recover()
        if on_leftover == "reap":
            assert second.rpc_workers.list() == []
            return
        # Adopted: its workers serve on with it, and go when it is stopped.
        kept = second.rpc_workers.list(owner=instance_id)
        assert sorted(w.pid for w in kept) == sorted(worker_pids)
        assert all(alive(pid) for pid in worker_pids)
        await second.stop(instance_id)
        assert second.rpc_workers.list() == []

    asyncio.run(next_daemon())
    assert_nothing_left(engine_pid, engine_pid, *worker_pids)
    assert set(rpc_pids(rpc_server_binary)) <= before
