"""A download of a GGUF from a repo with a vision projector fetches the projector too."""

from __future__ import annotations

from huggingface_hub.hf_api import RepoFile

from roundhouse.api.downloads import DownloadRequest
from roundhouse.core.models.downloads.resolve import _select

REPO = (
    "README.md",
    "gemma-3-4b-it-Q4_K_M.gguf",
    "gemma-3-4b-it-Q8_0.gguf",
    "mmproj-model-f32.gguf",
    "mmproj-model-f16.gguf",
    "mmproj-model-bf16.gguf",
    "BF16/gemma-3-4b-it-BF16-00001-of-00002.gguf",
    "BF16/gemma-3-4b-it-BF16-00002-of-00002.gguf",
)
ENTRIES = [RepoFile(path=p, size=10, oid="0" * 40) for p in REPO]


def chosen(**request: object) -> list[str]:
    given = DownloadRequest.model_validate({"repo": "ggml-org/gemma-3-4b-it-GGUF", **request})
    return sorted(e.path for e in _select(given, ENTRIES))


def test_the_projector_beside_the_chosen_gguf_comes_with_it() -> None:
    assert chosen(files=["gemma-3-4b-it-Q4_K_M.gguf"]) == [
        "gemma-3-4b-it-Q4_K_M.gguf",
        "mmproj-model-f16.gguf",
    ]
    # Two quantizations: one projector. A projector named is the one kept.
    assert chosen(pattern="*Q*.gguf", files=["mmproj-model-f32.gguf"]) == [
        "gemma-3-4b-it-Q4_K_M.gguf",
        "gemma-3-4b-it-Q8_0.gguf",
        "mmproj-model-f32.gguf",
    ]


def test_turned_off_or_nothing_beside_it_adds_nothing() -> None:
    assert chosen(files=["gemma-3-4b-it-Q8_0.gguf"], projector=False) == ["gemma-3-4b-it-Q8_0.gguf"]
    # The split model's folder has no projector; the repo root's is not beside it.
    assert chosen(pattern="BF16/*") == [
        "BF16/gemma-3-4b-it-BF16-00001-of-00002.gguf",
        "BF16/gemma-3-4b-it-BF16-00002-of-00002.gguf",
    ]
    assert chosen(files=["README.md"]) == ["README.md"]
