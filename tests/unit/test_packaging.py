"""The wheel carries the resources, and an installed (not editable) copy finds them."""

from __future__ import annotations

import subprocess
import sys
import venv
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_installed_wheel_finds_its_resources(tmp_path: Path) -> None:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path / "dist"),
            str(ROOT),
        ],
        check=True,
        timeout=300,
    )
    (wheel,) = (tmp_path / "dist").glob("roundhouse-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "roundhouse/resources/icons/roundhouse.svg" in names
    assert "roundhouse/resources/engines/pins/vllm/linux-x86_64.txt" in names
    # The guard Python engines start behind (ADR 21) is a resource, read by their Python.
    assert "roundhouse/resources/engines/guard/sitecustomize.py" in names
    assert not any(name.startswith(("app/", "tests/")) for name in names)

    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=False)
    python = env_dir / ("Scripts/python.exe" if sys.platform == "win32" else "bin/python")
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    # Unpacking is what pip does for a pure wheel; it keeps the test free of the network.
    zipfile.ZipFile(wheel).extractall(site)
    found = subprocess.run(
        [
            str(python),
            "-I",
            "-c",
            "from roundhouse.base.resources import resources_dir; print(resources_dir())",
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    ).stdout.strip()
    assert Path(found) == Path(site) / "roundhouse" / "resources"
