"""llama.cpp builds in Roundhouse's engines folder: list them, pick the current one, remove one."""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
import uuid
from pathlib import Path
from typing import Any

from roundhouse.api.installs import Backend, InstalledBuild
from roundhouse.base.files import write_atomic
from roundhouse.core.engines.install.layout import (
    CURRENT_FILE,
    INSTALL_RECORD,
    LOCK_FILE,
    PARTIAL_PREFIX,
    TRASH_PREFIX,
    is_safe_tag,
)
from roundhouse.core.engines.install.locks import BusyLock
from roundhouse.core.engines.versions import version_key
from roundhouse.core.errors import ConflictError, InvalidInputError, NotFoundError


class ManagedBuilds:
    """The builds under `<engines_dir>/llama.cpp/<tag>/`, and which one is current.

    The current build is the one named in the `current` file; when that file is missing or
    names a build that is gone, the newest build is current. Detection offers the current
    build first. Reading and switching are quick and synchronous; removal is async.
    """

    def __init__(
        self,
        engines_dir: Path,
        *,
        subdir: str = "llama.cpp",
        executable: str = "llama-server",
        windows: bool = sys.platform == "win32",
    ) -> None:
        self.folder = engines_dir / subdir
        self.executable = f"{executable}.exe" if windows else executable

    def version_dir(self, tag: str) -> Path:
        return self.folder / _checked(tag)

    def partial_dir(self, tag: str) -> Path:
        return self.folder / f"{PARTIAL_PREFIX}{_checked(tag)}"

    def executable_in(self, folder: Path) -> Path | None:
        """llama-server where detection looks for it: the folder itself, or its bin/."""
        for path in (folder / self.executable, folder / "bin" / self.executable):
            if path.is_file():
                return path
        return None

    def tags(self) -> list[str]:
        """Installed tags, newest first (the order detection uses)."""
        try:
            entries = list(self.folder.iterdir())
        except OSError:
            return []
        tags = [
            e.name
            for e in entries
            if not e.name.startswith(".") and e.is_dir() and self.executable_in(e) is not None
        ]
        return sorted(tags, key=version_key, reverse=True)

    def current_tag(self) -> str | None:
        tags = self.tags()
        try:
            named = (self.folder / CURRENT_FILE).read_text(encoding="utf-8").strip()
        except OSError:
            named = ""
        if named in tags:
            return named
        return tags[0] if tags else None

    def installed(self) -> list[InstalledBuild]:
        current = self.current_tag()
        return [self._build(tag, current) for tag in self.tags()]

    def get(self, tag: str) -> InstalledBuild:
        if tag not in self.tags():
            raise NotFoundError(self._not_installed(tag))
        return self._build(tag, self.current_tag())

    def switch(self, tag: str) -> InstalledBuild:
        """Make `tag` the current build (the one detection offers first)."""
        if tag not in self.tags():
            raise NotFoundError(self._not_installed(tag))
        write_atomic(self.folder / CURRENT_FILE, f"{tag}\n".encode())
        return self._build(tag, tag)

    async def remove(self, tag: str, *, force: bool = False) -> str | None:
        """Delete a build; returns the tag that is current afterwards (None: none left).

        The current build is only removed when it is the last one, or with `force`, which
        makes the newest remaining build current. Stop instances using the build first: on
        Windows a running llama-server.exe cannot be removed (ConflictError).
        """
        with self.lock():
            tags = self.tags()
            if tag not in tags:
                raise NotFoundError(self._not_installed(tag))
            current = self.current_tag()
            others = [t for t in tags if t != tag]
            if tag == current and others and not force:
                raise ConflictError(
                    f"llama.cpp {tag} is the current build. Switch to another build first, "
                    f"or remove it with force (then {others[0]} becomes current)."
                )
            try:
                trash = self.set_aside(tag)
            except PermissionError as exc:
                raise ConflictError(
                    f"llama.cpp {tag} is in use ({exc.strerror}); stop the instances that run "
                    "it, then remove it again."
                ) from exc
            if tag == current:
                if others:
                    self.switch(others[0])
                else:
                    (self.folder / CURRENT_FILE).unlink(missing_ok=True)
            if trash is not None:
                await asyncio.to_thread(shutil.rmtree, trash, True)
            return self.current_tag()

    def set_aside(self, tag: str) -> Path | None:
        """Rename `<tag>/` out of detection's sight, to be deleted; None when absent."""
        folder = self.version_dir(tag)
        if not folder.exists():
            return None
        trash = self.folder / f"{TRASH_PREFIX}{tag}-{uuid.uuid4().hex[:8]}"
        folder.rename(trash)
        return trash

    def partials(self) -> list[str]:
        """Tags with a download left part-way (an install will resume it)."""
        try:
            names = [e.name for e in self.folder.iterdir() if e.is_dir()]
        except OSError:
            return []
        return sorted(n.removeprefix(PARTIAL_PREFIX) for n in names if n.startswith(PARTIAL_PREFIX))

    async def discard_partial(self, tag: str) -> None:
        with self.lock():
            await asyncio.to_thread(shutil.rmtree, self.partial_dir(tag), True)

    def clean_trash(self) -> None:
        """Delete what an interrupted removal left behind."""
        try:
            entries = [e for e in self.folder.iterdir() if e.name.startswith(TRASH_PREFIX)]
        except OSError:
            return
        for entry in entries:
            shutil.rmtree(entry, ignore_errors=True)

    def lock(self) -> BusyLock:
        """Held while a build is installed or removed; a second holder gets InstallBusyError."""
        return BusyLock(self.folder / LOCK_FILE, "llama.cpp")

    def _build(self, tag: str, current: str | None) -> InstalledBuild:
        folder = self.version_dir(tag)
        exe = self.executable_in(folder)
        record = _read_record(folder / INSTALL_RECORD)
        backend = _str(record.get("backend"))
        installed_at = record.get("installed_at")
        return InstalledBuild(
            tag=tag,
            path=str(folder),
            executable=str(exe or folder / self.executable),
            current=tag == current,
            asset=_str(record.get("asset")),
            backend=Backend(backend) if backend in {b.value for b in Backend} else None,
            backend_version=_str(record.get("backend_version")),
            reason=_str(record.get("reason")),
            installed_at=float(installed_at) if isinstance(installed_at, int | float) else None,
        )

    def _not_installed(self, tag: str) -> str:
        have = ", ".join(self.tags()) or "none"
        return f"llama.cpp {tag} is not installed (installed: {have})."


def _checked(tag: str) -> str:
    if not is_safe_tag(tag):
        raise InvalidInputError(f"{tag!r} is not a llama.cpp release tag; tags look like b6123.")
    return tag


def _read_record(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None
