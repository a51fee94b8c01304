"""Walk a folder for model files: GGUF files, safetensors model folders, and Hugging Face
caches inside it. Symlink loops, unreadable folders and broken links are noted, never fatal."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

MAX_DEPTH = 8
MAX_ENTRIES = 200_000  # a whole home folder added by mistake must not take forever
_SKIP_DIRS = frozenset({"node_modules", "__pycache__"})  # hidden ones are skipped too


@dataclass(frozen=True)
class LocalFile:
    """A file as found: `path` is where it was seen (maybe a link), `size` and `mtime_ns` are
    of what it points to."""

    path: str
    size: int
    mtime_ns: int

    @property
    def stamp(self) -> tuple[int, int]:
        return self.size, self.mtime_ns


@dataclass
class ModelDir:
    """A folder holding config.json and safetensors weights."""

    path: Path
    weights: list[LocalFile]
    config: LocalFile


@dataclass
class WalkResult:
    ggufs: list[LocalFile] = field(default_factory=list)
    model_dirs: list[ModelDir] = field(default_factory=list)
    hf_caches: list[Path] = field(default_factory=list)  # folders holding models--org--name
    problems: list[str] = field(default_factory=list)
    truncated: bool = False


def walk_folder(
    root: Path, max_depth: int = MAX_DEPTH, max_entries: int = MAX_ENTRIES
) -> WalkResult:
    """Everything model-like under `root`, following links to folders once each."""
    result = WalkResult()
    seen: set[tuple[int, int]] = set()
    stack: list[tuple[Path, int]] = [(root, 0)]
    entries = 0
    while stack:
        folder, depth = stack.pop()
        try:
            info = folder.stat()
        except OSError as exc:
            result.problems.append(f"{shown(str(folder))}: {_reason(exc)}")
            continue
        identity = (info.st_dev, info.st_ino)
        if identity in seen:
            continue  # a link loop, or two links to one folder
        seen.add(identity)
        try:
            with os.scandir(folder) as it:
                listing = list(it)
        except OSError as exc:
            result.problems.append(f"{shown(str(folder))}: {_reason(exc)}")
            continue
        entries += len(listing)
        if entries > max_entries:
            result.truncated = True
            result.problems.append(f"{root}: more than {max_entries:,} entries; stopped there")
            break
        subdirs = _take_files(folder, listing, result)
        if any(d.name.startswith("models--") for d in subdirs):
            result.hf_caches.append(folder)
            subdirs = [d for d in subdirs if not d.name.startswith("models--")]
        if depth < max_depth:
            stack.extend((Path(d.path), depth + 1) for d in reversed(subdirs))
    return result


def _take_files(
    folder: Path, listing: list[os.DirEntry[str]], result: WalkResult
) -> list[os.DirEntry[str]]:
    """Record the folder's model files; return its subfolders worth entering."""
    subdirs: list[os.DirEntry[str]] = []
    weights: list[LocalFile] = []
    config: LocalFile | None = None
    for entry in listing:
        name = entry.name
        if name.startswith("."):
            continue
        if not is_utf8(entry.path):
            # Bytes that are not UTF-8 cannot travel in the API's JSON: say so, skip it.
            result.problems.append(f"{shown(entry.path)}: the name is not valid UTF-8; rename it")
            continue
        try:
            if entry.is_dir():  # follows links
                if name not in _SKIP_DIRS:
                    subdirs.append(entry)
                continue
            lower = name.lower()
            wanted = lower.endswith((".gguf", ".safetensors")) or lower == "config.json"
            if not wanted:
                continue
            stat = entry.stat()  # follows links
        except OSError as exc:
            if entry.is_symlink():
                result.problems.append(f"{entry.path}: a broken link")
            else:
                result.problems.append(f"{entry.path}: {_reason(exc)}")
            continue
        found = LocalFile(entry.path, stat.st_size, stat.st_mtime_ns)
        if lower.endswith(".gguf"):
            result.ggufs.append(found)
        elif lower.endswith(".safetensors"):
            weights.append(found)
        else:
            config = found
    if weights and config is not None:
        weights.sort(key=lambda f: f.path)
        result.model_dirs.append(ModelDir(folder, weights, config))
    return subdirs


def problems_text(problems: list[str], most: int = 5) -> str | None:
    """The first few problems in one line, and how many more there are."""
    if not problems:
        return None
    text = "; ".join(problems[:most])
    return f"{text} (and {len(problems) - most} more)" if len(problems) > most else text


def is_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def shown(text: str) -> str:
    """`text` with undecodable bytes written as escapes, safe in any message."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _reason(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__
