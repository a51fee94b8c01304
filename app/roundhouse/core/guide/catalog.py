"""The first-run guide's catalog: resources/models/starters.toml, loaded, checked and cached.

Besides loading, it turns an entry into what the rest of the guide needs without the Hub:
the files to download for an engine, the approximate size, and a ModelShape for the fit
estimate built from the entry's config numbers (the offline path).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from pydantic import ValidationError

from roundhouse.api.engines import EngineId
from roundhouse.api.starters import EngineCostSpec, StarterCatalog, StarterSpec
from roundhouse.base.resources import read_toml, resource_path
from roundhouse.core.errors import RoundhouseError
from roundhouse.core.knowledge.hf_config import shape_from_hf_config
from roundhouse.core.knowledge.shape import ModelShape, WeightFormat

MB = 1000**2


class StarterCatalogError(RoundhouseError):
    """The starters file is broken: the message names the file and what is wrong."""

    title = "Starter catalog is invalid"
    status = 500


@dataclass(frozen=True)
class StarterSource:
    """Where one starter comes from for one engine."""

    engine: EngineId
    repo: str | None  # a Hub repository (None for Ollama)
    files: tuple[str, ...]  # files of it to download; () means the whole repository
    group: str | None  # the Hub page's file choice to size ('Q4_K_M'); None: the only one
    ollama_tag: str | None
    size_bytes: int  # the catalog's approximate size
    weight_format: WeightFormat


def catalog_file() -> Path:
    return resource_path("models", "starters.toml")


@cache
def load_starters(path: Path | None = None) -> StarterCatalog:
    """The catalog at `path` (default: the bundled one), starters in the file's order."""
    path = path or catalog_file()
    data = read_toml(path, "starter catalog", StarterCatalogError)
    try:
        catalog = StarterCatalog.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise StarterCatalogError(
            f"The starter catalog {path} is invalid at {where}: {first['msg']}."
        ) from exc
    ids = [s.id for s in catalog.starter]
    if len(set(ids)) != len(ids):
        raise StarterCatalogError(f"The starter catalog {path} names a starter id twice.")
    return catalog


def source_for(spec: StarterSpec, engine: EngineId) -> StarterSource | None:
    """Where `spec` comes from for `engine`; None when the catalog has no such form."""
    if engine == EngineId.LLAMA_CPP and spec.gguf is not None:
        g = spec.gguf
        return StarterSource(
            engine, g.repo, (g.file,), g.quant, None, g.size_mb * MB, WeightFormat.GGUF
        )
    if engine == EngineId.MLX and spec.mlx is not None:
        m = spec.mlx
        return StarterSource(engine, m.repo, (), None, None, m.size_mb * MB, WeightFormat.MLX)
    if engine == EngineId.OLLAMA and spec.ollama is not None:
        o = spec.ollama
        return StarterSource(engine, None, (), None, o.tag, o.size_mb * MB, WeightFormat.GGUF)
    return None


def engine_cost(catalog: StarterCatalog, engine: EngineId) -> EngineCostSpec | None:
    return catalog.engine.get(engine.value)


def catalog_shape(spec: StarterSpec, source: StarterSource) -> ModelShape:
    """The model's shape from the catalog's numbers, its weights at the catalog's size.

    Sized as a 4-bit model (what every starter is): the embedding table at 4 bits a weight
    plus a scale per group, the rest spread evenly over the layers.
    """
    s = spec.shape
    config = {
        "model_type": spec.id,
        "num_hidden_layers": s.layers,
        "hidden_size": s.embedding,
        "num_attention_heads": s.heads,
        "num_key_value_heads": s.kv_heads,
        "head_dim": s.head_dim,
        "max_position_embeddings": s.context,
        "intermediate_size": s.feed_forward,
        "vocab_size": s.vocab,
        "tie_word_embeddings": s.tied,
        "quantization": {"bits": 4, "group_size": 64},
    }
    shape = shape_from_hf_config(config, source.size_bytes, WeightFormat.MLX, "4bit")
    if source.weight_format == WeightFormat.MLX:
        return shape
    quant = spec.gguf.quant if spec.gguf is not None else "Q4_K_M"
    return dataclasses.replace(shape, format=WeightFormat.GGUF, quantization=quant)
