"""`roundhouse serve` with every HTTP request it answers counted in a file (a benchmark's probe).

Run as a script: the counting middleware is added to the app the daemon builds, and each
request appends one line, `<monotonic seconds> <method> <path>`, to $ROUNDHOUSE_COUNT_FILE."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import roundhouse.server.app as server_app
from roundhouse.cli.launch import main

COUNT_FILE = Path(os.environ["ROUNDHOUSE_COUNT_FILE"])
_build = server_app.create_app


class _Counting:
    """Pure ASGI, so a stream is one request however long it runs."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            # Written at once, blocking: the probe's daemon is killed at the end of a run,
            # and one appended line costs microseconds.
            with COUNT_FILE.open("a", encoding="utf-8") as out:  # noqa: ASYNC230
                out.write(f"{time.monotonic():.3f} {scope['method']} {scope['path']}\n")
        await self.app(scope, receive, send)


def _counted(*args: Any, **kwargs: Any) -> Any:
    app = _build(*args, **kwargs)
    app.add_middleware(_Counting)
    return app


server_app.create_app = _counted  # before the daemon module imports it
main()  # reads sys.argv, as `python -m roundhouse` does
