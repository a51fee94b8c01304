"""Hugging Face Hub: search, a model's page with its files grouped by quantization, the token."""

from roundhouse.core.models.hub.errors import GatedModelError, HubTokenError, HubUnavailableError
from roundhouse.core.models.hub.service import HubService
from roundhouse.core.models.hub.token import SECRET_NAME, HubTokenStore

__all__ = [
    "SECRET_NAME",
    "GatedModelError",
    "HubService",
    "HubTokenError",
    "HubTokenStore",
    "HubUnavailableError",
]
