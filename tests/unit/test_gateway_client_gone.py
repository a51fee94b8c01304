"""A gateway request whose client leaves before its reply is ready: the work waiting for it
(a queue slot, a load, a whole reply) is cancelled, and what it holds is given back."""

from __future__ import annotations

import asyncio

import pytest
from fastapi.responses import Response
from starlette.types import Message, Receive

from roundhouse.core.gateway.errors import QueueFull
from roundhouse.server.routes.gateway import _unless_gone


def _receive(leaves_after_s: float | None) -> tuple[asyncio.Event, Receive]:
    """An ASGI receive whose client leaves after `leaves_after_s` (never with None)."""
    gone = asyncio.Event()

    async def receive() -> Message:
        if leaves_after_s is None:
            await asyncio.Event().wait()
        await asyncio.sleep(leaves_after_s or 0)
        gone.set()
        return {"type": "http.disconnect"}

    return gone, receive


def test_a_client_that_leaves_cancels_the_wait_and_gets_nothing_sent() -> None:
    released: list[str] = []

    async def work() -> Response:
        try:
            await asyncio.sleep(60)  # a place in the queue, a load, a whole reply
        finally:
            released.append("slot")
        return Response(b"late")

    async def main() -> None:
        gone, receive = _receive(0.05)
        start = asyncio.get_running_loop().time()
        reply = await _unless_gone(receive, work())
        assert gone.is_set()
        assert reply is None
        assert asyncio.get_running_loop().time() - start < 5
        assert released == ["slot"]

    asyncio.run(main())


def test_a_reply_ready_before_the_client_leaves_is_answered() -> None:
    async def main() -> None:
        _, receive = _receive(None)
        reply = await _unless_gone(receive, _answer())
        assert reply is not None and reply.status_code == 200 and reply.body == b"ok"
        # No watcher is left behind on the connection: cancelled, it ends on the loop's next
        # turn (the reply does not wait for that).
        await asyncio.sleep(0)
        assert {t.get_coro().__name__ for t in asyncio.all_tasks()} == {"main"}  # type: ignore[union-attr]

    async def _answer() -> Response:
        await asyncio.sleep(0.01)
        return Response(b"ok")

    asyncio.run(main())


def test_an_error_reaches_the_client_in_its_own_words() -> None:
    async def refused() -> Response:
        raise QueueFull("busy")

    async def main() -> None:
        _, receive = _receive(None)
        with pytest.raises(QueueFull, match="busy"):
            await _unless_gone(receive, refused())

    asyncio.run(main())


def test_the_server_cancelling_the_request_cancels_the_work() -> None:
    cancelled: list[bool] = []

    async def work() -> Response:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.append(True)
            raise
        return Response()

    async def main() -> None:
        _, receive = _receive(None)
        request = asyncio.create_task(_unless_gone(receive, work()))
        await asyncio.sleep(0.05)
        request.cancel()
        with pytest.raises(asyncio.CancelledError):
            await request
        assert cancelled == [True]

    asyncio.run(main())


def test_a_failed_receive_is_not_taken_for_a_client_gone() -> None:
    async def receive() -> Message:
        raise RuntimeError("receive broke")

    async def main() -> None:
        reply = await _unless_gone(receive, _late())
        assert reply is not None and reply.body == b"ok"

    async def _late() -> Response:
        await asyncio.sleep(0.05)
        return Response(b"ok")

    asyncio.run(main())
