"""Schemas of the daemon itself: discovery, status, shutdown and problem responses."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

API_PREFIX = "/api/v1"
TOKEN_HEADER = "Authorization"


class Discovery(BaseModel):
    """What the daemon writes to its discovery file so clients can find it."""

    model_config = ConfigDict(frozen=True)

    url: str
    pid: int
    version: str
    started_at: float = Field(description="seconds since the Unix epoch")
    home: str


class DaemonStatus(BaseModel):
    model_config = ConfigDict(frozen=True)

    running: bool
    pid: int | None = None
    url: str | None = None
    version: str | None = None
    uptime_s: float | None = None
    home: str | None = None
    message: str | None = Field(default=None, description="why it is not running, in words")


class ShutdownAccepted(BaseModel):
    stopping: bool = True


class Problem(BaseModel):
    """RFC 9457 problem details: every error the daemon returns has this shape."""

    type: str = "about:blank"
    title: str
    status: int
    detail: str
    instance: str | None = None
