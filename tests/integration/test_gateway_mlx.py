"""The official `openai` client through the gateway to a real mlx_lm.server (mlx[cpu] on
Linux) serving the tiny HF model: listed, chat with and without streaming, usage asked only
by Roundhouse kept from the client."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import openai
import pytest
from openai import OpenAI

from roundhouse.api.instances import InstanceInfo
from tests.support.serving import mlx, mlx_home, serving

READY_TIMEOUT_S = 90.0
MESSAGES: list[openai.types.chat.ChatCompletionMessageParam] = [
    {"role": "user", "content": "Say hello."}
]


@pytest.fixture(scope="module")
def served(
    mlx_python: str, tiny_hf_model: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[OpenAI, InstanceInfo]]:
    root = mlx_home(tmp_path_factory.mktemp("gateway-mlx") / "home", mlx_python)
    request = mlx(tiny_hf_model)
    with serving(root, request, ready_timeout_s=READY_TIMEOUT_S) as (daemon, [info]):
        client = OpenAI(base_url=daemon.url + "/v1", api_key="unused", max_retries=0, timeout=60)
        yield client, info
        client.close()


def test_models_lists_the_mlx_model(served: tuple[OpenAI, InstanceInfo]) -> None:
    client, info = served
    models = {m.id: m for m in client.models.list()}
    # Started on a folder: listed by the folder's name, never its path (which still routes).
    assert info.models and info.models[0] not in models, models
    name = Path(info.models[0]).name
    assert models[name].owned_by == "mlx"
    reply = client.chat.completions.create(model=name, messages=MESSAGES, max_tokens=2)
    assert reply.choices[0].message.content is not None


def test_chat_without_streaming(served: tuple[OpenAI, InstanceInfo]) -> None:
    client, info = served
    reply = client.chat.completions.create(model=info.models[0], messages=MESSAGES, max_tokens=6)
    assert reply.choices[0].message.role == "assistant"
    assert reply.choices[0].message.content
    assert reply.usage is not None and reply.usage.completion_tokens > 0


def test_chat_streaming_with_and_without_usage(served: tuple[OpenAI, InstanceInfo]) -> None:
    client, info = served
    plain = list(
        client.chat.completions.create(
            model=info.models[0], messages=MESSAGES, max_tokens=6, stream=True
        )
    )
    assert "".join(c.choices[0].delta.content or "" for c in plain if c.choices)
    # The gateway asked mlx_lm for usage to count tokens; this client did not, so it gets
    # no chunk without choices.
    assert all(c.choices for c in plain)
    counted = list(
        client.chat.completions.create(
            model=info.models[0],
            messages=MESSAGES,
            max_tokens=6,
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    assert any(c.usage is not None and c.usage.completion_tokens > 0 for c in counted)


def test_the_model_is_also_known_by_its_folder(
    served: tuple[OpenAI, InstanceInfo], tiny_hf_model: Path
) -> None:
    client, _info = served
    reply = client.chat.completions.create(
        model=str(tiny_hf_model), messages=MESSAGES, max_tokens=4
    )
    assert reply.choices[0].message.content is not None
