"""The stand-in's fake registry: a few tiny pullable models written into its state folder."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MEDIA_MODEL = "application/vnd.ollama.image.model"
MEDIA_TEMPLATE = "application/vnd.ollama.image.template"
MEDIA_PARAMS = "application/vnd.ollama.image.params"
MEDIA_CONFIG = "application/vnd.docker.container.image.v1+json"
MEDIA_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"

TEMPLATE = "{{ if .System }}<|system|>{{ .System }}{{ end }}<|user|>{{ .Prompt }}<|assistant|>"


@dataclass(frozen=True)
class FakeModel:
    """One pullable model: its GGUF-like metadata and how big its weights layer is."""

    name: str
    architecture: str
    family: str
    parameter_count: int
    parameter_size: str
    quantization_level: str
    block_count: int
    context_length: int
    head_count: int
    head_count_kv: int
    embedding_length: int
    capabilities: tuple[str, ...]
    weights_bytes: int


DEFAULT_MODELS = (
    FakeModel(
        name="tiny:latest",
        architecture="llama",
        family="llama",
        parameter_count=12_345_678,
        parameter_size="12.35M",
        quantization_level="Q4_K_M",
        block_count=4,
        context_length=2048,
        head_count=4,
        head_count_kv=2,
        embedding_length=256,
        capabilities=("completion",),
        weights_bytes=8 * 1024,
    ),
    FakeModel(
        name="small:latest",
        architecture="qwen2",
        family="qwen2",
        parameter_count=494_032_768,
        parameter_size="494.03M",
        quantization_level="Q8_0",
        block_count=24,
        context_length=32768,
        head_count=14,
        head_count_kv=2,
        embedding_length=896,
        capabilities=("completion", "tools"),
        weights_bytes=24 * 1024,
    ),
    FakeModel(
        name="embed:latest",
        architecture="nomic-bert",
        family="nomic-bert",
        parameter_count=136_731_648,
        parameter_size="137M",
        quantization_level="F16",
        block_count=12,
        context_length=2048,
        head_count=12,
        head_count_kv=12,
        embedding_length=768,
        capabilities=("embedding",),
        weights_bytes=4 * 1024,
    ),
)


def _digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def blob_name(digest: str) -> str:
    """`sha256:abc…` → `sha256-abc…`, the blob's file name, as Ollama stores it."""
    return digest.replace(":", "-")


def _config(model: FakeModel) -> dict[str, Any]:
    arch = model.architecture
    return {
        "model_format": "gguf",
        "model_family": model.family,
        "model_families": [model.family],
        "model_type": model.parameter_size,
        "file_type": model.quantization_level,
        "architecture": "amd64",
        "os": "linux",
        # Not in real config blobs: the stand-in keeps here what real Ollama reads from the GGUF.
        "capabilities": list(model.capabilities),
        "model_info": {
            "general.architecture": arch,
            "general.parameter_count": model.parameter_count,
            f"{arch}.block_count": model.block_count,
            f"{arch}.context_length": model.context_length,
            f"{arch}.attention.head_count": model.head_count,
            f"{arch}.attention.head_count_kv": model.head_count_kv,
            f"{arch}.embedding_length": model.embedding_length,
        },
    }


def write_registry(registry: Path, models: tuple[FakeModel, ...] = DEFAULT_MODELS) -> None:
    """Write manifests and blobs for `models` under `registry` unless a manifest exists."""
    blobs = registry / "blobs"
    blobs.mkdir(parents=True, exist_ok=True)
    for model in models:
        repo, tag = model.name.split(":")
        manifest_path = registry / "manifests" / repo / tag
        if manifest_path.exists():
            continue
        weights = hashlib.shake_256(model.name.encode()).digest(model.weights_bytes)
        params = json.dumps({"stop": ["<|user|>"]}).encode()
        config = json.dumps(_config(model)).encode()
        layers = []
        for media, data in (
            (MEDIA_MODEL, weights),
            (MEDIA_TEMPLATE, TEMPLATE.encode()),
            (MEDIA_PARAMS, params),
        ):
            digest = _digest(data)
            (blobs / blob_name(digest)).write_bytes(data)
            layers.append({"mediaType": media, "digest": digest, "size": len(data)})
        config_digest = _digest(config)
        (blobs / blob_name(config_digest)).write_bytes(config)
        manifest = {
            "schemaVersion": 2,
            "mediaType": MEDIA_MANIFEST,
            "config": {"mediaType": MEDIA_CONFIG, "digest": config_digest, "size": len(config)},
            "layers": layers,
        }
        manifest_path.parent.mkdir(parents=True, exist_ok=True)
        manifest_path.write_text(json.dumps(manifest))
