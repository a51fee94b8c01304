"""A model on one machine served through another's gateway: two real daemons paired through the
real flow over TLS, a real llama-server on alpha; beta lists alpha's model and serves it to the
official OpenAI, Anthropic and Ollama clients with the same greedy output as alpha itself; a
name beta can start itself stays beta's and alpha's is `alpha/name`; unpairing takes the model
off beta at once."""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import ollama
import pytest
from anthropic import Anthropic
from openai import OpenAI

from roundhouse.api.settings import ModelsSettings
from tests.daemon_process import DaemonProcess, path_with
from tests.support.peers import pair, peer_daemon, peers_of

MODEL = "tiny-far"
PROMPT = "Say something about trains."


@dataclass
class Machines:
    alpha: DaemonProcess  # runs the model
    beta: DaemonProcess  # paired with alpha
    alpha_id: str
    twin: Path  # a folder with a model of the same name


@pytest.fixture(scope="module")
def machines(
    llama_server_binary: Path, tiny_gguf: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Machines]:
    base = tmp_path_factory.mktemp("peer-gateway")
    folder = base / "models"
    folder.mkdir()
    shutil.copy(tiny_gguf, folder / f"{MODEL}.gguf")
    # Beta can start a model of the same name itself once this folder is in its library.
    twin = base / "twin"
    twin.mkdir()
    shutil.copy(tiny_gguf, twin / f"{MODEL}.gguf")
    env = {**path_with(llama_server_binary), "HF_HUB_CACHE": str(base / "hf")}
    with (
        peer_daemon(
            base / "alpha",
            "alpha",
            env=env,
            models=ModelsSettings(library_folders=[str(folder)]),
            models_dir=str(base / "hf"),
        ) as alpha,
        peer_daemon(base / "beta", "beta", models_dir=str(base / "hf-b")) as beta,
    ):
        # The model running on alpha (its gateway starts it on a first request).
        _chat(alpha, MODEL)
        alpha_id = pair(beta, alpha)["id"]
        yield Machines(alpha, beta, alpha_id, twin)


def _openai(daemon: DaemonProcess) -> OpenAI:
    return OpenAI(base_url=daemon.url + "/v1", api_key="unused", max_retries=0, timeout=120)


def _chat(daemon: DaemonProcess, model: str) -> str:
    reply = _openai(daemon).chat.completions.create(
        model=model,
        messages=[{"role": "user", "content": PROMPT}],
        max_tokens=12,
        temperature=0,
        seed=7,
    )
    return reply.choices[0].message.content or ""


def _listed(daemon: DaemonProcess) -> dict[str, dict[str, Any]]:
    with daemon.control() as client:
        models = client.get("/api/v1/gateway/models").json()["models"]
    return {m["id"]: m for m in models}


def _wait_listed(daemon: DaemonProcess, model: str, timeout_s: float = 30.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = _listed(daemon).get(model)
        if found is not None and found["state"] == "serving":
            return found
        time.sleep(0.2)
    raise AssertionError(f"{model} never listed as serving; listed: {sorted(_listed(daemon))}")


def test_a_paired_machines_model_is_listed_and_served_to_every_client(
    machines: Machines,
) -> None:
    alpha, beta = machines.alpha, machines.beta
    entry = _wait_listed(beta, MODEL)
    # Unique: its id unchanged; its instance named by the machine.
    assert entry["instance"].startswith(f"{machines.alpha_id}:")
    assert MODEL in [m.id for m in _openai(beta).models.list().data]
    assert MODEL in [m.model for m in ollama.Client(host=beta.url, timeout=60).list().models]

    # Greedy output through beta equals alpha's own.
    assert _chat(beta, MODEL) == _chat(alpha, MODEL) != ""

    streamed = _openai(beta).chat.completions.create(
        model=MODEL,
        messages=[{"role": "user", "content": PROMPT}],
        max_tokens=12,
        temperature=0,
        seed=7,
        stream=True,
    )
    text = "".join(c.choices[0].delta.content or "" for c in streamed if c.choices)
    assert text == _chat(alpha, MODEL)

    message = Anthropic(base_url=beta.url, api_key="unused", max_retries=0, timeout=120)
    answer = message.messages.create(
        model=MODEL,
        max_tokens=12,
        messages=[{"role": "user", "content": PROMPT}],
    )
    assert answer.content and answer.content[0].type == "text"

    said = ollama.Client(host=beta.url, timeout=120).chat(
        model=MODEL,
        messages=[{"role": "user", "content": PROMPT}],
        options={"temperature": 0, "num_predict": 12, "seed": 7},
    )
    assert said.message.content

    # Which instance served it: alpha's, as beta names it.
    with httpx.Client(base_url=beta.url, timeout=120) as client:
        reply = client.post(
            "/v1/chat/completions",
            json={"model": MODEL, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2},
        )
    assert reply.status_code == 200, reply.text
    assert reply.headers["x-roundhouse-instance"].startswith(f"{machines.alpha_id}:")


def test_a_name_this_machine_can_start_stays_its_own(machines: Machines) -> None:
    alpha, beta = machines.alpha, machines.beta
    with beta.control() as client:
        settings = client.get("/api/v1/settings").json()
        settings["models"]["library_folders"] = [str(machines.twin)]
        saved = client.put("/api/v1/settings", json=settings)
        assert saved.status_code == 200, saved.text
        client.get("/api/v1/library", timeout=60)
    far = _wait_listed(beta, f"alpha/{MODEL}")
    assert far["instance"].startswith(f"{machines.alpha_id}:")
    assert _listed(beta)[MODEL]["state"] == "startable"
    assert _chat(beta, f"alpha/{MODEL}") == _chat(alpha, MODEL)


def test_unpairing_takes_the_models_off_at_once(machines: Machines) -> None:
    alpha, beta = machines.alpha, machines.beta
    far = f"alpha/{MODEL}"  # (beta can start MODEL itself since the test before)
    _wait_listed(beta, far)
    with beta.control() as client:
        removed = client.delete(f"/api/v1/peers/{machines.alpha_id}")
    assert removed.status_code == 200, removed.text
    assert peers_of(beta) == [] and peers_of(alpha) == []
    assert far not in _listed(beta)
    with httpx.Client(base_url=beta.url, timeout=60) as client:
        refused = client.post(
            "/v1/chat/completions",
            json={"model": far, "messages": [{"role": "user", "content": "hi"}]},
        )
    assert refused.status_code == 404
