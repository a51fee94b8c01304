"""The vision projector on llama-server's argv: chosen, found beside the model, or off."""

from __future__ import annotations

from pathlib import Path

import pytest

from roundhouse.api.engines import DetectedEngine, EngineId, FoundBy, LaunchParams
from roundhouse.core.engines.launch import build_launch
from roundhouse.core.engines.projector import is_projector, pick_projector, projector_beside
from roundhouse.core.errors import InvalidInputError
from tests.unit.engines.conftest import catalog


def _argv(model: Path, **options: object) -> tuple[str, ...]:
    spec = catalog().spec(EngineId.LLAMA_CPP)
    found = DetectedEngine(
        id=EngineId.LLAMA_CPP, found_by=FoundBy.PATH, path="/opt/llama-server", where="test"
    )
    params = LaunchParams(model=str(model), port=41001, **options)  # type: ignore[arg-type]
    return build_launch(spec, found, params).argv


def _after(argv: tuple[str, ...], flag: str) -> str | None:
    return argv[argv.index(flag) + 1] if flag in argv else None


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A folder laid out as a vision model's Hub repo: the model in two quantizations and
    its projector in three precisions (names with a space and CJK)."""
    folder = tmp_path / "gemma 视觉"
    folder.mkdir()
    for name in (
        "gemma-3-4b-it-Q4_K_M.gguf",
        "gemma-3-4b-it-Q8_0.gguf",
        "mmproj-model-f32.gguf",
        "mmproj-model-bf16.gguf",
        "mmproj-model-f16.gguf",
    ):
        (folder / name).write_bytes(b"GGUF")
    return folder


def test_the_projector_beside_the_model_goes_on_argv(repo: Path) -> None:
    argv = _argv(repo / "gemma-3-4b-it-Q4_K_M.gguf")
    # F16 is chosen among the three precisions; the path reaches the engine unchanged.
    assert _after(argv, "--mmproj") == str(repo / "mmproj-model-f16.gguf")


def test_the_chosen_projector_wins(repo: Path, tmp_path: Path) -> None:
    other = tmp_path / "другой mmproj.gguf"
    other.write_bytes(b"GGUF")
    argv = _argv(repo / "gemma-3-4b-it-Q8_0.gguf", mmproj=str(other))
    assert _after(argv, "--mmproj") == str(other)
    assert argv.count("--mmproj") == 1


def test_none_turns_the_projector_off(repo: Path) -> None:
    assert "--mmproj" not in _argv(repo / "gemma-3-4b-it-Q4_K_M.gguf", mmproj="none")


def test_a_model_without_a_projector_gets_none(tmp_path: Path) -> None:
    model = tmp_path / "tiny.gguf"
    model.write_bytes(b"GGUF")
    assert "--mmproj" not in _argv(model)


def test_the_users_own_flag_is_the_only_one(repo: Path) -> None:
    model = repo / "gemma-3-4b-it-Q4_K_M.gguf"
    argv = _argv(model, extra_args=("--no-mmproj",))
    assert "--mmproj" not in argv and "--no-mmproj" in argv
    argv = _argv(model, extra_args=("-mm", "/elsewhere/p.gguf"))
    assert "--mmproj" not in argv and _after(argv, "-mm") == "/elsewhere/p.gguf"
    with pytest.raises(InvalidInputError, match="set it once"):
        _argv(model, mmproj=str(repo / "mmproj-model-f16.gguf"), extra_args=("--mmproj", "x"))


def test_a_projector_that_is_not_there_is_refused_in_words(repo: Path) -> None:
    with pytest.raises(InvalidInputError, match="not a file here"):
        _argv(repo / "gemma-3-4b-it-Q4_K_M.gguf", mmproj=str(repo / "gone.gguf"))


def test_pairing_rules(repo: Path) -> None:
    assert is_projector("mmproj-F16.gguf") and is_projector("Qwen2.5-VL-7B-mmproj-Q8_0.GGUF")
    assert not is_projector("gemma-3-4b-it-Q4_K_M.gguf") and not is_projector("mmproj.bin")
    # A projector is not paired with itself, nor with another projector.
    assert projector_beside(repo / "mmproj-model-f16.gguf") is None
    assert pick_projector([Path("a/mmproj-bf16.gguf"), Path("a/mmproj-q8_0.gguf")]) == Path(
        "a/mmproj-bf16.gguf"
    )
    assert projector_beside(repo / "missing folder" / "m.gguf") is None
