"""A model's page from the Hub: card summary, license, and files grouped by quantization
(blocking; the service runs it in a thread)."""

from __future__ import annotations

import json
from typing import Any

from huggingface_hub import HfApi, get_session, hf_raise_for_status
from huggingface_hub.file_download import hf_hub_url
from huggingface_hub.hf_api import ModelInfo

# Public and documented, but exported lazily, so mypy cannot see it.
from huggingface_hub.utils import build_hf_headers  # type: ignore[attr-defined]

from roundhouse.api.hub import HubFile, HubModelDetails
from roundhouse.core.models.hub.card import card_summary
from roundhouse.core.models.hub.errors import hub_errors
from roundhouse.core.models.hub.grouping import group_files, hf_config_facts
from roundhouse.core.models.hub.kinds import detect_kinds, parameter_total
from roundhouse.core.models.hub.search import is_gated

MAX_README_BYTES = 256 * 1024
MAX_CONFIG_BYTES = 1024 * 1024
_TIMEOUT_S = 20.0


def model_details(
    api: HfApi, repo: str, revision: str, token: str | None, endpoint: str | None
) -> HubModelDetails:
    with hub_errors(repo, revision, endpoint):
        info = api.model_info(
            repo, revision=revision, files_metadata=True, token=token if token else False
        )
        names = {s.rfilename for s in info.siblings or []}
        commit = info.sha or revision
        readme = (
            fetch_file(repo, commit, "README.md", token, endpoint, MAX_README_BYTES)
            if "README.md" in names
            else None
        )
        config: dict[str, Any] | None = None
        if "config.json" in names and any(n.endswith(".safetensors") for n in names):
            raw = fetch_file(repo, commit, "config.json", token, endpoint, MAX_CONFIG_BYTES)
            config = _json_object(raw)
    return build_details(info, revision, readme, config)


def build_details(
    info: ModelInfo, revision: str, readme: str | None, config: dict[str, Any] | None
) -> HubModelDetails:
    """The page from what the Hub said (pure, so tests can feed it recorded answers)."""
    files = [
        HubFile(
            path=s.rfilename,
            size=max(0, (s.lfs.size if s.lfs is not None else s.size) or 0),
            sha256=s.lfs.sha256 if s.lfs is not None else None,
        )
        for s in info.siblings or []
    ]
    tags = [str(t) for t in info.tags or []]
    kinds = detect_kinds(tags, info.library_name, [f.path for f in files])
    groups, projectors = group_files(files, kinds, config)
    card = info.card_data
    gguf = info.gguf if isinstance(info.gguf, dict) else {}
    arch, context = hf_config_facts(config)
    return HubModelDetails(
        id=info.id,
        revision=revision,
        commit=info.sha,
        author=info.author or (info.id.split("/", 1)[0] if "/" in info.id else None),
        summary=card_summary(readme) if readme else "",
        license=_license(card, tags),
        gated=is_gated(info.gated),
        private=bool(info.private),
        base_models=_base_models(card, tags),
        tags=tags,
        pipeline_tag=info.pipeline_tag,
        library_name=info.library_name,
        downloads=info.downloads or 0,
        likes=info.likes or 0,
        updated=info.last_modified,
        kinds=kinds,
        parameter_count=parameter_total(info.gguf, info.safetensors),
        architecture=_text(gguf.get("architecture")) or arch,
        context_length=_positive(gguf.get("context_length")) or context,
        groups=groups,
        projectors=projectors,
        total_size=sum(f.size for f in files),
    )


def fetch_file(
    repo: str, commit: str, path: str, token: str | None, endpoint: str | None, limit: int
) -> str | None:
    """A small text file of the repo, at most `limit` bytes of it (a card can be huge)."""
    url = hf_hub_url(repo, path, revision=commit, endpoint=endpoint)
    headers = build_hf_headers(token=token if token else False)
    with get_session().stream(
        "GET", url, headers=headers, follow_redirects=True, timeout=_TIMEOUT_S
    ) as response:
        if response.status_code == 404:
            return None
        if response.status_code >= 400:
            response.read()
            hf_raise_for_status(response)
        data = bytearray()
        for chunk in response.iter_bytes():
            data += chunk
            if len(data) >= limit:
                break
    return bytes(data[:limit]).decode("utf-8", errors="replace")


def _json_object(text: str | None) -> dict[str, Any] | None:
    if not text:
        return None
    try:
        loaded = json.loads(text)
    except ValueError:
        return None  # a truncated or broken config: the page shows what it can
    return loaded if isinstance(loaded, dict) else None


def _license(card: object, tags: list[str]) -> str | None:
    value = getattr(card, "license", None)
    if isinstance(value, str) and value:
        if value == "other":
            name = getattr(card, "license_name", None)
            return name if isinstance(name, str) and name else value
        return value
    return next((t.split(":", 1)[1] for t in tags if t.startswith("license:")), None)


def _base_models(card: object, tags: list[str]) -> list[str]:
    value = getattr(card, "base_model", None)
    if isinstance(value, str) and value:
        return [value]
    if isinstance(value, list):
        return [str(v) for v in value if v]
    # Tags say `base_model:org/name` or `base_model:quantized:org/name`.
    found = [t.rsplit(":", 1)[1] for t in tags if t.startswith("base_model:")]
    return list(dict.fromkeys(found))


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _positive(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None
