"""The bundled engine catalog loads, and holds what detection and the supervisor need."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from roundhouse.api.engines import EngineId, LaunchStyle, ModelFormat, StopMethod, SupportLevel
from roundhouse.core.engines.catalog import (
    CatalogError,
    catalog_file,
    load_catalog,
    platform_for,
)


def test_every_engine_is_there_once() -> None:
    ids = [spec.id for spec in load_catalog().engines]
    assert sorted(ids) == sorted(EngineId)


@pytest.mark.parametrize(
    "engine", [e for e in EngineId if e not in (EngineId.OPENAI_COMPATIBLE, EngineId.EXO)]
)
def test_each_runnable_engine_has_what_the_supervisor_needs(engine: EngineId) -> None:
    spec = load_catalog().spec(engine)
    assert spec.launch in (LaunchStyle.EXECUTABLE, LaunchStyle.PYTHON_MODULE)
    assert spec.executables or spec.python_modules
    assert spec.default_port is not None and 1024 < spec.default_port < 65536
    assert spec.readiness.path.startswith("/")
    assert spec.models_path.startswith("/")
    assert spec.stop == StopMethod.SIGNAL and spec.stop_grace_s > 0
    assert spec.formats and spec.platforms
    if spec.metrics_path is not None:
        assert spec.metric_names
    if spec.launch == LaunchStyle.PYTHON_MODULE:
        assert spec.python_package


def test_ports_probes_and_metrics_match_the_engines_docs() -> None:
    cat = load_catalog()
    llama, ollama = cat.spec(EngineId.LLAMA_CPP), cat.spec(EngineId.OLLAMA)
    vllm, sglang, mlx = cat.spec(EngineId.VLLM), cat.spec(EngineId.SGLANG), cat.spec(EngineId.MLX)
    assert (llama.readiness.path, llama.readiness.loading_statuses) == ("/health", [503])
    assert (llama.metrics_path, llama.metrics_flag) == ("/metrics", "--metrics")
    assert (ollama.default_port, ollama.port_env) == (11434, "OLLAMA_HOST")
    assert ollama.readiness.expect_text == "Ollama is running"
    assert ollama.version_path == "/api/version" and ollama.metrics_path is None
    assert vllm.default_port == 8000 and vllm.readiness.refused_while_loading
    assert "vllm:gpu_cache_usage_perc" in vllm.metric_names  # older name, read both
    assert "vllm:kv_cache_usage_perc" in vllm.metric_names
    assert sglang.default_port == 30000 and sglang.readiness.path == "/health_generate"
    assert sglang.metrics_flag == "--enable-metrics"
    assert mlx.metrics_path is None and mlx.python_modules == ["mlx_lm.server"]
    assert vllm.python_modules == ["vllm.entrypoints.openai.api_server"]
    assert sglang.python_modules == ["sglang.launch_server"]
    assert llama.formats == [ModelFormat.GGUF]
    assert ModelFormat.GGUF not in vllm.formats


def test_openai_compatible_is_attached_not_run() -> None:
    spec = load_catalog().spec(EngineId.OPENAI_COMPATIBLE)
    assert spec.launch == LaunchStyle.ATTACH and spec.stop == StopMethod.DETACH
    assert not spec.executables and spec.default_port is None


def test_exo_is_attached_on_its_port_and_served_models_come_from_its_state() -> None:
    spec = load_catalog().spec(EngineId.EXO)
    assert spec.launch == LaunchStyle.ATTACH and spec.stop == StopMethod.DETACH
    assert spec.default_port == 52415 and not spec.executables
    # /v1/models lists every card exo knows; its cluster state says what is placed.
    assert spec.models_path == "/state/instances"
    # Translated to its chat completions, which carry usage and errors (ADR 38).
    assert spec.native_apis == []


@pytest.mark.parametrize(
    ("system", "machine", "level"),
    [
        ("Darwin", "arm64", SupportLevel.SUPPORTED),
        ("Linux", "x86_64", SupportLevel.EXPERIMENTAL),
        ("Linux", "aarch64", SupportLevel.EXPERIMENTAL),
        ("Darwin", "x86_64", None),
        ("Windows", "AMD64", None),
    ],
)
def test_mlx_runs_on_apple_silicon_and_experimentally_on_linux(
    system: str, machine: str, level: SupportLevel | None
) -> None:
    found = platform_for(load_catalog().spec(EngineId.MLX), system, machine)
    assert (found.support if found else None) == level


def test_vllm_does_not_run_on_macos_or_windows() -> None:
    spec = load_catalog().spec(EngineId.VLLM)
    assert platform_for(spec, "Darwin", "arm64") is None
    assert platform_for(spec, "Windows", "AMD64") is None
    assert platform_for(spec, "Linux", "x86_64") is not None


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "catalog.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_wrong_value_names_the_file_the_engine_and_the_key(tmp_path: Path) -> None:
    text = catalog_file().read_text(encoding="utf-8")
    broken = text.replace('path = "/health_generate"', "path = 42", 1)
    path = _write(tmp_path, broken)
    with pytest.raises(CatalogError) as err:
        load_catalog(path)
    assert str(path) in err.value.detail
    assert "engine 'sglang'.readiness.path" in err.value.detail


def test_bad_toml_names_the_file_and_the_line(tmp_path: Path) -> None:
    path = _write(tmp_path, "[[engine]]\nid = \n")
    with pytest.raises(CatalogError, match=r"not valid TOML.*line 2") as err:
        load_catalog(path)
    assert str(path) in err.value.detail


def test_a_missing_engine_is_named(tmp_path: Path) -> None:
    data = tomllib.loads(catalog_file().read_text(encoding="utf-8"))
    text = catalog_file().read_text(encoding="utf-8")
    start = text.index('[[engine]]\nid = "sglang"')
    end = text.index('[[engine]]\nid = "openai"')
    assert len(data["engine"]) == 7
    with pytest.raises(CatalogError, match="lacks engines: sglang"):
        load_catalog(_write(tmp_path, text[:start] + text[end:]))


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(CatalogError, match="Cannot read the engine catalog"):
        load_catalog(tmp_path / "nope.toml")


def test_the_catalog_is_cached() -> None:
    assert load_catalog() is load_catalog()


def test_an_option_that_is_no_instance_option_is_named(tmp_path: Path) -> None:
    text = catalog_file().read_text(encoding="utf-8")
    broken = text.replace(
        'options = ["parallel", "draft_model"', 'options = ["paralel", "draft_model"'
    )
    assert broken != text
    with pytest.raises(CatalogError, match=r"engine 'mlx'.*not an instance option: paralel"):
        load_catalog(_write(tmp_path, broken))


def test_each_engine_refuses_what_its_options_leave_out() -> None:
    from roundhouse.api.engines import DetectedEngine, FoundBy, LaunchParams
    from roundhouse.core.engines.launch import build_launch
    from roundhouse.core.errors import InvalidInputError

    for spec in load_catalog().engines:
        if not spec.options:
            continue
        detected = DetectedEngine(id=spec.id, found_by=FoundBy.PATH, path="/x/e", where="t")
        params = LaunchParams(model="/m/x.gguf", port=9, threads=2, tensor_parallel=2)
        refused = {"threads", "tensor_parallel"} - set(spec.options)
        if refused:
            with pytest.raises(InvalidInputError):
                build_launch(spec, detected, params)
