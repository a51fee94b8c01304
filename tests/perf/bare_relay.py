"""The floor for a Python relay: aiohttp in, aiohttp out, bytes copied, nothing read.

Run as `python -m tests.perf.bare_relay PORT ENGINE_URL KEY`: every POST to /v1/... goes to
the engine's same path with its key, and the engine's reply streams back as it comes. No
routing, no queue, no guards, no usage: what any Python relay costs at least."""

from __future__ import annotations

import sys

import aiohttp
from aiohttp import web


def main() -> None:
    port, engine, key = int(sys.argv[1]), sys.argv[2].rstrip("/"), sys.argv[3]
    session: aiohttp.ClientSession | None = None

    async def relay(request: web.Request) -> web.StreamResponse:
        assert session is not None
        body = await request.read()
        headers = {"authorization": f"Bearer {key}", "content-type": "application/json"}
        try:
            upstream = await session.post(engine + request.path, data=body, headers=headers)
        except (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError):
            # llama-server closes kept-alive connections without a word: sent again on a new
            # one, as the gateway does.
            upstream = await session.post(engine + request.path, data=body, headers=headers)
        async with upstream:
            response = web.StreamResponse(status=upstream.status)
            response.content_type = upstream.content_type
            await response.prepare(request)
            async for chunk in upstream.content.iter_any():
                await response.write(chunk)
            await response.write_eof()
            return response

    async def start(_app: web.Application) -> None:
        nonlocal session
        # The gateway's own pool settings (core/gateway/upstream.py): a 2 s keep-alive.
        connector = aiohttp.TCPConnector(keepalive_timeout=2.0)
        session = aiohttp.ClientSession(connector=connector, auto_decompress=False)

    async def stop(_app: web.Application) -> None:
        if session is not None:
            await session.close()

    app = web.Application()
    app.router.add_post("/{path:.*}", relay)
    app.on_startup.append(start)
    app.on_cleanup.append(stop)
    web.run_app(app, host="127.0.0.1", port=port, print=None, access_log=None)


if __name__ == "__main__":
    main()
