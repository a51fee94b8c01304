"""Queue, library, fit and first-run calls of the daemon client (mixed into DaemonClient)."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import quote

import httpx
from pydantic import BaseModel

from roundhouse.api.downloads import (
    AnyDownloadItem,
    DownloadItemReply,
    DownloadQueueView,
    DownloadRequest,
    OllamaDownloadRequest,
    OllamaPullItem,
)
from roundhouse.api.fit import FitQuery, ModelFit
from roundhouse.api.instances import InstanceInfo
from roundhouse.api.library import DeleteResult, ImportRequest, LibraryList, LibraryModel
from roundhouse.api.starters import (
    ServedStarter,
    ServeStarterRequest,
    SetupGuide,
    StarterList,
)

M = TypeVar("M", bound=BaseModel)
_JSON = {"Content-Type": "application/json"}
# Adding resolves files on the Hub and a library scan reads headers: longer than usual.
_SLOW = httpx.Timeout(120.0, connect=2.0)
# Serving waits while the engine loads the model (the daemon bounds it by its ready timeout).
_LOAD = httpx.Timeout(10.0, connect=2.0, read=7500.0)


def _item(item_id: str, action: str = "") -> str:
    return "/downloads/" + quote(item_id, safe="") + (f"/{action}" if action else "")


class ModelsMixin:
    """`/api/v1/downloads` and `/api/v1/library`."""

    if TYPE_CHECKING:
        # Provided by DaemonClient.
        async def _request(self, method: str, path: str, model: type[M], **kwargs: Any) -> M: ...

        def _stream(
            self, path: str, event_names: tuple[str, ...], *, method: str = "GET", **kwargs: Any
        ) -> AsyncGenerator[tuple[str, str], None]: ...

    # -- downloads ---------------------------------------------------------------------------

    async def downloads(self) -> DownloadQueueView:
        return await self._request("GET", "/downloads", DownloadQueueView)

    async def add_download(self, request: DownloadRequest) -> DownloadQueueView:
        body = request.model_dump_json()
        return await self._request(
            "POST", "/downloads", DownloadQueueView, content=body, headers=_JSON, timeout=_SLOW
        )

    async def add_ollama_pull(self, request: OllamaDownloadRequest) -> OllamaPullItem:
        """Queue a pull through Ollama; its progress comes with `follow_downloads`."""
        body = request.model_dump_json()
        return await self._request(
            "POST", "/downloads/ollama", OllamaPullItem, content=body, headers=_JSON
        )

    async def download(self, item_id: str) -> AnyDownloadItem:
        # A file from the Hub or an Ollama pull: the answer's `kind` says which.
        return (await self._request("GET", _item(item_id), DownloadItemReply)).root

    async def pause_download(self, item_id: str) -> AnyDownloadItem:
        return (await self._request("POST", _item(item_id, "pause"), DownloadItemReply)).root

    async def resume_download(self, item_id: str) -> AnyDownloadItem:
        reply = await self._request(
            "POST", _item(item_id, "resume"), DownloadItemReply, timeout=_SLOW
        )
        return reply.root

    async def cancel_download(self, item_id: str) -> AnyDownloadItem:
        return (await self._request("POST", _item(item_id, "cancel"), DownloadItemReply)).root

    async def clear_finished_downloads(self) -> DownloadQueueView:
        return await self._request("POST", "/downloads/clear", DownloadQueueView)

    async def follow_downloads(self) -> AsyncGenerator[DownloadQueueView, None]:
        """The queue now and after each change, until the daemon stops or the caller does."""
        async with aclosing(self._stream("/downloads/stream", ("queue",))) as events:
            async for _, data in events:
                yield DownloadQueueView.model_validate_json(data)

    # -- library -----------------------------------------------------------------------------

    async def library(self, refresh: bool = False) -> LibraryList:
        # Every listing is a scan (cached per file by size and mtime): `refresh` is accepted
        # for callers that mean "look again", which is what each call does.
        del refresh
        return await self._request("GET", "/library", LibraryList, timeout=_SLOW)

    async def library_model(self, model_id: str) -> LibraryModel:
        return await self._request("GET", "/library/" + quote(model_id, safe=""), LibraryModel)

    async def import_gguf(self, request: ImportRequest) -> LibraryModel:
        body = request.model_dump_json()
        return await self._request(
            "POST", "/library/import", LibraryModel, content=body, headers=_JSON, timeout=_SLOW
        )

    async def delete_library_model(self, model_id: str, dry_run: bool = False) -> DeleteResult:
        return await self._request(
            "DELETE",
            "/library/" + quote(model_id, safe=""),
            DeleteResult,
            params={"dry_run": "true" if dry_run else "false"},
            timeout=_SLOW,
        )

    # -- fit ---------------------------------------------------------------------------------

    async def fit_model(self, query: FitQuery) -> ModelFit:
        body = query.model_dump_json()
        return await self._request(
            "POST", "/fit", ModelFit, content=body, headers=_JSON, timeout=_SLOW
        )

    # -- first-run guide ---------------------------------------------------------------------

    async def setup_guide(self, refresh: bool = False) -> SetupGuide:
        """This machine in one line and the engines the guide can set up, best first."""
        params = {"refresh": "true"} if refresh else {}
        return await self._request("GET", "/setup", SetupGuide, params=params, timeout=_SLOW)

    async def starters(self, engine: str | None = None, offline: bool = False) -> StarterList:
        """The starter models for `engine` (None: the recommended one), fitted, with a pick."""
        params = {"offline": "true" if offline else "false"}
        if engine is not None:
            params["engine"] = engine
        return await self._request("GET", "/starters", StarterList, params=params, timeout=_SLOW)

    async def serve_starter(self, request: ServeStarterRequest) -> ServedStarter:
        """Serve a downloaded model for a first chat; answers once the engine has loaded it."""
        body = request.model_dump_json(exclude_none=True)
        return await self._request(
            "POST", "/starters/serve", ServedStarter, content=body, headers=_JSON, timeout=_LOAD
        )

    async def setup_ollama(self) -> InstanceInfo:
        """An Ollama that answers: attached when found running, else started."""
        return await self._request("POST", "/setup/ollama", InstanceInfo, timeout=_LOAD)
