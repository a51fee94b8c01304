"""An engine install's sentences for the shared transfer's failures: the release's words,
and installing again as the next step (the part downloaded is kept for it)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from roundhouse.core.engines.install.errors import ChecksumError, DownloadError, InstallError
from roundhouse.core.infra.transfer.verify import Verdict
from roundhouse.core.infra.transfer.words import TransferWords

_AGAIN = "Try again; if it happens again"


class ReleaseWords(TransferWords):
    """A release asset's failures, as InstallError and its kinds."""

    def gave_up(self, label: str, reason: str, failures: int, durable: int) -> Exception:
        return DownloadError(
            f"Downloading {label} failed: {reason}. The part already downloaded is kept; "
            "install again to resume."
        )

    def wrong_size(self, label: str, offered: int, size: int) -> Exception:
        return ChecksumError(
            f"The server offers {offered} bytes for {label}, but the release lists {size}; "
            "nothing was kept. Try again later or choose another release."
        )

    def oversent(self, label: str, size: int) -> Exception:
        return ChecksumError(
            f"The server sent more than the {size} bytes of {label}; nothing was kept. Try "
            "again later or choose another release."
        )

    def refused(self, label: str, url: str, status: int, headers: Mapping[str, str]) -> Exception:
        return DownloadError(
            f"{url} answered HTTP {status}; the release may have been withdrawn. "
            "Choose another release."
        )

    def redirects(self, label: str, exc: Exception) -> Exception:
        return DownloadError(
            f"Downloading {label} failed: the server redirected too often or to an address "
            f"Roundhouse does not follow ({exc}). Try again later or choose another release."
        )

    def disk_full(self, path: Path) -> Exception:
        return InstallError(
            f"The disk holding {path.parent} is full. Free some space, then install again; "
            "the part already downloaded is kept."
        )

    def write_failed(self, path: Path, reason: str) -> Exception:
        return InstallError(f"Cannot write {path}: {reason}.")

    def planted(self, path: Path, what: str) -> Exception:
        return InstallError(
            f"The partial download {path} {what}, not the file Roundhouse writes; Roundhouse "
            "does not write through it. Delete it, then install again."
        )

    def mismatch(self, name: str, size: int, verdict: Verdict) -> ChecksumError:
        """The finished file is not the release's (it was deleted)."""
        if verdict.size != size:
            return ChecksumError(
                f"{name} is {verdict.size} bytes, but the release lists {size}; it was "
                f"deleted. {_AGAIN} the release may be broken, so choose another."
            )
        got, wanted = verdict.digest or "", verdict.wanted or ""
        return ChecksumError(
            f"{name} does not match the release's sha256 (got {got[:12]}…, expected "
            f"{wanted[:12]}…); it was deleted. {_AGAIN}, the download is being altered on "
            "the way or the release is broken."
        )


RELEASE_WORDS = ReleaseWords()
