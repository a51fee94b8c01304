"""Tiny wheels written with zipfile, so pip can install "engines" offline in tests."""

from __future__ import annotations

import base64
import hashlib
import platform
import zipfile
from pathlib import Path

from roundhouse.api.engines import EngineId
from roundhouse.core.engines.install.pins import pins_path


def write_wheel(
    folder: Path,
    name: str,
    version: str,
    files: dict[str, str],
    *,
    requires: tuple[str, ...] = (),
    extras: tuple[str, ...] = (),
) -> Path:
    """A pure-Python wheel of `files` (path -> text) named `name` (a distribution name)."""
    stem = name.replace("-", "_")
    dist_info = f"{stem}-{version}.dist-info"
    metadata = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    metadata += [f"Provides-Extra: {e}" for e in extras]
    metadata += [f"Requires-Dist: {r}" for r in requires]
    contents = {
        **files,
        f"{dist_info}/METADATA": "\n".join(metadata) + "\n",
        f"{dist_info}/WHEEL": (
            "Wheel-Version: 1.0\nGenerator: roundhouse-tests\nRoot-Is-Purelib: true\n"
            "Tag: py3-none-any\n"
        ),
    }
    record = []
    for path, text in contents.items():
        data = text.encode()
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(data)}")
    record.append(f"{dist_info}/RECORD,,")
    contents[f"{dist_info}/RECORD"] = "\n".join(record) + "\n"
    wheel = folder / f"{stem}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        for path, text in contents.items():
            zf.writestr(path, text)
    return wheel


def fake_mlx_wheels(folder: Path) -> Path:
    """mlx-lm (with the mlx_lm.server module), mlx with a `cpu` extra, and mlx-cpu."""
    folder.mkdir(parents=True, exist_ok=True)
    write_wheel(
        folder,
        "mlx-lm",
        "0.0.1",
        {"mlx_lm/__init__.py": "", "mlx_lm/server.py": "print('fake mlx_lm.server')\n"},
    )
    write_wheel(
        folder,
        "mlx",
        "0.0.2",
        {"mlx/__init__.py": ""},
        extras=("cpu",),
        requires=('mlx-cpu; extra == "cpu"',),
    )
    write_wheel(folder, "mlx-cpu", "0.0.2", {"mlx_cpu/__init__.py": ""})
    return folder


def write_pins(
    pins_dir: Path,
    engine: str,
    wheels: list[Path],
    *,
    coverage: str = "all",
    why: str | None = None,
) -> Path:
    """A pins file for this machine, as installers/refresh_engine_pins.py writes them, pinning
    each wheel at its version with the sha256 of its bytes: pip's hash checks are real."""
    lines = [f"# Test pins for {engine}.", f"# pins: {coverage}"]
    if why is not None:
        lines.append(f"# why: {why}")
    for wheel in wheels:
        name, version = wheel.name.split("-")[:2]
        digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
        lines += [f"{name.replace('_', '-')}=={version} \\", f"    --hash=sha256:{digest}"]
        lines.append("    # via the test")
    path = pins_path(pins_dir, EngineId(engine), platform.system(), platform.machine())
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def mlx_wheels_and_pins(folder: Path) -> tuple[Path, Path]:
    """The fake mlx wheels in `folder/wheels` and pins of all three in `folder/pins`."""
    wheels = fake_mlx_wheels(folder / "wheels")
    write_pins(folder / "pins", "mlx", sorted(wheels.glob("*.whl")))
    return wheels, folder / "pins"
