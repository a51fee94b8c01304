"""Calls of the daemon client behind the Settings page (mixed into DaemonClient): the free
space where models would go, and the update check."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

import httpx
from pydantic import BaseModel

from roundhouse.api.hardware import DiskInfo
from roundhouse.api.updates import UpdateStatus

M = TypeVar("M", bound=BaseModel)
# The daemon asks PyPI while this waits: its own limit is 15 s.
_CHECK_TIMEOUT = httpx.Timeout(30.0, connect=2.0)


class SettingsCallsMixin:
    """`/api/v1/disk` and `/api/v1/updates`."""

    if TYPE_CHECKING:
        # Provided by DaemonClient.
        async def _request(self, method: str, path: str, model: type[M], **kwargs: Any) -> M: ...

    async def disk_space(self, path: str = "") -> DiskInfo:
        """Space on the volume of `path` (a folder on the daemon's machine, which need not
        exist yet); empty means the Hugging Face cache."""
        return await self._request("GET", "/disk", DiskInfo, params={"path": path})

    async def update_status(self) -> UpdateStatus:
        """The last update check's result; the daemon asks nothing of the network for it."""
        return await self._request("GET", "/updates", UpdateStatus)

    async def check_updates(self) -> UpdateStatus:
        """Ask PyPI now, even with `ui.check_updates` off; a failure is in `error`."""
        return await self._request("POST", "/updates/check", UpdateStatus, timeout=_CHECK_TIMEOUT)
