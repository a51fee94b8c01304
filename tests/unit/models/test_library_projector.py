"""The library pairs a GGUF with the projector llama-server will be given: the same file."""

from __future__ import annotations

import asyncio
from pathlib import Path

from roundhouse.api.engines import DetectedEngine, EngineId, FoundBy, LaunchParams
from roundhouse.core.engines.launch import build_launch
from roundhouse.core.models.library.places import LibraryPlaces
from roundhouse.core.models.library.service import LibraryService
from tests.unit.engines.conftest import catalog
from tests.unit.models.library_layouts import write_gguf


def test_the_library_and_the_argv_pair_the_same_projector(tmp_path: Path) -> None:
    folder = tmp_path / "models" / "Qwen2.5-VL 视觉"
    model = write_gguf(folder / "Qwen2.5-VL-3B-Instruct-Q4_K_M.gguf", arch="qwen2vl")
    # Three precisions of one projector, the smallest first in size: F16 is the one paired.
    write_gguf(folder / "mmproj-Qwen2.5-VL-3B-Instruct-Q8_0.gguf", arch="clip")
    write_gguf(folder / "mmproj-Qwen2.5-VL-3B-Instruct-f16.gguf", arch="clip")
    write_gguf(folder / "mmproj-Qwen2.5-VL-3B-Instruct-f32.gguf", arch="clip")
    write_gguf(tmp_path / "models" / "text only" / "qwen3-0.6b-Q8_0.gguf", arch="qwen3")
    service = LibraryService(lambda: LibraryPlaces(tmp_path / "cache", (tmp_path / "models",)))
    listing = asyncio.run(service.scan())
    # Projectors are not models of their own.
    names = sorted(Path(m.path or "").name for m in listing.models)
    assert names == ["Qwen2.5-VL-3B-Instruct-Q4_K_M.gguf", "qwen3-0.6b-Q8_0.gguf"]
    vision, text = sorted(listing.models, key=lambda m: m.path or "")
    assert vision.projector == str(folder / "mmproj-Qwen2.5-VL-3B-Instruct-f16.gguf")
    assert text.projector is None
    found = DetectedEngine(
        id=EngineId.LLAMA_CPP, found_by=FoundBy.PATH, path="/opt/llama-server", where="test"
    )
    plan = build_launch(
        catalog().spec(EngineId.LLAMA_CPP), found, LaunchParams(model=str(model), port=41002)
    )
    assert plan.argv[plan.argv.index("--mmproj") + 1] == vision.projector
