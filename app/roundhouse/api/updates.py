"""Schemas of the update check: this version, the latest released one, and when it was asked."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field


class UpdateStatus(BaseModel):
    """The last update check's result; reading it asks nothing of the network."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    enabled: bool = Field(description="ui.check_updates: the daemon checks once a day by itself")
    current: str = Field(description="the version of the daemon that answers")
    latest: str | None = Field(
        default=None, description="the latest release PyPI named at the last successful check"
    )
    newer: bool = Field(default=False, description="`latest` is newer than `current`")
    checked_at: float | None = Field(
        default=None, description="when the last check was tried (seconds since the Unix epoch)"
    )
    error: str | None = Field(default=None, description="why the last check failed, in words")
    source: str = Field(description="the address asked: PyPI's JSON API unless overridden")

    def summary(self) -> str:
        """The result in words, as the app and the CLI show it."""
        if self.latest is None:
            said = "Not checked yet." if self.checked_at is None else "No release known yet."
        elif self.newer:
            said = f"Roundhouse {self.latest} is out (this is {self.current})."
        else:
            said = f"Roundhouse {self.current} is up to date (latest release: {self.latest})."
        if self.error:
            said += f" The last check failed: {self.error}"
        if self.checked_at is not None:
            when = datetime.fromtimestamp(self.checked_at).strftime("%Y-%m-%d %H:%M")
            said += f" Last checked {when}."
        return said
