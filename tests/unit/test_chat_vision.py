"""Images in chat turns: content parts, the engines' refusals in our words, the data: URLs."""

from __future__ import annotations

import pytest

from roundhouse.api.chat import NewMessage, Role
from roundhouse.api.vision import image_data_url, image_type, no_vision_words
from roundhouse.core.chat.turns import history_messages
from roundhouse.core.chat.vision import check_sees, content, engine_error, has_images
from roundhouse.core.errors import InvalidInputError

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16
URL = image_data_url(PNG, "a.png")
# llama-server's answer to an image when it runs without a projector (build b9000-era).
LLAMA_SAYS = (
    "image input is not supported - hint: if this is unexpected, you may need to provide the mmproj"
)


def test_a_message_with_images_is_sent_as_content_parts() -> None:
    sent = history_messages(
        "Be brief.",
        [
            NewMessage(role=Role.USER, content="What is it?", images=(URL, URL)),
            NewMessage(role=Role.ASSISTANT, content="A cat."),
        ],
    )
    assert sent[1] == {
        "role": "user",
        "content": [
            {"type": "text", "text": "What is it?"},
            {"type": "image_url", "image_url": {"url": URL}},
            {"type": "image_url", "image_url": {"url": URL}},
        ],
    }
    assert sent[2] == {"role": "assistant", "content": "A cat."}
    assert has_images({"messages": sent}) and not has_images({"messages": sent[2:]})
    assert content("", (URL,)) == [{"type": "image_url", "image_url": {"url": URL}}]


def test_a_model_that_cannot_see_is_told_in_the_same_words() -> None:
    with pytest.raises(InvalidInputError) as refused:
        check_sees(lambda model: False, "tiny", (URL,))
    assert refused.value.detail == no_vision_words("tiny")
    # Unknown (None) or seeing: the request goes on; no images: nothing to check.
    check_sees(lambda model: None, "tiny", (URL,))
    check_sees(lambda model: False, "tiny", ())
    assert engine_error(LLAMA_SAYS, "tiny", had_images=True) == no_vision_words("tiny")
    assert engine_error(LLAMA_SAYS, "tiny", had_images=False) == LLAMA_SAYS
    assert engine_error("context full", "tiny", had_images=True) == "context full"


def test_image_files_become_data_urls_by_their_bytes() -> None:
    assert URL.startswith("data:image/png;base64,")
    assert image_type(b"\xff\xd8\xff\xe0") == "image/jpeg"
    assert image_type(b"RIFF\x00\x00\x00\x00WEBPVP8 ") == "image/webp"
    assert image_type(b"GIF89a") == "image/gif"
    with pytest.raises(ValueError, match="PNG, JPEG, WebP or GIF"):
        image_data_url(b"%PDF-1.7", "scan.png")
    with pytest.raises(ValueError, match="at most"):
        image_data_url(PNG + b"\x00" * 10_000_000, "huge.png")
