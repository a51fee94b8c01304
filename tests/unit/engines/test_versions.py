"""Versions read from each tool's own recorded `--version` output."""

from __future__ import annotations

import pytest

from roundhouse.core.engines.versions import (
    parse_dotted,
    parse_llama_server,
    parse_ollama,
    version_key,
)
from tests.unit.engines.conftest import recorded


@pytest.mark.parametrize(
    ("fixture", "version", "build_info"),
    [
        (
            "llama-server-version-macos-arm64.txt",
            "0.4.1-dev",
            "build 10991, commit 930e2fa59; built with AppleClang 21.0.0.21000334 for Darwin arm64",
        ),
        (
            "llama-server-version-windows-cuda.txt",
            "b4291",
            "commit ce8784bd; built with MSVC 19.29.30157.0 for",
        ),
        (
            "llama-server-version-linux-old.txt",
            "b3871",
            "commit d10d90ae; built with cc (Ubuntu 13.3.0-6ubuntu2~24.04) 13.3.0 "
            "for x86_64-linux-gnu",
        ),
        (
            "llama-server-version-linux-sdist.txt",
            "0.5.0-dev",
            "build 0, commit unknown; built with GNU 12.2.0 for Linux x86_64",
        ),
        (
            "llama-server-version-cuda-preamble.txt",
            "0.3.0-dev",
            "build 10621, commit c1d0e7a00",
        ),
    ],
)
def test_llama_server_versions(fixture: str, version: str, build_info: str) -> None:
    parsed = parse_llama_server(recorded(fixture))
    assert (parsed.version, parsed.build_info) == (version, build_info)


def test_llama_server_garbage_gives_no_version() -> None:
    assert parse_llama_server("error while loading shared libraries\n").version is None


@pytest.mark.parametrize(
    ("fixture", "version", "note"),
    [
        ("ollama-version-no-server.txt", "0.3.4", None),
        ("ollama-version-windows-no-server.txt", "0.4.2", None),
        ("ollama-version-server-running.txt", "0.12.1", "already running"),
        # The binary is the newer client; the running server is older.
        ("ollama-version-old-server.txt", "0.9.0", "another version (0.5.7) is running"),
    ],
)
def test_ollama_versions(fixture: str, version: str, note: str | None) -> None:
    parsed = parse_ollama(recorded(fixture))
    assert parsed.version == version
    if note is None:
        assert parsed.notes == []
    else:
        assert len(parsed.notes) == 1 and note in parsed.notes[0]


def test_dotted_versions() -> None:
    assert parse_dotted("0.10.1.1\n").version == "0.10.1.1"
    assert parse_dotted("INFO 07-01 vllm 0.6.3.post1\n").version == "0.6.3.post1"
    assert parse_dotted("no digits").version is None


def test_version_folders_sort_as_numbers() -> None:
    names = ["b999", "b6123", "b10000"]
    assert sorted(names, key=version_key) == ["b999", "b6123", "b10000"]
