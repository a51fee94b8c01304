"""The errors the Ollama client raises, and how Ollama's failures map onto them in words."""

from __future__ import annotations

import httpx

from roundhouse.core.errors import InvalidInputError, NotFoundError, RoundhouseError


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


def transport_error(base_url: str, exc: httpx.HTTPError, what: str) -> OllamaError:
    """The error for a request that got no answer: nothing listening, a timeout, a break."""
    if isinstance(exc, httpx.ConnectError):
        return OllamaNotRunningError(
            f"Ollama isn't running at {base_url}. Start it with `ollama serve` (or "
            "open the Ollama app), or set OLLAMA_HOST to the address it listens on."
        )
    if isinstance(exc, httpx.TimeoutException):
        return OllamaError(
            f"Ollama at {base_url} did not answer in time ({what}). It may be busy "
            "loading a model; try again."
        )
    return OllamaError(
        f"The connection to Ollama at {base_url} broke ({what}: "
        f"{type(exc).__name__}). Check that Ollama still runs, then try again."
    )


def status_error(
    base_url: str, response: httpx.Response, *, model: str | None, what: str
) -> RoundhouseError:
    """The error for an answer other than 200, from its status and Ollama's message."""
    message = _error_message(response)
    code = response.status_code
    path = response.request.url.path
    if code == 404 and message is not None and model is not None:
        return NotFoundError(
            f"Ollama at {base_url} has no model '{model}' ({message}). Pull it first "
            f"(ollama pull {model}), or choose one it lists."
        )
    if code == 404:
        return OllamaError(
            f"Ollama at {base_url} does not know {path}: it may be too old. "
            "Update Ollama and try again."
        )
    detail = message or response.text[:200].strip() or response.reason_phrase
    if code == 400:
        return InvalidInputError(f"Ollama refused {what}: {detail}.")
    return OllamaError(f"Ollama at {base_url} answered {code} to {what}: {detail}.")


def unreadable(base_url: str, path: str, why: str) -> OllamaError:
    """The error for an answer that is not what Ollama sends (another server on the port?)."""
    return OllamaError(
        f"Ollama at {base_url} answered {path} in a way Roundhouse cannot read "
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
