"""Images in a chat turn: OpenAI content parts for the engine, and a model that cannot see
told in words, before anything is sent or from the engine's own error."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from roundhouse.api.vision import no_vision_words
from roundhouse.core.errors import InvalidInputError

# Whether the instances serving a model read images: True, False, or None (not known: no
# instance serves it yet, or its engine does not say).
Sees = Callable[[str], bool | None]

# What engines answer an image they cannot read (llama-server without a projector: "image
# input is not supported - hint: ... you may need to provide the mmproj"; vLLM and SGLang
# for a text-only model: "... is not a multimodal model").
_ENGINE_WORDS = ("image input is not supported", "mmproj", "not a multimodal model")


def content(text: str, images: Sequence[str]) -> str | list[dict[str, Any]]:
    """A message's content as the OpenAI API takes it: the text alone, or with images the
    text part then one image_url part per image (data: URLs, checked by the API)."""
    if not images:
        return text
    parts: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    parts += [{"type": "image_url", "image_url": {"url": url}} for url in images]
    return parts


def check_sees(sees: Sees | None, model: str, images: Sequence[str]) -> None:
    """Refuse, before anything is saved or sent, images for a model known not to see."""
    if images and sees is not None and sees(model) is False:
        raise InvalidInputError(no_vision_words(model))


def engine_error(error: str, model: str, had_images: bool) -> str:
    """The engine's refusal of images in the same words as the refusal before sending."""
    lower = error.lower()
    if had_images and any(words in lower for words in _ENGINE_WORDS):
        return no_vision_words(model)
    return error


def has_images(body: dict[str, Any]) -> bool:
    """Whether a chat completion body sends any image."""
    return any(isinstance(m.get("content"), list) for m in body.get("messages", ()))
