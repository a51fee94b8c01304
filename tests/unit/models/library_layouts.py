"""Model files laid out as the library finds them: header-only GGUFs (sparse), HF cache repos
(blobs, refs, snapshots with relative links), safetensors folders, LM Studio's tree."""

from __future__ import annotations

import hashlib
import json
import os
import struct
from pathlib import Path

import gguf
import numpy as np

COMMIT = "0123456789abcdef0123456789abcdef01234567"
OTHER_COMMIT = "89abcdef0123456789abcdef0123456789abcdef"


def write_gguf(
    path: Path,
    *,
    arch: str = "llama",
    name: str = "Tiny",
    file_type: gguf.LlamaFileType = gguf.LlamaFileType.MOSTLY_Q4_K_M,
    context: int = 4096,
    n_embd: int = 64,
    n_vocab: int = 256,
    layers: int = 2,
    weight_mb: int = 0,
    split: tuple[int, int] | None = None,
) -> Path:
    """A GGUF whose header is real and whose data is a sparse hole (`weight_mb` more MiB of
    it, to give it a size). Parameters: n_vocab*n_embd + layers*n_embd*n_embd (+ the extra)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    writer = gguf.GGUFWriter(os.fspath(path), arch=arch)
    writer.add_name(name)
    writer.add_context_length(context)
    writer.add_block_count(layers)
    writer.add_embedding_length(n_embd)
    writer.add_head_count(4)
    writer.add_file_type(file_type)
    if split is not None:
        writer.add_uint16("split.no", split[0] - 1)
        writer.add_uint16("split.count", split[1])
    tensors = [("token_embd.weight", (n_vocab, n_embd))]
    tensors += [(f"blk.{i}.attn_q.weight", (n_embd, n_embd)) for i in range(layers)]
    if weight_mb:
        tensors.append(("extra.weight", (weight_mb * 1024 * 1024 // 4,)))
    for tensor, shape in tensors:
        nbytes = int(np.prod(shape)) * 4
        writer.add_tensor_info(
            tensor, shape, np.dtype(np.float32), nbytes, gguf.GGMLQuantizationType.F32
        )
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    writer.close()
    alignment = writer.data_alignment
    data = sum(-(-ti.nbytes // alignment) * alignment for ti in writer.tensors[0].values())
    start = -(-path.stat().st_size // alignment) * alignment
    os.truncate(path, start + data)
    return path


def gguf_parameters(n_embd: int = 64, n_vocab: int = 256, layers: int = 2) -> int:
    return n_vocab * n_embd + layers * n_embd * n_embd


def write_safetensors(path: Path, tensors: dict[str, tuple[str, list[int]]]) -> Path:
    """A safetensors file with these (dtype, shape) tensors, zero-filled."""
    sizes = {"F32": 4, "BF16": 2, "F16": 2, "U32": 4}
    header: dict[str, object] = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name, (dtype, shape) in tensors.items():
        nbytes = int(np.prod(shape)) * sizes[dtype]
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + nbytes]}
        offset += nbytes
    raw = json.dumps(header).encode()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + b"\0" * offset)
    return path


def write_safetensors_model(folder: Path, config: dict[str, object] | None = None) -> Path:
    """config.json + one safetensors file: 1000 + 64*16 parameters."""
    folder.mkdir(parents=True, exist_ok=True)
    default = {"model_type": "llama", "max_position_embeddings": 8192, "torch_dtype": "bfloat16"}
    config = config or default
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    write_safetensors(
        folder / "model.safetensors",
        {"embed.weight": ("BF16", [10, 100]), "layer.weight": ("BF16", [64, 16])},
    )
    return folder


def hf_cache_repo(
    cache: Path,
    repo_id: str,
    files: dict[str, bytes | Path],
    *,
    commit: str = COMMIT,
    refs: tuple[str, ...] = ("main",),
) -> Path:
    """Lay files out as huggingface_hub does: blobs named by sha256, a snapshot of relative
    links, refs naming the commit. A Path value is moved into the blob (big sparse GGUFs)."""
    repo = cache / ("models--" + repo_id.replace("/", "--"))
    snapshot = repo / "snapshots" / commit
    (repo / "blobs").mkdir(parents=True, exist_ok=True)
    snapshot.mkdir(parents=True, exist_ok=True)
    for ref in refs:
        (repo / "refs").mkdir(exist_ok=True)
        (repo / "refs" / ref).write_text(commit, encoding="utf-8")
    for name, content in files.items():
        if isinstance(content, Path):
            digest = hashlib.sha256(f"{repo_id}/{name}/{content.stat().st_size}".encode())
            blob = repo / "blobs" / digest.hexdigest()
            if not blob.exists():
                content.replace(blob)
        else:
            blob = repo / "blobs" / hashlib.sha256(content).hexdigest()
            blob.write_bytes(content)
        link = snapshot / name
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.relpath(blob, link.parent))
    return snapshot


def link_into_snapshot(cache: Path, repo_id: str, commit: str, name: str, blob: Path) -> Path:
    """Another revision pointing at an existing blob (as after an update that kept a file)."""
    repo = cache / ("models--" + repo_id.replace("/", "--"))
    link = repo / "snapshots" / commit / name
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(os.path.relpath(blob, link.parent))
    return link


def disk_bytes(root: Path) -> int:
    """Bytes of the regular files under `root`, each inode once (what a delete can free)."""
    seen: set[tuple[int, int]] = set()
    total = 0
    for path in root.rglob("*"):
        if path.is_symlink() or not path.is_file():
            continue
        info = path.stat()
        if (info.st_dev, info.st_ino) not in seen:
            seen.add((info.st_dev, info.st_ino))
            total += info.st_size
    return total
