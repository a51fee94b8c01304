"""A STAND-IN OpenAI server for load-generator benchmarks: it streams `max_tokens` chat chunks
at a fixed rate per stream (no model runs), then a usage chunk, as llama-server does.

Run: python -m tests.fakes.bench_stream --tokens-per-s 100; it prints its port on stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time

from aiohttp import web


def _chunk(delta: dict[str, str]) -> bytes:
    body = {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta}]}
    return b"data: " + json.dumps(body).encode() + b"\n\n"


def make_app(tokens_per_s: float) -> web.Application:
    async def chat(request: web.Request) -> web.StreamResponse:
        body = await request.json()
        if not body.get("stream") or not isinstance(body.get("messages"), list):
            return web.json_response({"error": {"message": "stream and messages"}}, status=400)
        tokens = int(body.get("max_tokens", 16))
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        await response.write(_chunk({"role": "assistant", "content": ""}))
        start = time.perf_counter()
        for i in range(tokens):
            # Paced against the start, so the rate holds however late a wake-up comes.
            wait = start + (i + 1) / tokens_per_s - time.perf_counter()
            if wait > 0:
                await asyncio.sleep(wait)
            await response.write(_chunk({"content": " tok"}))
        usage = {"prompt_tokens": len(str(body["messages"]).split()), "completion_tokens": tokens}
        await response.write(b"data: " + json.dumps({"choices": [], "usage": usage}).encode())
        await response.write(b"\n\ndata: [DONE]\n\n")
        await response.write_eof()
        return response

    app = web.Application()
    app.router.add_post("/v1/chat/completions", chat)
    return app


async def serve(tokens_per_s: float) -> None:
    runner = web.AppRunner(make_app(tokens_per_s), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, backlog=1024)
    await site.start()
    server = site._server  # aiohttp exposes the bound port only here
    port = server.sockets[0].getsockname()[1] if server is not None else 0  # type: ignore[attr-defined]
    sys.stdout.write(f"{port}\n")
    sys.stdout.flush()
    await asyncio.Event().wait()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--tokens-per-s", type=float, default=100.0)
    asyncio.run(serve(parser.parse_args().tokens_per_s))
