"""The reranking option: llama-server gets --reranking (and the flag is the option's, not an
extra argument); vLLM, SGLang, MLX and Ollama refuse it with what to do instead."""

from __future__ import annotations

import pytest

from roundhouse.api.engines import EngineId, LaunchParams
from roundhouse.core.engines.launch import build_launch
from tests.unit.engines.conftest import catalog
from tests.unit.engines.test_launch import found
from tests.unit.engines.test_launch_errors import refusal

GGUF = "/models/bge-reranker-v2-m3-Q8_0.gguf"


def test_llama_server_starts_with_reranking_when_asked() -> None:
    spec = catalog().spec(EngineId.LLAMA_CPP)
    engine = found(EngineId.LLAMA_CPP, "llama-server")
    ranking = build_launch(spec, engine, LaunchParams(model=GGUF, port=1, reranking=True))
    assert ranking.argv.count("--reranking") == 1
    plain = build_launch(spec, engine, LaunchParams(model=GGUF, port=1))
    assert "--reranking" not in plain.argv
    twice = LaunchParams(model=GGUF, port=1, extra_args=("--rerank",))
    assert "--rerank cannot go in the extra arguments" in refusal(EngineId.LLAMA_CPP, twice)


@pytest.mark.parametrize(
    ("engine", "words"),
    [
        (EngineId.VLLM, "on its own"),
        (EngineId.SGLANG, "--is-embedding"),
        (EngineId.MLX, "reranking"),
        (EngineId.OLLAMA, "reranking"),
    ],
)
def test_other_engines_refuse_the_option_saying_what_to_do(engine: EngineId, words: str) -> None:
    params = LaunchParams(model=None if engine == EngineId.OLLAMA else "/m", port=1, reranking=True)
    assert words in refusal(engine, params)
