"""Pytest fixtures for tests that run a real llama.cpp llama-server on a tiny model."""

from __future__ import annotations

import os
from pathlib import Path
from typing import NoReturn

import pytest

from tests.engines.llama_server import CACHE_KEY, ENV_BINARY, binary_runs, find_llama_server
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
def tiny_gguf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random Llama GGUF in a folder whose name has Cyrillic, CJK and a space."""
    folder = tmp_path_factory.mktemp("models") / "модели 模型 tiny"
    folder.mkdir()
    return write_tiny_llama_gguf(folder / "tiny.gguf", seed=0)
