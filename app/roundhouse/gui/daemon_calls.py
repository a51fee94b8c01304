"""The bridge's calls by concern (installs, Ollama, settings): each returns a Call or Follow.

Widgets reach the daemon through these, never through the client; each method names what it
asks for in words, which failures repeat ("could not <what>").
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from roundhouse.api.engines import EngineId
from roundhouse.api.installs import InstallRequest
from roundhouse.api.ollama import OllamaLoadRequest
from roundhouse.api.settings import Settings
from roundhouse.gui.call import Call, Follow

if TYPE_CHECKING:
    from roundhouse.gui.daemon_bridge import DaemonBridge


class InstallCalls:
    """Engine installs (jobs followed live) and llama.cpp's builds."""

    def __init__(self, bridge: DaemonBridge) -> None:
        self._bridge = bridge

    def start(self, engine: EngineId, request: InstallRequest) -> Call:
        """Answers with the InstallJob the daemon started; follow it with `follow`."""
        return self._bridge.call(
            "install an engine", lambda c: c.install_engine(engine.value, request)
        )

    def follow(self, job_id: str) -> Follow:
        """Receives the InstallJob at each change, until it ends."""
        return self._bridge.follow("follow an install", lambda c: c.follow_install(job_id))

    def cancel(self, job_id: str) -> Call:
        return self._bridge.call("cancel an install", lambda c: c.cancel_install(job_id))

    def jobs(self) -> Call:
        """Answers with the InstallJobList: running ones and the last few ended."""
        return self._bridge.call("list installs", lambda c: c.install_jobs())

    def builds(self) -> Call:
        """Answers with the BuildList of llama.cpp."""
        return self._bridge.call("list llama.cpp builds", lambda c: c.llamacpp_builds())

    def use_build(self, tag: str) -> Call:
        return self._bridge.call(
            "switch llama.cpp builds",
            lambda c: c.switch_llamacpp_build(tag),
            lambda _: self._bridge.reload_engines(),
        )

    def remove_build(self, tag: str, *, force: bool = False) -> Call:
        """Answers with the BuildList left; `force` also removes the current build."""
        return self._bridge.call(
            "remove a llama.cpp build",
            lambda c: c.remove_llamacpp_build(tag, force=force),
            lambda _: self._bridge.reload_engines(),
        )

    def remove_venv(self, engine: EngineId) -> Call:
        return self._bridge.call(
            "remove an engine's environment",
            lambda c: c.remove_engine_venv(engine.value),
            lambda _: self._bridge.reload_engines(),
        )


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

    def pull(self, model: str, instance: str | None = None) -> Follow:
        """Receives OllamaPullProgress lines; cancelling it stops the pull."""
        return self._bridge.follow("pull a model", lambda c: c.ollama_pull(model, instance))

    def load(self, request: OllamaLoadRequest, instance: str | None = None) -> Call:
        return self._bridge.call("load a model", lambda c: c.ollama_load(request, instance))

    def unload(self, model: str, instance: str | None = None) -> Call:
        return self._bridge.call("unload a model", lambda c: c.ollama_unload(model, instance))

    def delete(self, model: str, instance: str | None = None) -> Call:
        return self._bridge.call("delete a model", lambda c: c.ollama_delete(model, instance))


class SettingsCalls:
    """The daemon's settings: read, and saved whole (the daemon validates them)."""

    def __init__(self, bridge: DaemonBridge) -> None:
        self._bridge = bridge

    def get(self) -> Call:
        """Answers with the Settings in force."""
        return self._bridge.call("read the settings", lambda c: c.settings())

    def put(self, settings: Settings) -> Call:
        """Answers with the Settings saved; a 422 problem names what the daemon refused."""

        def saved(result: Settings) -> None:
            self._bridge.set_ui_settings(result.ui)

        return self._bridge.call("save the settings", lambda c: c.put_settings(settings), saved)
