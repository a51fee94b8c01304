"""Launch plans read exactly: argv, environment and URLs for each engine."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from roundhouse.api.engines import (
    DetectedEngine,
    EngineId,
    FlashAttention,
    FoundBy,
    LaunchParams,
    StopMethod,
)
from roundhouse.base.resources import resource_path
from roundhouse.core.engines.launch import build_launch
from tests.unit.engines.conftest import catalog

# Cyrillic, CJK and spaces: they must reach the engine unchanged (llama.cpp #18571).
GGUF = "/home/пользователь/模型 dir/qwen2.5-0.5b-instruct-q4_k_m.gguf"
HF_DIR = "/Users/ольга/モデル/Qwen2.5-0.5B-Instruct"


def found(engine: EngineId, path: str | None = None, python: str | None = None) -> DetectedEngine:
    module = catalog().spec(engine).python_modules[0] if python else None
    return DetectedEngine(
        id=engine,
        found_by=FoundBy.PYTHON if python else FoundBy.PATH,
        path=path,
        python=python,
        module=module,
        where="test",
    )


def test_llama_server_every_choice() -> None:
    spec = catalog().spec(EngineId.LLAMA_CPP)
    params = LaunchParams(
        model=GGUF,
        port=41001,
        ctx_size=8192,
        n_gpu_layers="all",
        threads=6,
        parallel=4,
        flash_attn=FlashAttention.ON,
        cache_type_k="q8_0",
        cache_type_v="q8_0",
        served_name="qwen 小",
        extra_args=("--slots",),
    )
    plan = build_launch(spec, found(EngineId.LLAMA_CPP, "/opt/llama b1/llama-server"), params)
    assert plan.argv == (
        "/opt/llama b1/llama-server",
        "-m", GGUF,
        "--host", "127.0.0.1",
        "--port", "41001",
        "-c", "8192",
        "-ngl", "all",
        "-t", "6",
        "-np", "4",
        "-fa", "on",
        "-ctk", "q8_0",
        "-ctv", "q8_0",
        "--metrics",
        "-a", "qwen 小",
        "--jinja",
        "--slots",
    )  # fmt: skip
    assert plan.env == {}
    assert plan.probe_url == "http://127.0.0.1:41001/health"
    assert plan.metrics_url == "http://127.0.0.1:41001/metrics"
    assert plan.models_url == "http://127.0.0.1:41001/v1/models"
    assert plan.expected_model_id == "qwen 小"
    assert plan.readiness.loading_statuses == [503]
    assert plan.stop == StopMethod.SIGNAL


def test_llama_server_minimal_and_its_key_stays_off_argv() -> None:
    spec = catalog().spec(EngineId.LLAMA_CPP)
    params = LaunchParams(model=GGUF, port=8081, metrics=False, jinja=False, n_gpu_layers=0)
    plan = build_launch(spec, found(EngineId.LLAMA_CPP, "llama-server"), params, api_key="s3cr3t")
    assert plan.argv == (
        "llama-server", "-m", GGUF, "--host", "127.0.0.1", "--port", "8081", "-ngl", "0",
    )  # fmt: skip
    # llama.cpp's environment twin of --api-key is LLAMA_API_KEY (common/arg.cpp); its CORS
    # names an origin no page can have and its web UI is off.
    assert plan.env == {
        "LLAMA_API_KEY": "s3cr3t",
        "LLAMA_ARG_CORS_ORIGINS": "https://engine.roundhouse.invalid",
        "LLAMA_ARG_UI": "0",
    }
    assert plan.secret_env == ("LLAMA_API_KEY",)
    assert plan.redacted_env()["LLAMA_API_KEY"] == "***"
    assert not any("s3cr3t" in arg for arg in plan.argv)
    assert plan.metrics_url is None
    assert plan.expected_model_id == GGUF


def test_the_memory_report_raises_llama_servers_log_level_unless_the_user_set_one() -> None:
    spec = catalog().spec(EngineId.LLAMA_CPP)
    engine = found(EngineId.LLAMA_CPP, "llama-server")
    reported = build_launch(spec, engine, LaunchParams(model=GGUF, port=1, memory_report=True))
    assert reported.argv[-2:] == ("-lv", "4")
    plain = build_launch(spec, engine, LaunchParams(model=GGUF, port=1))
    assert "-lv" not in plain.argv
    own = LaunchParams(model=GGUF, port=1, memory_report=True, extra_args=("-lv", "5"))
    assert build_launch(spec, engine, own).argv.count("-lv") == 1


def test_ollama_is_configured_through_its_environment() -> None:
    spec = catalog().spec(EngineId.OLLAMA)
    exe = "C:\\Users\\Дмитрий\\AppData\\Local\\Programs\\Ollama\\ollama.exe"
    params = LaunchParams(
        model="qwen2.5:0.5b",
        port=41002,
        ctx_size=16384,
        parallel=2,
        flash_attn=FlashAttention.ON,
        cache_type_k="q8_0",
        max_loaded_models=1,
    )
    plan = build_launch(spec, found(EngineId.OLLAMA, exe), params)
    assert plan.argv == (exe, "serve")
    assert plan.env == {
        "OLLAMA_HOST": "127.0.0.1:41002",
        "OLLAMA_FLASH_ATTENTION": "1",
        "OLLAMA_KV_CACHE_TYPE": "q8_0",
        "OLLAMA_CONTEXT_LENGTH": "16384",
        "OLLAMA_NUM_PARALLEL": "2",
        "OLLAMA_MAX_LOADED_MODELS": "1",
        "OLLAMA_ORIGINS": "",
    }
    assert plan.probe_url == "http://127.0.0.1:41002/"
    assert plan.readiness.expect_text == "Ollama is running"
    assert plan.models_url == "http://127.0.0.1:41002/api/tags"
    assert plan.metrics_url is None
    assert plan.expected_model_id == "qwen2.5:0.5b"


def test_ollama_without_a_model_and_with_auto_flash_attention() -> None:
    spec = catalog().spec(EngineId.OLLAMA)
    params = LaunchParams(port=41003, flash_attn=FlashAttention.AUTO, host="::1")
    plan = build_launch(spec, found(EngineId.OLLAMA, "/usr/local/bin/ollama"), params)
    assert plan.env == {"OLLAMA_HOST": "[::1]:41003", "OLLAMA_ORIGINS": ""}
    assert plan.base_url == "http://[::1]:41003"
    assert plan.expected_model_id is None


def test_mlx_local_folder_goes_offline_with_an_existing_cache() -> None:
    spec = catalog().spec(EngineId.MLX)
    python = "/Users/ольга/venv mlx/bin/python"
    params = LaunchParams(
        model=HF_DIR,
        port=41004,
        draft_model="/Users/ольга/モデル/draft",
        num_draft_tokens=3,
        extra_args=("--max-tokens", "256"),
    )
    plan = build_launch(
        spec, found(EngineId.MLX, python=python), params, hf_hub_cache="/Users/ольга/hf cache"
    )
    assert plan.argv == (
        python, "-m", "mlx_lm.server",
        "--model", HF_DIR,
        "--host", "127.0.0.1",
        "--port", "41004",
        "--draft-model", "/Users/ольга/モデル/draft",
        "--num-draft-tokens", "3",
        "--max-tokens", "256",
    )  # fmt: skip
    assert plan.env == {"HF_HUB_CACHE": "/Users/ольга/hf cache", "HF_HUB_OFFLINE": "1"}
    assert plan.probe_url == "http://127.0.0.1:41004/health"
    assert plan.metrics_url is None
    assert plan.expected_model_id == HF_DIR


def test_mlx_hub_repo_stays_online() -> None:
    spec = catalog().spec(EngineId.MLX)
    params = LaunchParams(model="mlx-community/Qwen2.5-0.5B-Instruct-4bit", port=41005)
    plan = build_launch(spec, found(EngineId.MLX, "/opt/homebrew/bin/mlx_lm.server"), params)
    assert plan.argv[:3] == (
        "/opt/homebrew/bin/mlx_lm.server",
        "--model",
        "mlx-community/Qwen2.5-0.5B-Instruct-4bit",
    )
    assert plan.env == {}
    # /v1/models lists a cached repo only when it has model.safetensors.index.json.
    assert plan.expected_model_id is None


def test_mlx_expects_the_folder_as_the_server_lists_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # mlx_lm.server lists Path(model).resolve(): absolute, links followed, no trailing /.
    real = tmp_path / "модели" / "tiny"
    real.mkdir(parents=True)
    (tmp_path / "link").symlink_to(real)
    monkeypatch.chdir(tmp_path)
    spec = catalog().spec(EngineId.MLX)
    for given in ("./link/", str(tmp_path / "link"), "./модели/tiny"):
        params = LaunchParams(model=given, port=41005)
        plan = build_launch(spec, found(EngineId.MLX, "/usr/bin/mlx_lm.server"), params)
        assert plan.argv[1:3] == ("--model", given)
        assert plan.expected_model_id == str(real.resolve())
        assert plan.env == {"HF_HUB_OFFLINE": "1"}


def test_vllm_serve_every_choice() -> None:
    spec = catalog().spec(EngineId.VLLM)
    params = LaunchParams(
        model="Qwen/Qwen2.5-7B-Instruct",
        port=41006,
        served_name="qwen",
        tensor_parallel=2,
        pipeline_parallel=1,
        gpu_memory_utilization=0.85,
        max_model_len=32768,
        dtype="bfloat16",
        cache_type_k="fp8",
        parallel=64,
    )
    plan = build_launch(spec, found(EngineId.VLLM, "/srv/vllm/bin/vllm"), params, api_key="k-123")
    assert plan.argv == (
        "/srv/vllm/bin/vllm", "serve", "Qwen/Qwen2.5-7B-Instruct",
        "--host", "127.0.0.1",
        "--port", "41006",
        "--served-model-name", "qwen",
        "-tp", "2",
        "-pp", "1",
        "--gpu-memory-utilization", "0.85",
        "--max-model-len", "32768",
        "--dtype", "bfloat16",
        "--kv-cache-dtype", "fp8",
        "--max-num-seqs", "64",
    )  # fmt: skip
    assert plan.env == {
        "VLLM_API_KEY": "k-123",
        "ROUNDHOUSE_ENGINE_KEY": "k-123",
        "PYTHONPATH": str(resource_path("engines", "guard")),
    }
    assert plan.secret_env == ("VLLM_API_KEY", "ROUNDHOUSE_ENGINE_KEY")
    assert "k-123" not in plan.argv
    assert plan.readiness.refused_while_loading
    assert plan.metrics_url == "http://127.0.0.1:41006/metrics"
    assert plan.expected_model_id == "qwen"


def test_vllm_as_a_module_in_a_chosen_python_with_a_local_folder() -> None:
    spec = catalog().spec(EngineId.VLLM)
    python = "/home/пользователь/venv/bin/python"
    folder = "/home/пользователь/模型 dir/Qwen2.5"
    params = LaunchParams(model=folder, port=41007, ctx_size=4096)
    plan = build_launch(spec, found(EngineId.VLLM, python=python), params)
    assert plan.argv == (
        python, "-m", "vllm.entrypoints.openai.api_server",
        "--model", folder,
        "--host", "127.0.0.1",
        "--port", "41007",
        "--max-model-len", "4096",
    )  # fmt: skip
    assert plan.env == {"HF_HUB_OFFLINE": "1"}
    assert plan.expected_model_id == folder


def test_sglang_launch_server() -> None:
    spec = catalog().spec(EngineId.SGLANG)
    python = "/srv/sglang/bin/python"
    params = LaunchParams(
        model="Qwen/Qwen2.5-7B-Instruct",
        port=41008,
        tensor_parallel=2,
        gpu_memory_utilization=0.8,
        ctx_size=8192,
        served_name="qwen",
        parallel=32,
    )
    plan = build_launch(spec, found(EngineId.SGLANG, python=python), params, hf_hub_cache="/c")
    assert plan.argv == (
        python, "-m", "sglang.launch_server",
        "--model-path", "Qwen/Qwen2.5-7B-Instruct",
        "--host", "127.0.0.1",
        "--port", "41008",
        "--tp", "2",
        "--mem-fraction-static", "0.8",
        "--context-length", "8192",
        "--max-running-requests", "32",
        "--enable-metrics",
        "--served-model-name", "qwen",
    )  # fmt: skip
    assert plan.env == {"HF_HUB_CACHE": "/c"}
    assert plan.probe_url == "http://127.0.0.1:41008/health_generate"
    assert plan.metrics_url == "http://127.0.0.1:41008/metrics"


def test_windows_paths_pass_through_and_count_as_local() -> None:
    spec = catalog().spec(EngineId.VLLM)
    folder = "C:\\Users\\Дмитрий\\模型\\Qwen 2.5"
    plan = build_launch(
        spec, found(EngineId.VLLM, python="C:\\py\\python.exe"), LaunchParams(model=folder, port=9)
    )
    assert plan.argv[4] == folder
    assert plan.env == {"HF_HUB_OFFLINE": "1"}


def test_plans_are_immutable() -> None:
    spec = catalog().spec(EngineId.LLAMA_CPP)
    plan = build_launch(spec, found(EngineId.LLAMA_CPP, "x"), LaunchParams(model=GGUF, port=1))
    assert isinstance(plan.argv, tuple)
    with pytest.raises(ValidationError):
        plan.port = 2


@pytest.mark.parametrize(
    ("engine", "model"),
    [(EngineId.MLX, "/models/mlx-q4"), (EngineId.SGLANG, "Qwen/Qwen2.5-7B-Instruct")],
)
def test_python_engines_without_a_key_flag_start_behind_the_guard(
    engine: EngineId, model: str
) -> None:
    spec = catalog().spec(engine)
    plan = build_launch(
        spec,
        found(engine, f"/venv/bin/{engine.value}"),
        LaunchParams(model=model, port=8000),
        api_key="k-9",
    )
    guard = resource_path("engines", "guard")
    assert plan.env["PYTHONPATH"] == str(guard)
    assert (guard / "sitecustomize.py").is_file()
    assert plan.env["ROUNDHOUSE_ENGINE_KEY"] == "k-9"
    assert plan.secret_env == ("ROUNDHOUSE_ENGINE_KEY",)
    assert not any("k-9" in arg for arg in plan.argv)


def test_ollama_takes_no_key_and_never_inherits_open_origins() -> None:
    spec = catalog().spec(EngineId.OLLAMA)
    plan = build_launch(
        spec, found(EngineId.OLLAMA, "ollama"), LaunchParams(port=11434), api_key="k-9"
    )
    # Empty: Ollama's own local list, never an OLLAMA_ORIGINS="*" from the user's shell.
    assert plan.env["OLLAMA_ORIGINS"] == ""
    assert "k-9" not in plan.env.values()


@pytest.mark.parametrize(
    ("model", "listed"),
    [
        ("tiny", "tiny:latest"),
        ("qwen2.5:0.5b", "qwen2.5:0.5b"),
        ("library/tiny", "library/tiny:latest"),
        ("hf.co/org/model-GGUF:Q4_K_M", "hf.co/org/model-GGUF:Q4_K_M"),
        ("localhost:5000/org/model", "localhost:5000/org/model:latest"),
    ],
)
def test_ollama_expects_the_tag_it_lists(model: str, listed: str) -> None:
    # Ollama lists `tiny` as `tiny:latest`: the identity check must expect that name.
    spec = catalog().spec(EngineId.OLLAMA)
    plan = build_launch(spec, found(EngineId.OLLAMA, "ollama"), LaunchParams(model=model, port=1))
    assert plan.expected_model_id == listed
