"""Typed errors of installing engines; each message says what to do next."""

from __future__ import annotations

from collections.abc import Sequence

from roundhouse.core.errors import ConflictError, RoundhouseError


class InstallError(RoundhouseError):
    """An install could not finish; nothing half-installed is left where detection looks."""

    title = "Engine install failed"
    status = 500


class DownloadError(InstallError):
    """The release listing or a file could not be fetched; a partial download is kept."""

    title = "Download failed"
    status = 502


class ChecksumError(DownloadError):
    """A downloaded file is not what the release lists (size or sha256); it was deleted."""

    title = "Downloaded file is corrupt"


class UnsafeArchiveError(InstallError):
    """An archive holds a name or link that would write outside its folder."""

    title = "Archive refused"
    status = 502


class PipError(InstallError):
    """pip exited with an error; `tail` holds its last lines of output."""

    title = "pip install failed"

    def __init__(self, detail: str, tail: Sequence[str] = ()) -> None:
        if tail:
            detail += "\nLast lines from pip:\n" + "\n".join(tail)
        super().__init__(detail)
        self.tail = tuple(tail)


class HashMismatchError(PipError):
    """pip refused a download whose sha256 is not the one the release pins; nothing of it
    was installed."""

    title = "Download does not match its pinned hash"
    status = 502


class InstallBusyError(ConflictError):
    """Another install or removal of the same engine is running."""

    title = "Install already running"
