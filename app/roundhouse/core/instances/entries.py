"""What the daemon knows of each instance it lists, and the table that holds them."""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass, field

import psutil

from roundhouse.api.engines import DetectedEngine, EngineId, EngineSpec, InstanceOptions
from roundhouse.api.external import AttachSource
from roundhouse.api.instance_memory import InstanceMemory
from roundhouse.api.instances import ExitInfo, InstanceInfo, InstanceOrigin, InstanceStatus
from roundhouse.core.errors import NotFoundError
from roundhouse.core.infra.changes import Changes
from roundhouse.core.instances.exposure import entry_warnings, unprotected_words
from roundhouse.core.instances.manager import Instance
from roundhouse.core.supervise import EngineProcess, ExitOutcome, Progress, RestartPolicy

# Failed instances stay listed (with why) until dismissed; only the latest few.
MAX_FAILED_KEPT = 20


@dataclass
class InstanceEntry:
    """One instance as the daemon lists it, with what it needs to restart or stop it."""

    id: str
    engine: EngineId
    origin: InstanceOrigin
    status: InstanceStatus
    host: str
    port: int
    base_url: str
    started_at: float
    options: InstanceOptions | None = None
    spec: EngineSpec | None = None
    detected: DetectedEngine | None = None
    model: str | None = None
    pid: int | None = None
    argv: tuple[str, ...] = ()
    log_path: str | None = None
    ready_at: float | None = None
    progress: Progress | None = None
    restarts: int = 0
    last_exit: ExitOutcome | None = None
    error: str | None = None
    models: tuple[str, ...] = ()
    process: EngineProcess | None = None
    instance: Instance | None = None
    task: asyncio.Task[None] | None = None
    policy: RestartPolicy = field(default_factory=RestartPolicy)
    ended_at: float = 0.0
    generation: int = 0
    found_by: AttachSource | None = None
    name: str | None = None
    needs_api_key: bool = False
    # An added endpoint saved with a key in the keyring: only then is the keyring read.
    has_key: bool = False
    probe_status: str | None = None
    # What the engine allocated at its last load, beside the estimate.
    memory: InstanceMemory | None = None
    # Whether the gateway may route a model a preset starts to it: ours always; one we did
    # not start only once the user allowed it.
    may_serve_presets: bool = True
    # What chose its settings and why, for a start the gateway planned.
    launch_note: str | None = None
    # Whether the engine reads images, as it said once ready (None: it does not say).
    vision: bool | None = None


class InstanceTable:
    """The entries by id, shared by everything that starts, attaches, watches or stops them."""

    def __init__(self) -> None:
        self.entries: dict[str, InstanceEntry] = {}
        # Touched whenever an entry comes, goes or changes what it shows (the change feed).
        self.changes = Changes()
        # Touched when an engine this daemon runs writes output (the feed's line counts).
        self.log_changes = Changes()

    def get(self, instance_id: str) -> InstanceEntry:
        try:
            return self.entries[instance_id]
        except KeyError:
            raise NotFoundError(
                f"No instance has the id {instance_id!r}. List them with `roundhouse engines ps`."
            ) from None

    def fail(self, entry: InstanceEntry, why: str) -> None:
        entry.status = InstanceStatus.FAILED
        entry.error = why
        entry.ended_at = time.time()
        entry.pid = None
        failed = [e for e in self.entries.values() if e.status == InstanceStatus.FAILED]
        failed.sort(key=lambda e: e.ended_at)
        for old in failed[:-MAX_FAILED_KEPT]:
            self.entries.pop(old.id, None)
        self.changes.touch()

    def check_adopted_alive(self, entry: InstanceEntry) -> None:
        if entry.origin != InstanceOrigin.ADOPTED or entry.status == InstanceStatus.FAILED:
            return
        if entry.pid is None or not _running(entry.pid):
            self.fail(
                entry,
                "The engine ended. An earlier Roundhouse daemon started it, so how it "
                "ended is unknown; its log file may say.",
            )

    def running_pids(self) -> set[int]:
        """Pids of the engines this daemon runs (started or adopted), not external ones."""
        return {
            e.pid
            for e in self.entries.values()
            if e.pid is not None and e.origin != InstanceOrigin.EXTERNAL
        }

    def info(self, instance_id: str, *, memory: bool = True) -> InstanceInfo:
        entry = self.get(instance_id)
        self.check_adopted_alive(entry)
        progress = entry.progress
        last_exit = entry.last_exit
        return InstanceInfo(
            id=entry.id,
            engine=entry.engine,
            model=entry.model,
            origin=entry.origin,
            status=entry.status,
            host=entry.host,
            port=entry.port,
            url=entry.base_url,
            base_url=entry.base_url.rstrip("/") + "/v1",
            pid=entry.pid,
            started_at=entry.started_at,
            ready_at=entry.ready_at,
            waited_s=round(progress.elapsed_s, 1) if progress else None,
            probe_status=progress.last_status if progress else entry.probe_status,
            rss_bytes=(
                _tree_rss(entry.pid) if memory and entry.status != InstanceStatus.FAILED else None
            ),
            restarts=entry.restarts,
            last_exit=exit_info(last_exit) if last_exit else None,
            error=entry.error,
            models=list(entry.models),
            options=entry.options,
            argv=list(entry.argv),
            log_path=entry.log_path,
            found_by=entry.found_by,
            name=entry.name,
            needs_api_key=entry.needs_api_key,
            memory=entry.memory,
            may_serve_presets=entry.may_serve_presets,
            unprotected=unprotected_words(entry),
            warnings=entry_warnings(entry),
            launch_note=entry.launch_note,
            vision=entry.vision,
        )


def _running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _tree_rss(pid: int | None) -> int | None:
    if pid is None:
        return None
    try:
        root = psutil.Process(pid)
        total = root.memory_info().rss
        for child in root.children(recursive=True):
            with contextlib.suppress(psutil.Error):
                total += child.memory_info().rss
        return int(total)
    except psutil.Error:
        return None


def exit_info(outcome: ExitOutcome) -> ExitInfo:
    return ExitInfo(
        kind=outcome.kind.value,
        message=outcome.message,
        returncode=outcome.returncode,
        signal_name=outcome.signal_name,
        transient=outcome.transient,
        by_us=outcome.by_us,
        log_tail=list(outcome.log_tail),
    )
