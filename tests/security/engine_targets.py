"""Engines started by a real daemon for the engine-port suite, and the routes each one has.

Each target is one daemon with one engine it started: real llama-server and real
mlx_lm.server where they run, and the vLLM, SGLang and Ollama stand-ins found the way the
daemon finds the real ones (a `vllm` and an `ollama` program on PATH, an `sglang` package in
a chosen Python). The stand-ins use http.server, so the guard Roundhouse puts on PYTHONPATH
applies to them as it does to the real Python engines.
"""

from __future__ import annotations

import asyncio
import re
import tarfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from roundhouse.api.engines import EngineId, InstanceOptions
from roundhouse.api.instances import InstanceInfo, StartRequest
from roundhouse.api.settings import EngineSettings, Settings
from tests.daemon_process import DaemonProcess, start_ready
from tests.engines.llama_server import SDIST_FILENAME, SOURCE_SUBDIR, server_root
from tests.fakes.ollama.server import ALL_PATHS as OLLAMA_STANDIN_PATHS
from tests.fakes.ollama.server import Options as OllamaOptions
from tests.fakes.ollama.server import Store
from tests.support.standins import daemon_with, program, sglang_python, vllm_standin

READY_TIMEOUT_S = 120.0
SGLANG_MODULE = "sglang.launch_server"

# Routes the issue names, sent to every engine that takes a key whether it has them or not:
# its guard must refuse before any routing.
NAMED_ROUTES = (
    ("GET", "/v1/models"),
    ("POST", "/v1/chat/completions"),
    ("POST", "/v1/completions"),
    ("GET", "/slots"),
    ("GET", "/props"),
    ("GET", "/metrics"),
    ("POST", "/tokenize"),
    ("POST", "/invocations"),
    ("GET", "/api/tags"),
    ("POST", "/api/chat"),
    ("POST", "/api/generate"),
    ("GET", "/api/ps"),
)
# The real engines' own routes where no source is at hand to list them from.
MLX_ROUTES = (
    ("GET", "/v1/models"),
    ("GET", "/health"),
    ("POST", "/v1/completions"),
    ("POST", "/v1/chat/completions"),
    ("POST", "/chat/completions"),
)
VLLM_ROUTES = (  # vllm/entrypoints/openai/api_server.py, 0.11
    ("GET", "/health"),
    ("GET", "/ping"),
    ("POST", "/ping"),
    ("GET", "/version"),
    ("GET", "/load"),
    ("POST", "/tokenize"),
    ("POST", "/detokenize"),
    ("POST", "/invocations"),
    ("POST", "/pooling"),
    ("POST", "/classify"),
    ("POST", "/score"),
    ("POST", "/rerank"),
    ("POST", "/v1/embeddings"),
    ("POST", "/v1/responses"),
    ("POST", "/v1/audio/transcriptions"),
    ("POST", "/v1/load_lora_adapter"),
    ("GET", "/server_info"),
)
SGLANG_ROUTES = (  # sglang/srt/entrypoints/http_server.py
    ("GET", "/health"),
    ("GET", "/health_generate"),
    ("GET", "/get_model_info"),
    ("GET", "/get_server_info"),
    ("POST", "/generate"),
    ("POST", "/encode"),
    ("POST", "/update_weights_from_disk"),
    ("POST", "/flush_cache"),
    ("POST", "/v1/embeddings"),
)
OLLAMA_ROUTES = (  # server/routes.go GenerateRoutes
    ("POST", "/api/push"),
    ("POST", "/api/create"),
    ("POST", "/api/copy"),
    ("POST", "/api/embeddings"),
    ("POST", "/v1/completions"),
    ("POST", "/v1/embeddings"),
)
# llama-server's routes when its source is not cached (tools/server/server.cpp, 0.3.36).
LLAMA_FALLBACK = (
    ("GET", "/health"),
    ("GET", "/v1/health"),
    ("GET", "/metrics"),
    ("GET", "/props"),
    ("POST", "/props"),
    ("GET", "/models"),
    ("GET", "/v1/models"),
    ("POST", "/completion"),
    ("POST", "/completions"),
    ("POST", "/v1/completions"),
    ("POST", "/chat/completions"),
    ("POST", "/v1/chat/completions"),
    ("POST", "/v1/messages"),
    ("POST", "/infill"),
    ("POST", "/embeddings"),
    ("POST", "/v1/embeddings"),
    ("POST", "/tokenize"),
    ("POST", "/detokenize"),
    ("POST", "/apply-template"),
    ("GET", "/lora-adapters"),
    ("POST", "/lora-adapters"),
    ("GET", "/slots"),
    ("POST", "/slots/:id_slot"),
)
_CTX_ROUTE = re.compile(r'ctx_http\.(get|post)\s*\(\s*"([^"]+)"')


def llama_server_routes() -> list[tuple[str, str]]:
    """Every route llama-server registers, read from the cached sdist it was built from."""
    sdist = server_root() / "sdist" / SDIST_FILENAME
    found: list[tuple[str, str]] = []
    if sdist.is_file():
        with tarfile.open(sdist) as archive:
            member = archive.extractfile(f"{SOURCE_SUBDIR}/tools/server/server.cpp")
            source = member.read().decode("utf-8", "replace") if member else ""
        found = [(m[1].upper(), m[2]) for m in _CTX_ROUTE.finditer(source)]
    routes = found or list(LLAMA_FALLBACK)
    # Path parameters get a value: the route is what is probed, not a 404.
    return sorted({(method, path.replace(":id_slot", "0")) for method, path in routes})


def routes_for(engine: EngineId) -> list[tuple[str, str]]:
    """The routes a hostile request is sent to: the engine's own, and the ones the issue names."""
    own: list[tuple[str, str]]
    if engine == EngineId.LLAMA_CPP:
        own = llama_server_routes()
    elif engine == EngineId.MLX:
        own = list(MLX_ROUTES)
    elif engine == EngineId.VLLM:
        own = list(VLLM_ROUTES)
    elif engine == EngineId.SGLANG:
        own = list(SGLANG_ROUTES)
    else:
        methods = {"/api/tags": "GET", "/api/ps": "GET", "/api/version": "GET", "/": "GET"}
        methods |= {"/v1/models": "GET", "/api/delete": "DELETE"}
        own = [(methods.get(p, "POST"), p) for p in OLLAMA_STANDIN_PATHS] + list(OLLAMA_ROUTES)
    return sorted(set(own) | set(NAMED_ROUTES))


@dataclass
class Target:
    """One engine instance a real daemon started, ready."""

    engine: EngineId
    daemon: DaemonProcess
    info: InstanceInfo
    model: str  # the name the daemon's gateway serves it under

    @property
    def port(self) -> int:
        assert self.info.port is not None
        return self.info.port

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def _start(daemon: DaemonProcess, request: StartRequest) -> InstanceInfo:
    return asyncio.run(start_ready(daemon, request, READY_TIMEOUT_S))


@contextmanager
def started(
    engine: EngineId, work: Path, *, llama_server: Path | None = None, gguf: Path | None = None,
    mlx_python: str | None = None, hf_model: Path | None = None,
) -> Iterator[Target]:  # fmt: skip
    """The daemon and the one `engine` instance it started, ready; both stopped after."""
    bins = work / "bin"
    bins.mkdir(parents=True, exist_ok=True)
    settings = Settings(models_dir=str(work / "hub"))
    if engine == EngineId.LLAMA_CPP:
        assert llama_server is not None and gguf is not None
        request = StartRequest(
            engine=engine, options=InstanceOptions(model=str(gguf), ctx_size=512)
        )
        dirs = [llama_server.parent]
    elif engine == EngineId.MLX:
        assert mlx_python is not None and hf_model is not None
        settings = settings.model_copy(
            update={"engines": EngineSettings(python_paths=[mlx_python])}
        )
        request = StartRequest(engine=engine, options=InstanceOptions(model=str(hf_model)))
        dirs = []
    elif engine == EngineId.VLLM:
        vllm_standin(bins)
        options = InstanceOptions(model="org/Tiny-Chat", served_name="vllm-tiny")
        request = StartRequest(engine=engine, options=options)
        dirs = [bins]
    elif engine == EngineId.SGLANG:
        python = sglang_python(work)
        settings = settings.model_copy(update={"engines": EngineSettings(python_paths=[python])})
        options = InstanceOptions(model="org/Tiny-Chat", served_name="sglang-tiny")
        request = StartRequest(engine=engine, options=options)
        dirs = []
    else:
        state = work / "ollama-state"
        # The model is pulled before the engine starts, so the instance is started for it
        # (and the daemon's gateway routes it there).
        lines = list(Store(OllamaOptions(state=state, pull_delay_s=0.0)).pull("tiny"))
        assert lines[-1] == {"status": "success"}, lines
        program(bins, "ollama", "tests.fakes.ollama", tail=f", '--state', {str(state)!r}")
        request = StartRequest(engine=engine, options=InstanceOptions(model="tiny:latest"))
        dirs = [bins]
    with daemon_with(work / "home", settings, dirs) as daemon:
        info = _start(daemon, request)
        assert info.models, info
        yield Target(engine, daemon, info, info.models[0])
