"""The daemon's model services, built and closed together: the download queue and the library."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from pathlib import Path

from roundhouse.base.tasks import cancel_and_wait
from roundhouse.core.errors import RoundhouseError
from roundhouse.server.services import DaemonServices

log = logging.getLogger(__name__)

MODELS_DIR = "models"


def _import_models() -> None:
    # In a thread, so the server answers while huggingface_hub, gguf and numpy load.
    import roundhouse.core.models.downloads.service
    import roundhouse.core.models.fitter
    import roundhouse.core.models.library.service
    import roundhouse.core.models.ollama_pulls.service  # noqa: F401


async def open_models(services: DaemonServices) -> None:
    """Build the library and the download queue; downloads that were running when the last
    daemon stopped continue from their partial files."""
    await asyncio.to_thread(_import_models)
    from roundhouse.core.models.downloads.service import DownloadService
    from roundhouse.core.models.library.ollama_source import default_ollama_access
    from roundhouse.core.models.library.places import hub_cache_dir, library_places
    from roundhouse.core.models.library.service import LibraryService
    from roundhouse.core.models.ollama_pulls.service import OllamaPulls

    data = services.home.data_dir / MODELS_DIR
    data.mkdir(parents=True, exist_ok=True)
    hub = services.hub_service()

    def cache_dir() -> Path:
        # Read per use: a changed `models_dir` applies to the next download.
        return hub_cache_dir(services.settings.models_dir)

    services.library = LibraryService(
        lambda: library_places(
            services.settings.models_dir,
            services.settings.models.library_folders,
            services.home.data_dir,
        ),
        ollama=default_ollama_access(),
        cache_file=data / "library-facts.json",
    )
    downloads = DownloadService(
        data,
        hub_cache=cache_dir,
        settings=lambda: services.settings.models,
        token=hub.tokens.token,
        endpoint=hub.endpoint,
    )
    pulls = OllamaPulls(data, settings=lambda: services.settings.models)
    try:
        # Pulls that ran when the last daemon stopped are pulled again (Ollama resumes).
        await pulls.start()
        services.ollama_pulls = pulls
    except (RoundhouseError, OSError, sqlite3.Error) as exc:
        log.error("The Ollama pulls cannot open: %s", exc)
    try:
        await downloads.start()
    except (RoundhouseError, OSError, sqlite3.Error) as exc:
        # A damaged queue costs the download routes (which say why), not the daemon's start.
        log.error("The download queue cannot open: %s", exc)
        services.downloads_error = f"The download queue cannot open: {exc}"
    else:
        services.downloads = downloads
    try:
        # The gateway serves the library's models by name from its last scan: one now, so
        # the first listing (/v1/models, Ollama's /api/tags) has them without waiting.
        await services.library.scan()
    except (RoundhouseError, OSError) as exc:
        log.error("The model library could not be read: %s", exc)


async def close_models(services: DaemonServices) -> None:
    if services.models_opening is not None and not services.models_opening.done():
        await cancel_and_wait(services.models_opening, reraise=False)
    if services.downloads is not None:
        await services.downloads.close()
    if services.ollama_pulls is not None:
        await services.ollama_pulls.close()
    if services.library is not None:
        await services.library.close()
    if services.hub is not None:
        services.hub.close()
