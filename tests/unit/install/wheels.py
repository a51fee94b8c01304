"""Tiny wheels written with zipfile, so pip can install "engines" offline in tests."""

from __future__ import annotations

import base64
import hashlib
import zipfile
from pathlib import Path


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
