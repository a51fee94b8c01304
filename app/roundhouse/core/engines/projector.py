"""A GGUF model's vision projector (mmproj): found beside the model, put on llama-server's argv."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path, PurePath
from typing import TypeVar

from roundhouse.core.engines.extra_args import flags_given
from roundhouse.core.engines.tool_parsers import check_not_twice
from roundhouse.core.errors import InvalidInputError

MMPROJ_FLAG = "--mmproj"
# The user's own projector flags in the extra arguments: then theirs is the only one.
USER_FLAGS = (MMPROJ_FLAG, "-mm", "--no-mmproj", "--mmproj-url", "-mmu", "--mmproj-auto")
# The value of the mmproj option that turns the projector found beside the model off.
NONE = "none"

P = TypeVar("P", bound=PurePath)


def is_projector(name: str) -> bool:
    """A GGUF whose name says it is a projector (llama.cpp's converters and the Hub's repos
    name them mmproj-*.gguf or *-mmproj-*.gguf), not a model to serve on its own."""
    lower = name.lower()
    return "mmproj" in lower and lower.endswith(".gguf")


def _preference(path: PurePath) -> tuple[int, str]:
    # A repo often ships one projector in several precisions: F16 is what llama.cpp's docs
    # use and half of F32's size; BF16 needs a build and a device that take it.
    lower = path.name.lower()
    rank = 0 if "f16" in lower and "bf16" not in lower else 1 if "bf16" in lower else 2
    return rank, path.name


def pick_projector(names: Iterable[P]) -> P | None:
    """The projector to pair among files that are one model's neighbours (on disk, or in
    a Hub repo's folder)."""
    found = sorted((p for p in names if is_projector(p.name)), key=_preference)
    return found[0] if found else None


def projector_beside(model: Path) -> Path | None:
    """The projector in the model's folder (the same Hub repo, in the Hub's cache), if any."""
    if is_projector(model.name):
        return None
    try:
        neighbours = [p for p in model.parent.iterdir() if p.is_file()]
    except OSError:
        return None
    return pick_projector(neighbours)


def projector_args(model: str, mmproj: str | None, extra_args: Sequence[str]) -> list[str]:
    """llama-server's `--mmproj FILE`: the one chosen, else the one beside the model;
    nothing when the user turned it off or passes a projector flag of their own."""
    check_not_twice("llama.cpp", "mmproj", mmproj, MMPROJ_FLAG, extra_args, prefixes=False)
    if mmproj is not None and mmproj.strip().lower() == NONE:
        return []
    if flags_given(extra_args, USER_FLAGS, prefixes=False):
        return []
    if mmproj:
        chosen = Path(mmproj).expanduser()
        if not chosen.is_file():
            raise InvalidInputError(
                f"The vision projector {mmproj} is not a file here: choose the mmproj GGUF "
                "that came with the model, or clear the field."
            )
        return [MMPROJ_FLAG, str(chosen)]
    found = projector_beside(Path(model).expanduser())
    return [MMPROJ_FLAG, str(found)] if found is not None else []
