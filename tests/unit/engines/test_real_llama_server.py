"""Detection against the real llama-server the tests build."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from roundhouse.api.engines import EngineId, FoundBy
from roundhouse.core.engines.detect import detect_engine
from roundhouse.core.engines.host import LocalEngineHost
from tests.engines.llama_server import find_llama_server
from tests.unit.engines.conftest import catalog


@pytest.fixture
def llama_server() -> Path:
    binary = find_llama_server()
    if binary is None:
        pytest.skip(
            "no llama-server built: run .ci/build-llama-server (or tests/engines/llama_server.py)"
        )
    return binary


def test_the_real_llama_server_is_found_on_path_with_its_version(llama_server: Path) -> None:
    env = {**os.environ, "PATH": str(llama_server.parent)}
    hits, missing = detect_engine(LocalEngineHost(env), catalog().spec(EngineId.LLAMA_CPP))
    assert missing is None
    assert hits[0].path == str(llama_server)
    assert hits[0].found_by == FoundBy.PATH
    # Either format: "0.5.0-dev" (current) or "b6123" (older builds).
    assert hits[0].version and hits[0].version[0] in "0123456789b"
    assert hits[0].build_info and "built with" in hits[0].build_info


def test_the_real_llama_server_in_a_managed_folder(llama_server: Path, tmp_path: Path) -> None:
    # Roundhouse's engines folder under a user name in two scripts.
    managed = tmp_path / "данные 数据" / "engines"
    target = managed / "llama.cpp" / "b1" / "llama-server"
    target.parent.mkdir(parents=True)
    target.symlink_to(llama_server)
    host = LocalEngineHost({**os.environ, "PATH": ""})
    hits, _ = detect_engine(host, catalog().spec(EngineId.LLAMA_CPP), managed_dir=str(managed))
    assert [(h.path, h.found_by) for h in hits][:1] == [(str(target), FoundBy.MANAGED)]
    assert hits[0].version is not None
