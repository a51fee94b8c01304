"""Typed errors of model downloads; each message says what happened and what to do."""

from __future__ import annotations

from pathlib import Path

from roundhouse.core.errors import ConflictError, RoundhouseError


class DownloadError(RoundhouseError):
    """A download stopped; the partial file is kept unless the message says otherwise."""

    title = "Download failed"
    status = 502


class HubAccessError(DownloadError):
    """The Hub refused or could not be reached while listing the repository's files."""

    title = "Hugging Face Hub unavailable"


class GatedRepoError(HubAccessError):
    title = "Gated repository"
    status = 403


class NotEnoughSpaceError(RoundhouseError):
    """The preflight found less free space than the queue needs (with a margin)."""

    title = "Not enough disk space"
    status = 507


class DiskFullError(DownloadError):
    """The disk filled while writing; the partial file is kept for a resume."""

    title = "Disk full"
    status = 507

    def __init__(self, folder: Path, detail: str | None = None) -> None:
        super().__init__(
            detail or f"The disk holding {folder} is full. Free some space and resume."
        )
        self.folder = folder


class UnsafeFolderError(DownloadError):
    """A cache folder other accounts can write, or a partial file that is not a plain file
    of its own: nothing is written there, the message says what to change."""

    title = "Models folder not private"
    status = 409


class QuarantinedError(DownloadError):
    """The finished file failed its digest check and was moved aside, not deleted."""

    title = "Downloaded file is corrupt"

    def __init__(self, detail: str, quarantine_path: Path) -> None:
        super().__init__(detail)
        self.quarantine_path = quarantine_path


class DownloadStateError(ConflictError):
    """The action does not apply to the item in its current state."""

    title = "Download in another state"


class DownloadsUnavailableError(RoundhouseError):
    """The queue's database cannot be opened or written."""

    title = "Download queue unavailable"
    status = 500
