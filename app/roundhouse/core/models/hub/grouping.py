"""A repository's files as the choices a user has: one group per GGUF quantization, one for
the safetensors or MLX weights with the files that go with them (pure)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from roundhouse.api.hub import HubFile, HubModelKind, QuantGroup
from roundhouse.core.models.hub.config_facts import config_facts
from roundhouse.core.models.hub.quants import GgufGroup, group_gguf_files

# Files a safetensors or MLX model loads besides its weights (config, tokenizer, template).
_COMPANION_SUFFIXES = (".json", ".txt", ".model", ".jinja", ".tiktoken", ".py")
_WEIGHT_SUFFIX = ".safetensors"


def group_files(
    files: Sequence[HubFile],
    kinds: Sequence[HubModelKind],
    config: Mapping[str, object] | None = None,
) -> tuple[list[QuantGroup], list[QuantGroup]]:
    """(model groups smallest first, projector groups)."""
    groups: list[QuantGroup] = []
    projectors: list[QuantGroup] = []
    for gguf in group_gguf_files(files):
        (projectors if gguf.projector else groups).append(_gguf_group(gguf))
    weights = safetensors_group(files, kinds, config)
    if weights is not None:
        groups.append(weights)
    groups.sort(key=lambda g: (g.size, g.name))
    return groups, projectors


def _gguf_group(group: GgufGroup[HubFile]) -> QuantGroup:
    return QuantGroup(
        name=group.name,
        kind=HubModelKind.GGUF,
        quantization=group.quantization,
        files=list(group.files),
        size=group.size,
        shards=group.shards,
        pattern=group.pattern,
    )


def safetensors_group(
    files: Sequence[HubFile],
    kinds: Sequence[HubModelKind],
    config: Mapping[str, object] | None,
) -> QuantGroup | None:
    """The weights at the top of the repo (or, when none are there, wherever they are),
    with the top-level files a loader reads beside them."""
    weights = [f for f in files if f.path.endswith(_WEIGHT_SUFFIX) and "/" not in f.path]
    if not weights:
        weights = [f for f in files if f.path.endswith(_WEIGHT_SUFFIX)]
    if not weights:
        return None
    facts = config_facts(config)
    mlx = HubModelKind.MLX in kinds or facts.mlx
    kind = HubModelKind.MLX if mlx else HubModelKind.SAFETENSORS
    companions = [
        f
        for f in files
        if "/" not in f.path
        and f.path.lower().endswith(_COMPANION_SUFFIXES)
        and not f.path.lower().endswith(".gguf")
    ]
    chosen = sorted({f.path: f for f in [*weights, *companions]}.values(), key=lambda f: f.path)
    label = "MLX" if mlx else "safetensors"
    return QuantGroup(
        name=f"{label} {facts.quantization}" if facts.quantization else label,
        kind=kind,
        quantization=facts.quantization,
        files=chosen,
        size=sum(f.size for f in chosen),
        shards=max(1, len(weights)),
        pattern=None,
    )


def hf_config_facts(config: Mapping[str, object] | None) -> tuple[str | None, int | None]:
    facts = config_facts(config)
    return facts.architecture, facts.context_length
