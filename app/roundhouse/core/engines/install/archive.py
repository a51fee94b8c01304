"""Unpack zip and tar.gz archives without letting any name or link reach outside the folder."""

from __future__ import annotations

import os
import shutil
import stat
import sys
import tarfile
import threading
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from typing import IO

from roundhouse.core.engines.install.errors import UnsafeArchiveError
from roundhouse.core.infra.threads import check

MAX_BYTES = 16 * 1024**3
MAX_MEMBERS = 100_000
_CHUNK = 1024 * 1024


def extract_archive(
    archive: Path,
    dest: Path,
    *,
    stop: threading.Event | None = None,
    max_bytes: int = MAX_BYTES,
) -> None:
    """Unpack `archive` (.zip, .tar.gz, .tgz) into the folder `dest`, creating it.

    Refused (UnsafeArchiveError): absolute or drive names, `..`, links that are absolute or
    climb with `..`, hard links to anything not already unpacked, devices, more than
    `max_bytes` in all. Execute bits are kept; setuid and friends never are.
    """
    dest.mkdir(parents=True, exist_ok=True)
    writer = _Writer(archive.name, dest, stop, max_bytes)
    name = archive.name.lower()
    try:
        if name.endswith(".zip"):
            _unzip(archive, writer)
        elif name.endswith((".tar.gz", ".tgz")):
            _untar(archive, writer)
        else:
            raise UnsafeArchiveError(f"{archive.name} is neither a .zip nor a .tar.gz archive.")
    except (zipfile.BadZipFile, tarfile.TarError, EOFError) as exc:
        raise UnsafeArchiveError(
            f"{archive.name} is damaged ({exc}); delete it and download it again."
        ) from exc
    writer.finish()


def _unzip(archive: Path, writer: _Writer) -> None:
    with zipfile.ZipFile(archive) as zf:
        members = zf.infolist()
        writer.count(len(members))
        for info in members:
            mode = info.external_attr >> 16
            if stat.S_ISLNK(mode):
                target = zf.read(info).decode("utf-8", errors="strict")
                writer.symlink(info.filename, target)
            elif info.is_dir():
                writer.directory(info.filename)
            else:
                with zf.open(info) as src:
                    writer.file(info.filename, src, executable=bool(mode & 0o111))


def _untar(archive: Path, writer: _Writer) -> None:
    with tarfile.open(archive, mode="r:*") as tar:
        for seen, member in enumerate(tar, start=1):
            writer.count(seen)
            if member.issym():
                writer.symlink(member.name, member.linkname)
            elif member.islnk():
                writer.hardlink(member.name, member.linkname)
            elif member.isdir():
                writer.directory(member.name)
            elif member.isfile():
                src = tar.extractfile(member)
                if src is None:
                    raise UnsafeArchiveError(f"{writer.archive}: {member.name} cannot be read.")
                with src:
                    writer.file(member.name, src, executable=bool(member.mode & 0o111))
            else:
                raise UnsafeArchiveError(
                    f"{writer.archive} holds {member.name!r}, a device or pipe; refusing it."
                )


class _Writer:
    """Writes members under `dest`, checking every name and link before touching the disk."""

    def __init__(
        self, archive: str, dest: Path, stop: threading.Event | None, max_bytes: int
    ) -> None:
        self.archive = archive
        self.dest = dest
        self.root = Path(os.path.realpath(dest))
        self.stop = stop
        self.budget = max_bytes
        # Windows may refuse symlinks (no privilege): copy their targets at the end instead.
        self.pending_copies: list[tuple[Path, Path]] = []

    def count(self, members: int) -> None:
        if members > MAX_MEMBERS:
            raise UnsafeArchiveError(f"{self.archive} holds more than {MAX_MEMBERS} files.")

    def directory(self, name: str) -> None:
        rel = self._relative(name)
        if rel is not None:
            self._inside(rel).mkdir(parents=True, exist_ok=True)

    def file(self, name: str, src: IO[bytes], *, executable: bool) -> None:
        rel = self._relative(name)
        if rel is None:
            return
        path = self._inside(rel)
        with self._fresh(path) as out:
            while chunk := src.read(_CHUNK):
                check(self.stop)
                self.budget -= len(chunk)
                if self.budget < 0:
                    raise UnsafeArchiveError(
                        f"{self.archive} unpacks to more than it should; refusing it."
                    )
                out.write(chunk)
        if sys.platform != "win32":
            path.chmod(0o755 if executable else 0o644)

    def symlink(self, name: str, target: str) -> None:
        rel = self._relative(name)
        if rel is None:
            raise UnsafeArchiveError(f"{self.archive} holds a link named {name!r}; refusing it.")
        parts = target.replace("\\", "/").split("/")
        if not target or target.startswith(("/", "\\")) or _drive(target) or ".." in parts:
            raise UnsafeArchiveError(
                f"{self.archive} holds a link {name!r} -> {target!r} that leaves its folder; "
                "refusing it."
            )
        path = self._inside(rel)
        self._remove(path)
        try:
            path.symlink_to(target)
        except OSError:
            self.pending_copies.append((path, path.parent / target))

    def hardlink(self, name: str, target: str) -> None:
        rel, source_rel = self._relative(name), self._relative(target)
        if rel is None or source_rel is None:
            raise UnsafeArchiveError(f"{self.archive} holds a bad hard link {name!r}.")
        source = self._inside(source_rel)
        if not source.is_file():
            raise UnsafeArchiveError(
                f"{self.archive} holds a hard link {name!r} to {target!r}, which it does not "
                "hold; refusing it."
            )
        path = self._inside(rel)
        self._remove(path)
        shutil.copy2(source, path)

    def finish(self) -> None:
        for path, source in self.pending_copies:
            if source.is_file():
                shutil.copy2(source, path)

    def _relative(self, name: str) -> PurePosixPath | None:
        """The member's path inside the folder; None for the folder itself ("./")."""
        if "\x00" in name:
            raise UnsafeArchiveError(f"{self.archive} holds a name with a NUL byte.")
        # Windows-made archives may use backslashes; Windows would treat them as separators.
        text = name.replace("\\", "/")
        if text.startswith("/") or _drive(text):
            raise UnsafeArchiveError(
                f"{self.archive} holds the absolute name {name!r}; refusing it."
            )
        parts = [p for p in text.split("/") if p not in ("", ".")]
        if ".." in parts:
            raise UnsafeArchiveError(
                f"{self.archive} holds {name!r}, which climbs out of its folder; refusing it."
            )
        return PurePosixPath(*parts) if parts else None

    def _inside(self, rel: PurePosixPath) -> Path:
        check(self.stop)
        path = self.dest.joinpath(*rel.parts)
        # Links unpacked earlier must not carry a later member elsewhere.
        parent = Path(os.path.realpath(path.parent))
        if parent != self.root and self.root not in parent.parents:
            raise UnsafeArchiveError(
                f"{self.archive} writes {rel} through a link that leaves its folder; refusing it."
            )
        parent.mkdir(parents=True, exist_ok=True)
        return path

    @contextmanager
    def _fresh(self, path: Path) -> Iterator[IO[bytes]]:
        self._remove(path)
        with path.open("xb") as out:
            yield out

    @staticmethod
    def _remove(path: Path) -> None:
        if path.is_symlink() or path.is_file():
            path.unlink()
        elif path.is_dir():
            raise UnsafeArchiveError(f"{path.name} is both a folder and a file in the archive.")


def _drive(text: str) -> bool:
    return len(text) >= 2 and text[1] == ":" and text[0].isalpha()
