"""An async client for a running Ollama's native API: models, pulls, loading and unloading.

Usage (every method is a coroutine; one client may serve many concurrent calls):

    async with OllamaClient(ollama_base_url(os.environ.get("OLLAMA_HOST"))) as ollama:
        version = await ollama.version()                  # "0.6.8"
        models = await ollama.list_models()               # list[OllamaModel]       /api/tags
        final = await ollama.pull("qwen2.5:0.5b", on_progress=show)  # /api/pull, NDJSON
        async with contextlib.aclosing(ollama.pull_stream("tiny")) as steps:
            async for step in steps: ...                  # OllamaPullProgress, last "success"
        shown = await ollama.show("tiny")                 # OllamaShownModel        /api/show
        await ollama.load("tiny", keep_alive=-1)          # preload, kept until Ollama stops
        loaded = await ollama.loaded_models()             # list[OllamaLoadedModel] /api/ps
        await ollama.unload("tiny")                       # keep_alive 0
        await ollama.delete("tiny")                       # /api/delete

Errors, all RoundhouseError with a message that says what to do:
- OllamaNotRunningError: nothing listens at the URL (start `ollama serve` or the app);
- NotFoundError: Ollama (or its registry, for a pull) has no such model;
- InvalidInputError: Ollama refused the request (a bad name, a bad keep_alive);
- OllamaPullError: a pull's stream reported an error or stopped early (pulls resume);
- OllamaError: anything else (a timeout, a broken connection, an answer we cannot read).

Cancelling a pull (the task, or leaving the `async for`) closes the HTTP stream at once;
Ollama keeps the partial download and the next pull resumes it.

Loopback traffic must never reach a proxy from the environment, so the HTTP client ignores
HTTP(S)_PROXY (trust_env=False).
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import AsyncGenerator, Callable, Mapping
from contextlib import aclosing
from types import TracebackType
from typing import Any, TypeVar

import httpx
from pydantic import BaseModel, ValidationError

from roundhouse.api.ollama import (
    OllamaLoadedModel,
    OllamaModel,
    OllamaModelDetails,
    OllamaPullProgress,
    OllamaShownModel,
)
from roundhouse.core.errors import InvalidInputError, NotFoundError, RoundhouseError

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 11434
# Go's time.ParseDuration: a sign, then one or more number+unit parts ("1h30m", "-1m").
_DURATION_PART = r"(\d+(\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)"
_GO_DURATION = re.compile(rf"^[-+]?({_DURATION_PART})+$")
_NUMBER = re.compile(r"^[-+]?(\d+(\.\d*)?|\.\d+)$")
_REGISTRY_MISSING = ("file does not exist", "not found")

KeepAlive = str | int | float
M = TypeVar("M", bound=BaseModel)


class OllamaError(RoundhouseError):
    """Ollama answered in a way we cannot use, or not at all in time."""

    title = "Ollama error"
    status = 502


class OllamaNotRunningError(OllamaError):
    """Nothing listens at the Ollama URL."""

    title = "Ollama is not running"
    status = 503


class OllamaPullError(OllamaError):
    """A pull failed part way; Ollama keeps what it downloaded and resumes next time."""

    title = "Pull failed"


# -- OLLAMA_HOST ------------------------------------------------------------------------------


def ollama_base_url(value: str | None = None) -> str:
    """The URL to reach Ollama at, from an `OLLAMA_HOST` value, read as Ollama reads it.

    `host:port`, `http://host:port`, a bare host or IP (port 11434), `:port` (127.0.0.1),
    `http://host` (port 80, as in Ollama), `https://host` (443), `[::1]:port`, an optional
    path after the host; empty or None is 127.0.0.1:11434. Unspecified bind addresses
    (0.0.0.0, ::) become loopback, since one cannot connect to them. Raises InvalidInputError
    for a scheme other than http or https.
    """
    text = (value or "").strip()
    default_port = DEFAULT_PORT
    scheme, sep, hostport = text.partition("://")
    if not sep:
        scheme, hostport = "http", text
    elif scheme == "http":
        default_port = 80
    elif scheme == "https":
        default_port = 443
    else:
        raise InvalidInputError(
            f"OLLAMA_HOST={value!r} uses the scheme {scheme!r}: Ollama speaks http:// or "
            "https://. Set it to host:port, for example 127.0.0.1:11434."
        )
    hostport, _, path = hostport.partition("/")
    split = _split_host_port(hostport)
    if split is None:
        host, port_text = DEFAULT_HOST, str(default_port)
        bare = hostport.strip("[]")
        ip = _parse_ip(bare)
        if ip is not None:
            host = ip.compressed
        elif hostport:
            host = hostport
    else:
        host, port_text = split
    port = int(port_text) if port_text.isdigit() and int(port_text) <= 65535 else default_port
    ip = _parse_ip(host)
    if not host or (ip is not None and ip.is_unspecified):
        host = "::1" if ip is not None and ip.version == 6 else DEFAULT_HOST
    elif ip is not None:
        host = ip.compressed
    shown = f"[{host}]" if ":" in host else host
    return f"{scheme}://{shown}:{port}" + (f"/{path}" if path else "")


def _parse_ip(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def _split_host_port(hostport: str) -> tuple[str, str] | None:
    """Go's net.SplitHostPort: None where it fails (no port, or an unbracketed IPv6)."""
    if hostport.startswith("["):
        end = hostport.find("]")
        if end < 0 or hostport[end + 1 : end + 2] != ":":
            return None
        return hostport[1:end], hostport[end + 2 :]
    host, sep, port = hostport.rpartition(":")
    if not sep or ":" in host or "[" in host or "]" in host:
        return None
    return host, port


def keep_alive_value(value: KeepAlive) -> str | int | float:
    """`keep_alive` as Ollama's API takes it: a number of seconds or a Go duration string.

    Numbers in a string ("-1", "300") become numbers: Ollama reads a string only as a
    duration with units and refuses "-1". Raises InvalidInputError for anything else.
    """
    if isinstance(value, bool):
        raise InvalidInputError(_KEEP_ALIVE_HINT.format(value=value))
    if isinstance(value, int | float):
        return value
    text = value.strip()
    if _NUMBER.match(text):
        number = float(text)
        return int(number) if number.is_integer() else number
    if _GO_DURATION.match(text):
        return text
    raise InvalidInputError(_KEEP_ALIVE_HINT.format(value=value))


_KEEP_ALIVE_HINT = (
    "keep_alive {value!r} is not a duration. Give seconds (300), a duration ('10m', "
    "'1h30m'), a negative number to keep the model loaded until Ollama stops, or 0 to unload."
)


# -- parsing Ollama's answers ------------------------------------------------------------------


def _pick(cls: type[M], data: object, **overrides: object) -> M:
    """Build `cls` from the fields it knows: Ollama's other (and newer) fields are ignored."""
    if not isinstance(data, dict):
        raise ValueError(f"expected a JSON object, got {type(data).__name__}")
    known = {k: v for k, v in data.items() if k in cls.model_fields and v is not None}
    return cls.model_validate(known | overrides)


def _details(data: Mapping[str, Any]) -> OllamaModelDetails:
    details = data.get("details")
    return _pick(OllamaModelDetails, details) if isinstance(details, dict) else OllamaModelDetails()


def _name(data: Mapping[str, Any]) -> object:
    return data.get("name") or data.get("model")


def parse_model(data: object) -> OllamaModel:
    if not isinstance(data, dict):
        raise ValueError("a model entry is not a JSON object")
    return _pick(OllamaModel, data, name=_name(data), details=_details(data))


def parse_loaded(data: object) -> OllamaLoadedModel:
    if not isinstance(data, dict):
        raise ValueError("a loaded-model entry is not a JSON object")
    return _pick(OllamaLoadedModel, data, name=_name(data), details=_details(data))


def parse_shown(name: str, data: object) -> OllamaShownModel:
    if not isinstance(data, dict):
        raise ValueError("the answer is not a JSON object")
    return _pick(OllamaShownModel, data, name=name, details=_details(data))


def parse_progress(data: object) -> OllamaPullProgress:
    return _pick(OllamaPullProgress, data)


# -- the client --------------------------------------------------------------------------------


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
            raise self._unreadable("/api/version", "no version")
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
        _check_name(model)
        body = await self._json("POST", "/api/show", {"model": model}, model=model, what="show")
        try:
            return parse_shown(model, body)
        except (ValueError, ValidationError) as exc:
            raise self._unreadable("/api/show", str(exc)) from exc

    async def delete(self, model: str) -> None:
        """Remove a pulled model (`DELETE /api/delete`); NotFoundError when there is none."""
        _check_name(model)
        await self._send("DELETE", "/api/delete", {"model": model}, model=model, what="delete")

    async def load(
        self, model: str, *, keep_alive: KeepAlive | None = None, context_length: int | None = None
    ) -> None:
        """Load `model` into memory now, without generating (`POST /api/generate`, no prompt).

        `keep_alive`: seconds, a duration ("10m"), negative to keep it until Ollama stops;
        None leaves Ollama's default (5 min, or OLLAMA_KEEP_ALIVE). `context_length` sets
        num_ctx, which decides the KV cache Ollama allocates.
        """
        _check_name(model)
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
        _check_name(model)
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
        _check_name(model)
        timeout = httpx.Timeout(self._timeout_s, read=self._pull_stall_timeout_s)
        what = f"pulling {model}"
        try:
            async with self._http.stream(
                "POST", "/api/pull", json={"model": model, "stream": True}, timeout=timeout
            ) as response:
                if response.status_code != 200:
                    await response.aread()
                    raise self._status_error(response, model=model, what=what)
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
            raise self._transport_error(exc, what) from exc

    def _pull_line(self, model: str, line: str) -> OllamaPullProgress:
        try:
            data = json.loads(line)
        except ValueError as exc:
            raise self._unreadable("/api/pull", f"a line is not JSON: {line[:120]!r}") from exc
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
            raise self._unreadable("/api/pull", str(exc)) from exc

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
            raise self._transport_error(exc, what) from exc
        if response.status_code != 200:
            raise self._status_error(response, model=model, what=what)
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
            raise self._unreadable(path, "the answer is not JSON") from exc

    def _parse_list(self, path: str, body: Any, parse: Callable[[object], M]) -> list[M]:
        entries = body.get("models") if isinstance(body, dict) else None
        if entries is None and isinstance(body, dict):
            entries = []  # Ollama sends "models": null when there are none
        if not isinstance(entries, list):
            raise self._unreadable(path, "no list of models")
        try:
            return [parse(entry) for entry in entries]
        except (ValueError, ValidationError) as exc:
            raise self._unreadable(path, str(exc)) from exc

    def _transport_error(self, exc: httpx.HTTPError, what: str) -> OllamaError:
        if isinstance(exc, httpx.ConnectError):
            return OllamaNotRunningError(
                f"Ollama isn't running at {self.base_url}. Start it with `ollama serve` (or "
                "open the Ollama app), or set OLLAMA_HOST to the address it listens on."
            )
        if isinstance(exc, httpx.TimeoutException):
            return OllamaError(
                f"Ollama at {self.base_url} did not answer in time ({what}). It may be busy "
                "loading a model; try again."
            )
        return OllamaError(
            f"The connection to Ollama at {self.base_url} broke ({what}: "
            f"{type(exc).__name__}). Check that Ollama still runs, then try again."
        )

    def _status_error(
        self, response: httpx.Response, *, model: str | None, what: str
    ) -> RoundhouseError:
        message = _error_message(response)
        code = response.status_code
        path = response.request.url.path
        if code == 404 and message is not None and model is not None:
            return NotFoundError(
                f"Ollama at {self.base_url} has no model '{model}' ({message}). Pull it first "
                f"(ollama pull {model}), or choose one it lists."
            )
        if code == 404:
            return OllamaError(
                f"Ollama at {self.base_url} does not know {path}: it may be too old. "
                "Update Ollama and try again."
            )
        detail = message or response.text[:200].strip() or response.reason_phrase
        if code == 400:
            return InvalidInputError(f"Ollama refused {what}: {detail}.")
        return OllamaError(f"Ollama at {self.base_url} answered {code} to {what}: {detail}.")

    def _unreadable(self, path: str, why: str) -> OllamaError:
        return OllamaError(
            f"Ollama at {self.base_url} answered {path} in a way Roundhouse cannot read "
            f"({why}). Is it really Ollama on that port?"
        )


def _error_message(response: httpx.Response) -> str | None:
    """Ollama's `{"error": "..."}`; None when the body is something else (a 404 page)."""
    try:
        body = response.json()
    except ValueError:
        return None
    error = body.get("error") if isinstance(body, dict) else None
    return error if isinstance(error, str) else None


def _check_name(model: str) -> None:
    if not model.strip() or any(ch.isspace() or not ch.isprintable() for ch in model):
        raise InvalidInputError(
            f"{model!r} is not an Ollama model name. Use a tag such as 'qwen2.5:7b' or 'llama3.2'."
        )
