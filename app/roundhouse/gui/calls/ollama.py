"""The Ollama the daemon serves or attached to: its models, loaded, shown and removed."""

from __future__ import annotations

from typing import TYPE_CHECKING

from roundhouse.api.ollama import OllamaLoadRequest
from roundhouse.gui.call import Call

if TYPE_CHECKING:
    from roundhouse.gui.daemon_bridge import DaemonBridge


class OllamaCalls:
    """The Ollama the daemon serves or attached to (`instance` picks one; None: the first)."""

    def __init__(self, bridge: DaemonBridge) -> None:
        self._bridge = bridge

    def models(self, instance: str | None = None) -> Call:
        """Answers with the OllamaModelList."""
        return self._bridge.call("list Ollama's models", lambda c: c.ollama_models(instance))

    def loaded(self, instance: str | None = None) -> Call:
        """Answers with the OllamaLoadedList."""
        return self._bridge.call("list loaded models", lambda c: c.ollama_loaded(instance))

    def show(self, model: str, instance: str | None = None) -> Call:
        """Answers with the OllamaShownModel."""
        return self._bridge.call("show a model", lambda c: c.ollama_show(model, instance))

    def load(self, request: OllamaLoadRequest, instance: str | None = None) -> Call:
        return self._bridge.call("load a model", lambda c: c.ollama_load(request, instance))

    def unload(self, model: str, instance: str | None = None) -> Call:
        return self._bridge.call("unload a model", lambda c: c.ollama_unload(model, instance))

    def delete(self, model: str, instance: str | None = None) -> Call:
        return self._bridge.call("delete a model", lambda c: c.ollama_delete(model, instance))
