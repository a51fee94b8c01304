"""A real llama-server started by `roundhouse engines start` with experts kept in RAM and with
LoRA adapters, on tiny models the test writes; each loads and answers (ADR 48)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import gguf
import httpx
import numpy as np
import pytest

from tests.daemon_process import DaemonProcess
from tests.fixtures.models.tiny_adapters import write_tiny_lora_gguf, write_tiny_moe_gguf
from tests.support import cli


@pytest.fixture
def models(tmp_path: Path) -> Path:
    folder = tmp_path / "модели 模型"
    folder.mkdir()
    write_tiny_moe_gguf(folder / "tiny-moe.gguf")
    write_tiny_lora_gguf(folder / "tiny-lora.gguf")
    return folder


def _start(daemon: DaemonProcess, *args: str) -> dict[str, Any]:
    done = cli.roundhouse(daemon, "engines", "start", "llama.cpp", "-c", "512", "--json", *args)
    assert done.returncode == 0, done.stderr
    info: dict[str, Any] = json.loads(done.stdout)
    assert info["status"] == "ready", info
    return info


def _answers(daemon: DaemonProcess, info: dict[str, Any]) -> None:
    reply = httpx.post(
        f"{info['base_url']}/chat/completions",
        json={"messages": [{"role": "user", "content": "hello"}], "max_tokens": 8},
        headers=daemon.engine_headers(info["id"]),
        timeout=60,
    )
    assert reply.status_code == 200, reply.text
    assert reply.json()["choices"][0]["message"]["content"]


def test_experts_kept_in_ram_load_and_answer(llama_daemon: DaemonProcess, models: Path) -> None:
    info = _start(llama_daemon, "-m", str(models / "tiny-moe.gguf"), "--n-cpu-moe", "1")
    argv = info["argv"]
    assert argv[argv.index("--n-cpu-moe") + 1] == "1"
    assert info["options"]["n_cpu_moe"] == 1
    _answers(llama_daemon, info)


def test_cpu_moe_auto_says_none_are_needed_without_a_gpu(
    llama_daemon: DaemonProcess, models: Path
) -> None:
    done = cli.roundhouse(
        llama_daemon,
        "engines", "start", "llama.cpp", "-m", str(models / "tiny-moe.gguf"),
        "-c", "512", "-ngl", "0", "--n-cpu-moe", "auto",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "--n-cpu-moe auto: no experts need to stay in RAM" in done.stderr
    assert "Traceback" not in done.stderr


def test_lora_adapters_load_and_answer(
    llama_daemon: DaemonProcess, tiny_gguf: Path, models: Path
) -> None:
    lora = str(models / "tiny-lora.gguf")
    info = _start(llama_daemon, "-m", str(tiny_gguf), "--lora", lora, "--lora-scaled", lora, "0.5")
    assert [a["scale"] for a in info["options"]["lora"]] == [1.0, 0.5]
    loaded = httpx.get(
        # The base ends in /v1; llama-server's own routes are at its root.
        f"{info['base_url'].removesuffix('/v1')}/lora-adapters",
        headers=llama_daemon.engine_headers(info["id"]),
        timeout=10,
    )
    assert loaded.status_code == 200, loaded.text
    assert [(Path(a["path"]).name, a["scale"]) for a in loaded.json()] == [
        ("tiny-lora.gguf", 1.0),
        ("tiny-lora.gguf", 0.5),
    ]
    _answers(llama_daemon, info)


def test_a_lora_for_another_model_fails_in_words(
    llama_daemon: DaemonProcess, tiny_gguf: Path, tmp_path: Path
) -> None:
    # An adapter whose tensors do not match the model: llama-server refuses to load it.
    bad = tmp_path / "bad-lora.gguf"
    writer = gguf.GGUFWriter(str(bad), arch="llama")
    writer.add_string("general.type", "adapter")
    writer.add_string("adapter.type", "lora")
    writer.add_float32("adapter.lora.alpha", 8.0)
    writer.add_tensor("blk.0.attn_q.weight.lora_a", np.zeros((4, 32), dtype=np.float32))
    writer.add_tensor("blk.0.attn_q.weight.lora_b", np.zeros((64, 4), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    done = cli.roundhouse(
        llama_daemon, "engines", "start", "llama.cpp", "-m", str(tiny_gguf), "-c", "512",
        "--lora", str(bad),
    )  # fmt: skip
    assert done.returncode != 0
    assert "Traceback" not in done.stderr
    assert "lora" in done.stderr.lower(), done.stderr
