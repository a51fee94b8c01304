"""What is worth a notification, in plain sentences: read from the change feed's states.

The feed carries whole states, never "this happened". `FeedNotices` remembers the last state
of each instance and download it heard of and turns a change between two states into
sentences: a download that finished or failed, an engine that stopped unexpectedly (and
whether it was restarted), a model the gateway loaded because a request asked for it, a
newer Roundhouse. The first state it hears of a thing is where it starts from: what was
already so when the app connected is not news. Qt-free, so the words are tested alone.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from enum import StrEnum
from pathlib import PurePosixPath

from roundhouse.api.downloads import DownloadItem, DownloadQueueView, DownloadState, OllamaPullItem
from roundhouse.api.instances import InstanceInfo, InstanceOrigin, InstanceStatus
from roundhouse.api.updates import UpdateStatus


class NoticeKind(StrEnum):
    """Each kind is a field of the `notifications` settings section, so each can be off."""

    DOWNLOAD_FINISHED = "download_finished"
    DOWNLOAD_FAILED = "download_failed"
    ENGINE_CRASHED = "engine_crashed"
    MODEL_LOADED = "model_loaded"
    UPDATE_AVAILABLE = "update_available"


# The title of a notification of each kind, and of several of one kind told at once.
TITLES = {
    NoticeKind.DOWNLOAD_FINISHED: ("Download finished", "Downloads finished"),
    NoticeKind.DOWNLOAD_FAILED: ("Download failed", "Downloads failed"),
    NoticeKind.ENGINE_CRASHED: ("Engine stopped unexpectedly", "Engines stopped unexpectedly"),
    NoticeKind.MODEL_LOADED: ("Model loaded", "Models loaded"),
    NoticeKind.UPDATE_AVAILABLE: ("Update available", "Update available"),
}

_FAILED_DOWNLOADS = frozenset({DownloadState.FAILED, DownloadState.QUARANTINED})
_LOADING = frozenset({InstanceStatus.STARTING, InstanceStatus.LOADING})
# The engines Roundhouse runs here: an attached server or a paired machine's is not ours
# to report on.
_OURS = frozenset({InstanceOrigin.STARTED, InstanceOrigin.ADOPTED})


@dataclass(frozen=True)
class Notice:
    kind: NoticeKind
    text: str

    @property
    def title(self) -> str:
        return TITLES[self.kind][0]


def _model(model: str | None) -> str:
    """A file's name for a path; repo ids and tags as given."""
    if not model:
        return "a model"
    return PurePosixPath(model.replace("\\", "/")).name or model


def _engine_serving(info: InstanceInfo) -> str:
    return f"{info.engine.value} serving {_model(info.model)}"


def _sentence(text: str) -> str:
    text = text.strip()
    return text if text.endswith((".", "!", "?")) else text + "."


class FeedNotices:
    """The last state of each instance and download heard of; each new state is compared."""

    def __init__(self, started: float | None = None) -> None:
        # When the app began listening (seconds since the epoch, as the daemon stamps
        # downloads): the first queue heard may already hold a download that ended since.
        self._started = time.time() if started is None else started
        self._instances: dict[str, InstanceInfo] = {}
        # Whether a list was heard yet: instances new after it are new, not found.
        self._listed = False
        # Restarted instances not yet ready again: told once they are (or once they fail).
        self._restarting: set[str] = set()
        self._downloads: dict[str, DownloadState] | None = None
        self._update: UpdateStatus | None = None

    def instances(self, listed: list[InstanceInfo]) -> list[Notice]:
        notices: list[Notice] = []
        now = {info.id: info for info in listed if info.origin in _OURS and info.machine is None}
        for key, info in now.items():
            before = self._instances.get(key)
            if before is not None:
                notices.extend(self._instance_moved(before, info))
            elif self._listed and info.status == InstanceStatus.READY and info.launch_note:
                # Started and loaded between two states of the feed (a small model).
                notices.append(_loaded(info))
        self._restarting &= now.keys()
        self._instances = now
        self._listed = True
        return notices

    def _instance_moved(self, before: InstanceInfo, after: InstanceInfo) -> list[Notice]:
        what = _engine_serving(after)
        if after.restarts > before.restarts:
            self._restarting.add(after.id)
        if after.id in self._restarting:
            if after.status == InstanceStatus.READY:
                self._restarting.discard(after.id)
                return [
                    Notice(
                        NoticeKind.ENGINE_CRASHED, f"{what} stopped unexpectedly and was restarted."
                    )
                ]
            if after.status == InstanceStatus.FAILED:
                self._restarting.discard(after.id)
                why = _sentence(after.error or "it did not start again")
                return [
                    Notice(
                        NoticeKind.ENGINE_CRASHED,
                        f"{what} stopped unexpectedly, and the restart failed: {why}",
                    )
                ]
            return []
        if after.status == InstanceStatus.FAILED and before.status == InstanceStatus.READY:
            ended = after.last_exit
            if ended is not None and ended.by_us:
                return []
            why = _sentence(after.error or (ended.message if ended else "it ended"))
            return [
                Notice(
                    NoticeKind.ENGINE_CRASHED,
                    f"{what} stopped unexpectedly and was not restarted: {why}",
                )
            ]
        if (
            after.status == InstanceStatus.READY
            and before.status in _LOADING
            and after.launch_note is not None
        ):
            return [_loaded(after)]
        return []

    def downloads(self, queue: DownloadQueueView) -> list[Notice]:
        items: list[DownloadItem | OllamaPullItem] = [*queue.items, *queue.ollama]
        now = {item.id: item.state for item in items}
        before, self._downloads = self._downloads, now
        if before is None:
            # The queue as the app found it is not news, but for what changed after the app
            # began listening (a small file can be queued and done between two events).
            before = {item.id: item.state for item in items if item.updated_at < self._started}
        notices: list[Notice] = []
        for item in items:
            was = before.get(item.id)
            if was == item.state:
                continue
            name = _download_name(item)
            if item.state == DownloadState.DONE:
                notices.append(
                    Notice(NoticeKind.DOWNLOAD_FINISHED, f"{name} finished downloading.")
                )
            elif item.state in _FAILED_DOWNLOADS:
                why = _sentence(item.error or "it stopped")
                notices.append(
                    Notice(NoticeKind.DOWNLOAD_FAILED, f"{name} did not finish downloading: {why}")
                )
        return notices

    def updates(self, status: UpdateStatus) -> list[Notice]:
        before, self._update = self._update, status
        if not status.newer or status.latest is None:
            return []
        if before is not None and before.newer and before.latest == status.latest:
            return []  # told already
        return [
            Notice(
                NoticeKind.UPDATE_AVAILABLE,
                f"Roundhouse {status.latest} is out (this is {status.current}); Settings "
                "says how to update.",
            )
        ]


def _loaded(info: InstanceInfo) -> Notice:
    took = ""
    if info.ready_at is not None and info.ready_at >= info.started_at:
        took = f" in {info.ready_at - info.started_at:.0f} s"
    return Notice(
        NoticeKind.MODEL_LOADED,
        f"{_model(info.model)} is loaded on {info.engine.value}{took}: a request asked for it "
        "and the gateway started it.",
    )


def _download_name(item: DownloadItem | OllamaPullItem) -> str:
    if isinstance(item, OllamaPullItem):
        return f"{item.model} (Ollama)"
    return f"{PurePosixPath(item.path).name} from {item.repo}"


def coalesce(notices: list[Notice]) -> tuple[str, str] | None:
    """The one notification (title, text) for notices heard together: the same sentence
    once, and one notification for the lot, so a burst (ten downloads ending at once) is
    not ten. None when there is nothing to tell."""
    by_kind: dict[NoticeKind, list[str]] = {}
    for notice in notices:
        texts = by_kind.setdefault(notice.kind, [])
        if notice.text not in texts:
            texts.append(notice.text)
    if not by_kind:
        return None
    lines = [text for texts in by_kind.values() for text in texts]
    if len(by_kind) > 1:
        return "Roundhouse", "\n".join(lines)
    ((kind, texts),) = by_kind.items()
    one, many = TITLES[kind]
    return (one if len(texts) == 1 else many), "\n".join(lines)
