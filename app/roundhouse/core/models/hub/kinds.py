"""Which kinds of weights a Hub repository holds, and the Hub filters that find each (pure)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from roundhouse.api.hub import HubModelKind

ALL_KINDS = (HubModelKind.GGUF, HubModelKind.MLX, HubModelKind.SAFETENSORS)


@dataclass(frozen=True)
class KindQuery:
    """The `/api/models` arguments that list one kind: tags (all must match), a pipeline."""

    filters: tuple[str, ...]
    pipeline_tag: str | None = None


# The Hub tags GGUF repos "gguf" and MLX ones "mlx" (their library); safetensors weights
# are tagged "safetensors", and only text generation is what vLLM and SGLang serve here.
KIND_QUERIES: Mapping[HubModelKind, KindQuery] = {
    HubModelKind.GGUF: KindQuery(("gguf",)),
    HubModelKind.MLX: KindQuery(("mlx",)),
    HubModelKind.SAFETENSORS: KindQuery(("safetensors",), "text-generation"),
}


def detect_kinds(
    tags: Iterable[str],
    library_name: str | None = None,
    files: Iterable[str] = (),
) -> list[HubModelKind]:
    """The kinds a repository offers, from its tags, library and (when listed) file names."""
    tag_set = {t.lower() for t in tags}
    names = [f.lower() for f in files]
    library = (library_name or "").lower()
    kinds: list[HubModelKind] = []
    if "gguf" in tag_set or library == "gguf" or any(n.endswith(".gguf") for n in names):
        kinds.append(HubModelKind.GGUF)
    has_safetensors = "safetensors" in tag_set or any(n.endswith(".safetensors") for n in names)
    if "mlx" in tag_set or library == "mlx":
        kinds.append(HubModelKind.MLX)
    elif has_safetensors:
        kinds.append(HubModelKind.SAFETENSORS)
    return kinds


def parameter_total(*sources: object) -> int | None:
    """`total` of the Hub's `gguf` or `safetensors` field (a dict or huggingface_hub's object),
    the first that gives a positive integer."""
    for source in sources:
        value = (
            source.get("total") if isinstance(source, Mapping) else getattr(source, "total", None)
        )
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None
