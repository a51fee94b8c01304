"""The estimate against what the real llama-server allocates, on GGUFs of real layouts.

The files are the well-known models' headers (tests/fixtures/models/gguf_headers.py, the
published Q4_K_M tensor mix) cut to a few blocks, their data a sparse hole of zeros.
llama-server (the tests' CPU build: mmap, no repacking, no warm-up) loads them and logs
every buffer it allocates. A block is a block, so a few suffice: the weights and KV per
block, and the compute buffer, which does not grow with the block count, are compared.
"""

from __future__ import annotations

import re
import subprocess
import threading
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from roundhouse.api.fit import DeviceKind, FitOptions
from roundhouse.core.knowledge.fit import estimate_fit
from roundhouse.core.knowledge.gguf import read_gguf_header, shape_from_gguf
from tests.fixtures.models.gguf_headers import (
    GEMMA_2_9B,
    LLAMA_3_1_8B,
    KnownModel,
    write_known_gguf,
)
from tests.unit.knowledge.test_fit_cases import GIB, MIB, cpu_only

LOAD_TIMEOUT_S = 180


@dataclass(frozen=True)
class Buffers:
    """What llama-server's log says it allocated, in bytes."""

    weights: int
    kv: int
    compute: int  # the compute buffer and the logits' output buffer


def _mib(pattern: str, log: str) -> int:
    return int(sum(float(v) for v in re.findall(pattern, log)) * MIB)


def load_log(argv: list[str]) -> str:
    """Start llama-server, read its log until the model is loaded (or it gives up), stop it."""
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace"
    )
    lines: list[str] = []
    done = threading.Event()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            if "model loaded" in line or "exiting due to" in line:
                done.set()
        done.set()

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    done.wait(LOAD_TIMEOUT_S)
    proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    reader.join(timeout=5)
    return "".join(lines)


def allocated(binary: Path, model: Path, ctx: int, n_parallel: int, flash: bool) -> Buffers:
    argv = [
        str(binary), "-m", str(model), "-c", str(ctx * n_parallel), "-np", str(n_parallel),
        "-fa", "on" if flash else "off", "--no-warmup", "--fit", "off", "--no-repack",
        "-t", "1", "--host", "127.0.0.1", "--port", "0", "-lv", "4",
    ]  # fmt: skip
    log = load_log(argv)
    assert "model loaded" in log, log[-3000:]
    return Buffers(
        weights=_mib(r"model buffer size =\s*([\d.]+) MiB", log),
        kv=_mib(r"KV buffer size =\s*([\d.]+) MiB", log),
        compute=_mib(r"(?:compute|output) buffer size =\s*([\d.]+) MiB", log),
    )


@pytest.fixture(scope="module")
def headers(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Llama-3.1-8B cut to 2 blocks; gemma-2-9b cut to 4 (2 windowed, 2 global)."""
    folder = tmp_path_factory.mktemp("known")
    cut: list[KnownModel] = [replace(LLAMA_3_1_8B, n_layer=2), replace(GEMMA_2_9B, n_layer=4)]
    return {m.key: write_known_gguf(m, folder / f"{m.key}.gguf") for m in cut}


@pytest.mark.parametrize(
    ("key", "ctx", "n_parallel", "flash"),
    [
        (LLAMA_3_1_8B.key, 8192, 1, True),
        (LLAMA_3_1_8B.key, 8192, 1, False),  # the attention scores dominate: 572 MiB
        (LLAMA_3_1_8B.key, 1024, 2, False),  # each of 2 sequences sees its own 1024 cells
        (GEMMA_2_9B.key, 8192, 1, True),  # windowed layers hold 4096 + 512 cells; tied head
    ],
)
def test_estimate_matches_llama_server(
    llama_server_binary: Path,
    headers: dict[str, Path],
    key: str,
    ctx: int,
    n_parallel: int,
    flash: bool,
) -> None:
    path = headers[key]
    header = read_gguf_header(path)
    shape = shape_from_gguf(header)
    if not shape.feed_forward_length:
        # Cut to a few blocks, the file's average bits per weight are the embeddings', so
        # the width the estimate would derive from a block's weights is off: give it.
        ff = header.int_value(f"{header.architecture}.feed_forward_length")
        shape = replace(shape, feed_forward_length=ff or 0)
    options = FitOptions(context_length=ctx, n_parallel=n_parallel, flash_attention=flash)
    report = estimate_fit(shape, cpu_only(ram_free=64 * GIB), options)
    [memory] = [d for d in report.devices if d.kind == DeviceKind.CPU]
    real = allocated(llama_server_binary, path, ctx, n_parallel, flash)
    assert memory.weights_bytes == pytest.approx(real.weights, rel=0.005)
    assert memory.kv_bytes == real.kv
    # The compute buffer within 10% (the formula's error on the measured shapes is <= 5%).
    assert memory.compute_bytes == pytest.approx(real.compute, rel=0.10)
