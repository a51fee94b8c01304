"""The fake Hub's repositories, read from a folder: `DIR/<org>/<name>/...` plus `DIR/hub.json`.

Every `org/name` folder two levels down is a model repo; its files are served as they are
on disk. `hub.json` (optional) adds what a folder cannot say: per-repo `downloads`, `likes`,
`trendingScore`, `createdAt`, `lastModified`, `private`, `gated` ("auto"/"manual"),
`disabled`, extra `tags`, `pipeline_tag`, `library_name`, `sha`, `gguf`, `safetensors`; and
`tokens`: `{"hf_token": ["org/name", ...] | ["*"]}`, the tokens the server accepts and the
private or gated repos each may open. Hashes are cached in `DIR/.fake-hub-hashes.json`.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml  # type: ignore[import-untyped]

MANIFEST = "hub.json"
HASH_CACHE = ".fake-hub-hashes.json"
# What the Hub stores in LFS by default (.gitattributes of a new repo), and anything over
# 10 MB, which the Hub refuses to take as a plain git file.
LFS_SUFFIXES = (
    ".gguf", ".safetensors", ".bin", ".pt", ".pth", ".onnx", ".msgpack", ".h5", ".npz", ".npy",
    ".ckpt", ".model", ".zip", ".gz", ".tar", ".zst", ".pkl",
)  # fmt: skip
LFS_MIN_SIZE = 10 * 1024 * 1024
DEFAULT_DATE = "2025-01-01T00:00:00.000Z"
_SHARD = re.compile(r"-\d{5}-of-\d{5}(?=\.gguf$)")


@dataclass(frozen=True)
class HubFile:
    """One file of a repo: where it is on disk and the hashes the Hub shows for it."""

    path: str
    disk: Path
    size: int
    blob_id: str  # git blob sha1 of the content, or of the LFS pointer for LFS files
    sha256: str | None = None  # LFS files only
    pointer_size: int | None = None

    @property
    def etag(self) -> str:
        return self.sha256 or self.blob_id


@dataclass
class Repo:
    """A model repository at a single commit, reachable as `main` or by its sha."""

    id: str
    sha: str
    files: dict[str, HubFile]
    card: dict[str, Any]
    meta: dict[str, Any]
    tags: list[str] = field(default_factory=list)
    library_name: str | None = None
    pipeline_tag: str | None = None
    gguf: dict[str, Any] | None = None
    safetensors: dict[str, Any] | None = None
    config: dict[str, Any] | None = None

    @property
    def author(self) -> str:
        return self.id.split("/", 1)[0]

    @property
    def private(self) -> bool:
        return bool(self.meta.get("private", False))

    @property
    def gated(self) -> str | bool:
        value = self.meta.get("gated", False)
        return value if value in ("auto", "manual") else False

    def directories(self) -> set[str]:
        dirs: set[str] = set()
        for path in self.files:
            parts = path.split("/")[:-1]
            dirs.update("/".join(parts[: i + 1]) for i in range(len(parts)))
        return dirs


@dataclass
class Catalog:
    repos: dict[str, Repo]
    tokens: dict[str, set[str]]

    def can_open(self, token: str | None, repo: Repo) -> bool:
        """Whether `token` opens a private or gated repo (public ones need no token)."""
        grants = self.tokens.get(token, set()) if token else set()
        return "*" in grants or repo.id in grants

    def by_sha256(self, repo_id: str, sha256: str) -> HubFile | None:
        repo = self.repos.get(repo_id)
        if repo is None:
            return None
        return next((f for f in repo.files.values() if f.sha256 == sha256), None)


def git_blob_sha1(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def lfs_pointer(sha256: str, size: int) -> bytes:
    return (
        f"version https://git-lfs.github.com/spec/v1\noid sha256:{sha256}\nsize {size}\n".encode()
    )


def load_catalog(root: Path) -> Catalog:
    """Scan `root` and build the catalog; hashing is cached by (size, mtime)."""
    manifest = _read_json(root / MANIFEST)
    metas: dict[str, Any] = manifest.get("repos", {})
    cache_path = root / HASH_CACHE
    cache = _read_json(cache_path)
    repos: dict[str, Repo] = {}
    for org in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")):
        for folder in sorted(p for p in org.iterdir() if p.is_dir()):
            repo_id = f"{org.name}/{folder.name}"
            repos[repo_id] = _load_repo(repo_id, folder, root, metas.get(repo_id, {}), cache)
    _write_json(cache_path, cache)
    tokens = {tok: set(grants) for tok, grants in manifest.get("tokens", {}).items()}
    return Catalog(repos, tokens)


def _load_repo(
    repo_id: str, folder: Path, root: Path, meta: dict[str, Any], cache: dict[str, Any]
) -> Repo:
    files: dict[str, HubFile] = {}
    for disk in sorted(p for p in folder.rglob("*") if p.is_file()):
        path = disk.relative_to(folder).as_posix()
        if not path.startswith(".git/"):
            files[path] = _hub_file(path, disk, disk.relative_to(root).as_posix(), cache)
    tree = "\n".join(f"{f.path} {f.blob_id}" for f in files.values())
    sha = str(meta.get("sha") or hashlib.sha1(f"{repo_id}\n{tree}".encode()).hexdigest())
    card = _front_matter(folder / "README.md")
    repo = Repo(repo_id, sha, files, card, meta)
    repo.config = _json_or_none(folder / "config.json")
    repo.library_name = meta.get("library_name") or card.get("library_name") or _library(repo)
    repo.pipeline_tag = meta.get("pipeline_tag") or card.get("pipeline_tag")
    repo.gguf = meta.get("gguf") or _gguf_summary(repo)
    repo.safetensors = meta.get("safetensors") or _safetensors_summary(repo)
    repo.tags = _tags(repo)
    return repo


def _hub_file(path: str, disk: Path, key: str, cache: dict[str, Any]) -> HubFile:
    stat = disk.stat()
    lfs = disk.suffix.lower() in LFS_SUFFIXES or stat.st_size >= LFS_MIN_SIZE
    stamp = [stat.st_size, stat.st_mtime_ns, lfs]
    cached = cache.get(key)
    if not (isinstance(cached, list) and cached[:3] == stamp):
        cached = [*stamp, _sha256(disk) if lfs else git_blob_sha1(disk.read_bytes())]
        cache[key] = cached
    digest = str(cached[3])
    if not lfs:
        return HubFile(path, disk, stat.st_size, digest)
    pointer = lfs_pointer(digest, stat.st_size)
    return HubFile(path, disk, stat.st_size, git_blob_sha1(pointer), digest, len(pointer))


def _sha256(path: Path) -> str:
    with path.open("rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def _front_matter(readme: Path) -> dict[str, Any]:
    if not readme.is_file():
        return {}
    text = readme.read_text(encoding="utf-8")
    if not text.startswith("---"):
        return {}
    head, sep, _ = text[3:].partition("\n---")
    loaded = yaml.safe_load(head) if sep else None
    return loaded if isinstance(loaded, dict) else {}


def _library(repo: Repo) -> str | None:
    if "mlx" in repo.card.get("tags", []) or repo.author == "mlx-community":
        return "mlx"
    if any(p.endswith(".gguf") for p in repo.files):
        return "gguf"
    return "transformers" if repo.config is not None else None


def _tags(repo: Repo) -> list[str]:
    card = repo.card
    tags: list[str] = [*card.get("tags", []), *repo.meta.get("tags", [])]
    if repo.library_name:
        tags.append(repo.library_name)
    if repo.gguf is not None or any(p.endswith(".gguf") for p in repo.files):
        tags.append("gguf")
    if any(p.endswith(".safetensors") for p in repo.files):
        tags.append("safetensors")
    if repo.pipeline_tag:
        tags.append(repo.pipeline_tag)
    bases = card.get("base_model", [])
    tags += [f"base_model:{b}" for b in ([bases] if isinstance(bases, str) else bases)]
    if card.get("license"):
        tags.append(f"license:{card['license']}")
    tags.append("region:us")
    return list(dict.fromkeys(str(t) for t in tags))


def _gguf_summary(repo: Repo) -> dict[str, Any] | None:
    """The Hub's `gguf` field, from the first GGUF file (the first shard of a split)."""
    ggufs = [f for p, f in repo.files.items() if p.endswith(".gguf")]
    if not ggufs:
        return None
    import gguf  # only here: reading the catalog without GGUF repos needs no numpy

    whole = [f for f in ggufs if not _SHARD.search(f.path)]
    # A split model's total counts the tensors of all its shards.
    first = whole[0] if whole else ggufs[0]
    group = (
        [first]
        if whole
        else [f for f in ggufs if _SHARD.sub("", f.path) == _SHARD.sub("", first.path)]
    )
    try:
        readers = [gguf.GGUFReader(f.disk) for f in group]
    except Exception:  # noqa: BLE001 - bytes that only look like GGUF by name: no summary
        return None
    reader = readers[0]

    def value(key: str) -> Any:
        found = reader.get_field(key)
        return found.contents() if found is not None else None

    arch = value("general.architecture")
    out: dict[str, Any] = {
        "total": sum(int(t.n_elements) for r in readers for t in r.tensors),
        "architecture": arch,
        "context_length": value(f"{arch}.context_length"),
    }
    template = value("tokenizer.chat_template")
    tokens = value("tokenizer.ggml.tokens")
    if template is not None:
        out["chat_template"] = template
    for name in ("bos", "eos"):
        token_id = value(f"tokenizer.ggml.{name}_token_id")
        if tokens is not None and token_id is not None:
            out[f"{name}_token"] = tokens[token_id]
    return out


def _safetensors_summary(repo: Repo) -> dict[str, Any] | None:
    """The Hub's `safetensors` field: parameter counts per dtype over all shards."""
    params: dict[str, int] = {}
    for path, hub_file in repo.files.items():
        if not path.endswith(".safetensors"):
            continue
        with hub_file.disk.open("rb") as f:
            (length,) = struct.unpack("<Q", f.read(8))
            header = json.loads(f.read(length))
        for name, info in header.items():
            if name != "__metadata__":
                count = 1
                for dim in info["shape"]:
                    count *= dim
                params[info["dtype"]] = params.get(info["dtype"], 0) + count
    return {"parameters": params, "total": sum(params.values())} if params else None


def _read_json(path: Path) -> dict[str, Any]:
    loaded = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    return loaded if isinstance(loaded, dict) else {}


def _json_or_none(path: Path) -> dict[str, Any] | None:
    return _read_json(path) if path.is_file() else None


def _write_json(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data), encoding="utf-8")
    tmp.replace(path)
