"""The downloads' sentences for the shared transfer's failures: the Hub's words, the models
folder, and resume as the next step."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from roundhouse.base.units import format_bytes
from roundhouse.core.infra.transfer.words import TransferWords
from roundhouse.core.models.downloads.errors import (
    DiskFullError,
    DownloadError,
    GatedRepoError,
    UnsafeFolderError,
)


class HubWords(TransferWords):
    """A Hub file's failures, as DownloadError and its kinds."""

    def gave_up(self, label: str, reason: str, failures: int, durable: int) -> Exception:
        return DownloadError(
            f"Downloading {label} failed: {reason}, {failures} times in a row. The "
            f"{format_bytes(durable)} downloaded so far are kept: check the connection, "
            "then resume."
        )

    def wrong_size(self, label: str, offered: int, size: int) -> Exception:
        return DownloadError(
            f"The server offers {offered:,} bytes for {label}, but the Hub lists {size:,}. "
            "The repository may have changed: add the download again."
        )

    def oversent(self, label: str, size: int) -> Exception:
        return DownloadError(
            f"The server sent more than the {size:,} bytes of {label}; the extra was not "
            "kept. Try again later."
        )

    def refused(self, label: str, url: str, status: int, headers: Mapping[str, str]) -> Exception:
        code = headers.get("x-error-code", "")
        if code == "GatedRepo" or (status in (401, 403) and "gated" in code.lower()):
            return GatedRepoError(
                f"{label} is in a gated repository: accept its terms on huggingface.co, "
                "store your Hugging Face token in Roundhouse, then resume."
            )
        if status in (401, 403):
            return GatedRepoError(
                f"The Hub refused {label} (HTTP {status}): the repository is private or "
                "gated. Store a Hugging Face token that may read it, then resume."
            )
        if status == 404:
            return DownloadError(
                f"{label} is no longer on the Hub at that commit; add the download again to "
                "get the current files."
            )
        return DownloadError(f"The Hub answered HTTP {status} for {label}; try again later.")

    def redirects(self, label: str, exc: Exception) -> Exception:
        return DownloadError(
            f"Downloading {label} failed: the server redirected too often or to an address "
            f"Roundhouse does not follow ({exc}). Try again later."
        )

    def disk_full(self, path: Path) -> Exception:
        return DiskFullError(path.parent)

    def write_failed(self, path: Path, reason: str) -> Exception:
        return DownloadError(
            f"Cannot write {path}: {reason}. Check that the folder is writable, then resume "
            "the download; the part already downloaded is kept."
        )

    def planted(self, path: Path, what: str) -> Exception:
        return UnsafeFolderError(
            f"The partial download {path} {what}, not the file Roundhouse writes: something "
            "else put it in the models folder, and Roundhouse does not write through it. "
            f"Delete it, make sure no other account can write to {path.parent}, then resume."
        )


HUB_WORDS = HubWords()
