"""The JSON the Hub answers for models, listings and trees, shaped from the catalog (pure)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from tests.fakes.hub.catalog import DEFAULT_DATE, HubFile, Repo

# What /api/models gives per model without `full`/`expand` (as the Hub does).
LIST_FIELDS = (
    "_id", "id", "likes", "trendingScore", "private", "downloads", "tags", "pipeline_tag",
    "library_name", "createdAt", "modelId",
)  # fmt: skip
FULL_FIELDS = (*LIST_FIELDS, "author", "sha", "lastModified", "gated", "disabled", "siblings")
INFO_FIELDS = (
    *FULL_FIELDS, "cardData", "spaces", "usedStorage", "safetensors", "gguf", "config",
)  # fmt: skip
# huggingface_hub's ExpandModelProperty_T: the ones this fake knows, and the rest it accepts.
EXPANDABLE = set(INFO_FIELDS) - {"_id", "id", "modelId"} | {"downloadsAllTime"}
EXPAND_IGNORED = {
    "baseModels", "childrenModelCount", "evalResults", "inference", "inferenceProviderMapping",
    "mask_token", "model-index", "resourceGroup", "transformersInfo", "widgetData",
}  # fmt: skip
SORTS = {"downloads", "likes", "lastModified", "createdAt", "trendingScore", "id"}


class BadRequest(ValueError):
    """A query the Hub would answer with 400."""


def _mongo_id(repo_id: str) -> str:
    return hashlib.sha1(repo_id.encode(), usedforsecurity=False).hexdigest()[:24]


def sibling(f: HubFile, blobs: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"rfilename": f.path}
    if blobs:
        out["size"] = f.size
        out["blobId"] = f.blob_id
        if f.sha256 is not None:
            out["lfs"] = {"sha256": f.sha256, "size": f.size, "pointerSize": f.pointer_size}
    return out


def model_json(repo: Repo, wanted: Iterable[str], *, blobs: bool = False) -> dict[str, Any]:
    """The model object with the `wanted` fields (absent values left out, as the Hub does)."""
    meta = repo.meta
    values: dict[str, Any] = {
        "_id": _mongo_id(repo.id),
        "id": repo.id,
        "modelId": repo.id,
        "author": repo.author,
        "sha": repo.sha,
        "lastModified": meta.get("lastModified", DEFAULT_DATE),
        "createdAt": meta.get("createdAt", DEFAULT_DATE),
        "private": repo.private,
        "gated": repo.gated,
        "disabled": bool(meta.get("disabled", False)),
        "downloads": int(meta.get("downloads", 0)),
        "downloadsAllTime": int(meta.get("downloadsAllTime", meta.get("downloads", 0))),
        "likes": int(meta.get("likes", 0)),
        "trendingScore": int(meta.get("trendingScore", 0)),
        "tags": repo.tags,
        "pipeline_tag": repo.pipeline_tag,
        "library_name": repo.library_name,
        "cardData": repo.card or None,
        "siblings": [sibling(f, blobs) for f in repo.files.values()],
        "spaces": [],
        "usedStorage": sum(f.size for f in repo.files.values()),
        "safetensors": repo.safetensors,
        "gguf": repo.gguf,
        "config": repo.config,
    }
    return {k: values[k] for k in wanted if k in values and values[k] is not None}


def info_fields(expand: Sequence[str]) -> list[str]:
    """Fields of `GET /api/models/{id}`: all of them, or `_id`, `id` and the expanded ones."""
    if not expand:
        return list(INFO_FIELDS)
    return ["_id", "id", *check_expand(expand)]


def check_expand(expand: Sequence[str]) -> list[str]:
    bad = [e for e in expand if e not in EXPANDABLE | EXPAND_IGNORED]
    if bad:
        raise BadRequest(f"Invalid expand value(s): {', '.join(bad)}")
    return [e for e in expand if e in EXPANDABLE]


def list_fields(query: Mapping[str, list[str]]) -> list[str]:
    expand = query.get("expand", []) + query.get("expand[]", [])
    if expand:
        if any(_true(query, k) for k in ("full", "cardData", "config")):
            raise BadRequest("expand cannot be combined with full, cardData or config")
        return ["_id", "id", *check_expand(expand)]
    fields = list(FULL_FIELDS if _true(query, "full") else LIST_FIELDS)
    if _true(query, "cardData"):
        fields.append("cardData")
    if _true(query, "config"):
        fields.append("config")
    return fields


def search_models(repos: Iterable[Repo], query: Mapping[str, list[str]]) -> list[Repo]:
    """Filter and sort as /api/models does: search in the id, author, every filter a tag."""
    search = _one(query, "search").lower()
    author = _one(query, "author")
    filters = [f for value in query.get("filter", []) for f in value.split(",") if f]
    pipeline = _one(query, "pipeline_tag")
    gated = _one(query, "gated")
    found = [
        r
        for r in repos
        if search in r.id.lower()
        and (not author or r.author == author)
        and all(f in r.tags for f in filters)
        and (not pipeline or r.pipeline_tag == pipeline)
        and (not gated or (r.gated is not False) == (gated == "true"))
    ]
    sort = _one(query, "sort") or "trendingScore"
    if sort not in SORTS:
        raise BadRequest(f"Invalid sort value: {sort}; use one of {sorted(SORTS)}")
    descending = _one(query, "direction") in ("", "-1")
    found.sort(key=lambda r: r.id)
    if sort != "id":
        found.sort(key=lambda r: model_json(r, [sort]).get(sort) or 0, reverse=descending)
    elif descending:
        found.reverse()
    return found


def tree_entry(repo: Repo, path: str, *, expand: bool) -> dict[str, Any]:
    f = repo.files.get(path)
    if f is None:
        tree_id = hashlib.sha1(f"{repo.sha}:{path}".encode(), usedforsecurity=False).hexdigest()
        out: dict[str, Any] = {"type": "directory", "oid": tree_id, "size": 0, "path": path}
    else:
        out = {"type": "file", "oid": f.blob_id, "size": f.size, "path": path}
        if f.sha256 is not None:
            out["lfs"] = {"oid": f.sha256, "size": f.size, "pointerSize": f.pointer_size}
    if expand:
        date = repo.meta.get("lastModified", DEFAULT_DATE)
        out["lastCommit"] = {"id": repo.sha, "title": "Upload model", "date": date}
    return out


def tree_paths(repo: Repo, under: str, recursive: bool) -> list[str] | None:
    """Paths listed under a folder ("" is the root), folders first; None: no such folder."""
    dirs = repo.directories()
    if under and under not in dirs:
        return None
    prefix = f"{under}/" if under else ""
    inside = [p for p in sorted(dirs | set(repo.files)) if p.startswith(prefix)]
    if not recursive:
        inside = [p for p in inside if "/" not in p[len(prefix) :]]
    return sorted(inside, key=lambda p: (p not in dirs, p))


def _one(query: Mapping[str, list[str]], key: str) -> str:
    values = query.get(key, [])
    return values[-1] if values else ""


def _true(query: Mapping[str, list[str]], key: str) -> bool:
    return _one(query, key).lower() in ("1", "true")
