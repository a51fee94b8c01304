"""Errors of GGUF header reading; each message says what is wrong and what to do."""

from __future__ import annotations

from roundhouse.core.errors import InvalidInputError, RoundhouseError

DAMAGED = "the file is damaged or not a GGUF model; download it again"


class GgufError(InvalidInputError):
    """A GGUF header that cannot be read: malformed, hostile, truncated or unsupported."""

    title = "Unreadable GGUF file"

    def __init__(self, problem: str, *, source: str | None = None, advice: str = DAMAGED) -> None:
        where = f"{source}: " if source else ""
        super().__init__(f"{where}{problem}; {advice}.")
        self.problem = problem
        self.source = source
        self.advice = advice

    def located(self, source: str) -> GgufError:
        """The same error naming the file or URL it came from."""
        return GgufError(self.problem, source=source, advice=self.advice)


class GgufFetchError(RoundhouseError):
    """The header could not be fetched over HTTP (network, access, or a server without Range)."""

    title = "Could not fetch the GGUF header"
    status = 502


class NeedMoreBytes(Exception):
    """The parser needs bytes up to `end` that a partial source has not fetched yet."""

    def __init__(self, end: int) -> None:
        super().__init__(end)
        self.end = end
