"""The guide's first steps: this machine in one line, and the engines to choose from.

Pure: built from the hardware inventory (with its ranked recommendation), what engine
detection found, and the catalog's install costs; no engine or network is touched.
"""

from __future__ import annotations

from roundhouse.api.engines import EngineId, EnginesOverview
from roundhouse.api.hardware import HardwareInventory
from roundhouse.api.starters import (
    GUIDE_ENGINES,
    EngineChoice,
    EngineSetupState,
    SetupCost,
    SetupGuide,
    StarterCatalog,
)
from roundhouse.core.guide.catalog import MB, engine_cost
from roundhouse.core.hardware.backend import gib

_INSTALLS = {
    EngineId.LLAMA_CPP: "Roundhouse downloads llama.cpp's official build for this machine "
    "and checks it against its published checksum.",
    EngineId.MLX: "Roundhouse installs mlx-lm into a Python environment of its own.",
}
_OLLAMA_EXTERNAL = (
    "Roundhouse does not install Ollama: run its own installer, then check again here; "
    "Roundhouse finds it and starts it when needed."
)


def hardware_line(inventory: HardwareInventory) -> str:
    """'Intel Xeon with 8 threads, 31.2 GiB RAM; NVIDIA RTX 4090 with 24 GiB VRAM'."""
    cpu = inventory.cpu
    threads = f"{cpu.logical_cores} thread{'s' if cpu.logical_cores != 1 else ''}"
    line = f"{cpu.brand} with {threads}, {gib(inventory.memory.total_bytes)} RAM"
    gpus = []
    for gpu in inventory.gpus:
        if gpu.unified:
            gpus.append(f"{gpu.name} (unified memory)")
        elif gpu.memory_total_bytes:
            gpus.append(f"{gpu.name} with {gib(gpu.memory_total_bytes)} VRAM")
        else:
            gpus.append(gpu.name)
    return f"{line}; {', '.join(gpus)}" if gpus else f"{line}; no GPU Roundhouse can use"


def setup_guide(
    inventory: HardwareInventory,
    engines: EnginesOverview,
    catalog: StarterCatalog,
    *,
    first_run_done: bool,
) -> SetupGuide:
    """The engines the guide offers for this machine, best first, each with what it takes."""
    found = {d.id: d for d in engines.detection.found}
    choices: list[EngineChoice] = []
    for rec in inventory.recommendations:
        engine = EngineId(rec.engine)
        if engine not in GUIDE_ENGINES or any(c.engine == engine for c in choices):
            continue
        detected = found.get(engine)
        if detected is not None:
            version = f" {detected.version}" if detected.version else ""
            state, detail = EngineSetupState.READY, f"Installed{version}, {detected.where}."
            cost, url = None, None
        elif engine == EngineId.OLLAMA:
            state, detail = EngineSetupState.EXTERNAL, _OLLAMA_EXTERNAL
            cost = _install_cost(catalog, engine)
            url = _installer(engines, engine, inventory.os)
        else:
            state, detail = EngineSetupState.INSTALL, _INSTALLS[engine]
            cost, url = _install_cost(catalog, engine), None
        choices.append(
            EngineChoice(
                engine=engine,
                title=rec.title,
                rank=len(choices) + 1,
                reason=rec.reason,
                state=state,
                detail=detail,
                version=detected.version if detected is not None else None,
                cost=cost,
                install_url=url,
            )
        )
    if not choices:
        # Every recommendation lists llama.cpp; a stale inventory still gets a way forward.
        choices.append(
            EngineChoice(
                engine=EngineId.LLAMA_CPP,
                title="llama.cpp",
                rank=1,
                reason="llama.cpp runs GGUF models on almost any machine.",
                state=EngineSetupState.READY
                if EngineId.LLAMA_CPP in found
                else EngineSetupState.INSTALL,
                detail=_INSTALLS[EngineId.LLAMA_CPP],
                cost=_install_cost(catalog, EngineId.LLAMA_CPP),
            )
        )
    return SetupGuide(
        hardware=hardware_line(inventory),
        disk_free_bytes=inventory.disk.free_bytes if inventory.disk else None,
        engines=choices,
        recommended=choices[0].engine,
        first_run_done=first_run_done,
    )


def _install_cost(catalog: StarterCatalog, engine: EngineId) -> SetupCost | None:
    spec = engine_cost(catalog, engine)
    if spec is None:
        return None
    return SetupCost(
        download_bytes=spec.download_mb * MB,
        disk_bytes=spec.disk_mb * MB,
        seconds=spec.minutes * 60,
        note=spec.note,
    )


def _installer(engines: EnginesOverview, engine: EngineId, os_name: str) -> str | None:
    try:
        spec = engines.catalog.spec(engine)
    except KeyError:
        return None
    links = [link.url for link in spec.installers if link.os == os_name]
    return links[0] if links else (spec.homepage if spec.installers else None)
