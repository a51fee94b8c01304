"""Python engines in managed virtual environments, installed with real pip, offline, from
pins whose hashes are those of the test's wheels (pip really checks them)."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path

import psutil
import pytest

from roundhouse.api.engines import EngineId, FoundBy
from roundhouse.api.installs import HashCheck, InstallStage
from roundhouse.core.engines.catalog import load_catalog
from roundhouse.core.engines.detect import detect_engine
from roundhouse.core.engines.host import LocalEngineHost
from roundhouse.core.engines.install.errors import InstallError, PipError
from roundhouse.core.engines.install.venvs import (
    install_python_engine,
    managed_python,
    plan_python_engine,
    remove_python_engine,
)
from roundhouse.core.errors import InvalidInputError, NotFoundError
from tests.unit.install.conftest import Events, run
from tests.unit.install.wheels import mlx_wheels_and_pins, write_pins, write_wheel

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="mlx[cpu] is a Linux requirement")


def offline(wheels: Path) -> list[str]:
    return ["--no-index", "--find-links", str(wheels)]


def detect_mlx(engines_dir: Path) -> tuple[list[tuple[object, ...]], str | None]:
    host = LocalEngineHost({**os.environ, "PATH": ""})
    hits, missing = detect_engine(
        host, load_catalog().spec(EngineId.MLX), managed_dir=str(engines_dir)
    )
    found = [(h.found_by, h.python, h.module, h.version, h.where) for h in hits]
    return found, missing.install_hint if missing else None


def test_install_detect_fail_and_remove(tmp_path: Path, engines_dir: Path) -> None:
    wheels, pins = mlx_wheels_and_pins(tmp_path)
    events = Events()
    plan = plan_python_engine(EngineId.MLX, pins_dir=pins)
    assert plan.hash_check == HashCheck.ALL and plan.warning is None
    venv = run(
        install_python_engine(
            EngineId.MLX, engines_dir, plan=plan, pip_args=offline(wheels), on_progress=events
        )
    )
    folder = engines_dir / "venvs" / "mlx"
    assert (Path(venv.venv_dir), venv.package, venv.version) == (folder, "mlx-lm", "0.0.1")
    assert venv.hash_check == HashCheck.ALL
    assert (
        Path(venv.python) == folder / "bin" / "python" == managed_python(engines_dir, EngineId.MLX)
    )
    assert events.stages() == ["creating-venv", "pip", "done"]
    # The catalog's requirements on Linux: mlx-lm and mlx[cpu], which brings mlx-cpu.
    pip_lines = [e.line for e in events if e.stage == InstallStage.PIP and e.line is not None]
    installed = next(line for line in pip_lines if line.startswith("Successfully installed"))
    assert {"mlx-lm-0.0.1", "mlx-0.0.2", "mlx-cpu-0.0.2"} <= set(installed.split()[2:])
    assert events[-1].message == f"MLX (mlx_lm.server) 0.0.1 is installed in {folder}"

    found, _ = detect_mlx(engines_dir)
    assert found[0] == (
        FoundBy.MANAGED,
        venv.python,
        "mlx_lm.server",
        "0.0.1",
        "Roundhouse's engines folder",
    )

    # A failed install into an environment that exists leaves it as it was.
    other = plan_python_engine(EngineId.MLX, version="9.9.9", unverified=True, pins_dir=pins)
    with pytest.raises(PipError, match=r"pip could not install mlx-lm 9\.9\.9") as failed:
        run(install_python_engine(EngineId.MLX, engines_dir, plan=other, pip_args=offline(wheels)))
    assert "No matching distribution found for mlx-lm==9.9.9" in failed.value.detail
    assert failed.value.tail and len(failed.value.tail) <= 20
    assert detect_mlx(engines_dir)[0][0][3] == "0.0.1"

    run(remove_python_engine(EngineId.MLX, engines_dir))
    assert not folder.exists()
    found, hint = detect_mlx(engines_dir)
    assert found == []
    assert hint == "Roundhouse can install mlx-lm and mlx[cpu] in a Python environment of its own."
    with pytest.raises(NotFoundError):
        run(remove_python_engine(EngineId.MLX, engines_dir))


def test_a_failed_first_install_removes_the_new_environment(
    tmp_path: Path, engines_dir: Path
) -> None:
    wheels, _ = mlx_wheels_and_pins(tmp_path)
    events = Events()
    # The real pins of vLLM: its packages are not among the test's wheels.
    plan = plan_python_engine(EngineId.VLLM)
    assert plan.hash_check == HashCheck.ALL
    with pytest.raises(PipError, match="exit 1"):
        run(
            install_python_engine(
                EngineId.VLLM, engines_dir, plan=plan, pip_args=offline(wheels), on_progress=events
            )
        )
    assert any("No matching distribution" in (e.line or "") for e in events)
    assert not (engines_dir / "venvs" / "vllm").exists()


def test_pins_of_the_engine_alone_check_it_and_say_its_dependencies_are_not(
    tmp_path: Path, engines_dir: Path
) -> None:
    wheels, pins = mlx_wheels_and_pins(tmp_path)
    # Where a platform could not be locked, the pins hold the engine's own packages.
    write_pins(
        pins,
        "mlx",
        [wheels / "mlx_lm-0.0.1-py3-none-any.whl", wheels / "mlx-0.0.2-py3-none-any.whl"],
        coverage="top-level",
        why="no resolution for this platform",
    )
    events = Events()
    plan = plan_python_engine(EngineId.MLX, pins_dir=pins)
    assert plan.hash_check == HashCheck.TOP_LEVEL
    venv = run(
        install_python_engine(
            EngineId.MLX, engines_dir, plan=plan, pip_args=offline(wheels), on_progress=events
        )
    )
    assert (venv.version, venv.hash_check) == ("0.0.1", HashCheck.TOP_LEVEL)
    lines = [e.line for e in events if e.line is not None]
    assert lines[0] == (
        "Warning: the dependencies of mlx-lm 0.0.1 are not hash-pinned for Linux x86_64 "
        "(no resolution for this platform): pip installs them from the package index "
        "without checking their hashes."
    )
    assert events[-1].message.endswith("; its dependencies were not hash-checked")
    pip_runs = [e.message for e in events if e.message.startswith("pip install")]
    assert len(pip_runs) == 2 and "--require-hashes --only-binary=:all: --no-deps" in pip_runs[0]
    assert pip_runs[1].endswith("mlx-lm==0.0.1 mlx==0.0.2")


def test_an_unverified_version_is_installed_with_a_warning(
    tmp_path: Path, engines_dir: Path
) -> None:
    wheels, pins = mlx_wheels_and_pins(tmp_path)
    write_wheel(wheels, "mlx-lm", "0.0.9", {"mlx_lm/__init__.py": "", "mlx_lm/server.py": ""})
    with pytest.raises(InvalidInputError, match=r"mlx-lm 0\.0\.9 is not the version"):
        plan_python_engine(EngineId.MLX, version="0.0.9", pins_dir=pins)
    events = Events()
    plan = plan_python_engine(EngineId.MLX, version="0.0.9", unverified=True, pins_dir=pins)
    venv = run(
        install_python_engine(
            EngineId.MLX, engines_dir, plan=plan, pip_args=offline(wheels), on_progress=events
        )
    )
    assert (venv.version, venv.hash_check) == ("0.0.9", HashCheck.NONE)
    assert next(e.line for e in events if e.line is not None) == (
        "Warning: mlx-lm 0.0.9 is installed instead of the pinned 0.0.1, NOT verified: pip "
        "installs it and its dependencies without checking any hash."
    )
    assert events[-1].message.endswith("; nothing was hash-checked")


def test_cancelling_while_pip_bootstraps_removes_the_environment(engines_dir: Path) -> None:
    folder = engines_dir / "venvs" / "sglang"

    async def go() -> None:
        task = asyncio.create_task(install_python_engine(EngineId.SGLANG, engines_dir))
        # The interpreter exists first; ensurepip then runs as a child of `python -m venv`.
        for _ in range(200):
            if managed_python(engines_dir, EngineId.SGLANG) is not None:
                break
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.5)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    run(go())
    assert not folder.exists()
    time.sleep(1.0)  # anything left running would write into it again
    assert not folder.exists()
    left = [
        p.pid
        for p in psutil.process_iter(["cmdline"])
        if any(str(folder) in arg for arg in p.info["cmdline"] or [])
    ]
    assert left == []


def test_a_python_that_cannot_make_environments_is_explained(
    tmp_path: Path, engines_dir: Path
) -> None:
    broken = tmp_path / "python3"
    broken.write_text("#!/bin/sh\necho 'Error: No module named venv' >&2\nexit 1\n")
    broken.chmod(0o755)
    with pytest.raises(InstallError, match=r"(?s)install python3-venv.*No module named venv"):
        run(install_python_engine(EngineId.MLX, engines_dir, python=str(broken)))
    assert not (engines_dir / "venvs" / "mlx").exists()
    with pytest.raises(InvalidInputError, match="cannot be run"):
        run(install_python_engine(EngineId.MLX, engines_dir, python=str(tmp_path / "nothing")))
    with pytest.raises(InvalidInputError, match="not a Python package"):
        run(install_python_engine(EngineId.OLLAMA, engines_dir))
