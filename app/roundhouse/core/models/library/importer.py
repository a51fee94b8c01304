"""Import a GGUF file into a library folder: checked first, then hard-linked when on the same
filesystem, else copied through a temporary name (blocking; run in a thread)."""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path

from roundhouse.core.errors import ConflictError, InvalidInputError, NotFoundError
from roundhouse.core.models.hub.quants import split_part
from roundhouse.core.models.library.facts import GgufProbe

GGUF_MAGIC = b"GGUF"


def import_gguf(source: Path, target_dir: Path, probe: GgufProbe | None) -> list[Path]:
    """Put `source` (and, for the first part of a split GGUF, every part) into `target_dir`;
    the new paths, first part first."""
    parts = _parts(source)
    for part in parts:
        check_gguf(part, probe)
    target_dir.mkdir(parents=True, exist_ok=True)
    targets = [target_dir / part.name for part in parts]
    for part, target in zip(parts, targets, strict=True):
        if target.exists() or target.is_symlink():
            if _same_file(part, target):
                raise ConflictError(f"{part.name} is already in the library ({target}).")
            raise ConflictError(
                f"{target_dir} already has a file named {part.name}: rename one of them, "
                "or import into another folder."
            )
    done: list[Path] = []
    try:
        for part, target in zip(parts, targets, strict=True):
            _link_or_copy(part, target)
            done.append(target)
    except BaseException:
        for target in done:
            target.unlink(missing_ok=True)  # all parts or none
        raise
    return targets


def check_gguf(path: Path, probe: GgufProbe | None) -> None:
    """Refuse, in words, what is not a readable GGUF file."""
    try:
        if not path.is_file():
            raise NotFoundError(f"There is no file {path}: check the path.")
        with path.open("rb") as f:
            magic = f.read(4)
    except OSError as exc:
        raise InvalidInputError(f"{path} cannot be read ({exc.strerror or exc}).") from exc
    if magic != GGUF_MAGIC:
        raise InvalidInputError(
            f"{path.name} is not a GGUF file (it does not start with 'GGUF'). Only GGUF "
            "files can be imported; safetensors models go in a library folder as they are."
        )
    if probe is not None:
        facts = probe(path)  # raises GgufError, with what is wrong, for a malformed header
        if facts.error:
            raise InvalidInputError(f"{path.name} cannot be used: {facts.error}")


def _parts(source: Path) -> list[Path]:
    split = split_part(source.name)
    if split is None:
        return [source]
    if split.part != 1:
        raise InvalidInputError(
            f"{source.name} is part {split.part} of {split.total}: import the first part "
            f"(…-00001-of-{split.total:05d}.gguf); the others come with it."
        )
    parts = [
        source.with_name(f"{split.base}-{i:05d}-of-{split.total:05d}.gguf")
        for i in range(1, split.total + 1)
    ]
    missing = [p.name for p in parts if not p.is_file()]
    if missing:
        raise NotFoundError(
            f"{source.name} is split in {split.total} parts and {len(missing)} are not beside "
            f"it ({missing[0]}...): put every part in one folder, then import the first."
        )
    return parts


def _link_or_copy(source: Path, target: Path) -> None:
    try:
        os.link(source, target)
        return
    except FileExistsError:
        raise
    except OSError:
        pass  # another filesystem, or one without hard links: copy
    temporary = target.with_name(f".{target.name}.{uuid.uuid4().hex[:8]}.partial")
    try:
        shutil.copyfile(source, temporary)
        temporary.replace(target)
    finally:
        temporary.unlink(missing_ok=True)


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.samefile(b) or (a.stat().st_size == b.stat().st_size and _same_head(a, b))
    except OSError:
        return False


def _same_head(a: Path, b: Path, size: int = 1024 * 1024) -> bool:
    with a.open("rb") as fa, b.open("rb") as fb:
        return fa.read(size) == fb.read(size)
