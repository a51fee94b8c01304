"""Engine command lines are recognised, secrets in them redacted, endpoint URLs normalised."""

from __future__ import annotations

import pytest

from roundhouse.api.engines import EngineId
from roundhouse.core.engines.attach.cmdline import match_cmdline, process_patterns, redact_cmdline
from roundhouse.core.engines.attach.endpoint import endpoint_base_url
from roundhouse.core.engines.catalog import load_catalog
from roundhouse.core.errors import InvalidInputError

PATTERNS = process_patterns(load_catalog())


@pytest.mark.parametrize(
    ("argv", "engine"),
    [
        (["/usr/local/bin/llama-server", "-m", "x.gguf", "--port", "8080"], EngineId.LLAMA_CPP),
        (["C:\\llama\\llama-server.exe", "-m", "x.gguf"], EngineId.LLAMA_CPP),
        (["llama-server"], EngineId.LLAMA_CPP),  # only the name, as for another user's process
        (["/Applications/Ollama.app/Contents/Resources/ollama", "serve"], EngineId.OLLAMA),
        (["ollama.exe", "serve"], EngineId.OLLAMA),
        (["/venv/bin/python3.11", "/venv/bin/vllm", "serve", "org/m"], EngineId.VLLM),
        (["/venv/bin/vllm", "serve", "org/m", "--port", "8001"], EngineId.VLLM),
        (["python", "-m", "vllm.entrypoints.openai.api_server", "--model", "m"], EngineId.VLLM),
        (["python3", "-u", "-m", "sglang.launch_server", "--model-path", "m"], EngineId.SGLANG),
        (["python", "-X", "utf8", "-msglang.launch_server", "--model-path", "m"], EngineId.SGLANG),
        (["/venv/bin/python", "/venv/bin/mlx_lm.server", "--model", "m"], EngineId.MLX),
        (["python3", "-m", "mlx_lm.server", "--model", "m"], EngineId.MLX),
        (["python3", "-m", "mlx_lm", "server", "--model", "m"], EngineId.MLX),
        (["/venv/bin/python", "/venv/bin/mlx_lm", "server"], EngineId.MLX),
        (["Python.exe", "-m", "vllm.entrypoints.openai.api_server"], EngineId.VLLM),
    ],
)
def test_engine_command_lines_are_recognised(argv: list[str], engine: EngineId) -> None:
    pattern = match_cmdline(argv, PATTERNS)
    assert pattern is not None and pattern.engine == engine


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["ollama", "run", "llama3.2"],
        ["ollama", "runner", "--model", "/x", "--port", "40000"],  # Ollama's own workers
        ["ollama"],
        ["vllm", "bench", "serve"],
        ["/venv/bin/python", "/venv/bin/vllm"],
        ["python", "-c", "import vllm; vllm.serve()"],
        ["python", "-m", "mlx_lm", "generate", "--model", "m"],
        ["python", "-m", "tests.fakes.ollama", "serve"],
        ["bash", "-c", "vllm serve m"],
        ["llama-cli", "-m", "x.gguf"],
        ["python"],
        ["python", "-m"],
    ],
)
def test_other_command_lines_are_not_engines(argv: list[str]) -> None:
    assert match_cmdline(argv, PATTERNS) is None


def test_patterns_come_from_the_catalog() -> None:
    by_engine = {(p.engine, p.program, p.module, p.subcommand) for p in PATTERNS}
    assert (EngineId.LLAMA_CPP, "llama-server", None, None) in by_engine
    assert (EngineId.OLLAMA, "ollama", None, "serve") in by_engine
    assert (EngineId.SGLANG, None, "sglang.launch_server", None) in by_engine
    assert not [p for p in PATTERNS if p.engine == EngineId.OPENAI_COMPATIBLE]


@pytest.mark.parametrize(
    ("argv", "shown"),
    [
        (["vllm", "serve", "m", "--api-key", "sk-1"], ["vllm", "serve", "m", "--api-key", "***"]),
        (
            ["llama-server", "--api-key=sk-2", "-m", "x"],
            ["llama-server", "--api-key=***", "-m", "x"],
        ),
        (
            ["x", "--hf-token", "hf_abc", "--hf_token=hf_d"],
            ["x", "--hf-token", "***", "--hf_token=***"],
        ),
        (["x", "--API_KEY", "k"], ["x", "--API_KEY", "***"]),
        (["x", "--max-num-batched-tokens", "8192"], ["x", "--max-num-batched-tokens", "8192"]),
        (["x", "--num-draft-tokens", "4"], ["x", "--num-draft-tokens", "4"]),
        (["x", "--api-key-file", "/etc/key"], ["x", "--api-key-file", "/etc/key"]),
        (["x", "--api-key"], ["x", "--api-key"]),
    ],
)
def test_secret_flag_values_are_redacted(argv: list[str], shown: list[str]) -> None:
    assert redact_cmdline(argv) == shown


@pytest.mark.parametrize(
    ("url", "base"),
    [
        ("http://127.0.0.1:1234", "http://127.0.0.1:1234"),
        ("http://127.0.0.1:1234/", "http://127.0.0.1:1234"),
        ("http://127.0.0.1:1234/v1", "http://127.0.0.1:1234"),
        ("http://127.0.0.1:1234/v1/", "http://127.0.0.1:1234"),
        ("localhost:1337", "http://localhost:1337"),
        ("  https://gpu.example.com/llm/v1  ", "https://gpu.example.com/llm"),
        ("http://[::1]:8080/v1", "http://[::1]:8080"),
    ],
)
def test_endpoint_urls_become_base_urls(url: str, base: str) -> None:
    assert endpoint_base_url(url) == base


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("ftp://host:1234", "not an http:// or https:// URL"),
        ("http://user:sk-secret@host:1234", "not in the URL"),
        ("http://host:1234/v1?key=1", "query or fragment"),
        ("http://host:99999", "invalid port"),
        ("http://:1234", "no host"),
    ],
)
def test_bad_endpoint_urls_are_refused_in_words(url: str, why: str) -> None:
    with pytest.raises(InvalidInputError, match=why):
        endpoint_base_url(url)
