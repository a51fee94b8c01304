"""The daemon's model services, opened together beside the server's start and closed together:
the Hub, the library, the download queue, Ollama's pulls and the fit estimate."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from roundhouse.base.tasks import cancel_and_wait
from roundhouse.core.errors import RoundhouseError, ServiceUnavailableError
from roundhouse.core.infra.jobs import JobBoard
from roundhouse.core.models.queue import DownloadQueue
from roundhouse.server.services import DaemonState

if TYPE_CHECKING:
    # Imported in a thread as they open: the models' libraries (huggingface_hub, gguf, numpy)
    # would add a third of a second to every daemon start.
    from roundhouse.core.models.downloads.service import DownloadService
    from roundhouse.core.models.fitter import ModelFitter
    from roundhouse.core.models.hub.service import HubService
    from roundhouse.core.models.library.service import LibraryService
    from roundhouse.core.models.ollama_pulls.service import OllamaPulls

log = logging.getLogger(__name__)

MODELS_DIR = "models"


@dataclass
class ModelServices:
    hub: HubService
    library: LibraryService
    fitter: ModelFitter
    downloads: DownloadService
    pulls: OllamaPulls
    # Why the download queue or the pulls could not open: a damaged queue costs their
    # routes (which say why), not the daemon's start.
    downloads_error: str | None = None
    pulls_open: bool = False
    # The queue users see: the files and the pulls as one (built in the core).
    queue: DownloadQueue = field(init=False)

    def __post_init__(self) -> None:
        self.queue = DownloadQueue(self.open_downloads, self.pulls_if_open, self.pulls_closed)

    def open_downloads(self) -> DownloadService:
        if self.downloads_error is not None:
            raise ServiceUnavailableError(self.downloads_error)
        return self.downloads

    def open_pulls(self) -> OllamaPulls:
        if not self.pulls_open:
            raise ServiceUnavailableError(
                self.downloads_error or "The queue of Ollama pulls is not open."
            )
        return self.pulls

    def pulls_if_open(self) -> OllamaPulls | None:
        return self.pulls if self.pulls_open else None

    def pulls_closed(self) -> ServiceUnavailableError:
        return ServiceUnavailableError(
            self.downloads_error or "The queue of Ollama pulls is not open."
        )


class ModelsOpening:
    """The model services from the daemon's start: they open beside the server's start (in
    a thread for the imports, then the queues and the library's first scan), and `ready()`
    waits for that."""

    def __init__(self, state: DaemonState, jobs: JobBoard) -> None:
        self._state = state
        self._jobs = jobs
        self._built: ModelServices | None = None
        self._task = asyncio.create_task(self._open(), name="models-opening")

    async def ready(self) -> ModelServices:
        """The model services once open (at once, after the daemon's start)."""
        return await asyncio.shield(self._task)

    async def wait(self) -> None:
        await self.ready()

    def now(self) -> ModelServices | None:
        """The services as built so far, without waiting: None in the first moments, and
        the library without a scan until its first one ends."""
        return self._built

    async def _open(self) -> ModelServices:
        """Build the library and the download queue; downloads that were running when the
        last daemon stopped continue from their partial files."""
        await asyncio.to_thread(_import_models)
        models = self._built = _build(self._state, self._jobs)
        try:
            # Pulls that ran when the last daemon stopped are pulled again (Ollama resumes).
            await models.pulls.start()
            models.pulls_open = True
        except (RoundhouseError, OSError, sqlite3.Error) as exc:
            log.error("The Ollama pulls cannot open: %s", exc)
        try:
            await models.downloads.start()
        except (RoundhouseError, OSError, sqlite3.Error) as exc:
            log.error("The download queue cannot open: %s", exc)
            models.downloads_error = f"The download queue cannot open: {exc}"
        try:
            # The gateway serves the library's models by name from its last scan: one now,
            # so the first listing (/v1/models, Ollama's /api/tags) has them without waiting.
            await models.library.scan()
        except (RoundhouseError, OSError) as exc:
            log.error("The model library could not be read: %s", exc)
        return models

    async def close(self) -> None:
        if not self._task.done():
            await cancel_and_wait(self._task, reraise=False)
        models = self._built
        if models is None:
            return
        if models.downloads_error is None:
            await models.downloads.close()
        if models.pulls_open:
            await models.pulls.close()
        await models.library.close()
        models.hub.close()


def _import_models() -> None:
    # In a thread, so the server answers while huggingface_hub, gguf and numpy load.
    import roundhouse.core.models.downloads.service
    import roundhouse.core.models.fitter
    import roundhouse.core.models.hub.service
    import roundhouse.core.models.library.service
    import roundhouse.core.models.ollama_pulls.service  # noqa: F401


def _build(state: DaemonState, jobs: JobBoard) -> ModelServices:
    from roundhouse.core.models.downloads.service import DownloadService
    from roundhouse.core.models.fitter import ModelFitter
    from roundhouse.core.models.hub.service import HubService
    from roundhouse.core.models.library.ollama_source import default_ollama_access
    from roundhouse.core.models.library.places import hub_cache_dir, library_places
    from roundhouse.core.models.library.service import LibraryService
    from roundhouse.core.models.ollama_pulls.service import OllamaPulls

    data = state.home.data_dir / MODELS_DIR
    data.mkdir(parents=True, exist_ok=True)
    # The endpoint is HF_ENDPOINT's (huggingface_hub reads it), else huggingface.co.
    hub = HubService()

    def cache_dir() -> Path:
        # Read per use: a changed `models_dir` applies to the next download.
        return hub_cache_dir(state.settings.models_dir)

    library = LibraryService(
        lambda: library_places(
            state.settings.models_dir, state.settings.models.library_folders, state.home.data_dir
        ),
        ollama=default_ollama_access(),
        cache_file=data / "library-facts.json",
    )
    return ModelServices(
        hub=hub,
        library=library,
        fitter=ModelFitter(hub, library, state.inventory),
        downloads=DownloadService(
            data,
            hub_cache=cache_dir,
            settings=lambda: state.settings.models,
            token=hub.tokens.token,
            endpoint=hub.endpoint,
            jobs=jobs,
        ),
        pulls=OllamaPulls(data, settings=lambda: state.settings.models, jobs=jobs),
    )
