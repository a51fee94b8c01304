"""llama.cpp's release listing, read from GitHub's REST API (or a stand-in at another URL)."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from typing import Any

import httpx
from pydantic import ValidationError

from roundhouse import __version__
from roundhouse.api.installs import Release, ReleaseAsset
from roundhouse.core.engines.install.errors import DownloadError, InstallError
from roundhouse.core.engines.install.layout import is_safe_tag
from roundhouse.core.errors import InvalidInputError, NotFoundError

DEFAULT_RELEASES_URL = "https://api.github.com/repos/ggml-org/llama.cpp/releases"
RELEASES_URL_ENV = "ROUNDHOUSE_LLAMACPP_RELEASES_URL"
API_HEADERS = {
    "Accept": "application/vnd.github+json",
    "X-GitHub-Api-Version": "2022-11-28",
    "User-Agent": f"Roundhouse/{__version__}",
}


def releases_url(override: str | None = None, env: Mapping[str, str] | None = None) -> str:
    """The releases endpoint: `override`, else $ROUNDHOUSE_LLAMACPP_RELEASES_URL, else GitHub."""
    env = os.environ if env is None else env
    return (override or env.get(RELEASES_URL_ENV) or DEFAULT_RELEASES_URL).rstrip("/")


def parse_release(data: object) -> Release:
    """A release from GitHub's JSON; assets without a name, size or URL are left out."""
    if not isinstance(data, dict) or not isinstance(data.get("tag_name"), str):
        raise DownloadError("The release listing is not a GitHub release (no tag_name).")
    assets: list[ReleaseAsset] = []
    for item in data.get("assets") or []:
        if not isinstance(item, dict):
            continue
        try:
            assets.append(
                ReleaseAsset(
                    name=item["name"],
                    size=item["size"],
                    url=item["browser_download_url"],
                    digest=item.get("digest"),
                )
            )
        except (KeyError, ValidationError):
            continue
    return Release(
        tag=data["tag_name"],
        name=_str_or_none(data.get("name")),
        published_at=_str_or_none(data.get("published_at")),
        html_url=_str_or_none(data.get("html_url")),
        assets=assets,
    )


async def fetch_release(
    client: httpx.AsyncClient, tag: str | None = None, *, base_url: str | None = None
) -> Release:
    """The latest release, or the one tagged `tag` (e.g. "b6123")."""
    if tag is not None and not is_safe_tag(tag):
        raise InvalidInputError(f"{tag!r} is not a llama.cpp release tag; tags look like b6123.")
    base = releases_url(base_url)
    url = f"{base}/latest" if tag is None else f"{base}/tags/{tag}"
    data = await _get_json(client, url, missing=_missing_tag(tag))
    return parse_release(data)


async def list_releases(
    client: httpx.AsyncClient, *, base_url: str | None = None, limit: int = 10
) -> list[Release]:
    """The newest releases, newest first (for choosing a version)."""
    base = releases_url(base_url)
    data = await _get_json(
        client,
        base,
        params={"per_page": max(1, min(limit, 100))},
        missing="The llama.cpp release listing was not found; check the releases URL.",
    )
    if not isinstance(data, list):
        raise DownloadError("The llama.cpp release listing is not a list of releases.")
    return [parse_release(item) for item in data[:limit]]


async def _get_json(
    client: httpx.AsyncClient,
    url: str,
    *,
    missing: str,
    params: Mapping[str, Any] | None = None,
) -> Any:
    try:
        reply = await client.get(url, headers=API_HEADERS, params=params, follow_redirects=True)
    except httpx.HTTPError as exc:
        raise DownloadError(
            f"Could not reach {url}: {exc}. Check the network connection and try again."
        ) from exc
    if reply.status_code == 404:
        raise NotFoundError(missing)
    if reply.status_code in (403, 429) and reply.headers.get("x-ratelimit-remaining") == "0":
        raise DownloadError(_rate_limited(reply.headers.get("x-ratelimit-reset")))
    if reply.status_code != 200:
        raise DownloadError(f"{url} answered HTTP {reply.status_code}; try again later.")
    try:
        return reply.json()
    except ValueError as exc:
        raise InstallError(f"{url} did not answer JSON.") from exc


def _missing_tag(tag: str | None) -> str:
    if tag is None:
        return "llama.cpp has no published release; check the releases URL."
    return f"llama.cpp has no release tagged {tag}; check the tag (they look like b6123)."


def _rate_limited(reset: str | None) -> str:
    when = "in an hour"
    if reset and reset.isdigit():
        when = "after " + time.strftime("%H:%M", time.localtime(int(reset)))
    return f"GitHub's API limit for this address is used up; try again {when}."


def _str_or_none(value: object) -> str | None:
    return value if isinstance(value, str) else None
