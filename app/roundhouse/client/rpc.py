"""The llama.cpp RPC split's calls of the daemon client (mixed into DaemonClient)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel

from roundhouse.api.rpc import (
    RpcServerInfo,
    RpcServerList,
    RpcServerRequest,
    SplitProposal,
    SplitQuery,
)

M = TypeVar("M", bound=BaseModel)
JSON = {"content-type": "application/json"}


class RpcMixin:
    """rpc-servers this daemon runs for another machine (`/api/v1/rpc-servers`), and the split
    the fit estimate proposes."""

    if TYPE_CHECKING:
        # Provided by DaemonClient.
        async def _request(self, method: str, path: str, model: type[M], **kwargs: Any) -> M: ...

    async def rpc_servers(self) -> RpcServerList:
        return await self._request("GET", "/rpc-servers", RpcServerList)

    async def start_rpc_server(self, request: RpcServerRequest) -> RpcServerInfo:
        """Run rpc-server on the daemon's machine, bound to the request's address only."""
        body = request.model_dump_json()
        return await self._request(
            "POST", "/rpc-servers", RpcServerInfo, content=body, headers=JSON
        )

    async def stop_rpc_server(self, worker_id: str) -> RpcServerInfo:
        return await self._request("DELETE", f"/rpc-servers/{worker_id}", RpcServerInfo)

    async def propose_split(self, query: SplitQuery) -> SplitProposal:
        body = query.model_dump_json()
        return await self._request(
            "POST", "/rpc-servers/split", SplitProposal, content=body, headers=JSON
        )
