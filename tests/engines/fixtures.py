"""Pytest fixtures for tests that run a real llama-server or mlx_lm.server on a tiny model."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import NoReturn

import pytest

from tests.engines.llama_server import (
    CACHE_KEY,
    ENV_BINARY,
    binary_runs,
    find_llama_server,
    find_rpc_server,
)
from tests.fixtures.models.tiny_hf import write_tiny_hf_hub_cache, write_tiny_hf_model
from tests.fixtures.models.tiny_llama import write_tiny_llama_gguf

BUILD_HINT = "run .ci/build-llama-server (about 10 min once, then cached)"


def running_in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}


def _missing(reason: str) -> NoReturn:
    # CI must exercise the real engine, so a missing binary is an error there; on a
    # developer's machine the test is skipped with the reason shown by `-ra`.
    message = f"{reason}: {BUILD_HINT}, or set {ENV_BINARY}"
    if running_in_ci():
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


@pytest.fixture(scope="session")
def llama_server_binary() -> Path:
    """The real llama-server (ROUNDHOUSE_LLAMA_SERVER or the cached build)."""
    binary = find_llama_server()
    if binary is None:
        _missing(f"no llama-server built for {CACHE_KEY}")
    if not binary_runs(binary):
        _missing(f"{binary} does not run `--version`")
    return binary


@pytest.fixture(scope="session")
def rpc_server_binary(llama_server_binary: Path) -> Path:
    """llama.cpp's rpc-server of the same build (GGML_RPC), beside llama-server."""
    binary = find_rpc_server()
    if binary is None:
        _missing(f"no rpc-server beside {llama_server_binary} (a build from before GGML_RPC)")
    try:
        done = subprocess.run([str(binary), "--help"], capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        _missing(f"{binary} does not run: {exc}")
    # Its --help prints the usage and exits 1; a binary that cannot run never prints it.
    if b"--host" not in done.stderr + done.stdout:
        _missing(f"{binary} does not run `--help`")
    return binary


@pytest.fixture(scope="session")
def tiny_gguf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random Llama GGUF in a folder whose name has Cyrillic, CJK and a space."""
    folder = tmp_path_factory.mktemp("models") / "модели 模型 tiny"
    folder.mkdir()
    return write_tiny_llama_gguf(folder / "tiny.gguf", seed=0)


# --- MLX: a real mlx_lm.server (mlx[cpu] on Linux) on the same tiny model in HF layout ---

ENV_MLX_PYTHON = "ROUNDHOUSE_MLX_PYTHON"
MLX_HINT = 'install the dev extra (.ci/setup: "mlx[cpu]" and mlx-lm)'
# Imports the server and runs one op on the default device: mlx-lm without mlx-cpu (no
# backend) or a CPU the wheel was not built for fails here, not in the middle of a test.
_MLX_CHECK = (
    "import mlx.core as mx, mlx_lm, mlx_lm.server; "
    "assert (mx.array([1.0]) * 2).item() == 2.0; print(mx.default_device())"
)


def _mlx_missing(reason: str) -> NoReturn:
    message = f"{reason}: {MLX_HINT}, or set {ENV_MLX_PYTHON} to a Python that has them"
    if running_in_ci():
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


@pytest.fixture(scope="session")
def mlx_python() -> str:
    """An interpreter where `python -m mlx_lm.server` runs (ROUNDHOUSE_MLX_PYTHON or ours)."""
    python = os.environ.get(ENV_MLX_PYTHON) or sys.executable
    try:
        done = subprocess.run(
            [python, "-c", _MLX_CHECK], capture_output=True, text=True, timeout=120, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        _mlx_missing(f"{python} did not run: {exc}")
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        _mlx_missing(f"mlx / mlx-lm do not work in {python} ({last})")
    return python


@pytest.fixture(scope="session")
def tiny_hf_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny Llama as a Hugging Face folder, in a folder named in Cyrillic, CJK, a space."""
    return write_tiny_hf_model(tmp_path_factory.mktemp("hf") / "модели 模型 tiny", seed=0)


@pytest.fixture(scope="session")
def tiny_hf_hub_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An HF_HUB_CACHE folder holding the tiny Llama as the repo `roundhouse/tiny-llama`."""
    cache = tmp_path_factory.mktemp("hub cache 缓存")
    write_tiny_hf_hub_cache(cache, "roundhouse/tiny-llama", seed=0)
    return cache
