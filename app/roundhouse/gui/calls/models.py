"""The Models page's calls to the daemon (Hub, downloads, library, fit): each a Call.

Widgets reach the daemon through these, never through the client; each names what it asks
for in words, which failures repeat ("could not <what>").
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from roundhouse.api.downloads import DownloadRequest, OllamaDownloadRequest
from roundhouse.api.fit import FitQuery
from roundhouse.api.hub import HubSearchRequest
from roundhouse.api.library import ImportRequest
from roundhouse.api.rpc import SplitQuery
from roundhouse.gui.call import Call

if TYPE_CHECKING:
    from roundhouse.gui.daemon_bridge import DaemonBridge


class ModelsCalls:
    """Hugging Face search and model pages, the token, the download queue and the library."""

    def __init__(self, bridge: DaemonBridge) -> None:
        self._bridge = bridge

    # -- the Hub ------------------------------------------------------------------------

    def search(self, request: HubSearchRequest) -> Call:
        """Answers with the HubSearchResult."""
        return self._bridge.call("search Hugging Face", lambda c: c.hub_search(request))

    def model(self, repo: str, revision: str = "main") -> Call:
        """Answers with the HubModelDetails: the card and the files by quantization."""
        return self._bridge.call("read the model's page", lambda c: c.hub_model(repo, revision))

    def token_status(self, *, check: bool = False) -> Call:
        """Answers with the HubTokenStatus (`check`: ask the Hub whether it is valid)."""
        return self._bridge.call(
            "read the Hugging Face token", lambda c: c.hub_token_status(check=check)
        )

    def set_token(self, token: str) -> Call:
        """Answers with the HubTokenStatus after storing it in the keyring."""
        return self._bridge.call("save the Hugging Face token", lambda c: c.set_hub_token(token))

    def clear_token(self) -> Call:
        return self._bridge.call("remove the Hugging Face token", lambda c: c.clear_hub_token())

    def fit(self, query: FitQuery) -> Call:
        """Answers with the ModelFit: the verdict for this machine, its breakdown and advice."""
        return self._bridge.call("estimate whether it fits", lambda c: c.fit_model(query))

    def split(self, query: SplitQuery) -> Call:
        """Answers with the SplitProposal over this machine and the workers' free memory."""
        return self._bridge.call("propose a split", lambda c: c.propose_split(query))

    # -- downloads ----------------------------------------------------------------------

    def add_download(self, request: DownloadRequest) -> Call:
        """Answers with the DownloadQueueView; refused (not enough disk, ...) in words."""
        return self._bridge.call("queue the download", lambda c: c.add_download(request))

    def downloads(self) -> Call:
        """Answers with the DownloadQueueView (the change feed brings it after)."""
        return self._bridge.call("read the download list", lambda c: c.downloads())

    def add_ollama_pull(self, request: OllamaDownloadRequest) -> Call:
        """Answers with the OllamaPullItem queued; it runs in the queue like a download."""
        return self._bridge.call("queue the Ollama pull", lambda c: c.add_ollama_pull(request))

    def pause(self, item_id: str) -> Call:
        return self._bridge.call("pause the download", lambda c: c.pause_download(item_id))

    def resume(self, item_id: str) -> Call:
        return self._bridge.call("resume the download", lambda c: c.resume_download(item_id))

    def cancel(self, item_id: str) -> Call:
        return self._bridge.call("cancel the download", lambda c: c.cancel_download(item_id))

    def clear_finished(self) -> Call:
        """Answers with the DownloadQueueView left."""
        return self._bridge.call(
            "clear the finished downloads", lambda c: c.clear_finished_downloads()
        )

    # -- the library --------------------------------------------------------------------

    def library(self, *, refresh: bool = False) -> Call:
        """Answers with the LibraryList."""
        return self._bridge.call("list the local models", lambda c: c.library(refresh=refresh))

    def delete(self, model_id: str, *, dry_run: bool = False) -> Call:
        """Answers with the DeleteResult: what was (or, for a dry run, would be) freed."""
        return self._bridge.call(
            "delete the model", lambda c: c.delete_library_model(model_id, dry_run=dry_run)
        )

    def import_gguf(self, request: ImportRequest) -> Call:
        """Answers with the LibraryModel imported."""
        return self._bridge.call("import the GGUF file", lambda c: c.import_gguf(request))
