"""OllamaClient: one Ollama server's native API as coroutines (see the package docstring)."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Callable
from contextlib import aclosing
from types import TracebackType
from typing import Any

import httpx
from pydantic import ValidationError

from roundhouse.api.ollama import (
    OllamaLoadedModel,
    OllamaModel,
    OllamaPullProgress,
    OllamaShownModel,
)
from roundhouse.core.engines.ollama_api.errors import (
    OllamaPullError,
    status_error,
    transport_error,
    unreadable,
)
from roundhouse.core.engines.ollama_api.inputs import (
    KeepAlive,
    check_name,
    keep_alive_value,
    ollama_base_url,
)
from roundhouse.core.engines.ollama_api.parsing import (
    M,
    parse_loaded,
    parse_model,
    parse_progress,
    parse_shown,
)
from roundhouse.core.errors import InvalidInputError, NotFoundError

_REGISTRY_MISSING = ("file does not exist", "not found")


class OllamaClient:
    """An async client for one Ollama server; close it with `aclose()` or `async with`."""

    def __init__(
        self,
        base_url: str | None = None,
        *,
        timeout_s: float = 10.0,
        load_timeout_s: float = 600.0,
        pull_stall_timeout_s: float = 600.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        """`base_url` defaults to 127.0.0.1:11434; pass `ollama_base_url(OLLAMA_HOST)`.

        `load_timeout_s` bounds a load (big models take minutes to reach the GPU);
        `pull_stall_timeout_s` is how long a pull may go without a progress line.
        """
        self.base_url = (base_url or ollama_base_url(None)).rstrip("/")
        self._timeout_s = timeout_s
        self._load_timeout_s = load_timeout_s
        self._pull_stall_timeout_s = pull_stall_timeout_s
        self._http = httpx.AsyncClient(
            base_url=self.base_url, timeout=timeout_s, trust_env=False, transport=transport
        )

    async def __aenter__(self) -> OllamaClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    # -- plain requests -----------------------------------------------------------------------

    async def is_running(self) -> bool:
        """Whether an Ollama answers `GET /` with "Ollama is running". Never raises."""
        try:
            response = await self._http.get("/")
        except httpx.HTTPError:
            return False
        return response.status_code == 200 and "Ollama is running" in response.text

    async def version(self) -> str:
        body = await self._json("GET", "/api/version", what="its version")
        version = body.get("version") if isinstance(body, dict) else None
        if not isinstance(version, str):
            raise unreadable(self.base_url, "/api/version", "no version")
        return version

    async def list_models(self) -> list[OllamaModel]:
        """The models pulled to this Ollama (`GET /api/tags`)."""
        body = await self._json("GET", "/api/tags", what="its models")
        return self._parse_list("/api/tags", body, parse_model)

    async def loaded_models(self) -> list[OllamaLoadedModel]:
        """The models held in memory now (`GET /api/ps`), with their GPU share."""
        body = await self._json("GET", "/api/ps", what="its loaded models")
        return self._parse_list("/api/ps", body, parse_loaded)

    async def show(self, model: str) -> OllamaShownModel:
        """A model's metadata, template, parameters and capabilities (`POST /api/show`)."""
        check_name(model)
        body = await self._json("POST", "/api/show", {"model": model}, model=model, what="show")
        try:
            return parse_shown(model, body)
        except (ValueError, ValidationError) as exc:
            raise unreadable(self.base_url, "/api/show", str(exc)) from exc

    async def delete(self, model: str) -> None:
        """Remove a pulled model (`DELETE /api/delete`); NotFoundError when there is none."""
        check_name(model)
        await self._send("DELETE", "/api/delete", {"model": model}, model=model, what="delete")

    async def load(
        self, model: str, *, keep_alive: KeepAlive | None = None, context_length: int | None = None
    ) -> None:
        """Load `model` into memory now, without generating (`POST /api/generate`, no prompt).

        `keep_alive`: seconds, a duration ("10m"), negative to keep it until Ollama stops;
        None leaves Ollama's default (5 min, or OLLAMA_KEEP_ALIVE). `context_length` sets
        num_ctx, which decides the KV cache Ollama allocates.
        """
        check_name(model)
        body: dict[str, Any] = {"model": model}
        if keep_alive is not None:
            body["keep_alive"] = keep_alive_value(keep_alive)
        if context_length is not None:
            if context_length < 1:
                raise InvalidInputError("The context length must be a positive number of tokens.")
            body["options"] = {"num_ctx": context_length}
        timeout = httpx.Timeout(self._timeout_s, read=self._load_timeout_s)
        what = f"loading {model}"
        try:
            await self._json(
                "POST", "/api/generate", body, model=model, what=what, http_timeout=timeout
            )
        except InvalidInputError as exc:
            if "does not support" not in exc.detail:
                raise
            # An embedding-only model cannot generate; Ollama loads it through /api/embed.
            await self._json(
                "POST", "/api/embed", body, model=model, what=what, http_timeout=timeout
            )

    async def unload(self, model: str) -> None:
        """Free `model`'s memory now (`keep_alive: 0`); a model not loaded is no error."""
        check_name(model)
        await self._json(
            "POST",
            "/api/generate",
            {"model": model, "keep_alive": 0},
            model=model,
            what=f"unloading {model}",
        )

    # -- pulls --------------------------------------------------------------------------------

    async def pull(
        self, model: str, on_progress: Callable[[OllamaPullProgress], None] | None = None
    ) -> OllamaPullProgress:
        """Pull `model`, calling `on_progress` for each line; returns the final "success"."""
        last: OllamaPullProgress | None = None
        async with aclosing(self.pull_stream(model)) as steps:
            async for step in steps:
                last = step
                if on_progress is not None:
                    on_progress(step)
        if last is None or not last.done:  # pull_stream raises first; this keeps -O honest
            raise OllamaPullError(f"The pull of '{model}' ended without success; try again.")
        return last

    async def pull_stream(self, model: str) -> AsyncGenerator[OllamaPullProgress, None]:
        """Pull `model`, yielding each progress line; the last one's status is "success".

        Use it inside `contextlib.aclosing(...)` so that leaving the loop early closes the
        stream at once rather than when the generator is collected.
        """
        check_name(model)
        timeout = httpx.Timeout(self._timeout_s, read=self._pull_stall_timeout_s)
        what = f"pulling {model}"
        try:
            async with self._http.stream(
                "POST", "/api/pull", json={"model": model, "stream": True}, timeout=timeout
            ) as response:
                if response.status_code != 200:
                    await response.aread()
                    raise status_error(self.base_url, response, model=model, what=what)
                finished = False
                async for line in response.aiter_lines():
                    if not line.strip():
                        continue
                    step = self._pull_line(model, line)
                    finished = step.done
                    yield step
                if not finished:
                    raise OllamaPullError(
                        f"Ollama at {self.base_url} stopped sending progress before the pull "
                        f"of '{model}' finished. Pull it again: it resumes where it stopped."
                    )
        except httpx.HTTPError as exc:
            raise transport_error(self.base_url, exc, what) from exc

    def _pull_line(self, model: str, line: str) -> OllamaPullProgress:
        try:
            data = json.loads(line)
        except ValueError as exc:
            raise unreadable(
                self.base_url, "/api/pull", f"a line is not JSON: {line[:120]!r}"
            ) from exc
        if isinstance(data, dict) and "error" in data:
            error = str(data["error"])
            if any(words in error for words in _REGISTRY_MISSING):
                raise NotFoundError(
                    f"Ollama's registry has no model '{model}' ({error}). Check the name and "
                    "tag at https://ollama.com/library."
                )
            raise OllamaPullError(
                f"Pulling '{model}' failed: {error}. Pull it again: Ollama resumes where it "
                "stopped."
            )
        try:
            return parse_progress(data)
        except (ValueError, ValidationError) as exc:
            raise unreadable(self.base_url, "/api/pull", str(exc)) from exc

    # -- plumbing -----------------------------------------------------------------------------

    async def _send(
        self,
        method: str,
        path: str,
        body: dict[str, Any] | None = None,
        *,
        what: str,
        model: str | None = None,
        http_timeout: httpx.Timeout | None = None,
    ) -> httpx.Response:
        try:
            response = await self._http.request(
                method,
                path,
                json=body,
                timeout=http_timeout if http_timeout is not None else httpx.USE_CLIENT_DEFAULT,
            )
        except httpx.HTTPError as exc:
            raise transport_error(self.base_url, exc, what) from exc
        if response.status_code != 200:
            raise status_error(self.base_url, response, model=model, what=what)
        return response

    async def _json(
        self,
        method: str,
        path: str,
        body: dict[str, Any] | None = None,
        *,
        what: str,
        model: str | None = None,
        http_timeout: httpx.Timeout | None = None,
    ) -> Any:
        response = await self._send(
            method, path, body, what=what, model=model, http_timeout=http_timeout
        )
        try:
            return response.json()
        except ValueError as exc:
            raise unreadable(self.base_url, path, "the answer is not JSON") from exc

    def _parse_list(self, path: str, body: Any, parse: Callable[[object], M]) -> list[M]:
        entries = body.get("models") if isinstance(body, dict) else None
        if entries is None and isinstance(body, dict):
            entries = []  # Ollama sends "models": null when there are none
        if not isinstance(entries, list):
            raise unreadable(self.base_url, path, "no list of models")
        try:
            return [parse(entry) for entry in entries]
        except (ValueError, ValidationError) as exc:
            raise unreadable(self.base_url, path, str(exc)) from exc
