"""Instances through a real daemon process and the real llama-server: start, serve, logs,
presets, a taken port, a bad model, a daemon killed with engines running, a clean stop."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import psutil
import pytest

from roundhouse.api.engines import EngineId, InstanceOptions
from roundhouse.api.instances import (
    InstanceInfo,
    InstanceOrigin,
    InstanceStatus,
    Preset,
    StartRequest,
)
from roundhouse.api.settings import EngineSettings, LeftoverAction, Settings
from roundhouse.base.paths import resolve_home
from roundhouse.client import ApiError, DaemonClient
from roundhouse.core.infra.settings import save_settings
from tests.daemon_process import (
    DaemonProcess,
    path_with,
    running_daemon,
    start_daemon,
    wait_settled,
)
from tests.processes import alive, assert_nothing_left

READY_TIMEOUT_S = 60.0


@pytest.fixture
def odd_model(tiny_gguf: Path, tmp_path: Path) -> Path:
    """The tiny model under a path with Cyrillic, CJK and a space."""
    folder = tmp_path / "модели 模型"
    folder.mkdir()
    path = folder / "tiny llama.gguf"
    shutil.copy(tiny_gguf, path)
    return path


@pytest.fixture
def served(llama_server_binary: Path, tmp_path: Path) -> Iterator[DaemonProcess]:
    with running_daemon(tmp_path / "home", env=path_with(llama_server_binary)) as daemon:
        yield daemon


def _ours(instances: list[InstanceInfo]) -> list[InstanceInfo]:
    """Leave out engines found running on this machine (other tests' or the user's)."""
    return [i for i in instances if i.origin != InstanceOrigin.EXTERNAL]


def _client(daemon: DaemonProcess) -> DaemonClient:
    return DaemonClient(daemon.url, daemon.token)


async def _wait_settled(client: DaemonClient, instance_id: str) -> InstanceInfo:
    return await wait_settled(client, instance_id, READY_TIMEOUT_S)


def _start(model: Path, **options: object) -> StartRequest:
    return StartRequest(
        engine=EngineId.LLAMA_CPP,
        options=InstanceOptions(model=str(model), ctx_size=512, parallel=1, **options),  # type: ignore[arg-type]
    )


def test_start_chat_logs_stop_through_the_daemon(served: DaemonProcess, odd_model: Path) -> None:
    async def main() -> None:
        async with _client(served) as client:
            started = await client.start_instance(_start(odd_model))
            assert started.status in (InstanceStatus.STARTING, InstanceStatus.LOADING)
            assert started.origin == InstanceOrigin.STARTED
            info = await _wait_settled(client, started.id)
            assert info.status == InstanceStatus.READY, info
            assert info.pid is not None and info.rss_bytes and info.rss_bytes > 0
            assert info.models and info.base_url.endswith("/v1")
            assert str(odd_model) in info.argv

            # Through the daemon's gateway: the engine itself answers only its instance's key.
            async with httpx.AsyncClient(trust_env=False, timeout=30) as http:
                reply = await http.post(
                    f"{served.url}/v1/chat/completions",
                    json={
                        "model": info.models[0],
                        "messages": [{"role": "user", "content": "hi"}],
                        "max_tokens": 8,
                    },
                )
                assert reply.status_code == 200, reply.text
                assert reply.json()["usage"]["completion_tokens"] > 0
                refused = await http.get(info.base_url.removesuffix("/v1") + "/metrics")
                assert refused.status_code == 401, refused.text

            metrics = await client.instance_metrics(info.id)
            assert metrics.values["llamacpp:tokens_predicted_total"] > 0

            logs = await client.instance_logs(info.id)
            assert logs.lines and logs.next == len(logs.lines)
            more = await client.instance_logs(info.id, since=logs.next)
            assert more.next >= logs.next and not more.truncated
            assert more.generation == logs.generation == 1

            listed = await client.instances()
            assert [i.id for i in _ours(listed.instances)] == [info.id]

            pid = info.pid
            stopped = await client.stop_instance(info.id)
            assert stopped.last_exit is not None and stopped.last_exit.by_us
            assert_nothing_left(pid, pid)
            assert _ours((await client.instances()).instances) == []
            with pytest.raises(ApiError) as missing:
                await client.instance(info.id)
            assert missing.value.problem.status == 404

    asyncio.run(main())


def test_presets_are_saved_per_model_and_start_an_instance(
    served: DaemonProcess, tiny_gguf: Path
) -> None:
    async def main() -> None:
        async with _client(served) as client:
            preset = Preset(
                engine=EngineId.LLAMA_CPP,
                model=str(tiny_gguf),
                name="small context",
                options=InstanceOptions(ctx_size=256, parallel=1, threads=1),
            )
            saved = await client.save_preset(preset)
            assert saved.options.model == str(tiny_gguf)
            found = await client.presets(engine="llama.cpp", model=str(tiny_gguf))
            assert [p.name for p in found.presets] == ["small context"]

            started = await client.start_instance(
                StartRequest(
                    engine=EngineId.LLAMA_CPP,
                    options=InstanceOptions(model=str(tiny_gguf)),
                    preset="small context",
                )
            )
            info = await _wait_settled(client, started.id)
            assert info.status == InstanceStatus.READY
            assert info.options is not None and info.options.ctx_size == 256
            assert "256" in info.argv
            await client.stop_instance(info.id)

            await client.delete_preset("llama.cpp", str(tiny_gguf), "small context")
            assert (await client.presets()).presets == []
            with pytest.raises(ApiError) as unknown:
                await client.start_instance(
                    StartRequest(
                        engine=EngineId.LLAMA_CPP,
                        options=InstanceOptions(model=str(tiny_gguf)),
                        preset="small context",
                    )
                )
            assert unknown.value.problem.status == 404

    asyncio.run(main())


def test_a_taken_port_is_refused_naming_its_owner(served: DaemonProcess, tiny_gguf: Path) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]

        async def main() -> None:
            async with _client(served) as client:
                request = _start(tiny_gguf).model_copy(update={"port": port})
                with pytest.raises(ApiError) as taken:
                    await client.start_instance(request)
                problem = taken.value.problem
                assert problem.status == 409
                assert str(port) in problem.detail
                assert str(os.getpid()) in problem.detail or "python" in problem.detail
                assert _ours((await client.instances()).instances) == []

        asyncio.run(main())


def test_a_bad_model_fails_with_the_reason_and_the_log(
    served: DaemonProcess, tmp_path: Path
) -> None:
    bogus = tmp_path / "not a model.gguf"
    bogus.write_bytes(b"GGUF" + os.urandom(2048))

    async def main() -> None:
        async with _client(served) as client:
            started = await client.start_instance(_start(bogus))
            info = await _wait_settled(client, started.id)
            assert info.status == InstanceStatus.FAILED
            assert info.last_exit is not None and info.last_exit.kind == "bad-model"
            assert info.last_exit.log_tail and info.error
            # Not transient: no crash loop.
            assert info.restarts == 0
            logs = await client.instance_logs(info.id)
            assert logs.lines
            dismissed = await client.stop_instance(info.id)
            assert dismissed.status == InstanceStatus.FAILED
            assert _ours((await client.instances()).instances) == []

    asyncio.run(main())


def test_an_engine_that_is_not_installed_is_named_with_how_to_install(
    served: DaemonProcess, tiny_gguf: Path
) -> None:
    async def main() -> None:
        async with _client(served) as client:
            with pytest.raises(ApiError) as missing:
                await client.start_instance(
                    StartRequest(engine=EngineId.VLLM, options=InstanceOptions(model="org/m"))
                )
            assert missing.value.problem.status == 404
            assert "roundhouse engines install vllm" in missing.value.problem.detail

    asyncio.run(main())


async def _start_two(client: DaemonClient, model: Path) -> list[InstanceInfo]:
    started = [await client.start_instance(_start(model)) for _ in range(2)]
    return [await _wait_settled(client, s.id) for s in started]


@pytest.mark.parametrize("leftover", [LeftoverAction.ADOPT, LeftoverAction.REAP])
def test_a_killed_daemon_leaves_engines_a_new_one_adopts_or_reaps(
    llama_server_binary: Path, tiny_gguf: Path, tmp_path: Path, leftover: LeftoverAction
) -> None:
    root = tmp_path / "home"
    home = resolve_home(root)
    home.ensure()
    save_settings(home.settings_file, Settings(engines=EngineSettings(on_leftover=leftover)))
    env = path_with(llama_server_binary)
    first = start_daemon(root, env=env)
    second: DaemonProcess | None = None
    pids: list[int] = []
    try:

        async def before() -> list[InstanceInfo]:
            async with _client(first) as client:
                return await _start_two(client, tiny_gguf)

        infos = asyncio.run(before())
        assert all(i.status == InstanceStatus.READY for i in infos), [
            (i.id, i.status, i.error, i.last_exit) for i in infos
        ]
        pids = [i.pid for i in infos if i.pid is not None]
        first.process.send_signal(signal.SIGKILL)
        first.process.wait(timeout=10)
        assert all(alive(pid) for pid in pids)

        second = start_daemon(root, env=env)

        async def after() -> list[InstanceInfo]:
            async with _client(second) as client:
                deadline = time.monotonic() + 30
                while time.monotonic() < deadline:
                    listed = _ours((await client.instances()).instances)
                    if leftover == LeftoverAction.REAP or listed:
                        # Starting waits for recovery, so a listing after a start is final.
                        break
                    await asyncio.sleep(0.1)
                return _ours((await client.instances()).instances)

        listed = asyncio.run(after())
        if leftover == LeftoverAction.ADOPT:
            assert sorted(i.pid for i in listed if i.pid) == sorted(pids)
            assert {i.origin for i in listed} == {InstanceOrigin.ADOPTED}
            assert {i.status for i in listed} == {InstanceStatus.READY}

            async def chat_and_logs() -> None:
                async with _client(second) as client:
                    logs = await client.instance_logs(listed[0].id)
                    assert logs.lines, "the log file of an adopted engine is shown"
                # The adopting daemon derives the engine's key: its gateway is served.
                async with httpx.AsyncClient(trust_env=False, timeout=30) as http:
                    reply = await http.post(
                        f"{second.url}/v1/chat/completions",
                        json={
                            "model": infos[0].models[0],
                            "messages": [{"role": "user", "content": "hi"}],
                            "max_tokens": 4,
                        },
                    )
                    assert reply.status_code == 200, reply.text

            asyncio.run(chat_and_logs())
            # A clean stop of the daemon takes its adopted engines with it.
            assert second.stop(timeout=60) == 0
        else:
            deadline = time.monotonic() + 20
            while any(alive(p) for p in pids) and time.monotonic() < deadline:
                time.sleep(0.1)
            assert not any(alive(p) for p in pids)
            assert listed == []
        for pid in pids:
            assert_nothing_left(pid, pid)
    finally:
        for daemon in (first, second):
            if daemon is not None and daemon.process.poll() is None:
                daemon.stop(timeout=60)
        for pid in pids:
            if alive(pid):
                psutil.Process(pid).kill()


def test_stopping_the_daemon_stops_its_engines(
    llama_server_binary: Path, tiny_gguf: Path, tmp_path: Path
) -> None:
    daemon = start_daemon(tmp_path / "home", env=path_with(llama_server_binary))
    try:

        async def main() -> list[InstanceInfo]:
            async with _client(daemon) as client:
                return await _start_two(client, tiny_gguf)

        infos = asyncio.run(main())
        pids = [i.pid for i in infos if i.pid is not None]
        assert len(pids) == 2 and all(alive(p) for p in pids)
        assert daemon.stop(timeout=60) == 0
        for pid in pids:
            assert_nothing_left(pid, pid)
        records = resolve_home(tmp_path / "home").state_dir / "instances.json"
        assert "pid" not in records.read_text(encoding="utf-8")
    finally:
        if daemon.process.poll() is None:
            daemon.stop(timeout=60)


def test_mlx_through_the_daemon_from_a_chosen_python(
    mlx_python: str, tiny_hf_model: Path, tmp_path: Path
) -> None:
    root = tmp_path / "home"
    home = resolve_home(root)
    home.ensure()
    cache = tmp_path / "hub"
    save_settings(
        home.settings_file,
        Settings(models_dir=str(cache), engines=EngineSettings(python_paths=[mlx_python])),
    )
    daemon = start_daemon(root)
    try:

        async def main() -> None:
            async with _client(daemon) as client:
                started = await client.start_instance(
                    StartRequest(
                        engine=EngineId.MLX, options=InstanceOptions(model=str(tiny_hf_model))
                    )
                )
                info = await _wait_settled(client, started.id)
                assert info.status == InstanceStatus.READY, info
                async with httpx.AsyncClient(trust_env=False, timeout=30) as http:
                    reply = await http.post(
                        f"{daemon.url}/v1/chat/completions",
                        json={
                            "model": info.models[0],
                            "messages": [{"role": "user", "content": "hi"}],
                            "max_tokens": 4,
                        },
                    )
                    assert reply.status_code == 200, reply.text
                pid = info.pid
                assert pid is not None
                await client.stop_instance(info.id)
                assert_nothing_left(pid, pid)

        asyncio.run(main())
        # The models folder the daemon was given is where mlx_lm looks (it must exist).
        assert cache.is_dir()
    finally:
        daemon.stop(timeout=60)


def test_quit_with_stop_from_the_app_leaves_no_engine(
    llama_server_binary: Path, tiny_gguf: Path, tmp_path: Path
) -> None:
    """The tray's "Stop and quit" and `roundhouse stop` both end in lifecycle.stop_daemon."""
    from roundhouse.client.lifecycle import stop_daemon

    daemon = start_daemon(tmp_path / "home", env=path_with(llama_server_binary))
    try:

        async def main() -> list[int]:
            async with _client(daemon) as client:
                infos = await _start_two(client, tiny_gguf)
            await stop_daemon(daemon.home)
            return [i.pid for i in infos if i.pid is not None]

        pids = asyncio.run(main())
        assert len(pids) == 2
        assert daemon.process.wait(timeout=10) == 0
        for pid in pids:
            assert_nothing_left(pid, pid)
    finally:
        if daemon.process.poll() is None:
            daemon.stop(timeout=60)
