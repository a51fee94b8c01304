"""Probe a URL the user adds (LM Studio, Jan, LocalAI, exo, a remote machine) as an OpenAI server.

    endpoint = await probe_openai_endpoint("http://127.0.0.1:1234", api_key=key_or_none)

`probe_openai_endpoint` checks the URL with `GET {url}/v1/models` and raises a RoundhouseError
saying what to do when nothing answers, the key is missing or refused, or the answer is not
OpenAI's. A list of exo's model cards makes it exo: its served models are then read from its
cluster state (`core.engines.exo`).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import httpx

from roundhouse.api.engines import EngineId
from roundhouse.api.external import AttachSource, ExternalEngine
from roundhouse.base.hosts import is_loopback_host
from roundhouse.core.engines.attach.probe import REFUSED, get_or_reason, json_or_none
from roundhouse.core.engines.exo import is_exo_model_list, served_models
from roundhouse.core.errors import InvalidInputError, RoundhouseError
from roundhouse.core.supervise.readiness import model_ids


class EndpointError(RoundhouseError):
    """The endpoint does not answer, or not as an OpenAI-compatible server does."""

    title = "Endpoint not usable"
    status = 502


class EndpointKeyError(InvalidInputError):
    """The endpoint wants an API key, or refused the one given."""

    title = "API key needed"


def endpoint_base_url(url: str) -> str:
    """`url` as a base URL: http(s)://host[:port][/path], without a trailing /v1 or slash.

    A bare `host:port` gets http://. Raises InvalidInputError for another scheme, a user
    name or password in the URL, a query or a fragment.
    """
    text = url.strip()
    if "://" not in text:
        text = "http://" + text
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https"):
        raise InvalidInputError(
            f"{url!r} is not an http:// or https:// URL. Give the server's address, for "
            "example http://127.0.0.1:1234."
        )
    if not parts.hostname:
        raise InvalidInputError(f"{url!r} has no host. Give one, for example 127.0.0.1:1234.")
    if parts.username or parts.password:
        raise InvalidInputError(
            "Put the API key in its own field, not in the URL: a URL is shown and logged."
        )
    if parts.query or parts.fragment:
        raise InvalidInputError(
            "The URL has a query or fragment: give the base URL only (a key goes in its own field)."
        )
    try:
        parts.port  # noqa: B018 - a bad port raises here
    except ValueError as exc:
        raise InvalidInputError(f"{url!r} has an invalid port.") from exc
    path = parts.path.rstrip("/")
    if path.endswith("/v1"):
        path = path[: -len("/v1")]
    return f"{parts.scheme}://{parts.netloc}{path}"


def redirect_refused(base: str, code: int, location: str | None) -> str:
    """Why an endpoint that answers with a redirect is not used, and what to do."""
    # The server writes the address: it is shown cut short, never followed.
    where = f" to {location[:200]}" if location else ""
    return (
        f"{base} answered with a redirect ({code}{where}). Roundhouse does not follow "
        "redirects from a server it attaches to, so that its API key and your prompts go only "
        "to the address you gave: attach the address it redirects to, if you trust it."
    )


async def probe_openai_endpoint(
    url: str, api_key: str | None = None, *, timeout_s: float = 5.0
) -> ExternalEngine:
    """Check an OpenAI-compatible server with `GET {url}/v1/models`; its models, or why not.

    Raises InvalidInputError for a malformed URL, EndpointKeyError when the key is missing
    or refused (401/403), EndpointError when nothing answers, the answer is a redirect, or
    it is not OpenAI's. The key is sent only as `Authorization: Bearer`, never put in the
    URL or the result, and never after a redirect.
    """
    base = endpoint_base_url(url)
    host = urlsplit(base).hostname or ""
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    # Proxies must never see loopback traffic; a remote endpoint may need the user's proxy.
    # Redirects are not followed: the key and the prompts go to the address the user gave.
    async with httpx.AsyncClient(
        trust_env=not is_loopback_host(host), timeout=timeout_s, follow_redirects=False
    ) as http:
        answer = await get_or_reason(http, f"{base}/v1/models", timeout_s, headers)
        body = _checked_model_list(base, api_key, answer)
        if is_exo_model_list(body):
            return await _exo_endpoint(http, base, headers, timeout_s)
    return ExternalEngine(
        engine=EngineId.OPENAI_COMPATIBLE,
        base_url=base,
        found_by=AttachSource.USER_ENDPOINT,
        healthy=True,
        status="ready",
        model_ids=model_ids(body),
    )


def _checked_model_list(base: str, api_key: str | None, answer: httpx.Response | str) -> Any:
    """The body of an OpenAI model list, or the error that says why there is none."""
    if isinstance(answer, str):
        if answer == REFUSED:
            raise EndpointError(
                f"Nothing answers at {base}. Start the server there (LM Studio: Developer, "
                "Start Server; Jan: Local API Server; exo: run exo, on port 52415), or check "
                "the address and port."
            )
        raise EndpointError(
            f"Cannot reach {base}: {answer}. Check the address; a remote machine may be off "
            "or behind a firewall."
        )
    code = answer.status_code
    if 300 <= code < 400:
        raise EndpointError(redirect_refused(base, code, answer.headers.get("location")))
    if code in (401, 403):
        if api_key:
            raise EndpointKeyError(f"{base} refused the API key ({code}). Check the key.")
        raise EndpointKeyError(f"{base} needs an API key ({code}). Add the key and try again.")
    if code == 404:
        raise EndpointError(
            f"{base} has no /v1/models: it does not look like an OpenAI-compatible server. "
            "Give its base URL, for example http://127.0.0.1:1234."
        )
    if code != 200:
        raise EndpointError(f"{base}/v1/models answered {code}: {answer.text[:200].strip()}")
    body = json_or_none(answer)
    if not isinstance(body, dict) or not isinstance(body.get("data"), list):
        raise EndpointError(
            f"{base}/v1/models did not answer with OpenAI's model list: it does not look "
            "like an OpenAI-compatible server."
        )
    return body


async def _exo_endpoint(
    http: httpx.AsyncClient, base: str, headers: dict[str, str], timeout_s: float
) -> ExternalEngine:
    """exo at `base`: what it serves are the models placed on its cluster, not its cards."""
    answer = await get_or_reason(http, f"{base}/state/instances", timeout_s, headers)
    if isinstance(answer, str) or answer.status_code != 200:
        why = answer if isinstance(answer, str) else f"{answer.status_code}"
        return ExternalEngine(
            engine=EngineId.EXO,
            base_url=base,
            found_by=AttachSource.USER_ENDPOINT,
            healthy=False,
            status=f"exo's cluster state did not answer ({why}); is exo still starting?",
        )
    served = served_models(json_or_none(answer))
    return ExternalEngine(
        engine=EngineId.EXO,
        base_url=base,
        found_by=AttachSource.USER_ENDPOINT,
        healthy=True,
        status="ready" if served else "ready, no model placed (place one in exo's dashboard)",
        model_ids=served,
    )
