"""Names of the files and folders installs leave under Roundhouse's engines folder."""

from __future__ import annotations

import re
from pathlib import PurePath, PurePosixPath, PureWindowsPath

# <engines>/llama.cpp/current holds the tag of the build detection should offer first.
CURRENT_FILE = "current"
# Downloads and extraction happen under <engines>/llama.cpp/.partial-<tag>/; only a finished
# build is renamed to <engines>/llama.cpp/<tag>/, so a half-installed one is never seen.
PARTIAL_PREFIX = ".partial-"
# Removed builds are renamed here first (atomic), then deleted.
TRASH_PREFIX = ".trash-"
# Written inside a build before it is renamed into place: what was installed and why.
INSTALL_RECORD = ".roundhouse-install.json"
LOCK_FILE = ".lock"
# <engines>/venvs/<engine id>/: one virtual environment per Python engine.
VENVS_DIR = "venvs"
# llama.cpp's RPC worker, beside llama-server in a build: releases before the rename ship
# rpc-server, newer builds ggml-rpc-server (the split across machines, ADR 36).
RPC_SERVER_NAMES = ("rpc-server", "ggml-rpc-server")

# A tag becomes a folder name: no separators, no leading dot, nothing a shell would mangle.
_SAFE_TAG = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


def is_safe_tag(tag: str) -> bool:
    return bool(_SAFE_TAG.match(tag)) and ".." not in tag


def venv_python(venv_dir: PurePath | str, system: str) -> PurePath:
    """The interpreter of a virtual environment made by `python -m venv` on `system`."""
    if system == "Windows":
        return PureWindowsPath(venv_dir, "Scripts", "python.exe")
    return PurePosixPath(venv_dir, "bin", "python")
