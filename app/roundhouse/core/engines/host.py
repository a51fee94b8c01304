"""What engine detection may ask of a machine, and the real machine answering it."""

from __future__ import annotations

import logging
import os
import platform
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol

log = logging.getLogger(__name__)


class EngineHost(Protocol):
    """The questions detection asks; tests answer them from recorded tool outputs."""

    @property
    def system(self) -> str:
        """As platform.system(): "Linux", "Darwin" or "Windows"."""
        ...

    @property
    def machine(self) -> str: ...

    @property
    def env(self) -> Mapping[str, str]: ...

    def which(self, name: str) -> str | None:
        """The executable `name` on this host's PATH, or None."""
        ...

    def is_file(self, path: str) -> bool: ...

    def list_dir(self, path: str) -> list[str] | None: ...

    def first_line(self, path: str) -> str | None:
        """The first line of a file (a console script's #! line), or None."""
        ...

    def run(self, argv: Sequence[str], timeout: float = 15.0) -> str | None:
        """stdout and stderr together when the command exits 0; None when it cannot run."""
        ...


class LocalEngineHost:
    """This machine. `env` replaces os.environ for PATH lookups and placeholders."""

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        self.system = platform.system()
        self.machine = platform.machine()
        self.env: Mapping[str, str] = dict(os.environ if env is None else env)

    def which(self, name: str) -> str | None:
        return shutil.which(name, path=self.env.get("PATH", ""))

    def is_file(self, path: str) -> bool:
        return Path(path).is_file()

    def list_dir(self, path: str) -> list[str] | None:
        try:
            return sorted(p.name for p in Path(path).iterdir())
        except OSError:
            return None

    def first_line(self, path: str) -> str | None:
        try:
            with Path(path).open("rb") as fh:
                head = fh.readline(512)
        except OSError:
            return None
        return head.decode("utf-8", errors="replace").rstrip("\r\n")

    def run(self, argv: Sequence[str], timeout: float = 15.0) -> str | None:
        try:
            done = subprocess.run(
                list(argv),
                capture_output=True,
                timeout=timeout,
                check=False,
                stdin=subprocess.DEVNULL,
                env=dict(self.env),
            )
        except (OSError, subprocess.SubprocessError) as exc:
            log.debug("%s failed: %s", argv[0], exc)
            return None
        if done.returncode != 0:
            log.debug("%s exited %s", argv[0], done.returncode)
            return None
        # llama-server prints its version on stderr, Ollama on stdout: read both.
        out = done.stdout + done.stderr
        return out.decode("utf-8", errors="replace")
