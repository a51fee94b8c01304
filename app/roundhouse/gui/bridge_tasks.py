"""The bridge's background work: asyncio tasks it tracks, and the Calls and Follows they answer."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import Counter
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

from PySide6.QtCore import QTimer

from roundhouse.client import ClientError, DaemonClient
from roundhouse.gui.call import NOT_CONNECTED, Call, Failure, Follow
from roundhouse.gui.connection_state import ConnectionState

if TYPE_CHECKING:
    from PySide6.QtCore import SignalInstance

log = logging.getLogger(__name__)

T = TypeVar("T")


class TasksMixin:
    """Runs client requests and streams in the background (mixed into DaemonBridge)."""

    if TYPE_CHECKING:
        # Provided by DaemonBridge.
        _client: DaemonClient | None
        _state: ConnectionState
        _tasks: set[asyncio.Task[Any]]
        # Requests running on each client (a retired one is no longer `_client`).
        _borrowed: Counter[DaemonClient]

    def call(
        self,
        what: str,
        request: Callable[[DaemonClient], Awaitable[T]],
        on_success: Callable[[T], None] | None = None,
    ) -> Call:
        """Run one client request in the background (for the call groups in gui/calls)."""
        return self._call(what, request, on_success)

    def follow(
        self, what: str, stream: Callable[[DaemonClient], AsyncGenerator[T, None]]
    ) -> Follow:
        """Follow a stream of the client in the background; `Follow.cancel()` closes it.

        It always answers from the loop, never before this returns: the caller connects first.
        """
        follow = Follow(what)

        async def run() -> None:
            async with self._borrow() as client:
                if client is None:
                    follow.fail(NOT_CONNECTED)
                    return
                try:
                    async with contextlib.aclosing(stream(client)) as items:
                        async for item in items:
                            follow.receive(item)
                except ClientError as exc:
                    follow.fail(Failure.from_error(exc))
                    return
                except asyncio.CancelledError:
                    follow.mark_cancelled()
                    raise
            follow.end()

        task = self._try_spawn(run())
        if task is None:
            QTimer.singleShot(0, lambda: follow.fail(NOT_CONNECTED))
            return follow
        # Cancelled before it first ran, `run` never sees the cancellation: the follower
        # still hears that it ended (ends come once, so this is a no-op otherwise).
        task.add_done_callback(lambda t: follow.mark_cancelled() if t.cancelled() else None)
        follow.bind_cancel(task.cancel)
        return follow

    def _call(
        self,
        what: str,
        request: Callable[[DaemonClient], Awaitable[T]],
        on_success: Callable[[T], None] | None = None,
    ) -> Call:
        """Run `request` with the client in the background; the Call answers once.

        It always answers from the loop, never before this returns: the caller connects first.
        """
        call = Call(what)

        async def run() -> None:
            async with self._borrow() as client:
                if client is None:
                    call.fail(NOT_CONNECTED)
                    return
                try:
                    result = await request(client)
                except ClientError as exc:
                    call.fail(Failure.from_error(exc))
                    return
            if on_success is not None:
                on_success(result)
            call.succeed(result)

        if self._try_spawn(run()) is None:
            QTimer.singleShot(0, lambda: call.fail(NOT_CONNECTED))
        return call

    @contextlib.asynccontextmanager
    async def _borrow(self) -> AsyncIterator[DaemonClient | None]:
        """The session's client for one request; None when not connected.

        A reconnect while the request runs retires the client instead of closing it under
        the request (which would fail a request the daemon never saw): the last request to
        give back a client that is no longer the session's closes it.
        """
        client = self._client
        if client is None or self._state != ConnectionState.CONNECTED:
            yield None
            return
        self._borrowed[client] += 1
        try:
            yield client
        finally:
            self._borrowed[client] -= 1
            if not self._borrowed[client]:
                del self._borrowed[client]
                if client is not self._client:
                    await close_quietly(client)

    async def _retire(self, client: DaemonClient) -> None:
        """Close `client`, no longer the session's, now or once the requests still running
        on it end (`_borrow` closes it then)."""
        if client not in self._borrowed:
            await close_quietly(client)

    async def _load(
        self, request: Callable[[DaemonClient], Awaitable[T]], failed: SignalInstance
    ) -> T | None:
        """`request`'s answer, awaited here; None when not connected or it failed, which
        `failed` is told in words (for the bridge's own loads, which answer by signal)."""
        async with self._borrow() as client:
            if client is None:
                failed.emit("Not connected to the daemon, so nothing was refreshed.")
                return None
            try:
                return await request(client)
            except ClientError as exc:
                failed.emit(str(exc))
                return None

    def _try_spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any] | None:
        """Like `_spawn`, but None when no asyncio loop runs any more (the app is closing; a
        widget's timer fired after its loop ended): the request is dropped, and its Call
        answers "not connected" from Qt's own loop, which still runs."""
        try:
            return self._spawn(coro)
        except RuntimeError:
            coro.close()
            return None

    def _spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._on_task_done)
        return task

    def _on_task_done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("A background task of the GUI failed", exc_info=task.exception())


async def close_quietly(client: DaemonClient) -> None:
    try:
        await client.aclose()
    except Exception:
        # Closing what already broke may fail too; nothing is left to do with it.
        log.debug("Closing the daemon client failed", exc_info=True)
