"""Builds the fake Hub's standard repos from the tiny test models (tests/fixtures/models).

`build_test_repos(root)` writes, under `root` (the `--repos` folder):

| repo | what |
|---|---|
| `roundhouse-test/tiny-llama-GGUF` | Q4_K_M, Q8_0 and a 2-part F16 split GGUF |
| `roundhouse-test/tiny-llama` | the same model as HF safetensors (transformers) |
| `mlx-community/tiny-llama-4bit` | MLX-style: config.json with `quantization` (weights F32) |
| `roundhouse-test/tiny-llama-gated-GGUF` | gated ("manual"): ACCESS_TOKEN opens it |
| `roundhouse-test/tiny-llama-private-GGUF` | private: ACCESS_TOKEN opens it |
| `other-org/tiny-embedder` | a feature-extraction model (config only), for filters |

Each has a README.md whose YAML front matter is the card data, and a `.gitattributes`.
The GGUFs are the tiny llama with `general.file_type` set to match their names (the tensors
stay F32, so llama-server loads every one). `hub.json` holds downloads, likes and dates
(all different, so every sort order is checkable) and the tokens.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import gguf

from tests.fixtures.models.tiny_hf import write_tiny_hf_model
from tests.fixtures.models.tiny_llama import write_tiny_llama_gguf

GGUF_REPO = "roundhouse-test/tiny-llama-GGUF"
HF_REPO = "roundhouse-test/tiny-llama"
MLX_REPO = "mlx-community/tiny-llama-4bit"
GATED_REPO = "roundhouse-test/tiny-llama-gated-GGUF"
PRIVATE_REPO = "roundhouse-test/tiny-llama-private-GGUF"
OTHER_REPO = "other-org/tiny-embedder"
ACCESS_TOKEN = "hf_fakeAccessToken0123456789"  # opens the gated and the private repo
NO_ACCESS_TOKEN = "hf_fakeNoAccessToken01234567"  # a valid token with no grants
GITATTRIBUTES = "".join(
    f"*.{ext} filter=lfs diff=lfs merge=lfs -text\n"
    for ext in ("bin", "gguf", "h5", "msgpack", "npz", "onnx", "pt", "pth", "safetensors")
)
_META: dict[str, dict[str, Any]] = {
    GGUF_REPO: {"downloads": 5000, "likes": 40, "trendingScore": 30, "day": 10},
    HF_REPO: {"downloads": 9000, "likes": 20, "trendingScore": 10, "day": 3},
    MLX_REPO: {"downloads": 700, "likes": 90, "trendingScore": 50, "day": 20},
    GATED_REPO: {"downloads": 300, "likes": 5, "trendingScore": 5, "day": 15, "gated": "manual"},
    PRIVATE_REPO: {"downloads": 1, "likes": 0, "trendingScore": 0, "day": 25, "private": True},
    OTHER_REPO: {"downloads": 100, "likes": 1, "trendingScore": 1, "day": 1},
}


def copy_gguf(src: Path, dest: Path, file_type: gguf.LlamaFileType, parts: int = 1) -> list[Path]:
    """Rewrite `src` with another `general.file_type`, split into `parts` shards named as
    llama.cpp's gguf-split does (`<stem>-00001-of-0000N.gguf`); returns the files."""
    reader = gguf.GGUFReader(src)
    per_shard = -(-len(reader.tensors) // parts) if parts > 1 else 0
    arch = str(reader.get_field("general.architecture").contents())  # type: ignore[union-attr]
    writer = gguf.GGUFWriter(os.fspath(dest), arch=arch, split_max_tensors=per_shard)
    for field in reader.fields.values():
        if field.name == "general.architecture" or field.name.startswith("GGUF."):
            continue
        value = int(file_type) if field.name == "general.file_type" else field.contents()
        kind = field.types[0]
        sub = field.types[-1] if kind == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(field.name, value, kind, sub_type=sub)
    for t in reader.tensors:
        writer.add_tensor_info(t.name, t.data.shape, t.data.dtype, t.data.nbytes, t.tensor_type)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    for t in reader.tensors:
        writer.write_tensor_data(t.data)
    writer.close()
    return writer.format_shard_names(dest)


def write_card(folder: Path, card: dict[str, Any], title: str) -> None:
    front = "".join(f"{key}: {json.dumps(value)}\n" for key, value in card.items())
    body = f"# {title}\n\nA tiny random model generated for Roundhouse's tests.\n"
    (folder / "README.md").write_text(f"---\n{front}---\n\n{body}", encoding="utf-8")
    (folder / ".gitattributes").write_text(GITATTRIBUTES, encoding="utf-8")


def _gguf_repo(root: Path, repo_id: str, names: dict[str, int], split: bool) -> None:
    folder = root / repo_id
    folder.mkdir(parents=True, exist_ok=True)
    for seed, (quant, file_type) in enumerate(names.items()):
        plain = folder / f".tiny-seed{seed}.tmp"
        write_tiny_llama_gguf(plain, seed=seed)
        copy_gguf(plain, folder / f"tiny-llama-{quant}.gguf", gguf.LlamaFileType(file_type))
        if split and seed == 0:
            dest = folder / "tiny-llama-F16.gguf"
            copy_gguf(plain, dest, gguf.LlamaFileType.MOSTLY_F16, parts=2)
        plain.unlink()
    card = {
        "license": "apache-2.0",
        "base_model": HF_REPO,
        "pipeline_tag": "text-generation",
        "tags": ["llama", "conversational"],
        "quantized_by": "roundhouse-test",
    }
    if repo_id == GATED_REPO:
        card["extra_gated_prompt"] = "Agree to the tiny license to access this model."
    write_card(folder, card, repo_id.split("/")[1])


def _hf_repo(root: Path, repo_id: str, mlx: bool) -> None:
    folder = write_tiny_hf_model(root / repo_id)
    if mlx:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        config["quantization"] = {"group_size": 64, "bits": 4}
        config["quantization_config"] = config["quantization"]
        (folder / "config.json").write_text(json.dumps(config, indent=2), encoding="utf-8")
    card: dict[str, Any] = {
        "license": "apache-2.0",
        "library_name": "mlx" if mlx else "transformers",
        "pipeline_tag": "text-generation",
        "tags": ["mlx", "llama"] if mlx else ["llama", "conversational"],
    }
    if mlx:
        card["base_model"] = HF_REPO
    write_card(folder, card, repo_id.split("/")[1])


def _other_repo(root: Path) -> None:
    folder = root / OTHER_REPO
    folder.mkdir(parents=True, exist_ok=True)
    config = {"architectures": ["BertModel"], "model_type": "bert", "hidden_size": 32}
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    card = {
        "license": "mit",
        "library_name": "sentence-transformers",
        "pipeline_tag": "feature-extraction",
        "tags": ["sentence-transformers", "bert"],
    }
    write_card(folder, card, "tiny-embedder")


def write_manifest(
    root: Path, metas: dict[str, dict[str, Any]], tokens: dict[str, list[str]]
) -> None:
    repos = {}
    for repo_id, meta in metas.items():
        entry = {k: v for k, v in meta.items() if k != "day"}
        if "day" in meta:
            entry["createdAt"] = f"2025-03-{meta['day']:02d}T12:00:00.000Z"
            entry["lastModified"] = f"2025-04-{meta['day']:02d}T12:00:00.000Z"
        repos[repo_id] = entry
    (root / "hub.json").write_text(json.dumps({"repos": repos, "tokens": tokens}, indent=2))


def build_test_repos(root: Path) -> Path:
    """Write the standard repos and hub.json under `root` (created) and return it."""
    root.mkdir(parents=True, exist_ok=True)
    _gguf_repo(root, GGUF_REPO, {"Q4_K_M": 15, "Q8_0": 7}, split=True)
    _gguf_repo(root, GATED_REPO, {"Q4_K_M": 15}, split=False)
    _gguf_repo(root, PRIVATE_REPO, {"Q4_K_M": 15}, split=False)
    _hf_repo(root, HF_REPO, mlx=False)
    _hf_repo(root, MLX_REPO, mlx=True)
    _other_repo(root)
    write_manifest(root, _META, {ACCESS_TOKEN: ["*"], NO_ACCESS_TOKEN: []})
    return root


def add_sparse_file(root: Path, repo_id: str, name: str, size: int) -> Path:
    """A `size`-byte file of zeros that takes no disk space (for throughput tests); the
    server hashes it once at start (cached by size and mtime in the repos folder)."""
    path = root / repo_id / name
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as f:
        f.truncate(size)
    return path
