"""Which starter model suits this machine: the largest that fits comfortably, and why.

Pure rules over fit reports and options; the sizing (Hub, catalog, disk) is done by
starter_list. "Comfortably" means all on the GPU (or Apple's GPU share of unified
memory); on a CPU alone, weights small enough to answer at reading pace and half the RAM
at most, so the first chat does not make the machine crawl.
"""

from __future__ import annotations

from pathlib import PurePath

from roundhouse.api.engines import EngineId, ModelFormat
from roundhouse.api.fit import FitEngine, FitReport, FitVerdict
from roundhouse.api.library import LibraryModel, LibrarySource
from roundhouse.api.starters import OptionKind, SetupCost, StarterOption
from roundhouse.base.units import format_bytes
from roundhouse.core.guide.catalog import StarterSource

GIB = 1024**3
# About a 3B model at 4 bits: a few tokens a second on an ordinary laptop CPU; an 8B one
# takes three times as long per token.
CPU_COMFORT_WEIGHTS = int(2.5 * GIB)
# The context the guide sizes and starts a starter with: room for a real conversation.
STARTER_CONTEXT = 4096
# The download estimate's line speed: 50 Mbit/s, a common home connection.
NOMINAL_BPS = 50e6 / 8
FIT_ENGINES = {
    EngineId.LLAMA_CPP: FitEngine.LLAMA_CPP,
    EngineId.MLX: FitEngine.MLX,
    EngineId.OLLAMA: FitEngine.OLLAMA,
}


def comfort(report: FitReport, ram_total_bytes: int) -> tuple[bool, str]:
    """Whether the model runs with room here, and the estimate in words."""
    words = report.summary
    if report.verdict == FitVerdict.FULL_GPU:
        return True, words
    if report.verdict == FitVerdict.CPU_ONLY:
        if report.weights_bytes <= CPU_COMFORT_WEIGHTS and report.total_bytes * 2 <= max(
            ram_total_bytes, 1
        ):
            return True, words
        return False, f"{words} On the CPU alone it would answer slowly."
    return False, words


def download_cost(size_bytes: int) -> SetupCost:
    """A download's cost: its bytes on the line and on disk, and the time at 50 Mbit/s."""
    return SetupCost(
        download_bytes=size_bytes,
        disk_bytes=size_bytes,
        seconds=size_bytes / NOMINAL_BPS,
        note="at 50 Mbit/s",
    )


def library_match(source: StarterSource, models: list[LibraryModel]) -> LibraryModel | None:
    """The library's copy of a starter, complete and readable; None when it has none."""
    for model in models:
        if model.error is not None:
            continue
        if source.ollama_tag is not None:
            tag = source.ollama_tag
            if model.source == LibrarySource.OLLAMA and model.name in (tag, f"{tag}:latest"):
                return model
            continue
        repo = (source.repo or "").casefold()
        same_repo = (model.repo or "").casefold() == repo
        if source.engine == EngineId.MLX:
            if model.format == ModelFormat.MLX and same_repo:
                return model
            continue
        file = source.files[0].casefold() if source.files else ""
        name = PurePath(model.path or "").name.casefold()
        if model.format == ModelFormat.GGUF and name == file and (same_repo or not model.repo):
            return model
    return None


def serves(model: LibraryModel, engine: EngineId) -> bool:
    """A library model the engine can run for a chat as it is, complete and readable (Ollama
    runs the models pulled into it; a GGUF file would have to be imported first)."""
    if model.error is not None or engine not in model.engines:
        return False
    return (model.source == LibrarySource.OLLAMA) == (engine == EngineId.OLLAMA)


def pick(
    options: list[StarterOption],
    *,
    online: bool,
    why_offline: str = "Hugging Face cannot be reached",
) -> tuple[str | None, str]:
    """The option to preselect and why: a comfortable starter already downloaded, else the
    largest comfortable one (offline: of those on this machine), else the smallest that
    runs at all."""
    usable = [o for o in options if o.problem is None and (online or o.downloaded)]
    if not usable:
        if online:
            return None, "No model of the list can be used now: see each one's problem."
        return None, (
            f"{why_offline}, and no model this engine runs is on this machine yet. Import a "
            "model file (a .gguf) or add a folder of models; or connect to the internet and "
            "try again to download one of the starters."
        )
    comfy = [o for o in usable if o.comfortable]
    starters = [o for o in comfy if o.kind == OptionKind.STARTER]
    local = [o for o in starters if o.downloaded]
    lead = "" if online else f"{why_offline}, so a model on this machine is chosen. "
    if local:
        best = _largest(local)
        return best.id, (
            f"{lead}{best.title} is already downloaded and runs comfortably here. {best.fit}"
        )
    if starters:
        best = _largest(starters)
        largest = f"{best.title} is the largest starter that runs comfortably here."
        return best.id, f"{lead}{largest} {best.fit}"
    if comfy:
        best = _largest(comfy)
        return best.id, f"{lead}{best.title} runs comfortably here. {best.fit}"
    runs = [o for o in usable if o.verdict not in (None, FitVerdict.DOES_NOT_FIT)]
    if runs:
        best = min(runs, key=lambda o: o.size_bytes)
        return best.id, (
            f"{lead}None of them runs comfortably here; {best.title} is the smallest that "
            f"runs. {best.fit}"
        )
    best = min(usable, key=lambda o: o.size_bytes)
    size = format_bytes(best.size_bytes)
    return best.id, (
        f"{lead}None of them is sure to fit in the memory free now; {best.title} ({size}) is "
        f"the smallest. Close other programs before starting it. {best.fit}".rstrip()
    )


def _largest(options: list[StarterOption]) -> StarterOption:
    """The largest; among equals the later one (the catalog lists the smallest first)."""
    return max(reversed(options), key=lambda o: o.size_bytes)
