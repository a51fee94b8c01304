"""The sentences a transfer's failures are told in; each caller gives its own (a Hub file, a
release asset), so the engine stays the same and the words stay the caller's."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from roundhouse.base.units import format_bytes
from roundhouse.core.errors import RoundhouseError


class TransferError(RoundhouseError):
    """A transfer stopped; the partial file is kept unless the message says otherwise."""

    title = "Download failed"
    status = 502


class TransferWords:
    """Builds the error for each way a transfer fails. These plain words serve a caller
    with none of its own; callers subclass it to name their source and their next step."""

    def gave_up(self, label: str, reason: str, failures: int, durable: int) -> Exception:
        """The attempts ran out; `durable` bytes of the partial are kept."""
        return TransferError(
            f"Downloading {label} failed: {reason}, {failures} times in a row. The "
            f"{format_bytes(durable)} downloaded so far are kept: check the connection, "
            "then try again."
        )

    def wrong_size(self, label: str, offered: int, size: int) -> Exception:
        """The server's length is not the one expected; nothing of it is written."""
        return TransferError(
            f"The server offers {offered:,} bytes for {label}, but {size:,} were expected."
        )

    def oversent(self, label: str, size: int) -> Exception:
        """The server sent more than `size` bytes; the extra was not written."""
        return TransferError(
            f"The server sent more than the {size:,} bytes of {label}; the extra was not "
            "kept. Try again later."
        )

    def refused(self, label: str, url: str, status: int, headers: Mapping[str, str]) -> Exception:
        """An HTTP status not worth a retry (4xx but 408 and 429)."""
        return TransferError(f"The server answered HTTP {status} for {label}; try again later.")

    def redirects(self, label: str, exc: Exception) -> Exception:
        return TransferError(
            f"Downloading {label} failed: the server redirected too often or to an address "
            f"Roundhouse does not follow ({exc}). Try again later."
        )

    def disk_full(self, path: Path) -> Exception:
        return TransferError(f"The disk holding {path.parent} is full. Free some space.")

    def write_failed(self, path: Path, reason: str) -> Exception:
        return TransferError(f"Cannot write {path}: {reason}.")

    def planted(self, path: Path, what: str) -> Exception:
        """Something other than the partial file Roundhouse writes is at its name."""
        return TransferError(
            f"The partial download {path} {what}, not the file Roundhouse writes; Roundhouse "
            "does not write through it. Delete it, then try again."
        )


PLAIN_WORDS = TransferWords()
