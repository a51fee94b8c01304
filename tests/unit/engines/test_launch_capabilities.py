"""The engines' capabilities on argv: MoE experts in RAM, drafts, reasoning, LoRA; refusals."""

from __future__ import annotations

import json

import pytest

from roundhouse.api.engines import (
    DetectedEngine,
    EngineId,
    FoundBy,
    LaunchParams,
    LoraAdapter,
)
from roundhouse.core.engines.launch import build_launch
from roundhouse.core.errors import InvalidInputError
from tests.unit.engines.conftest import catalog

GGUF = "/models/qwen3-30b-a3b-q4_k_m.gguf"
HF = "/models/Qwen3-8B"


def _found(engine: EngineId) -> DetectedEngine:
    python = engine in (EngineId.SGLANG, EngineId.MLX)
    spec = catalog().spec(engine)
    return DetectedEngine(
        id=engine,
        found_by=FoundBy.PYTHON if python else FoundBy.PATH,
        path=None if python else "/bin/engine",
        python="/venv/bin/python" if python else None,
        module=spec.python_modules[0] if python else None,
        where="test",
    )


def argv(engine: EngineId, **options: object) -> tuple[str, ...]:
    model = GGUF if engine == EngineId.LLAMA_CPP else HF
    params = LaunchParams(model=model, port=1, metrics=False, jinja=False, **options)  # type: ignore[arg-type]
    return build_launch(catalog().spec(engine), _found(engine), params).argv


def refusal(engine: EngineId, **options: object) -> str:
    with pytest.raises(InvalidInputError) as err:
        argv(engine, **options)
    return err.value.detail


def tail(args: tuple[str, ...], after: str) -> tuple[str, ...]:
    return args[args.index(after) :]


def test_llama_cpp_moe_experts_in_ram() -> None:
    assert tail(argv(EngineId.LLAMA_CPP, n_cpu_moe=12), "--n-cpu-moe") == ("--n-cpu-moe", "12")
    assert "--cpu-moe" in argv(EngineId.LLAMA_CPP, n_cpu_moe="all")
    assert "--n-cpu-moe" not in argv(EngineId.LLAMA_CPP, n_cpu_moe=0)


def test_llama_cpp_draft_model_and_limits() -> None:
    args = argv(
        EngineId.LLAMA_CPP,
        draft_model="/models/qwen3-0.6b-q8_0.gguf",
        num_draft_tokens=16,
        draft_min=2,
        draft_gpu_layers="all",
    )
    assert tail(args, "-md") == (
        "-md", "/models/qwen3-0.6b-q8_0.gguf",
        "--spec-draft-n-max", "16",
        "--spec-draft-n-min", "2",
        "-ngld", "all",
    )  # fmt: skip


def test_llama_cpp_reasoning() -> None:
    assert tail(argv(EngineId.LLAMA_CPP, thinking=False), "--reasoning-budget") == (
        "--reasoning-budget",
        "0",
    )
    on = argv(EngineId.LLAMA_CPP, thinking=True, reasoning_budget=512, reasoning_effort="low")
    assert tail(on, "--reasoning") == (
        "--reasoning", "on", "--reasoning-budget", "512", "--reasoning-effort", "low",
    )  # fmt: skip
    assert tail(argv(EngineId.LLAMA_CPP, reasoning_budget=-1), "--reasoning-budget") == (
        "--reasoning-budget",
        "-1",
    )


def test_llama_cpp_lora_adapters() -> None:
    args = argv(
        EngineId.LLAMA_CPP,
        lora=(LoraAdapter(path="/a/style.gguf"), LoraAdapter(path="/a/tone.gguf", scale=0.5)),
    )
    assert tail(args, "--lora") == (
        "--lora", "/a/style.gguf", "--lora-scaled", "/a/tone.gguf:0.5",
    )  # fmt: skip


def test_vllm_capabilities() -> None:
    args = argv(
        EngineId.VLLM,
        draft_model="/models/Qwen3-0.6B",
        num_draft_tokens=4,
        thinking=False,
        lora=(LoraAdapter(path="/adapters/sql-lora/"),),
    )
    spec = tail(args, "--speculative-config")
    assert json.loads(spec[1]) == {"model": "/models/Qwen3-0.6B", "num_speculative_tokens": 4}
    kwargs = tail(args, "--default-chat-template-kwargs")
    assert json.loads(kwargs[1]) == {"enable_thinking": False}
    assert tail(args, "--enable-lora")[:3] == (
        "--enable-lora",
        "--lora-modules",
        "sql-lora=/adapters/sql-lora/",
    )


def test_sglang_capabilities() -> None:
    args = argv(
        EngineId.SGLANG,
        draft_model="/models/Qwen3-0.6B",
        num_draft_tokens=4,
        lora=(LoraAdapter(path="/adapters/sql"),),
    )
    assert tail(args, "--speculative-algorithm")[:6] == (
        "--speculative-algorithm", "STANDALONE",
        "--speculative-draft-model-path", "/models/Qwen3-0.6B",
        "--speculative-num-draft-tokens", "4",
    )  # fmt: skip
    assert tail(args, "--lora-paths")[:2] == ("--lora-paths", "sql=/adapters/sql")


@pytest.mark.parametrize(
    ("engine", "options", "words"),
    [
        (EngineId.VLLM, {"n_cpu_moe": 4}, "experts kept in RAM (n_cpu_moe). It keeps the whole"),
        (EngineId.SGLANG, {"n_cpu_moe": "all"}, "run a GGUF build with llama.cpp"),
        (EngineId.SGLANG, {"thinking": False}, "with each request"),
        (EngineId.VLLM, {"reasoning_budget": 100}, "Only llama.cpp limits thinking"),
        (EngineId.VLLM, {"draft_model": "/d"}, "draft tokens (3 to 5 is usual)"),
        (EngineId.OLLAMA, {"lora": (LoraAdapter(path="/l"),)}, "does not take LoRA adapters"),
        (EngineId.OLLAMA, {"thinking": False}, "reasoning turned on or off"),
        (EngineId.MLX, {"lora": (LoraAdapter(path="/l"),)}, "--adapter-path"),
        (EngineId.LLAMA_CPP, {"num_draft_tokens": 4}, "need a draft model"),
        (EngineId.LLAMA_CPP, {"draft_model": "/d/Qwen3-0.6B"}, "drafts with a GGUF file"),
        (
            EngineId.LLAMA_CPP,
            {"draft_model": "/d.gguf", "num_draft_tokens": 2, "draft_min": 4},
            "is above the most",
        ),
        (EngineId.LLAMA_CPP, {"thinking": False, "reasoning_budget": 64}, "clear the budget"),
        (EngineId.LLAMA_CPP, {"lora": (LoraAdapter(path="/a,b.gguf"),)}, "comma"),
        (
            EngineId.LLAMA_CPP,
            {"n_cpu_moe": 4, "extra_args": ("--n-cpu-moe", "8")},
            "set it once",
        ),
        (EngineId.VLLM, {"lora": (LoraAdapter(path="/l", scale=0.5),)}, "full strength"),
        (
            EngineId.VLLM,
            {"lora": (LoraAdapter(path="/a/x"), LoraAdapter(path="/b/x"))},
            "both named 'x'",
        ),
    ],
)
def test_refusals_say_what_to_do(engine: EngineId, options: dict[str, object], words: str) -> None:
    assert words in refusal(engine, **options)


def test_extra_arguments_alone_still_reach_llama_cpp() -> None:
    # A draft given the old way, in the extra arguments, stays the user's.
    args = argv(EngineId.LLAMA_CPP, extra_args=("-md", "/d.gguf"))
    assert args[-2:] == ("-md", "/d.gguf")
