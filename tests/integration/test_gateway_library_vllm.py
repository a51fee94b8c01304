"""A safetensors model in a library folder, with no preset, served by name through the
vLLM stand-in (a real process, strict about its flags): the daemon starts vLLM on the first
request with the model's id as its served name, and says which settings it chose and why."""

from __future__ import annotations

import asyncio
import json
import struct
from pathlib import Path
from typing import Any

import httpx

from roundhouse.api.settings import ModelsSettings, Settings
from roundhouse.client import DaemonClient
from tests.fixtures.chat_templates import write_model
from tests.support.standins import daemon_with, vllm_standin

MODEL = "Qwen3-8B"
SHAPE = {
    "hidden_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "intermediate_size": 128,
    "vocab_size": 1000,
    "max_position_embeddings": 4096,
    "torch_dtype": "float16",
}


def _weights(path: Path) -> None:
    """A small, valid safetensors file: one F16 tensor of four values."""
    header = json.dumps(
        {
            "__metadata__": {"format": "pt"},
            "w": {"dtype": "F16", "shape": [2, 2], "data_offsets": [0, 8]},
        }
    ).encode()
    path.write_bytes(struct.pack("<Q", len(header)) + header + bytes(8))


def test_a_safetensors_library_model_starts_on_vllm_by_name(tmp_path: Path) -> None:
    folder = write_model(tmp_path / "models" / MODEL, "qwen3")
    # How the model is built, as a real config.json says: what the fit estimate sizes it by.
    config = json.loads((folder / "config.json").read_text())
    config.update(SHAPE)
    (folder / "config.json").write_text(json.dumps(config))
    _weights(folder / "model.safetensors")
    work = tmp_path / "work"
    vllm_standin(work / "bin")
    settings = Settings(
        models_dir=str(work / "hub"),
        models=ModelsSettings(library_folders=[str(tmp_path / "models")]),
    )
    with daemon_with(work / "home", settings, [work / "bin"]) as daemon:
        auth = {"authorization": f"Bearer {daemon.token}"}
        listed = httpx.get(daemon.url + "/v1/models", headers=auth, timeout=30).json()
        entry = next(m for m in listed["data"] if m["id"] == MODEL)
        assert entry["roundhouse"]["engine"] == "vllm", entry
        assert entry["roundhouse"]["state"] == "startable"

        reply = httpx.post(
            daemon.url + "/v1/chat/completions",
            headers=auth,
            json={"model": MODEL, "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4},
            timeout=120,
        )
        assert reply.status_code == 200, reply.text
        assert reply.headers["x-roundhouse-engine"] == "vllm"
        assert reply.headers["x-roundhouse-model"] == MODEL

        async def info() -> Any:
            async with DaemonClient(daemon.url, daemon.token) as client:
                return await client.instance(reply.headers["x-roundhouse-instance"])

        started = asyncio.run(info())
        argv = started.argv
        assert argv[argv.index("--served-model-name") + 1] == MODEL
        assert started.options.model == str(folder)
        # The words say what was chosen for vLLM, and why (an estimate, or why there is none).
        # The estimate's context (the model's own 4096 here) as vLLM's --max-model-len, and
        # the words saying so and why.
        assert argv[argv.index("--max-model-len") + 1] == "4096", argv
        words = started.launch_note
        assert words and words.startswith("vLLM, a 4096-token context, chosen by the fit"), words
        served = httpx.get(daemon.url + "/v1/models", headers=auth, timeout=30).json()
        now = next(m for m in served["data"] if m["id"] == MODEL)["roundhouse"]
        assert now["state"] == "serving" and now["launch"] == words
