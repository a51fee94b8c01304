"""Quantization names from GGUF file names, and a repository's files grouped by them (pure).

parse_quant("Qwen3-8B-UD-Q4_K_XL-00001-of-00002.gguf")  # "UD-Q4_K_XL"
split_part("x-Q8_0-00002-of-00003.gguf")                 # SplitPart("x-Q8_0", 2, 3)
group_gguf_files(files)  # one GgufGroup per quantization (shards summed), mmproj apart
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar

# llama.cpp's file types as they appear in names: Q4_K_M, Q8_0, Q4_0_4_4, IQ2_XXS, IQ4_NL,
# TQ1_0, MXFP4(_MOE), F16, BF16, F32; unsloth's dynamic ones carry a UD- prefix; some
# repos add the imatrix marker "i1-" before them. A separator or the end must follow.
_QUANT = re.compile(
    r"(?:^|(?<=[-._/ ]))(?P<ud>UD[-_])?"
    r"(?P<q>I?Q[1-8](?:_[0-9]+)*(?:_K)?(?:_(?:XXS|XS|S|M|L|XL|NL|R4|R8))?(?:_[0-9]+)*"
    r"|TQ[12]_0|MXFP4(?:_MOE)?|BF16|F16|FP16|F32|FP32)"
    r"(?=$|[-._/ ])",
    re.IGNORECASE,
)
_SPLIT = re.compile(r"^(?P<base>.+)-(?P<part>\d{5})-of-(?P<total>\d{5})\.gguf$", re.IGNORECASE)
_MAX_SHARDS = 10_000
_ALIASES = {"FP16": "F16", "FP32": "F32"}


@dataclass(frozen=True)
class SplitPart:
    """A part of a GGUF split into shards: `base` is the path without `-0000N-of-0000M.gguf`."""

    base: str
    part: int
    total: int


def split_part(path: str) -> SplitPart | None:
    """The shard numbers in a split GGUF's name, or None for a single file."""
    found = _SPLIT.match(path)
    if found is None:
        return None
    part, total = int(found["part"]), int(found["total"])
    if not 1 <= part <= total <= _MAX_SHARDS:
        return None
    return SplitPart(found["base"], part, total)


def parse_quant(path: str) -> str | None:
    """The quantization a GGUF's name (or its folder's) says, upper case; None if none does.

    The last match in the file name wins (names often start with a family like "Q2"-less
    text but end with the quantization); the folder names are looked at only after it.
    """
    parts = path.replace("\\", "/").split("/")
    name = parts[-1]
    stem = name[:-5] if name.lower().endswith(".gguf") else name
    split = _SPLIT.match(name)
    if split is not None:
        stem = split["base"]
    for text in (stem, *reversed(parts[:-1])):
        matches = list(_QUANT.finditer(text))
        if matches:
            last = matches[-1]
            quant = last["q"].upper()
            quant = _ALIASES.get(quant, quant)
            return f"UD-{quant}" if last["ud"] else quant
    return None


def is_projector(path: str) -> bool:
    """A multimodal projector (mmproj) file, which goes beside a model, not instead of one."""
    return "mmproj" in path.rsplit("/", 1)[-1].lower()


def is_gguf(path: str) -> bool:
    return path.lower().endswith(".gguf")


class SizedFile(Protocol):
    @property
    def path(self) -> str: ...

    @property
    def size(self) -> int: ...


F = TypeVar("F", bound=SizedFile)


@dataclass
class GgufGroup(Generic[F]):
    """The files of one GGUF model: a single file, or every shard of a split one."""

    key: str  # the path, or the split's base path
    name: str  # the quantization, else the file's stem
    quantization: str | None
    files: list[F] = field(default_factory=list)
    shards: int = 1  # how many parts the name says there are
    projector: bool = False

    @property
    def size(self) -> int:
        return sum(f.size for f in self.files)

    @property
    def complete(self) -> bool:
        return len(self.files) == self.shards

    @property
    def first(self) -> F:
        """The file to load: the first shard of a split (llama.cpp finds the others)."""
        return self.files[0]

    @property
    def pattern(self) -> str:
        """A glob for a download request that fetches exactly these files."""
        if self.shards > 1:
            return f"{_glob_escape(self.key)}-*-of-{self.shards:05d}.gguf"
        return _glob_escape(self.key)


def group_gguf_files(files: Iterable[F]) -> list[GgufGroup[F]]:
    """GGUF files grouped into models (shards of one split together), smallest first; the
    projectors (mmproj) are groups of their own with `projector` set."""
    groups: dict[str, GgufGroup[F]] = {}
    for item in files:
        if not is_gguf(item.path):
            continue
        split = split_part(item.path)
        key = split.base if split is not None else item.path
        group = groups.get(key)
        if group is None:
            quant = parse_quant(item.path)
            stem = key.rsplit("/", 1)[-1]
            stem = stem[:-5] if stem.lower().endswith(".gguf") else stem
            group = GgufGroup(
                key=key,
                name=quant or stem,
                quantization=quant,
                shards=split.total if split is not None else 1,
                projector=is_projector(item.path),
            )
            groups[key] = group
        group.files.append(item)
    for group in groups.values():
        group.files.sort(key=lambda f: f.path)
    return sorted(groups.values(), key=lambda g: (g.projector, g.size, g.name))


def _glob_escape(text: str) -> str:
    # fnmatch has no escape character: a bracket class is how to match [ * ? literally.
    return re.sub(r"([\[\]*?])", r"[\1]", text)
