"""A/B through a real daemon: refused in words when an engine is missing; with the real
llama-server and a real mlx_lm.server (mlx[cpu]) on the same tiny model, `roundhouse bench ab`
benchmarks each engine in turn, keeps both results and leaves no engine running."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import httpx

from roundhouse.api.bench import AbRequest, BenchRequest
from roundhouse.api.instances import InstanceOrigin
from roundhouse.api.settings import EngineSettings, Settings
from roundhouse.base.paths import resolve_home
from roundhouse.client import DaemonClient
from roundhouse.core.infra.settings import save_settings
from tests.daemon_process import DaemonProcess, path_with, running_daemon


def _ab(engines: list[str], model: str = "/nowhere/tiny.gguf") -> AbRequest:
    workload = BenchRequest(
        model=model, num_prompts=4, max_concurrency=2, input_len=16, output_len=8, warmups=0
    )
    return AbRequest(model=model, engines=engines, ctx_size=512, workload=workload)


def _post(daemon: DaemonProcess, request: AbRequest) -> httpx.Response:
    return httpx.post(
        daemon.url + "/api/v1/bench/ab",
        content=request.model_dump_json(),
        headers={"Authorization": f"Bearer {daemon.token}", "Content-Type": "application/json"},
        trust_env=False,
        timeout=30,
    )


def test_refused_in_words_when_an_engine_is_missing(
    llama_server_binary: Path, home_root: Path
) -> None:
    with running_daemon(home_root, env=path_with(llama_server_binary)) as daemon:
        missing = _post(daemon, _ab(["llama.cpp", "vllm"]))
        assert missing.status_code == 422, missing.text
        assert "vllm is not installed here" in missing.json()["detail"]
        unknown = _post(daemon, _ab(["llama.cpp", "ollama"]))
        assert unknown.status_code == 422, unknown.text
        assert "cannot start 'ollama'" in unknown.json()["detail"]
        twice = _post(daemon, _ab(["llama.cpp", "llama.cpp"]))
        assert twice.status_code == 422 and "once" in twice.json()["detail"]


def test_llama_cpp_against_mlx_from_the_cli(
    llama_server_binary: Path,
    mlx_python: str,
    tiny_gguf: Path,
    tiny_hf_model: Path,
    home_root: Path,
) -> None:
    home = resolve_home(home_root)
    home.ensure()
    save_settings(home.settings_file, Settings(engines=EngineSettings(python_paths=[mlx_python])))
    with running_daemon(home_root, env=path_with(llama_server_binary)) as daemon:
        # MLX cannot load the GGUF: it is refused before anything starts.
        refused = _post(daemon, _ab(["llama.cpp", "mlx"], str(tiny_gguf)))
        assert refused.status_code == 422 and "cannot load a GGUF" in refused.json()["detail"]
        argv = [
            sys.executable, "-m", "roundhouse", "--home", str(home_root), "bench", "ab",
            str(tiny_gguf), "--engines", "llama.cpp,mlx", "--model-for", f"mlx={tiny_hf_model}",
            "-n", "4", "--max-concurrency", "2", "--input-len", "16", "--output-len", "8",
            "--ctx-size", "512", "--label", "ab", "--json",
        ]  # fmt: skip
        done = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)
        assert done.returncode == 0, done.stderr
        results = json.loads(done.stdout)
        assert [r["engine"] for r in results] == ["llama.cpp", "mlx"]
        for r in results:
            assert r["metrics"]["completed"] == 4, (r["engine"], r["metrics"]["failures"])
            assert r["request"]["label"] == f"ab · {r['engine']}"

        async def after() -> tuple[list[str], int]:
            async with DaemonClient(daemon.url, daemon.token) as client:
                kept = [s.id for s in (await client.bench_results()).results]
                listed = (await client.instances()).instances
                # Engines found running on this machine (not started here) are listed too.
                return kept, sum(i.origin is InstanceOrigin.STARTED for i in listed)

        kept, running = asyncio.run(after())
        assert {r["id"] for r in results} <= set(kept)
        assert running == 0, "the engines the A/B started were left running"
