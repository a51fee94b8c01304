"""A llama.cpp release's rpc-server (the RPC split's worker) is installed beside llama-server,
made executable even when the archive lost its mode, and reported by detection."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from roundhouse.api.engines import EngineId
from roundhouse.core.engines.catalog import load_catalog
from roundhouse.core.engines.detect import detect_engine
from roundhouse.core.engines.host import LocalEngineHost
from roundhouse.core.engines.install.llamacpp import install_llamacpp, plan_llamacpp_install
from tests.fakes.releases import archives
from tests.fakes.releases.server import FakeRelease, ReleaseServer
from tests.unit.install.conftest import inventory, run

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="the fake llama-server is sh")


@pytest.mark.parametrize("name", ["rpc-server", "ggml-rpc-server"])
def test_the_rpc_server_of_a_release_is_installed_and_detected(
    engines_dir: Path, name: str
) -> None:
    tag = "b6100"
    release = archives.zip_bytes(
        [
            ("build/bin/llama-server", archives.llama_server_script(tag), 0o755),
            # Zipped without its executable bit, as some tools store it.
            (f"build/bin/{name}", b"#!/bin/sh\necho usage\n", 0o644),
        ]
    )
    fake = FakeRelease(tag, {f"llama-{tag}-bin-ubuntu-x64.zip": release})
    with ReleaseServer([fake]) as server:
        plan = run(plan_llamacpp_install(inventory(), tag=tag, releases_url=server.releases_url))
        build = run(install_llamacpp(engines_dir, plan))
    worker = Path(build.path) / name
    assert worker.is_file() and os.access(worker, os.X_OK)
    spec = load_catalog().spec(EngineId.LLAMA_CPP)
    hits, _ = detect_engine(
        LocalEngineHost({**os.environ, "PATH": ""}), spec, managed_dir=str(engines_dir)
    )
    assert hits[0].rpc_server == str(worker)


def test_a_release_without_rpc_server_is_reported_without_one(engines_dir: Path) -> None:
    fake = FakeRelease("b4562", {"llama-b4562-bin-ubuntu-x64.zip": archives.old_linux_zip("b4562")})
    with ReleaseServer([fake]) as server:
        plan = run(
            plan_llamacpp_install(inventory(), tag="b4562", releases_url=server.releases_url)
        )
        run(install_llamacpp(engines_dir, plan))
    spec = load_catalog().spec(EngineId.LLAMA_CPP)
    hits, _ = detect_engine(
        LocalEngineHost({**os.environ, "PATH": ""}), spec, managed_dir=str(engines_dir)
    )
    assert hits[0].rpc_server is None
