"""The fit estimate counts the vision projector a start would load beside the model."""

from __future__ import annotations

import asyncio
from pathlib import Path

from roundhouse.api.engines import InstanceOptions
from roundhouse.api.fit import FitQuery
from roundhouse.api.hardware import HardwareInventory
from roundhouse.core.models.fitter import ModelFitter
from roundhouse.core.models.library.places import LibraryPlaces
from roundhouse.core.models.library.service import LibraryService
from tests.fixtures.models.tiny_llama import write_tiny_llama_gguf
from tests.fixtures.models.tiny_mmproj import write_tiny_mmproj_gguf
from tests.unit.knowledge.test_fit_cases import rtx_3070


def _fit(model: Path, instance: InstanceOptions) -> tuple[int, list[str]]:
    async def hardware() -> HardwareInventory:
        return rtx_3070()

    library = LibraryService(lambda: LibraryPlaces(model.parent / "cache", ()))
    fitter = ModelFitter(None, library, hardware)  # type: ignore[arg-type]  # no Hub asked
    fit = asyncio.run(fitter.fit(FitQuery(path=str(model), instance=instance)))
    return fit.report.total_bytes, fit.report.assumptions


def test_the_projector_beside_the_model_is_counted(tmp_path: Path) -> None:
    folder = tmp_path / "视觉"
    folder.mkdir()
    model = write_tiny_llama_gguf(folder / "tiny.gguf", seed=0)
    projector = write_tiny_mmproj_gguf(folder / "mmproj-tiny-f16.gguf", seed=0)
    size = projector.stat().st_size
    with_it, notes = _fit(model, InstanceOptions(model=str(model), ctx_size=512))
    without, none_notes = _fit(
        model, InstanceOptions(model=str(model), ctx_size=512, mmproj="none")
    )
    assert with_it - without == size
    assert any("mmproj-tiny-f16.gguf" in n for n in notes)
    assert not any("projector" in n for n in none_notes)
    # One named elsewhere is counted as well.
    elsewhere = tmp_path / "alone"
    elsewhere.mkdir()
    alone = write_tiny_llama_gguf(elsewhere / "tiny.gguf", seed=0)
    named, _ = _fit(alone, InstanceOptions(model=str(alone), ctx_size=512, mmproj=str(projector)))
    bare, _ = _fit(alone, InstanceOptions(model=str(alone), ctx_size=512))
    assert named - bare == size
