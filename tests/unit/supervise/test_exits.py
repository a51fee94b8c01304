"""Exit classification on recorded log tails."""

from __future__ import annotations

import signal

import pytest

from roundhouse.core.supervise.exits import ExitKind, classify_exit

# Tails as engines print them (llama.cpp, vLLM, a broken install).
CUDA_OOM = [
    "llama_model_load_from_file_impl: using device CUDA0 (NVIDIA GeForce RTX 3060) - 11911 MiB",
    "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 9120.00 MiB on device 0: "
    "cudaMalloc failed: out of memory",
    "alloc_tensor_range: failed to allocate CUDA0 buffer of size 9563013120",
    "llama_model_load: error loading model: unable to allocate CUDA0 buffer",
    "common_init_from_params: failed to load model '/models/big.gguf'",
    "main: exiting due to model loading error",
]
TORCH_OOM = [
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.",
]
PORT = [
    "main: HTTP server is listening, hostname: 127.0.0.1, port: 8080",
    "bind: Address already in use",
    "main: couldn't bind HTTP server socket, hostname: 127.0.0.1, port: 8080",
]
BAD_MAGIC = [
    "gguf_init_from_file_impl: invalid magic characters: 'PK\\x03\\x04', expected 'GGUF'",
    "llama_model_load: error loading model: llama_model_loader: failed to load model from x",
    "common_init_from_params: failed to load model 'x.gguf'",
]
ARCH = ["llama_model_load: error loading model: unknown model architecture: 'qwen9'"]
SHARED_LIB = [
    "llama-server: error while loading shared libraries: libcudart.so.12: "
    "cannot open shared object file: No such file or directory"
]
PY_MODULE = [
    "Traceback (most recent call last):",
    "ModuleNotFoundError: No module named 'vllm._C'",
]
DLL = ["ImportError: DLL load failed while importing _C: The specified module was not found."]


@pytest.mark.parametrize(
    ("returncode", "tail", "kind"),
    [
        (1, CUDA_OOM, ExitKind.OUT_OF_MEMORY),
        (1, TORCH_OOM, ExitKind.OUT_OF_MEMORY),
        (
            -signal.SIGABRT,
            ["terminate called after throwing 'std::bad_alloc'"],
            ExitKind.OUT_OF_MEMORY,
        ),
        (1, PORT, ExitKind.PORT_TAKEN),
        (1, BAD_MAGIC, ExitKind.BAD_MODEL),
        (1, ARCH, ExitKind.BAD_MODEL),
        (127, SHARED_LIB, ExitKind.MISSING_LIBRARY),
        (1, PY_MODULE, ExitKind.MISSING_LIBRARY),
        (1, DLL, ExitKind.MISSING_LIBRARY),
        (-signal.SIGSEGV, ["slot update_slots: id 0 | task 3 | prompt done"], ExitKind.CRASH),
        (-signal.SIGABRT, ["GGML_ASSERT(n_tokens > 0) failed"], ExitKind.CRASH),
        (0xC0000005, [], ExitKind.CRASH),
        (-signal.SIGKILL, [], ExitKind.KILLED),
        (0, ["main: server is listening"], ExitKind.CLEAN),
        (2, ["error: invalid argument: --bogus"], ExitKind.ERROR),
    ],
)
def test_classify_recorded_tails(returncode: int, tail: list[str], kind: ExitKind) -> None:
    outcome = classify_exit(returncode, tail)
    assert outcome.kind == kind
    assert outcome.transient == (kind == ExitKind.CRASH)
    assert not outcome.by_us


def test_out_of_memory_wins_over_the_model_load_failure_it_causes() -> None:
    outcome = classify_exit(1, CUDA_OOM)
    assert outcome.kind == ExitKind.OUT_OF_MEMORY
    assert "cudaMalloc failed" in outcome.message


def test_a_clean_exit_is_not_blamed_on_old_log_lines() -> None:
    # An engine that mentions "out of memory" in passing and exits 0 ended cleanly.
    assert classify_exit(0, ["retrying after out of memory"]).kind == ExitKind.CLEAN


def test_stopped_by_us() -> None:
    assert classify_exit(-signal.SIGTERM, [], by_us=True).kind == ExitKind.STOPPED
    assert classify_exit(0, [], by_us=True).kind == ExitKind.STOPPED
    killed = classify_exit(-signal.SIGKILL, [], by_us=True, killed=True)
    assert killed.kind == ExitKind.KILLED
    assert not killed.transient
    # Windows: TerminateProcess leaves exit code 1, the flag says it was a kill.
    assert classify_exit(1, [], by_us=True, killed=True).kind == ExitKind.KILLED


def test_str_has_wording_status_and_last_lines() -> None:
    text = str(classify_exit(-signal.SIGSEGV, ["a", "b", "last words"]))
    assert text.startswith("The engine crashed (signal SIGSEGV).")
    assert text.endswith("Last log lines:\na\nb\nlast words")
    assert "exit code 1" in str(classify_exit(1, PORT))


def test_tail_is_bounded() -> None:
    outcome = classify_exit(3, [f"line {i}" for i in range(100)], tail_lines=5)
    assert outcome.log_tail == ("line 95", "line 96", "line 97", "line 98", "line 99")
