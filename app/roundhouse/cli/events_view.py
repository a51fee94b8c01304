"""One readable line per change-feed event for `roundhouse events`, saying what changed."""

from __future__ import annotations

import time
from typing import Any

from roundhouse.api.downloads import DownloadQueueView
from roundhouse.api.engines import EnginesOverview
from roundhouse.api.events import (
    DownloadsEvent,
    EnginesEvent,
    FeedEvent,
    GatewayEvent,
    InstancesEvent,
    JobsEvent,
    LibraryEvent,
    LogsEvent,
    PeersEvent,
    ResetEvent,
    ResetReason,
    SettingsEvent,
    UpdatesEvent,
)
from roundhouse.api.gateway import GatewayModelList, ModelState
from roundhouse.api.instances import InstanceList, LogCounts
from roundhouse.api.jobs import ENDED_STATES, JobList
from roundhouse.api.library import LibraryList
from roundhouse.api.peers import PeersView
from roundhouse.api.settings import Settings
from roundhouse.base.units import format_bytes

_RESET_WORDS = {
    ResetReason.NEW: "everything as it is now follows from here",
    ResetReason.BEHIND: "events were missed (the daemon keeps only the latest): reload",
    ResetReason.UNKNOWN: "that resume point is from another run of the daemon: reload",
}
# Changed settings shown on one line before the rest is counted.
_SHOWN_SETTINGS = 4


class EventLines:
    """Turns each event into a line; remembers the last settings, to say which changed."""

    def __init__(self) -> None:
        self._settings: Settings | None = None

    def settings_now(self, settings: Settings) -> None:
        """The settings as loaded after a reset: the next settings event says what changed."""
        self._settings = settings

    def line(self, event: FeedEvent) -> str:
        clock = time.strftime("%H:%M:%S", time.localtime(event.at))
        return f"{event.seq} {clock} {event.kind.value:<9} {self._what(event)}"

    def _what(self, event: FeedEvent) -> str:
        if isinstance(event, ResetEvent):
            return f"reset: {_RESET_WORDS[event.reason]}"
        if isinstance(event, InstancesEvent):
            return instances_line(event.data)
        if isinstance(event, SettingsEvent):
            before, self._settings = self._settings, event.data
            return settings_line(before, event.data)
        if isinstance(event, LibraryEvent):
            return library_line(event.data)
        if isinstance(event, DownloadsEvent):
            return downloads_line(event.data)
        if isinstance(event, JobsEvent):
            return jobs_line(event.data)
        if isinstance(event, EnginesEvent):
            return engines_line(event.data)
        if isinstance(event, LogsEvent):
            return logs_line(event.data)
        if isinstance(event, PeersEvent):
            return peers_line(event.data)
        if isinstance(event, UpdatesEvent):
            return f"update check: {event.data.summary()}"
        assert isinstance(event, GatewayEvent)
        return gateway_line(event.data)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def instances_line(listing: InstanceList) -> str:
    if not listing.instances:
        return "no instances"
    each = [f"{i.id} {i.status.value} ({i.engine.value})" for i in listing.instances]
    return f"{_count(len(each), 'instance')}: " + ", ".join(each)


def _flat(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict):
        flat: dict[str, Any] = {}
        for key, inner in value.items():
            flat.update(_flat(inner, f"{prefix}{key}."))
        return flat
    return {prefix.rstrip("."): value}


def settings_line(before: Settings | None, after: Settings) -> str:
    if before is None:
        return "the settings in force"
    old, new = _flat(before.model_dump(mode="json")), _flat(after.model_dump(mode="json"))
    changed = [key for key in sorted(old.keys() | new.keys()) if old.get(key) != new.get(key)]
    if not changed:
        return "saved, nothing changed"
    shown = [f"{key} = {new.get(key)!r}" for key in changed[:_SHOWN_SETTINGS]]
    more = len(changed) - len(shown)
    return "saved: " + ", ".join(shown) + (f" and {more} more" if more else "")


def peers_line(view: PeersView) -> str:
    if not view.peers:
        return "no paired machines"
    seen = {s.id: s for s in view.seen}
    each = []
    for peer in view.peers:
        state = seen[peer.id].state if peer.id in seen else None
        if state is not None:
            each.append(f"{peer.name} ({_count(len(state.instances), 'instance')})")
        else:
            each.append(f"{peer.name} (not reachable)" if peer.error else peer.name)
    return f"{_count(len(each), 'paired machine')}: " + ", ".join(each)


def library_line(listing: LibraryList) -> str:
    places = sum(p.available for p in listing.places)
    checking = f"; reading {listing.checking} headers" if listing.checking else ""
    return f"{_count(len(listing.models), 'model')} in {_count(places, 'place')}{checking}"


def downloads_line(queue: DownloadQueueView) -> str:
    totals = queue.totals
    if not totals.items:
        return "the queue is empty"
    words = [_count(totals.items, "item"), f"{totals.active} active", f"{totals.queued} queued"]
    if totals.unfinished_bytes:
        words.append(
            f"{format_bytes(totals.unfinished_done_bytes)} of "
            f"{format_bytes(totals.unfinished_bytes)}"
        )
    if totals.speed_bps:
        words.append(f"{format_bytes(int(totals.speed_bps))}/s")
    return ", ".join(words)


def jobs_line(jobs: JobList) -> str:
    if not jobs.jobs:
        return "no jobs"
    running = [j for j in jobs.jobs if j.state not in ENDED_STATES]
    each = [
        f"{j.kind.value} {j.id} {j.state.value}"
        + (f" {round(j.fraction * 100)}%" if j.fraction is not None else "")
        for j in running
    ]
    ended = len(jobs.jobs) - len(running)
    head = f"{_count(len(running), 'job')} under way" if running else "none under way"
    return head + (": " + ", ".join(each) if each else "") + (f" ({ended} ended)" if ended else "")


def gateway_line(listing: GatewayModelList) -> str:
    by_state = {
        state: [m.id for m in listing.models if m.state == state]
        for state in (ModelState.SERVING, ModelState.LOADING)
    }
    serving = ", ".join(by_state[ModelState.SERVING]) or "nothing"
    words = [f"serving {serving}"]
    if by_state[ModelState.LOADING]:
        words.append("loading " + ", ".join(by_state[ModelState.LOADING]))
    startable = sum(m.state == ModelState.STARTABLE for m in listing.models)
    words.append(f"{startable} startable")
    if listing.active_model:
        words.append(f"active {listing.active_model}")
    return "; ".join(words)


def engines_line(overview: EnginesOverview) -> str:
    found = overview.detection.found
    if not found:
        return "detected: no engine found"
    each = [f"{e.id.value} {e.version}" if e.version else e.id.value for e in found]
    return f"detected: {_count(len(found), 'engine')} found: " + ", ".join(each)


def logs_line(counts: LogCounts) -> str:
    if not counts.instances:
        return "no engine output held"
    each = [f"{c.id} {_count(c.lines, 'line')}" for c in counts.instances]
    return "output: " + ", ".join(each)
