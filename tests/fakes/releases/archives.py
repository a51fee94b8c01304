"""Release archives laid out as llama.cpp's are, with a tiny llama-server that prints a version."""

from __future__ import annotations

import io
import random
import tarfile
import zipfile
from collections.abc import Iterable
from functools import cache

# A library stand-in: incompressible, so a download takes several chunks and can be cut.
LIBRARY_BYTES = 768 * 1024


def llama_server_script(tag: str) -> bytes:
    """A llama-server that answers `--version` on stderr, as the real one does (old format)."""
    number = "".join(c for c in tag if c.isdigit()) or "0"
    return (
        "#!/bin/sh\n"
        f'echo "version: {number} (fake0{number})" >&2\n'
        'echo "built with a shell script for Roundhouse tests" >&2\n'
    ).encode()


def library(seed: int) -> bytes:
    return random.Random(seed).randbytes(LIBRARY_BYTES)


def tar_gz(
    members: Iterable[tuple[str, bytes, int]], links: Iterable[tuple[str, str]] = ()
) -> bytes:
    """A .tar.gz of (name, data, mode) files and (name, target) symlinks."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data, mode in members:
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), mode
            tar.addfile(info, io.BytesIO(data))
        for name, target in links:
            info = tarfile.TarInfo(name)
            info.type, info.linkname = tarfile.SYMTYPE, target
            tar.addfile(info)
    return buf.getvalue()


def zip_bytes(
    members: Iterable[tuple[str, bytes, int]], links: Iterable[tuple[str, str]] = ()
) -> bytes:
    """A .zip of (name, data, mode) files and (name, target) symlinks, modes kept as Unix zip
    tools keep them (in the high bits of external_attr)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data, mode in members:
            info = zipfile.ZipInfo(name)
            info.external_attr = (0o100000 | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, data)
        for name, target in links:
            info = zipfile.ZipInfo(name)
            info.external_attr = (0o120000 | 0o777) << 16
            zf.writestr(info, target)
    return buf.getvalue()


@cache
def linux_release(tag: str) -> bytes:
    """Current Linux and macOS layout: `llama-<tag>/` holding the binaries and libraries."""
    top = f"llama-{tag}"
    return tar_gz(
        [
            (f"{top}/llama-server", llama_server_script(tag), 0o755),
            (f"{top}/libggml-cpu-haswell.so", library(1), 0o644),
            (f"{top}/libllama.so.0.0.1", b"\x7fELF not really", 0o644),
            (f"{top}/LICENSE", b"MIT License\n", 0o644),
        ],
        links=[(f"{top}/libllama.so.0", "libllama.so.0.0.1")],
    )


@cache
def old_linux_zip(tag: str) -> bytes:
    """The layout before Linux builds moved to .tar.gz: `build/bin/` inside a zip."""
    return zip_bytes(
        [
            ("build/bin/llama-server", llama_server_script(tag), 0o755),
            ("build/bin/libggml.so", library(2), 0o644),
        ]
    )


def windows_zip(tag: str, *extra: str) -> bytes:
    """Windows layout: every file at the top of the zip."""
    names = ["llama-server.exe", "ggml-base.dll", "ggml-cpu-x64.dll", *extra]
    return zip_bytes([(n, b"MZ" + n.encode(), 0o644) for n in names])


def cudart_zip(version: str) -> bytes:
    major = version.split(".")[0]
    return zip_bytes(
        [(f"cudart64_{major}.dll", b"MZ cudart", 0o644), (f"cublas64_{major}.dll", b"MZ", 0o644)]
    )
