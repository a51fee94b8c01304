"""Images for vision models: a file's bytes as the data: URL a message carries, and the words
a chat shows when its model cannot read them."""

from __future__ import annotations

import base64

from roundhouse.api.chat import check_image_url

# The first bytes of each type a vision engine reads (llama.cpp decodes them with stb_image).
_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)


def image_type(data: bytes) -> str | None:
    """The media type the bytes are, by their signature (never by the file's name)."""
    for magic, media in _MAGIC:
        if data.startswith(magic):
            return media
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def image_data_url(data: bytes, name: str) -> str:
    """`data` as a data:image URL a message carries; ValueError in words when it is not
    a PNG, JPEG, WebP or GIF, or too large."""
    media = image_type(data)
    if media is None:
        raise ValueError(
            f"{name} is not an image a vision model reads: attach a PNG, JPEG, WebP or GIF."
        )
    try:
        return check_image_url(f"data:{media};base64,{base64.b64encode(data).decode('ascii')}")
    except ValueError as exc:
        raise ValueError(f"{name}: {exc}.") from None


def no_vision_words(model: str) -> str:
    """One sentence for every client (the Chat page, quick chat, `roundhouse chat`)."""
    return (
        f"{model} cannot read images: it runs without a vision projector (mmproj). Start a "
        "vision model with its projector (the start dialog's Vision projector, or `roundhouse "
        "engines start llama.cpp --mmproj FILE`), or send the message without the images."
    )
