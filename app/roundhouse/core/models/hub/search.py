"""Search the Hub for models local engines can run (blocking; the service runs it in a thread)."""

from __future__ import annotations

from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any

from huggingface_hub import HfApi
from huggingface_hub.hf_api import ModelInfo

from roundhouse.api.hub import (
    HubModelKind,
    HubModelSummary,
    HubSearchRequest,
    HubSearchResult,
    HubSort,
)
from roundhouse.core.models.hub.errors import hub_errors
from roundhouse.core.models.hub.kinds import ALL_KINDS, KIND_QUERIES, detect_kinds, parameter_total

# What a listing must carry for a result row; asking for `gguf` and `safetensors` brings the
# parameter counts, and with `expand` the Hub returns only the fields named.
LIST_EXPAND: list[Any] = [
    "author",
    "downloads",
    "likes",
    "lastModified",
    "tags",
    "pipeline_tag",
    "library_name",
    "gated",
    "private",
    "gguf",
    "safetensors",
]
_HUB_SORT = {
    HubSort.DOWNLOADS: "downloads",
    HubSort.LIKES: "likes",
    HubSort.UPDATED: "last_modified",
}
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def search_models(api: HfApi, request: HubSearchRequest, token: str | None) -> HubSearchResult:
    """One listing per kind asked for (the Hub ANDs its filters, and a user wants any of the
    kinds), run side by side, merged by id, sorted as asked and cut to the limit."""
    kinds = list(dict.fromkeys(request.kinds)) or list(ALL_KINDS)
    with hub_errors(), ThreadPoolExecutor(len(kinds)) as pool:
        listings = list(pool.map(lambda kind: _list_kind(api, request, kind, token), kinds))
    merged: dict[str, HubModelSummary] = {}
    for listing in listings:
        for info in listing:
            summary = summarize(info)
            # An MLX repo is tagged safetensors too: it is listed as what it is, MLX.
            if not summary.kinds or set(summary.kinds) & set(kinds):
                merged.setdefault(info.id, summary)
    # By id first, so ties keep one order whatever the listings' order was.
    ordered = sorted(merged.values(), key=lambda m: m.id)
    ordered.sort(key=lambda m: _sort_key(m, request.sort), reverse=True)
    return HubSearchResult(request=request, models=ordered[: request.limit])


def _list_kind(
    api: HfApi, request: HubSearchRequest, kind: HubModelKind, token: str | None
) -> list[ModelInfo]:
    query = KIND_QUERIES[kind]
    found = api.list_models(
        search=request.query.strip() or None,
        author=request.author or None,
        filter=list(query.filters),
        pipeline_tag=query.pipeline_tag,
        sort=_HUB_SORT[request.sort],  # type: ignore[arg-type]
        limit=request.limit,
        expand=LIST_EXPAND,
        token=token if token else False,
    )
    return list(found)


def summarize(info: ModelInfo) -> HubModelSummary:
    tags = [str(t) for t in info.tags or []]
    return HubModelSummary(
        id=info.id,
        author=info.author or (info.id.split("/", 1)[0] if "/" in info.id else None),
        downloads=info.downloads or 0,
        likes=info.likes or 0,
        updated=info.last_modified,
        tags=tags,
        pipeline_tag=info.pipeline_tag,
        library_name=info.library_name,
        gated=is_gated(info.gated),
        private=bool(info.private),
        kinds=detect_kinds(tags, info.library_name, _sibling_names(info)),
        parameter_count=parameter_total(info.gguf, info.safetensors),
    )


def is_gated(value: object) -> bool:
    """The Hub says `false`, `"auto"` or `"manual"`."""
    return value not in (None, False, "false", "")


def _sibling_names(info: ModelInfo) -> Iterable[str]:
    return [s.rfilename for s in info.siblings or []]


def _sort_key(model: HubModelSummary, sort: HubSort) -> float:
    if sort is HubSort.LIKES:
        return model.likes
    if sort is HubSort.UPDATED:
        updated = model.updated or _EPOCH
        return (updated if updated.tzinfo else updated.replace(tzinfo=UTC)).timestamp()
    return model.downloads
