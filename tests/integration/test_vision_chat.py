"""Images in a chat through a real daemon and the real llama-server: the tiny model with a
tiny projector made by the test (paired from beside the model) reads an attached image; the
same model started without it refuses images in words, from the API and `roundhouse chat`."""

from __future__ import annotations

import asyncio
import base64
import struct
import subprocess
import zlib
from collections.abc import Iterator
from contextlib import aclosing
from dataclasses import dataclass
from pathlib import Path

import pytest

from roundhouse.api.chat import SamplingParams, TurnEnded, TurnRequest, TurnStarted
from roundhouse.api.instances import InstanceInfo
from roundhouse.api.vision import no_vision_words
from roundhouse.client import ApiError, DaemonClient
from tests.daemon_process import DaemonProcess, path_with
from tests.fixtures.models.tiny_llama import write_tiny_llama_gguf
from tests.fixtures.models.tiny_mmproj import N_PATCHES, write_tiny_mmproj_gguf
from tests.support import cli
from tests.support.serving import llama_cpp, serving

SEEING = "tiny-seeing"
BLIND = "tiny-blind"
ONE_TOKEN = SamplingParams(max_tokens=1, temperature=0)


def png(width: int, height: int) -> bytes:
    """A real RGB PNG (a gradient), written without an imaging library."""
    rows = b"".join(
        b"\x00" + bytes(c for x in range(width) for c in (x * 6 % 256, y * 6 % 256, 128))
        for y in range(height)
    )

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


IMAGE = png(40, 30)
IMAGE_URL = "data:image/png;base64," + base64.b64encode(IMAGE).decode()


@dataclass(frozen=True)
class Vision:
    daemon: DaemonProcess
    root: Path
    seeing: InstanceInfo
    blind: InstanceInfo
    projector: Path


@pytest.fixture(scope="module")
def vision(llama_server_binary: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Vision]:
    # The model and its projector side by side, as a vision model's Hub repo has them.
    folder = tmp_path_factory.mktemp("vision") / "视觉 repo"
    folder.mkdir()
    model = write_tiny_llama_gguf(folder / "tiny-vl-F32.gguf", seed=0)
    projector = write_tiny_mmproj_gguf(folder / "mmproj-tiny-vl-f16.gguf", seed=0)
    root = tmp_path_factory.mktemp("vision-home") / "home"
    seeing = llama_cpp(model, ctx_size=512, parallel=1, served_name=SEEING)
    blind = llama_cpp(model, ctx_size=512, parallel=1, served_name=BLIND, mmproj="none")
    env = path_with(llama_server_binary)
    with serving(root, seeing, blind, env=env) as (daemon, [one, two]):
        yield Vision(daemon, root, one, two, projector)


def _client(vision: Vision) -> DaemonClient:
    return DaemonClient(vision.daemon.url, vision.daemon.token)


async def _turn(client: DaemonClient, request: TurnRequest) -> tuple[TurnStarted, TurnEnded]:
    started: TurnStarted | None = None
    async with aclosing(client.chat_turn(request)) as events:
        async for event in events:
            if isinstance(event, TurnStarted):
                started = event
            elif isinstance(event, TurnEnded):
                assert started is not None
                return started, event
    raise AssertionError("no TurnEnded")


def test_the_projector_beside_the_model_is_paired_and_the_instance_says_it_sees(
    vision: Vision,
) -> None:
    argv = vision.seeing.argv
    assert argv[argv.index("--mmproj") + 1] == str(vision.projector)
    assert vision.seeing.vision is True
    assert "--mmproj" not in vision.blind.argv
    assert vision.blind.vision is False


def test_an_image_reaches_the_engine_and_comes_back_from_the_history(vision: Vision) -> None:
    async def scenario() -> None:
        async with _client(vision) as client:
            new = TurnRequest.model_validate(
                {"new": {"model": SEEING}, "content": "What is this?", "params": ONE_TOKEN}
            )
            _, plain = await _turn(client, new)
            started, seen = await _turn(client, new.model_copy(update={"images": (IMAGE_URL,)}))
            assert plain.reply.stats is not None and seen.reply.stats is not None
            assert seen.reply.stats.error is None, seen.reply.stats.error
            assert plain.reply.stats.prompt_tokens is not None
            # The projector turns the 32x32 image into one embedding per 8x8 patch: the
            # engine read the image when the prompt grew by exactly that many tokens.
            assert seen.reply.stats.prompt_tokens == plain.reply.stats.prompt_tokens + N_PATCHES
            assert started.conversation is not None
            conversation = await client.chat(started.conversation.id)
            user = conversation.messages[0]
            assert user.content == "What is this?" and user.images == (IMAGE_URL,)
            # The next turn sends the image again from the history: the prompt holds it.
            follow = TurnRequest(conversation_id=conversation.id, content="And?", params=ONE_TOKEN)
            _, again = await _turn(client, follow)
            assert again.reply.stats is not None and again.reply.stats.error is None

    asyncio.run(scenario())


def test_a_model_without_vision_refuses_images_before_anything_is_sent(vision: Vision) -> None:
    async def scenario() -> None:
        async with _client(vision) as client:
            before = len((await client.chats()).conversations)
            request = TurnRequest.model_validate(
                {"new": {"model": BLIND}, "content": "What is this?", "images": [IMAGE_URL]}
            )
            with pytest.raises(ApiError) as refused:
                await _turn(client, request)
            assert refused.value.problem.detail == no_vision_words(BLIND)
            unsaved = TurnRequest(save=False, model=BLIND, content="x", images=(IMAGE_URL,))
            with pytest.raises(ApiError, match="cannot read images"):
                await _turn(client, unsaved)
            # Nothing was kept: no conversation, no message.
            assert len((await client.chats()).conversations) == before

    asyncio.run(scenario())


def test_roundhouse_chat_attaches_an_image_or_says_the_model_cannot_see(
    vision: Vision, tmp_path: Path
) -> None:
    picture = tmp_path / "фото 1.png"
    picture.write_bytes(IMAGE)
    done = cli.roundhouse(
        vision.root, "chat", SEEING, "--image", str(picture), "-p", "Describe it.",
        "--max-tokens", "1", "--json", stdin=subprocess.DEVNULL, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert '"error": null' in done.stdout
    refused = cli.roundhouse(
        vision.root, "chat", BLIND, "--image", str(picture), "-p", "Describe it.",
        no_color=True, stdin=subprocess.DEVNULL, timeout=60,
    )  # fmt: skip
    assert refused.returncode == 1
    assert "cannot read images" in " ".join(refused.stderr.split())
    not_an_image = tmp_path / "notes.png"
    not_an_image.write_text("plain text")
    wrong = cli.roundhouse(
        vision.root, "chat", SEEING, "--image", str(not_an_image), "-p", "x",
        no_color=True, stdin=subprocess.DEVNULL, timeout=60,
    )  # fmt: skip
    assert wrong.returncode == 1 and "PNG, JPEG, WebP or GIF" in " ".join(wrong.stderr.split())


def test_engines_start_takes_a_projector_from_elsewhere(vision: Vision, tmp_path: Path) -> None:
    # The model alone in its folder: nothing to pair, so the projector is named.
    model = write_tiny_llama_gguf(tmp_path / "alone.gguf", seed=0)
    done = cli.roundhouse(
        vision.root, "engines", "start", "llama.cpp", "-m", str(model), "--mmproj",
        str(vision.projector), "--served-name", "named-projector", "--json",
        stdin=subprocess.DEVNULL, timeout=90,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    info = InstanceInfo.model_validate_json(done.stdout)
    try:
        assert info.argv[info.argv.index("--mmproj") + 1] == str(vision.projector)
        assert info.vision is True
    finally:
        cli.roundhouse(vision.root, "engines", "stop", info.id, stdin=subprocess.DEVNULL)
    missing = cli.roundhouse(
        vision.root, "engines", "start", "llama.cpp", "-m", str(model), "--mmproj",
        str(tmp_path / "gone.gguf"), no_color=True, stdin=subprocess.DEVNULL, timeout=60,
    )  # fmt: skip
    assert missing.returncode == 1 and "not a file here" in " ".join(missing.stderr.split())
