"""An instance's memory after its load: llama-server's own figures beside the fit estimate.

The estimate is made for the instance's options; where they leave a choice to the engine
(context size, parallel slots, flash attention "auto", the micro-batch) the engine's own
log says what it chose, so both sides describe the same run. The hardware inventory is
asked for before the engine starts, so the estimate sees the memory free before the load.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import ValidationError

from roundhouse.api.engines import EngineId, InstanceOptions
from roundhouse.api.fit import DeviceKind, FitReport
from roundhouse.api.hardware import GpuVendor, HardwareInventory
from roundhouse.api.instance_memory import InstanceMemory, MemoryUse
from roundhouse.core.errors import RoundhouseError
from roundhouse.core.knowledge.run_options import fit_options, requested_layers
from roundhouse.core.knowledge.shape import ModelShape
from roundhouse.core.supervise.logcapture import LogCapture

if TYPE_CHECKING:
    # The GGUF reader and the estimator (gguf, numpy) load with the first ready instance,
    # not with every daemon start.
    from roundhouse.core.knowledge.fit.actual import LoadFacts
    from roundhouse.core.knowledge.gguf import GgufHeader

log = logging.getLogger(__name__)

InventoryGetter = Callable[[], Awaitable[HardwareInventory]]
_GPU_VENDORS = (GpuVendor.NVIDIA, GpuVendor.AMD, GpuVendor.APPLE)


class MemoryReader:
    """Takes the inventory before a start and reads the memory once the engine is ready."""

    def __init__(self, inventory: InventoryGetter | None = None) -> None:
        self._inventory = inventory

    def snapshot(self, engine: EngineId) -> asyncio.Task[HardwareInventory | None] | None:
        """Start reading the inventory now, before the engine takes its memory (for the
        engines whose buffers are read after the load)."""
        if self._inventory is None or engine != EngineId.LLAMA_CPP:
            return None
        return asyncio.create_task(self._read_inventory(), name="instance-memory-inventory")

    async def _read_inventory(self) -> HardwareInventory | None:
        assert self._inventory is not None
        try:
            return await self._inventory()
        except Exception:  # the figures are extras: a failed probe must not fail a start
            log.exception("Reading the hardware inventory for a memory estimate failed")
            return None

    async def read(
        self,
        engine: EngineId,
        options: InstanceOptions,
        capture: LogCapture,
        hardware: asyncio.Task[HardwareInventory | None] | None,
    ) -> InstanceMemory | None:
        """`after_load` on the lines the engine wrote so far; never raises: the figures
        are extras, and a ready instance must stay ready without them."""
        lines, _, dropped = capture.since(0, capture.count)
        try:
            return await self.after_load(
                engine, options, lines, complete=not dropped, hardware=hardware
            )
        except Exception:
            log.exception("Reading the memory of a %s instance failed", engine.value)
            return None

    async def after_load(
        self,
        engine: EngineId,
        options: InstanceOptions,
        lines: Sequence[str],
        *,
        complete: bool,
        hardware: asyncio.Task[HardwareInventory | None] | None,
    ) -> InstanceMemory | None:
        """The memory of a ready instance from its output so far (`complete`: no line of
        it was dropped); None for engines that do not report their buffers."""
        if engine != EngineId.LLAMA_CPP:
            if hardware is not None:
                hardware.cancel()
            return None
        inventory = await hardware if hardware is not None else None
        notes: list[str] = []
        shape = await _shape(options.model, notes)
        requested = requested_layers(options, shape)
        from roundhouse.core.knowledge.fit.actual import parse_llama_server_load

        report = parse_llama_server_load(lines, requested_layers=requested)
        actual = report.use
        if actual is not None and not complete and not actual.weights_bytes:
            # Lines were dropped, and the weights' (the first of the report) with them.
            actual = None
        if actual is None:
            notes.append(_why_no_figures(report.facts, complete))
        elif inventory is not None:
            actual = _with_gpu_note(actual, inventory, requested)
        estimate = _estimate(shape, inventory, options, report.facts, notes)
        return InstanceMemory(actual=actual, estimate=estimate, notes=notes)


async def _shape(model: str | None, notes: list[str]) -> ModelShape | None:
    if not model or not model.lower().endswith(".gguf"):
        notes.append("No estimate: the model is not a local GGUF file.")
        return None
    try:
        header = await asyncio.to_thread(_read_header, model)
        from roundhouse.core.knowledge.gguf import shape_from_gguf

        return shape_from_gguf(header)
    except (RoundhouseError, OSError) as exc:
        notes.append(f"No estimate: the model's header could not be read ({exc}).")
        return None


def _read_header(model: str) -> GgufHeader:
    from roundhouse.core.knowledge.gguf import read_gguf_header

    return read_gguf_header(Path(model).expanduser())


def _estimate(
    shape: ModelShape | None,
    inventory: HardwareInventory | None,
    options: InstanceOptions,
    facts: LoadFacts,
    notes: list[str],
) -> FitReport | None:
    if shape is None:
        return None
    if inventory is None:
        notes.append("No estimate: this daemon has no hardware inventory.")
        return None
    try:
        from roundhouse.core.knowledge.fit import estimate_fit

        return estimate_fit(shape, inventory, fit_options(options, facts, shape))
    except (RoundhouseError, ValidationError, ValueError) as exc:
        notes.append(f"No estimate for these options: {exc}")
        return None


def _why_no_figures(facts: LoadFacts, complete: bool) -> str:
    if not complete:
        return (
            "The engine's load report scrolled out of the log buffer before it was read; "
            "its log file has it."
        )
    if facts.verbosity is not None and facts.verbosity < 4:
        return (
            "This llama-server logs its buffers only at verbosity 4: start it with the memory "
            "report on (the start dialog's Memory box, or `engines start --memory-report`; "
            "`-lv 4` in the extra arguments does the same) to see what it allocated."
        )
    return "llama-server did not report its buffers."


def _with_gpu_note(
    actual: MemoryUse, inventory: HardwareInventory, requested: int | None
) -> MemoryUse:
    """A GPU this machine has, left unused though nobody asked for the CPU, is worth a word."""
    gpus = [g for g in inventory.gpus if g.vendor in _GPU_VENDORS]
    on_gpu = any(d.kind == DeviceKind.GPU for d in actual.devices)
    if not gpus or on_gpu or actual.cpu_fallback or requested == 0:
        return actual
    note = (
        f"No layers went to GPU {gpus[0].index} ({gpus[0].name}): this llama-server may be "
        "a build without GPU support; `roundhouse engines install llama.cpp` installs one "
        "for this GPU."
    )
    return actual.model_copy(update={"notes": [*actual.notes, note]})
