"""Facts of a safetensors or MLX model folder: config.json, and the parameter count from the
safetensors headers (a little-endian u64 length, then that much JSON; both bounded)."""

from __future__ import annotations

import json
import math
import re
import struct
from pathlib import Path

from roundhouse.core.models.hub.config_facts import config_facts
from roundhouse.core.models.library.facts import ModelFacts
from roundhouse.core.models.library.walk import ModelDir

INDEX_FILE = "model.safetensors.index.json"
MAX_CONFIG_BYTES = 4 * 1024 * 1024
MAX_HEADER_BYTES = 100 * 1024 * 1024  # the format's own limit
_README_PEEK = 4096
_MLX_TAG = re.compile(r"^\s*(?:-\s*mlx|library_name:\s*mlx)\s*$", re.MULTILINE | re.IGNORECASE)
_MAX_DIMS = 8


def model_dir_facts(folder: ModelDir, repo: str | None = None) -> ModelFacts:
    """Architecture, context, quantization and parameters of a safetensors folder; a broken
    config or header becomes the `error`, never an exception."""
    try:
        config = read_config(Path(folder.config.path))
    except (OSError, ValueError) as exc:
        return ModelFacts(error=f"Its config.json cannot be read: {exc}")
    facts = config_facts(config)
    mlx = facts.mlx or _says_mlx(folder.path, repo)
    bits = _bits(facts.quantization) if mlx else None
    error = missing_shards(folder)
    params: int | None = None
    try:
        params = sum(header_parameters(Path(w.path), bits) for w in folder.weights) or None
    except (OSError, ValueError) as exc:
        error = error or f"A weights file is damaged: {exc}"
    return ModelFacts(
        architecture=facts.architecture,
        parameter_count=params,
        quantization=facts.quantization,
        context_length=facts.context_length,
        mlx=mlx,
        error=error,
    )


def missing_shards(folder: ModelDir) -> str | None:
    """Which weight files the index names that are not in the folder (a partial download)."""
    index = folder.path / INDEX_FILE
    try:
        loaded = read_config(index)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        return f"{INDEX_FILE} cannot be read: {exc}"
    weight_map = loaded.get("weight_map")
    if not isinstance(weight_map, dict):
        return None
    wanted = {v for v in weight_map.values() if isinstance(v, str)}
    present = {Path(w.path).name for w in folder.weights}
    missing = sorted(wanted - present)
    if not missing:
        return None
    return (
        f"{len(missing)} of its {len(wanted)} weight files are missing ({missing[0]}...): "
        "download it again."
    )


def read_config(path: Path) -> dict[str, object]:
    with path.open("rb") as f:
        data = f.read(MAX_CONFIG_BYTES + 1)
    if len(data) > MAX_CONFIG_BYTES:
        raise ValueError(f"it is larger than {MAX_CONFIG_BYTES // 1024 // 1024} MiB")
    loaded = json.loads(data.decode("utf-8"))
    if not isinstance(loaded, dict):
        raise ValueError("it is not a JSON object")
    return loaded


def header_parameters(path: Path, bits: int | None = None) -> int:
    """Parameters in one safetensors file, from its header. With `bits` (an MLX quantized
    model) packed U32 weights count 32/bits each and the scales and biases not at all."""
    with path.open("rb") as f:
        size = f.seek(0, 2)
        f.seek(0)
        head = f.read(8)
        if len(head) < 8:
            raise ValueError(f"{path.name} is shorter than a safetensors header")
        (length,) = struct.unpack("<Q", head)
        if length > min(MAX_HEADER_BYTES, size - 8):
            raise ValueError(f"{path.name} claims a {length:,}-byte header; the file is {size:,}")
        header = json.loads(f.read(length).decode("utf-8"))
    if not isinstance(header, dict):
        raise ValueError(f"{path.name} has a header that is not a JSON object")
    total = 0
    for name, tensor in header.items():
        if name == "__metadata__":
            continue
        if bits and name.endswith((".scales", ".biases")):
            continue
        count = _elements(name, tensor, path)
        if bits and isinstance(tensor, dict) and tensor.get("dtype") == "U32":
            count = count * 32 // bits
        total += count
    return total


def _elements(name: str, tensor: object, path: Path) -> int:
    shape = tensor.get("shape") if isinstance(tensor, dict) else None
    if (
        not isinstance(shape, list)
        or len(shape) > _MAX_DIMS
        or not all(type(d) is int and d >= 0 for d in shape)
    ):
        raise ValueError(f"{path.name}: tensor {name[:80]!r} has no valid shape")
    return math.prod(shape)


def _bits(quantization: str | None) -> int | None:
    found = re.match(r"^(\d+)bit$", quantization or "")
    return int(found.group(1)) if found else None


def _says_mlx(folder: Path, repo: str | None) -> bool:
    """An unquantized MLX model is plain safetensors with mlx-lm's names: the repo or the
    card's tags say so."""
    if repo is not None and repo.lower().startswith("mlx-community/"):
        return True
    try:
        with (folder / "README.md").open("rb") as f:
            head = f.read(_README_PEEK).decode("utf-8", errors="replace")
    except OSError:
        return False
    return bool(_MLX_TAG.search(head))
