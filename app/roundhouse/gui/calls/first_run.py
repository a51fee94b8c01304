"""The guide's calls of the daemon, through the bridge: each returns a Call or a Follow."""

from __future__ import annotations

from typing import TYPE_CHECKING

from roundhouse.api.chat import NewConversation, SamplingParams, TurnRequest
from roundhouse.api.downloads import (
    UNFINISHED_STATES,
    DownloadRequest,
    OllamaDownloadRequest,
)
from roundhouse.api.library import ImportRequest
from roundhouse.api.settings import Settings
from roundhouse.api.starters import ServeStarterRequest, StarterOption
from roundhouse.gui.call import Call, Follow
from roundhouse.gui.calls.models import ModelsCalls
from roundhouse.gui.calls.settings import patch_settings

if TYPE_CHECKING:
    from roundhouse.client import DaemonClient
    from roundhouse.gui.daemon_bridge import DaemonBridge


class FirstRunCalls:
    def __init__(self, bridge: DaemonBridge) -> None:
        self._bridge = bridge
        self._models = ModelsCalls(bridge)

    def guide(self, refresh: bool = False) -> Call:
        """Answers with the SetupGuide; `refresh` looks for engines again first."""
        return self._bridge.call("look at this machine", lambda c: c.setup_guide(refresh=refresh))

    def starters(self, engine: str, offline: bool = False) -> Call:
        """Answers with the StarterList for the engine."""
        return self._bridge.call(
            "size the starter models", lambda c: c.starters(engine, offline=offline)
        )

    def import_gguf(self, path: str) -> Call:
        """The Library's import: answers with the LibraryModel the file became."""
        return self._models.import_gguf(ImportRequest(path=path))

    def ollama(self) -> Call:
        """Answers with Ollama's InstanceInfo, attached or started."""
        return self._bridge.call("connect to Ollama", lambda c: c.setup_ollama())

    def download(self, option: StarterOption) -> Call:
        """Queue the option's files (or its Ollama pull); answers with the queue's ids."""

        async def queue(client: DaemonClient) -> set[str]:
            if option.ollama_tag is not None:
                pull = await client.add_ollama_pull(OllamaDownloadRequest(model=option.ollama_tag))
                return {pull.id}
            assert option.repo is not None
            request = DownloadRequest(
                repo=option.repo, files=option.files, pattern=None if option.files else "*"
            )
            view = await client.add_download(request)
            wanted = set(option.files)
            return {
                i.id
                for i in view.items
                if i.repo == option.repo
                and (not wanted or i.path in wanted)
                and i.state in UNFINISHED_STATES
            }

        return self._bridge.call("queue the download", queue)

    @property
    def bridge(self) -> DaemonBridge:
        """The store whose `downloads_changed` and `feed_reset` follow the queue."""
        return self._bridge

    def queue(self) -> Call:
        """Answers with the DownloadQueueView now (the change feed brings its changes)."""
        return self._bridge.call("follow the download", lambda c: c.downloads())

    def act(self, item_id: str, action: str) -> Call:
        """Pause, resume or cancel one item of the queue."""

        async def run(client: DaemonClient) -> object:
            if action == "pause":
                return await client.pause_download(item_id)
            if action == "resume":
                return await client.resume_download(item_id)
            return await client.cancel_download(item_id)

        return self._bridge.call(f"{action} the download", run)

    def serve(self, request: ServeStarterRequest) -> Call:
        """Answers with the ServedStarter once the engine has loaded the model."""
        return self._bridge.call("start the model", lambda c: c.serve_starter(request))

    def reply(self, model: str, prompt: str, max_tokens: int) -> Follow:
        """The first chat's turn, kept by the daemon as a conversation of its own: a
        TurnStarted, ChatDelta items, then the TurnEnded."""
        new = NewConversation(model=model, params=SamplingParams(max_tokens=max_tokens))
        request = TurnRequest(new=new, content=prompt)
        return self._bridge.follow("ask the model", lambda c: c.chat_turn(request))

    def finish(self, model: str | None) -> Call:
        """Mark the guide done; `model` becomes the active model unless one is set."""

        def change(settings: Settings) -> Settings:
            chat = settings.chat
            if model is not None and chat.active_model is None:
                chat = chat.model_copy(update={"active_model": model})
            ui = settings.ui.model_copy(update={"first_run_done": True})
            return settings.model_copy(update={"ui": ui, "chat": chat})

        return patch_settings(self._bridge, "finish the first-run guide", change)
