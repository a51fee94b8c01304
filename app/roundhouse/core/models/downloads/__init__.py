"""Model downloads: a persisted queue that resumes with Range into the Hugging Face cache."""

from roundhouse.core.infra.transfer.fetch import TransferPolicy
from roundhouse.core.models.downloads.errors import (
    DiskFullError,
    DownloadError,
    DownloadStateError,
    GatedRepoError,
    HubAccessError,
    NotEnoughSpaceError,
    QuarantinedError,
    UnsafeFolderError,
)
from roundhouse.core.models.downloads.layout import RepoCache
from roundhouse.core.models.downloads.safety import UnsafeNameError
from roundhouse.core.models.downloads.service import DownloadService, TokenSource
from roundhouse.core.models.library.places import hub_cache_dir

__all__ = [
    "DiskFullError",
    "DownloadError",
    "DownloadService",
    "DownloadStateError",
    "GatedRepoError",
    "HubAccessError",
    "NotEnoughSpaceError",
    "QuarantinedError",
    "RepoCache",
    "TokenSource",
    "TransferPolicy",
    "UnsafeFolderError",
    "UnsafeNameError",
    "hub_cache_dir",
]
