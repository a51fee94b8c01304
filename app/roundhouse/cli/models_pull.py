"""`roundhouse models pull`: choose the files, queue them in the daemon, and show progress."""

from __future__ import annotations

from contextlib import aclosing
from typing import TYPE_CHECKING

from roundhouse.api.downloads import DownloadItem, DownloadQueueView, DownloadRequest, DownloadState
from roundhouse.api.hub import HubModelDetails
from roundhouse.base.paths import Home
from roundhouse.client import DaemonClient

if TYPE_CHECKING:
    from rich.progress import Progress

_ENDED = frozenset(
    {
        DownloadState.DONE,
        DownloadState.FAILED,
        DownloadState.CANCELLED,
        DownloadState.QUARANTINED,
        DownloadState.PAUSED,
    }
)


def choose_files(page: HubModelDetails, choice: str | None) -> list[str]:
    """The files of the quantization `choice` (any case); with none, the only choice there is."""
    from roundhouse.cli.output import fail

    groups = page.groups
    if choice is None:
        if len(groups) == 1:
            return [f.path for f in groups[0].files]
        names = ", ".join(g.name for g in groups) or "none"
        fail(f"{page.id} has several choices: name one of {names}.", code=2)
    wanted = choice.casefold()
    for group in [*groups, *page.projectors]:
        if wanted in {group.name.casefold(), (group.quantization or "").casefold()}:
            return [f.path for f in group.files]
    names = ", ".join(g.name for g in groups) or "none"
    fail(f"{page.id} has no {choice}: choose one of {names}.", code=2)


async def pull_files(
    home: Home,
    repo: str,
    revision: str,
    choice: str | None,
    files: list[str],
    detach: bool,
    as_json: bool,
    projector: bool = True,
) -> None:
    from roundhouse.cli.output import console, print_json

    async with DaemonClient.for_home(home) as client:
        if not files:
            files = choose_files(await client.hub_model(repo, revision), choice)
            if not as_json:
                await _say_fit(client, repo, revision, choice)
        queued = await client.add_download(
            DownloadRequest(repo=repo, revision=revision, files=files, projector=projector)
        )
        # The daemon adds the vision projector beside a GGUF (ADR 45): it is one of ours too.
        mine = [
            i
            for i in queued.items
            if i.repo == repo and (i.path in set(files) or (projector and _mmproj(i.path)))
        ]
        ids = {i.id for i in mine}
        if detach or as_json:
            if as_json:
                print_json({"items": [i.model_dump(mode="json") for i in mine]})
            else:
                console.print(
                    f"Queued {len(ids)} file(s); follow with `roundhouse models downloads`."
                )
            return
        final = await _show_progress(client, ids)
    _report(final)


def download_progress() -> Progress:
    """The rich progress display of pulls: name, bar, bytes, speed, time left and state."""
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
        TransferSpeedColumn,
    )

    from roundhouse.cli.output import console

    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
        TextColumn("{task.fields[state]}"),
    )
    return Progress(*columns, console=console, transient=False)


async def _show_progress(client: DaemonClient, ids: set[str]) -> list[DownloadItem]:
    from rich.progress import TaskID

    from roundhouse.cli.output import console

    latest: list[DownloadItem] = []
    with download_progress() as progress:
        tasks: dict[str, TaskID] = {}
        try:
            # Closed at once when left: a stream left to the collector fails at exit.
            async with aclosing(client.follow_downloads()) as views:
                async for view in views:
                    latest = _mine(view, ids)
                    for item in latest:
                        if item.id not in tasks:
                            tasks[item.id] = progress.add_task(item.path, total=item.size, state="")
                        state = "stalled, retrying" if item.stalled else item.state.value
                        progress.update(tasks[item.id], completed=item.bytes_done, state=state)
                    if latest and all(i.state in _ENDED for i in latest):
                        break
        except KeyboardInterrupt:  # pragma: no cover - interactive only
            console.print("The download goes on in the daemon: `roundhouse models downloads`.")
    return latest


async def _say_fit(client: DaemonClient, repo: str, revision: str, choice: str | None) -> None:
    """Before the download: will it fit on this machine? (Never a reason not to download.)"""
    from roundhouse.api.fit import FitQuery
    from roundhouse.cli.models_view import fit_line
    from roundhouse.cli.output import console
    from roundhouse.client import ClientError

    try:
        fit = await client.fit_model(FitQuery(repo=repo, revision=revision, group=choice))
    except ClientError as exc:
        console.print(f"[dim]No fit estimate: {exc}[/]", highlight=False)
        return
    console.print(fit_line(fit))


def _mine(view: DownloadQueueView, ids: set[str]) -> list[DownloadItem]:
    return [i for i in view.items if i.id in ids]


def _report(items: list[DownloadItem]) -> None:
    from roundhouse.cli.output import console, fail

    failed = [i for i in items if i.state != DownloadState.DONE]
    for item in items:
        if item.state == DownloadState.DONE:
            console.print(f"[green]✓[/] {item.path} → {item.local_path}", highlight=False)
    if failed:
        lines = "; ".join(
            f"{i.path}: {i.state.value}, {i.error or 'see the queue'}" for i in failed
        )
        fail(f"{lines} (resume with `roundhouse models downloads --resume ID`)")


def _mmproj(path: str) -> bool:
    return "mmproj" in path.rsplit("/", 1)[-1].lower()
