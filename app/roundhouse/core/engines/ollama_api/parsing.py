"""Ollama's JSON answers read into Roundhouse's schemas; fields we do not know are ignored."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel

from roundhouse.api.ollama import (
    OllamaLoadedModel,
    OllamaModel,
    OllamaModelDetails,
    OllamaPullProgress,
    OllamaShownModel,
)

M = TypeVar("M", bound=BaseModel)


def _pick(cls: type[M], data: object, **overrides: object) -> M:
    """Build `cls` from the fields it knows: Ollama's other (and newer) fields are ignored."""
    if not isinstance(data, dict):
        raise ValueError(f"expected a JSON object, got {type(data).__name__}")
    known = {k: v for k, v in data.items() if k in cls.model_fields and v is not None}
    return cls.model_validate(known | overrides)


def _details(data: Mapping[str, Any]) -> OllamaModelDetails:
    details = data.get("details")
    return _pick(OllamaModelDetails, details) if isinstance(details, dict) else OllamaModelDetails()


def _name(data: Mapping[str, Any]) -> object:
    return data.get("name") or data.get("model")


def parse_model(data: object) -> OllamaModel:
    if not isinstance(data, dict):
        raise ValueError("a model entry is not a JSON object")
    return _pick(OllamaModel, data, name=_name(data), details=_details(data))


def parse_loaded(data: object) -> OllamaLoadedModel:
    if not isinstance(data, dict):
        raise ValueError("a loaded-model entry is not a JSON object")
    return _pick(OllamaLoadedModel, data, name=_name(data), details=_details(data))


def parse_shown(name: str, data: object) -> OllamaShownModel:
    if not isinstance(data, dict):
        raise ValueError("the answer is not a JSON object")
    return _pick(OllamaShownModel, data, name=name, details=_details(data))


def parse_progress(data: object) -> OllamaPullProgress:
    return _pick(OllamaPullProgress, data)
