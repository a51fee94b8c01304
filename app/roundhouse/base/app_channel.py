"""The running desktop app's channel, per user and home: where it listens, and a plain-Python
client for `roundhouse quick-chat` (a Unix socket in a 0700 folder; a named pipe on Windows
that only the same user may open)."""

from __future__ import annotations

import getpass
import hashlib
import os
import socket
import stat
import sys
import tempfile
from pathlib import Path

from roundhouse.base.paths import Home

QUICK_CHAT = "quick-chat"
OK = "ok"
PIPE_PREFIX = "\\\\.\\pipe\\"


class ChannelError(Exception):
    """The channel's folder is not private to this user: refused, in words."""


def _digest(home: Home) -> str:
    return hashlib.sha256(str(home.state_dir.resolve()).encode()).hexdigest()[:16]


def channel_dir() -> Path:
    """A folder of this user's only: the runtime folder's, else the temporary one's."""
    base = os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()
    return Path(base) / f"roundhouse-{os.getuid()}"


def private_dir() -> Path:
    """`channel_dir()`, made 0700 if new; refused when another user owns it or may enter it."""
    folder = channel_dir()
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = os.lstat(folder)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise ChannelError(
            f"{folder} is not a folder private to you (it must be yours, mode 0700): remove it "
            "and try again; Roundhouse makes it anew."
        )
    return folder


def channel_name(home: Home) -> str:
    """What the app listens on: a socket's full path, or a pipe's name on Windows."""
    if sys.platform == "win32":
        # Pipes share one namespace on the machine: the user's name keeps two users apart.
        return f"roundhouse-{getpass.getuser()}-{_digest(home)}"
    return str(channel_dir() / f"app-{_digest(home)}.sock")


def ask_app(home: Home, command: str = QUICK_CHAT, timeout_s: float = 5.0) -> str | None:
    """Send `command` to the app running on `home`; its answer, or None when none listens."""
    line = (command + "\n").encode()
    if sys.platform == "win32":
        try:
            with Path(PIPE_PREFIX + channel_name(home)).open("r+b", buffering=0) as pipe:
                pipe.write(line)
                return pipe.readline().decode(errors="replace").strip()
        except OSError:
            return None
    private_dir()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
        client.settimeout(timeout_s)
        try:
            client.connect(channel_name(home))
        except (FileNotFoundError, ConnectionRefusedError):
            return None
        try:
            client.sendall(line)
            answer = b""
            while not answer.endswith(b"\n"):
                chunk = client.recv(256)
                if not chunk:
                    break
                answer += chunk
        except OSError:
            return None
    return answer.decode(errors="replace").strip()
