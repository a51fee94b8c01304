"""The update check: PyPI's latest release, asked at most once a day when the user turned it on
(`ui.check_updates`), or when the user asks. No telemetry.

What is sent is one plain HTTPS GET of PyPI's public JSON page for the package, with the
User-Agent "Roundhouse/<version>": no identifier, no settings, nothing about the machine or
its models. Proxies from the environment (HTTPS_PROXY) are honoured like any download's.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import httpx

from roundhouse.api.updates import UpdateStatus
from roundhouse.base.files import write_atomic
from roundhouse.base.tasks import cancel_and_wait
from roundhouse.core.infra.changes import Changes

log = logging.getLogger(__name__)

PYPI_URL = "https://pypi.org/pypi/roundhouse/json"
# Tests point this at a local stand-in; a mirror of PyPI's JSON API works too.
URL_ENV = "ROUNDHOUSE_UPDATES_URL"
CHECK_EVERY_S = 24 * 3600.0
TIMEOUT = httpx.Timeout(15.0, connect=5.0)
# PyPI's page lists every release's files: big for an old package, never this big.
MAX_ANSWER_BYTES = 32 * 1024 * 1024

_VERSION = re.compile(
    r"^v?(?P<release>\d+(?:\.\d+)*)"
    r"(?:[-_.]?(?P<pre>alpha|beta|rc|a|b|c)[-_.]?(?P<pre_n>\d*))?"
    r"(?:[-_.]?post[-_.]?(?P<post>\d*))?"
    r"(?:[-_.]?dev[-_.]?(?P<dev>\d*))?"
    r"(?:\+[a-z0-9.]+)?$",
    re.IGNORECASE,
)
_PHASES = {"a": 0, "alpha": 0, "b": 1, "beta": 1, "c": 2, "rc": 2}
_FINAL = (9, 0)

VersionKey = tuple[tuple[int, ...], tuple[int, int], int, int]


def version_key(text: str) -> VersionKey | None:
    """A sortable key for a PEP 440 version (release, pre, post, dev); None when it is not one.

    The few rules an update check needs, so no packaging library is required: 1.0.dev1 <
    1.0a1 < 1.0rc1 < 1.0 < 1.0.post1, and 1.0 == 1.0.0."""
    found = _VERSION.match(text.strip())
    if found is None:
        return None
    release = [int(part) for part in found["release"].split(".")]
    while len(release) > 1 and release[-1] == 0:
        release.pop()
    post = int(found["post"] or 0) if found["post"] is not None else -1
    dev = int(found["dev"] or 0) if found["dev"] is not None else sys.maxsize
    if found["pre"] is not None:
        pre = (_PHASES[found["pre"].lower()], int(found["pre_n"] or 0))
    elif found["dev"] is not None and found["post"] is None:
        pre = (-1, 0)  # 1.0.dev1 comes before 1.0a1
    else:
        pre = _FINAL
    return tuple(release), pre, post, dev


def is_newer(latest: str, current: str) -> bool:
    new, now = version_key(latest), version_key(current)
    return new is not None and now is not None and new > now


class UpdateCheckError(Exception):
    """The check failed; str() says why in words."""


def parse_answer(body: bytes, where: str) -> str:
    """The latest version named by PyPI's JSON (`info.version`)."""
    try:
        data = json.loads(body)
    except ValueError as exc:
        raise UpdateCheckError(
            f"{where} did not answer the update check with PyPI's JSON (it is not JSON). "
            "Try again later; Roundhouse works the same without it."
        ) from exc
    info = data.get("info") if isinstance(data, dict) else None
    version = info.get("version") if isinstance(info, dict) else None
    if not isinstance(version, str) or version_key(version) is None:
        raise UpdateCheckError(
            f"{where} answered the update check without a version Roundhouse can read "
            f"(info.version is {version!r}). Try again later; Roundhouse works the same "
            "without it."
        )
    return version.strip()


async def fetch_latest(url: str, current: str) -> str:
    """GET `url` with nothing but a User-Agent naming this version; the version it names."""
    where = urlsplit(url).netloc or url
    headers = {"User-Agent": f"Roundhouse/{current}", "Accept": "application/json"}
    body = bytearray()
    try:
        async with (
            httpx.AsyncClient(headers=headers, timeout=TIMEOUT, follow_redirects=True) as http,
            http.stream("GET", url) as response,
        ):
            if response.status_code != 200:
                raise UpdateCheckError(
                    f"{where} answered the update check with HTTP {response.status_code}. "
                    "Try again later; Roundhouse works the same without it."
                )
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) > MAX_ANSWER_BYTES:
                    raise UpdateCheckError(f"{where} sent far more than PyPI's JSON page.")
    except httpx.HTTPError as exc:
        raise UpdateCheckError(
            f"Could not reach {where} to check for updates ({type(exc).__name__}). Check the "
            "connection and try again; Roundhouse works the same without it."
        ) from exc
    return parse_answer(bytes(body), where)


@dataclass(frozen=True)
class _Result:
    checked_at: float | None = None
    latest: str | None = None
    error: str | None = None


Fetch = Callable[[str, str], Awaitable[str]]


class UpdateChecker:
    """The last result (kept in `state_file` across restarts) and the once-a-day check."""

    def __init__(
        self,
        current: str,
        state_file: Path,
        enabled: Callable[[], bool],
        *,
        url: str | None = None,
        clock: Callable[[], float] = time.time,
        fetch: Fetch = fetch_latest,
    ) -> None:
        self.current = current
        self.url = url or os.environ.get(URL_ENV, "").strip() or PYPI_URL
        self._file = state_file
        self._enabled = enabled
        self._clock = clock
        self._fetch = fetch
        self._result = _read_state(state_file)
        self._checking: asyncio.Task[UpdateStatus] | None = None
        self._wake = asyncio.Event()
        self._loop: asyncio.Task[None] | None = None
        # Touched when the status may have changed (a check ended, the setting moved): the
        # change feed's `updates` kind follows it.
        self.changes = Changes()

    def status(self) -> UpdateStatus:
        result = self._result
        return UpdateStatus(
            enabled=self._enabled(),
            current=self.current,
            latest=result.latest,
            newer=result.latest is not None and is_newer(result.latest, self.current),
            checked_at=result.checked_at,
            error=result.error,
            source=self.url,
        )

    async def check(self) -> UpdateStatus:
        """Ask now, whatever the setting says (the user asked); callers at once share one GET."""
        if self._checking is None or self._checking.done():
            self._checking = asyncio.create_task(self._check(), name="update-check")
        return await asyncio.shield(self._checking)

    async def _check(self) -> UpdateStatus:
        now = self._clock()
        try:
            latest = await self._fetch(self.url, self.current)
        except UpdateCheckError as exc:
            log.warning("Update check failed: %s", exc)
            # The last good answer stays known; the failure counts as today's check.
            self._result = _Result(now, self._result.latest, str(exc))
        else:
            log.info("Update check: latest %s, this is %s", latest, self.current)
            self._result = _Result(now, latest, None)
        try:
            await asyncio.to_thread(_write_state, self._file, self._result)
        except OSError as exc:
            log.warning("Cannot keep the update check's result in %s: %s", self._file, exc)
        self.changes.touch()
        return self.status()

    def seconds_until_due(self) -> float | None:
        """None while the setting is off; 0 when a check is due now."""
        if not self._enabled():
            return None
        checked = self._result.checked_at
        if checked is None:
            return 0.0
        elapsed = self._clock() - checked
        if elapsed < 0:
            return 0.0  # the clock went back: the stored time says nothing
        return max(CHECK_EVERY_S - elapsed, 0.0)

    def start(self) -> None:
        self._loop = asyncio.create_task(self._run(), name="update-checks")

    def settings_changed(self) -> None:
        """The setting may have been turned on: look again at when the next check is due."""
        self._wake.set()
        self.changes.touch()

    async def stop(self) -> None:
        if self._loop is not None:
            await cancel_and_wait(self._loop, reraise=False)
        if self._checking is not None and not self._checking.done():
            await cancel_and_wait(self._checking, reraise=False)

    async def _run(self) -> None:
        while True:
            self._wake.clear()
            wait = self.seconds_until_due()
            if wait == 0:
                try:
                    await self.check()
                    continue
                except Exception:
                    # A defect here must not end the checks, nor retry in a tight loop.
                    log.exception("The update check failed unexpectedly")
                    wait = CHECK_EVERY_S
            # Asleep until due, or for good while off: no request is made, none is planned.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), wait)


def _read_state(path: Path) -> _Result:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return _Result()
    if not isinstance(data, dict):
        return _Result()
    checked, latest, error = data.get("checked_at"), data.get("latest"), data.get("error")
    return _Result(
        float(checked) if isinstance(checked, int | float) else None,
        latest if isinstance(latest, str) else None,
        error if isinstance(error, str) else None,
    )


def _write_state(path: Path, result: _Result) -> None:
    data = {"checked_at": result.checked_at, "latest": result.latest, "error": result.error}
    write_atomic(path, json.dumps(data).encode("utf-8"))
