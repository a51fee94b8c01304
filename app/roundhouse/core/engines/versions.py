"""Read versions from each engine's own `--version` output."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# Current builds: "version: 0.4.1-dev (build 10991, commit 930e2fa59)".
_LLAMA_NEW = re.compile(r"^version:\s*(\S+)\s*\(build (\d+), commit ([^)\s]+)\)", re.M)
# Older builds: "version: 4291 (ce8784bd)", the number being the b4291 release tag.
_LLAMA_OLD = re.compile(r"^version:\s*(\d+)\s*\(([^)\s]+)\)", re.M)
_LLAMA_BUILT = re.compile(r"^built with (.+?)\s*$", re.M)

_OLLAMA_CLIENT = re.compile(r"client version is\s+(\S+)")
_OLLAMA_SERVER = re.compile(r"ollama version is\s+(\S+)")

_DOTTED = re.compile(r"\b(\d+\.\d+(?:\.\d+)?(?:[.\-+][0-9A-Za-z.]+)?)\b")


@dataclass(frozen=True)
class ParsedVersion:
    version: str | None
    build_info: str | None = None
    notes: list[str] = field(default_factory=list)


def parse_llama_server(text: str) -> ParsedVersion:
    """llama-server --version (it writes to stderr, sometimes after backend-loading lines)."""
    built = _LLAMA_BUILT.search(text)
    built_words = f"built with {built.group(1)}" if built else None
    new = _LLAMA_NEW.search(text)
    if new:
        info = f"build {new.group(2)}, commit {new.group(3)}"
        return ParsedVersion(new.group(1), _join(info, built_words))
    old = _LLAMA_OLD.search(text)
    if old:
        return ParsedVersion(f"b{old.group(1)}", _join(f"commit {old.group(2)}", built_words))
    return ParsedVersion(None, built_words)


def parse_ollama(text: str) -> ParsedVersion:
    """ollama --version: the binary's own version is the client's; a server may differ."""
    client = _OLLAMA_CLIENT.search(text)
    server = _OLLAMA_SERVER.search(text)
    if server is None:
        # "could not connect to a running Ollama instance", then the client's version.
        return ParsedVersion(client.group(1) if client else None)
    if client is None:
        # Only "ollama version is X": a server of this very version is running.
        return ParsedVersion(server.group(1), notes=["An Ollama server is already running."])
    return ParsedVersion(
        client.group(1),
        notes=[
            f"An Ollama server of another version ({server.group(1)}) is running; "
            "stop it before starting this one."
        ],
    )


def parse_dotted(text: str) -> ParsedVersion:
    """The first dotted version number (vllm --version prints just "0.10.1.1")."""
    found = _DOTTED.search(text)
    return ParsedVersion(found.group(1) if found else None)


def version_key(text: str) -> tuple[int, ...]:
    """Sort key for folder names such as "b6123" or "0.5.0": numbers, compared as numbers."""
    return tuple(int(n) for n in re.findall(r"\d+", text))


def _join(*parts: str | None) -> str | None:
    words = [p for p in parts if p]
    return "; ".join(words) if words else None
