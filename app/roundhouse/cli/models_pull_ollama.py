"""`roundhouse models pull ollama:NAME[:TAG]`: queue a pull through Ollama and show progress."""

from __future__ import annotations

from contextlib import aclosing

from roundhouse.api.downloads import (
    DownloadQueueView,
    DownloadState,
    OllamaDownloadRequest,
    OllamaPullItem,
)
from roundhouse.base.paths import Home
from roundhouse.client import DaemonClient

OLLAMA_SCHEME = "ollama:"
_ENDED = frozenset(
    {DownloadState.DONE, DownloadState.FAILED, DownloadState.CANCELLED, DownloadState.PAUSED}
)


def ollama_model(repo: str) -> str | None:
    """'ollama:qwen2.5:0.5b' -> 'qwen2.5:0.5b'; None for a Hub repository."""
    if not repo.startswith(OLLAMA_SCHEME):
        return None
    return repo[len(OLLAMA_SCHEME) :]


def state_words(item: OllamaPullItem) -> str:
    """'pulling 3f2a…', 'stalled', 'verifying sha256 digest', 'done'."""
    if item.state == DownloadState.DOWNLOADING:
        return "stalled" if item.stalled else (item.status or "starting")
    if item.state == DownloadState.VERIFYING:
        return item.status or "verifying"
    return item.state.value


async def pull_ollama(
    home: Home, model: str, instance: str | None, detach: bool, as_json: bool
) -> None:
    from roundhouse.cli.output import console, print_json

    async with DaemonClient.for_home(home) as client:
        item = await client.add_ollama_pull(OllamaDownloadRequest(model=model, instance=instance))
        if detach or as_json:
            if as_json:
                print_json({"items": [item.model_dump(mode="json")]})
            else:
                console.print(
                    f"Queued the pull of {item.model} into Ollama at {item.base_url} ({item.id}); "
                    "follow it with `roundhouse models downloads`.",
                    highlight=False,
                )
            return
        final = await _show_progress(client, item)
    _report(final)


async def _show_progress(client: DaemonClient, item: OllamaPullItem) -> OllamaPullItem:
    from roundhouse.cli.models_pull import download_progress
    from roundhouse.cli.output import console

    latest = item
    with download_progress() as progress:
        # The total is unknown until Ollama has read the manifest: a pulsing bar till then.
        task = progress.add_task(f"ollama {item.model}", total=None, state="queued")
        try:
            # Closed at once when left: a stream left to the collector fails at exit.
            async with aclosing(client.follow_downloads()) as views:
                async for view in views:
                    found = _mine(view, item.id)
                    if found is None:
                        continue
                    latest = found
                    total = latest.size or None
                    progress.update(
                        task, total=total, completed=latest.bytes_done, state=state_words(latest)
                    )
                    if latest.state in _ENDED:
                        break
        except KeyboardInterrupt:  # pragma: no cover - interactive only
            console.print("The pull goes on in the daemon: `roundhouse models downloads`.")
    return latest


def _mine(view: DownloadQueueView, item_id: str) -> OllamaPullItem | None:
    return next((i for i in view.ollama if i.id == item_id), None)


def _report(item: OllamaPullItem) -> None:
    from roundhouse.cli.output import console, fail

    if item.state == DownloadState.DONE:
        console.print(f"[green]✓[/] Pulled {item.model} into Ollama at {item.base_url}.")
        return
    if item.state == DownloadState.FAILED:
        fail(f"The pull of {item.model} failed: {item.error or 'Ollama did not say why.'}")
    fail(
        f"The pull of {item.model} is {item.state.value}; resume it with "
        f"`roundhouse models downloads --resume {item.id}`."
    )
