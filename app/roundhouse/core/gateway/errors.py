"""Requests the gateway answers itself, each in OpenAI's error shape with its own status; and
the words of an engine's own error, which the surfaces and the context budget read."""

from __future__ import annotations

import json


class GatewayError(Exception):
    """A request the gateway answers itself, in OpenAI's error shape."""

    status = 500
    kind = "server_error"
    code = "internal_error"
    # The request field the error is about, as OpenAI names it in `param`.
    param: str | None = None

    def __init__(self, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.headers = headers or {}


class BadRequest(GatewayError):
    status = 400
    kind = "invalid_request_error"
    code = "invalid_request"


class ModelNotFound(GatewayError):
    status = 404
    kind = "invalid_request_error"
    code = "model_not_found"


class ModelNotReady(GatewayError):
    status = 503
    kind = "server_error"
    code = "model_not_ready"


class UpstreamFailed(GatewayError):
    status = 502
    kind = "server_error"
    code = "upstream_unreachable"


class QueueFull(GatewayError):
    """Every slot of the instance is busy and its queue is full: come back shortly.

    OpenAI answers its own rate limits with 429, type "requests", code
    "rate_limit_exceeded" and a Retry-After header; clients back off and retry on it."""

    status = 429
    kind = "requests"
    code = "rate_limit_exceeded"


class QueueTimeout(GatewayError):
    """The request waited `queue_timeout_s` for its turn or its model, and gave up."""

    status = 503
    kind = "server_error"
    code = "queue_timeout"


class StartFailed(GatewayError):
    """A just-in-time start failed, or found no room: the instance's error in words."""

    status = 503
    kind = "server_error"
    code = "model_start_failed"


class ContextTooLong(BadRequest):
    """The prompt, or the prompt plus the reply it asks room for, does not fit the context the
    instance gives one request. Carries the numbers, so that each API surface can say it in
    its own shape; the message is OpenAI's. `prompt_tokens` is None where the engine refused
    the prompt as over its context without saying its count."""

    code = "context_length_exceeded"

    def __init__(
        self,
        message: str,
        *,
        prompt_tokens: int | None,
        max_tokens: int | None,
        context: int,
        param: str,
    ) -> None:
        super().__init__(message)
        self.prompt_tokens = prompt_tokens
        self.max_tokens = max_tokens
        self.context = context
        self.param = param


def message_of(error: object) -> str:
    """The words of an engine's error, whatever its shape."""
    if isinstance(error, dict):
        inner = error.get("error", error)
        if isinstance(inner, dict):
            inner = inner.get("message", inner)
        if isinstance(inner, str):
            return inner
        detail = error.get("detail") or error.get("message")
        if isinstance(detail, str):
            return detail
    if isinstance(error, str) and error:
        return error
    return json.dumps(error) if error else "The engine failed without saying why."
