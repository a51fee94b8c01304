"""A hostile package index against the pinned engine installs, with real pip, offline: a
tampered file of the engine or of a dependency, a newer version planted beside the pinned one,
a dependency the pins do not name. Each is refused (or ignored) and no code of it runs."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from roundhouse.api.engines import EngineId
from roundhouse.api.installs import HashCheck, ManagedVenv
from roundhouse.core.engines.install.errors import HashMismatchError, PipError
from roundhouse.core.engines.install.venvs import (
    install_python_engine,
    managed_python,
    plan_python_engine,
)
from tests.unit.install.wheels import fake_mlx_wheels, write_pins, write_wheel

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="mlx[cpu] is a Linux requirement")


def _planted(marker: Path) -> dict[str, str]:
    """Files that leave `marker` behind as soon as Python starts in the environment (a .pth
    file runs at every start): proof that a file pip should have refused was installed."""
    return {"planted.pth": f"import pathlib; pathlib.Path({str(marker)!r}).touch()\n"}


def _install(engines_dir: Path, pins: Path, wheels: Path) -> ManagedVenv:
    plan = plan_python_engine(EngineId.MLX, pins_dir=pins)
    assert plan.hash_check == HashCheck.ALL
    return asyncio.run(
        install_python_engine(
            EngineId.MLX,
            engines_dir,
            plan=plan,
            pip_args=["--no-index", "--find-links", str(wheels)],
        )
    )


@pytest.mark.parametrize(
    ("name", "version", "files"),
    [
        ("mlx-lm", "0.0.1", {"mlx_lm/__init__.py": "", "mlx_lm/server.py": ""}),
        # A dependency: pinned and checked like the engine itself.
        ("mlx-cpu", "0.0.2", {"mlx_cpu/__init__.py": ""}),
    ],
)
def test_a_tampered_file_is_refused_in_words_and_nothing_is_left(
    tmp_path: Path, name: str, version: str, files: dict[str, str]
) -> None:
    wheels = fake_mlx_wheels(tmp_path / "wheels")
    write_pins(tmp_path / "pins", "mlx", sorted(wheels.glob("*.whl")))
    marker = tmp_path / "tampered-code-ran"
    # The same name and version, other bytes: what a compromised mirror or proxy serves.
    write_wheel(wheels, name, version, {**files, **_planted(marker)})
    engines_dir = tmp_path / "engines"
    with pytest.raises(HashMismatchError) as refused:
        _install(engines_dir, tmp_path / "pins", wheels)
    detail = refused.value.detail
    assert "does not match the sha256 hash this Roundhouse release pins" in detail
    assert "nothing from it was installed" in detail
    assert "DO NOT MATCH THE HASHES" in detail, "pip's own lines follow the words"
    assert refused.value.status == 502
    assert managed_python(engines_dir, EngineId.MLX) is None
    assert not (engines_dir / "venvs" / "mlx").exists()
    assert not marker.exists()


def test_a_newer_version_beside_the_pinned_one_is_never_taken(tmp_path: Path) -> None:
    wheels = fake_mlx_wheels(tmp_path / "wheels")
    write_pins(tmp_path / "pins", "mlx", sorted(wheels.glob("*.whl")))
    marker = tmp_path / "newer-code-ran"
    write_wheel(wheels, "mlx-lm", "9.9.9", {"mlx_lm/__init__.py": "", **_planted(marker)})
    engines_dir = tmp_path / "engines"
    venv = _install(engines_dir, tmp_path / "pins", wheels)
    assert venv.version == "0.0.1"
    python = managed_python(engines_dir, EngineId.MLX)
    assert python is not None
    assert not marker.exists()


def test_a_dependency_the_pins_do_not_name_is_refused(tmp_path: Path) -> None:
    wheels = fake_mlx_wheels(tmp_path / "wheels")
    marker = tmp_path / "unpinned-dependency-ran"
    # The engine as pinned asks for a package the pins lack, and the index has one.
    write_wheel(
        wheels,
        "mlx-lm",
        "0.0.1",
        {"mlx_lm/__init__.py": "", "mlx_lm/server.py": ""},
        requires=("extra-helper",),
    )
    write_wheel(wheels, "extra-helper", "1.0", {"extra_helper.py": "", **_planted(marker)})
    pinned = [w for w in sorted(wheels.glob("*.whl")) if not w.name.startswith("extra_helper")]
    write_pins(tmp_path / "pins", "mlx", pinned)
    engines_dir = tmp_path / "engines"
    with pytest.raises(PipError, match="that its pins do not cover") as refused:
        _install(engines_dir, tmp_path / "pins", wheels)
    assert "extra-helper" in refused.value.detail, "pip's lines name the package"
    assert not (engines_dir / "venvs" / "mlx").exists()
    assert not marker.exists()
