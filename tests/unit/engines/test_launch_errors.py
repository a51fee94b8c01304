"""Choices an engine cannot honour are refused in words a user can act on."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from roundhouse.api.engines import (
    DetectedEngine,
    EngineId,
    FoundBy,
    LaunchParams,
    ModelFormat,
)
from roundhouse.core.engines.launch import build_launch
from roundhouse.core.errors import InvalidInputError
from tests.unit.engines.conftest import catalog


def _found(engine: EngineId) -> DetectedEngine:
    return DetectedEngine(id=engine, found_by=FoundBy.PATH, path="/bin/x", where="test")


def refusal(engine: EngineId, params: LaunchParams, **extras: str) -> str:
    spec = catalog().spec(engine)
    with pytest.raises(InvalidInputError) as err:
        build_launch(spec, _found(engine), params, **extras)
    return err.value.detail


def test_tensor_parallel_for_llama_cpp() -> None:
    why = refusal(EngineId.LLAMA_CPP, LaunchParams(model="/m.gguf", port=1, tensor_parallel=2))
    assert why == (
        "llama.cpp (llama-server) does not take tensor parallelism (tensor_parallel). "
        "llama.cpp splits a model across GPUs by layers on its own; "
        "choose vLLM or SGLang for tensor or pipeline parallelism."
    )


def test_a_gguf_for_vllm_is_refused_with_the_reason() -> None:
    why = refusal(EngineId.VLLM, LaunchParams(model="/models/Qwen-Q4_K_M.GGUF", port=1))
    assert why.startswith("vLLM cannot serve a GGUF model. vLLM's GGUF support is experimental")
    assert "llama.cpp or Ollama" in why


def test_a_declared_format_counts_even_without_a_suffix() -> None:
    params = LaunchParams(model="/models/qwen", model_format=ModelFormat.SAFETENSORS, port=1)
    why = refusal(EngineId.LLAMA_CPP, params)
    assert why.startswith("llama.cpp (llama-server) cannot serve a SAFETENSORS model.")


@pytest.mark.parametrize(
    ("engine", "params", "words"),
    [
        (EngineId.OLLAMA, LaunchParams(port=1, n_gpu_layers=20), "num_gpu"),
        (EngineId.OLLAMA, LaunchParams(port=1, extra_args=("--verbose",)), "environment"),
        (EngineId.MLX, LaunchParams(model="/m", port=1, ctx_size=4096), "own context length"),
        (EngineId.MLX, LaunchParams(model="/m", port=1, num_draft_tokens=3), "draft model"),
        (EngineId.VLLM, LaunchParams(model="/m", port=1, n_gpu_layers=10), "whole model"),
        (EngineId.VLLM, LaunchParams(model="/m", port=1, threads=8), "no threads"),
        (EngineId.VLLM, LaunchParams(model="/m", port=1, memory_report=True), "memory report"),
        (EngineId.SGLANG, LaunchParams(model="/m", port=1, pipeline_parallel=2), "use vLLM"),
    ],
)
def test_unsupported_choices_say_what_to_do(
    engine: EngineId, params: LaunchParams, words: str
) -> None:
    assert words in refusal(engine, params)


def test_ollama_has_one_kv_cache_type() -> None:
    params = LaunchParams(port=1, cache_type_k="q8_0", cache_type_v="q4_0")
    why = refusal(EngineId.OLLAMA, params)
    assert "one KV cache type" in why and "OLLAMA_KV_CACHE_TYPE" in why


def test_vllm_length_given_twice_must_agree() -> None:
    params = LaunchParams(model="/m", port=1, ctx_size=4096, max_model_len=8192)
    assert "differ. Set one of them." in refusal(EngineId.VLLM, params)


@pytest.mark.parametrize(
    "arg",
    [
        "--api-key", "--api-key=abc", "--api-key-file", "--api_key", "--API-KEY=abc",
        "--hf-token", "--hf_token=x", "-hft", "--admin-api-key",
    ],
)  # fmt: skip
def test_keys_never_ride_in_extra_arguments(arg: str) -> None:
    params = LaunchParams(model="/m.gguf", port=1, extra_args=(arg, "x"))
    assert "visible to every user" in refusal(EngineId.LLAMA_CPP, params)


@pytest.mark.parametrize(
    ("engine", "arg"),
    [
        (EngineId.LLAMA_CPP, "--path"),
        (EngineId.LLAMA_CPP, "--cors-origins=*"),
        (EngineId.LLAMA_CPP, "--webui"),
        (EngineId.LLAMA_CPP, "--api-prefix"),
        (EngineId.VLLM, "--config"),
        (EngineId.VLLM, "--allowed_origins"),
        (EngineId.VLLM, "--uds"),
        (EngineId.VLLM, "--middleware"),
        (EngineId.VLLM, "--allowed-local-media-path=/"),
        (EngineId.SGLANG, "--Config=x.yaml"),
    ],
)
def test_extra_arguments_cannot_move_or_open_the_listener(engine: EngineId, arg: str) -> None:
    model = "/m.gguf" if engine == EngineId.LLAMA_CPP else "/m"
    params = LaunchParams(model=model, port=1, extra_args=(arg, "x"))
    assert "changes where or to whom" in refusal(engine, params)


@pytest.mark.parametrize(
    ("engine", "arg", "full"),
    [
        (EngineId.VLLM, "--ho", "--host"),
        (EngineId.VLLM, "--conf=x", "--config"),
        (EngineId.SGLANG, "--api-k", "--api-key"),
        (EngineId.MLX, "--por=1", "--port"),
    ],
)
def test_argparse_engines_read_prefixes_so_prefixes_are_checked(
    engine: EngineId, arg: str, full: str
) -> None:
    why = refusal(engine, LaunchParams(model="/m", port=1, extra_args=(arg, "x")))
    assert "cannot go in the extra arguments" in why
    if "k" not in arg:  # a secret's prefix is refused as a secret, in those words
        assert f"reads it as {full}" in why


def test_llama_server_takes_no_prefixes_so_a_longer_unknown_flag_passes() -> None:
    # llama.cpp matches flags exactly: `--ho` is no flag of its, and it says so itself.
    params = LaunchParams(model="/m.gguf", port=1, extra_args=("--ho", "x"))
    plan = build_launch(catalog().spec(EngineId.LLAMA_CPP), _found(EngineId.LLAMA_CPP), params)
    assert plan.argv[-2:] == ("--ho", "x")


@pytest.mark.parametrize("engine", [EngineId.VLLM, EngineId.SGLANG])
def test_remote_code_needs_its_own_option(engine: EngineId) -> None:
    params = LaunchParams(model="/m", port=1, extra_args=("--trust_remote_code",))
    assert "Trust remote code" in refusal(engine, params)
    spec = catalog().spec(engine)
    plan = build_launch(
        spec, _found(engine), LaunchParams(model="/m", port=1, trust_remote_code=True)
    )
    assert "--trust-remote-code" in plan.argv


def test_only_vllm_and_sglang_trust_remote_code() -> None:
    params = LaunchParams(model="/m.gguf", port=1, trust_remote_code=True)
    assert "does not take trusting remote code" in refusal(EngineId.LLAMA_CPP, params)


@pytest.mark.parametrize("arg", ["--host", "--port=9", "-m"])
def test_extra_arguments_cannot_override_what_roundhouse_sets(arg: str) -> None:
    params = LaunchParams(model="/m.gguf", port=1, extra_args=(arg, "0.0.0.0"))
    assert "Roundhouse sets it" in refusal(EngineId.LLAMA_CPP, params)


def test_engines_stay_on_loopback() -> None:
    why = refusal(EngineId.VLLM, LaunchParams(model="/m", port=1, host="0.0.0.0"))
    assert why.startswith("Engines listen on this machine only (127.0.0.1), not on 0.0.0.0")


def test_a_model_is_needed_except_for_ollama() -> None:
    assert refusal(EngineId.LLAMA_CPP, LaunchParams(port=1)) == (
        "Choose a model for llama.cpp (llama-server)."
    )


def test_an_attached_endpoint_is_not_started() -> None:
    why = refusal(EngineId.OPENAI_COMPATIBLE, LaunchParams(model="m", port=1))
    assert "attaches to an OpenAI-compatible endpoint but does not start one" in why


def test_the_port_is_always_explicit_and_valid() -> None:
    with pytest.raises(ValidationError):
        LaunchParams(model="/m.gguf")  # type: ignore[call-arg]
    with pytest.raises(ValidationError):
        LaunchParams(model="/m.gguf", port=70000)


def test_a_detection_of_another_engine_is_a_programming_error() -> None:
    spec = catalog().spec(EngineId.VLLM)
    other = DetectedEngine(id=EngineId.MLX, found_by=FoundBy.PATH, path="/x", where="t")
    with pytest.raises(ValueError, match="does not match"):
        build_launch(spec, other, LaunchParams(model="/m", port=1))
