"""What the notifications say, from two states of the change feed: what was so at the start is
not news; a download that finished or failed (Hub files and Ollama pulls); an engine that
stopped unexpectedly, restarted or not; a stop the user asked for says nothing; a model the
gateway loaded on demand; a newer release told once; a burst told as one notification."""

from __future__ import annotations

from roundhouse.api.downloads import (
    DownloadItem,
    DownloadQueueView,
    DownloadState,
    DownloadTotals,
    OllamaPullItem,
)
from roundhouse.api.engines import EngineId
from roundhouse.api.instances import ExitInfo, InstanceInfo, InstanceOrigin, InstanceStatus
from roundhouse.api.updates import UpdateStatus
from roundhouse.gui.notify_words import FeedNotices, Notice, NoticeKind, coalesce

MODEL = "/models/tiny.gguf"


def _instance(status: InstanceStatus, **fields: object) -> InstanceInfo:
    base: dict[str, object] = {
        "id": "a1",
        "engine": EngineId.LLAMA_CPP,
        "model": MODEL,
        "origin": InstanceOrigin.STARTED,
        "status": status,
        "host": "127.0.0.1",
        "port": 8080,
        "url": "http://127.0.0.1:8080",
        "base_url": "http://127.0.0.1:8080/v1",
        "started_at": 100.0,
    }
    return InstanceInfo.model_validate({**base, **fields})


def _file(state: DownloadState, item_id: str = "d1", error: str | None = None) -> DownloadItem:
    return DownloadItem(
        id=item_id,
        repo="org/tiny-GGUF",
        revision="main",
        commit="0" * 40,
        path="sub/tiny-Q8_0.gguf",
        size=10,
        bytes_done=10 if state == DownloadState.DONE else 3,
        state=state,
        error=error,
        etag="e",
        created_at=1.0,
        updated_at=2.0,
    )


def _pull(state: DownloadState) -> OllamaPullItem:
    return OllamaPullItem(
        id="ollama-0123456789",
        model="qwen3:0.6b",
        base_url="http://127.0.0.1:11434",
        size=10,
        bytes_done=10,
        state=state,
        created_at=1.0,
        updated_at=2.0,
    )


def _queue(*items: DownloadItem | OllamaPullItem) -> DownloadQueueView:
    files = [i for i in items if isinstance(i, DownloadItem)]
    pulls = [i for i in items if isinstance(i, OllamaPullItem)]
    return DownloadQueueView(
        items=files, totals=DownloadTotals(), max_concurrent=2, hub_cache="/hf", ollama=pulls
    )


def _update(latest: str | None, newer: bool) -> UpdateStatus:
    return UpdateStatus(enabled=True, current="1.0.0", latest=latest, newer=newer, source="x")


def test_the_first_state_is_not_news() -> None:
    words = FeedNotices(started=3.0)
    assert words.downloads(_queue(_file(DownloadState.DONE))) == []
    assert words.instances([_instance(InstanceStatus.FAILED)]) == []


def test_a_download_that_ended_after_the_app_began_listening_is_news_in_the_first_state() -> None:
    # A small file can be queued and done between two events: the first queue the app hears
    # already holds it finished. Stamped after the app began (updated_at 2.0 > 1.5): news.
    words = FeedNotices(started=1.5)
    assert words.downloads(_queue(_file(DownloadState.DONE))) == [
        Notice(
            NoticeKind.DOWNLOAD_FINISHED, "tiny-Q8_0.gguf from org/tiny-GGUF finished downloading."
        )
    ]
    # Stamped before: the queue as the app found it.
    assert FeedNotices(started=3.0).downloads(_queue(_file(DownloadState.DONE))) == []


def test_downloads_finished_and_failed() -> None:
    words = FeedNotices()
    words.downloads(_queue(_file(DownloadState.DOWNLOADING), _pull(DownloadState.DOWNLOADING)))
    said = words.downloads(_queue(_file(DownloadState.DONE), _pull(DownloadState.DONE)))
    assert said == [
        Notice(
            NoticeKind.DOWNLOAD_FINISHED, "tiny-Q8_0.gguf from org/tiny-GGUF finished downloading."
        ),
        Notice(NoticeKind.DOWNLOAD_FINISHED, "qwen3:0.6b (Ollama) finished downloading."),
    ]
    assert words.downloads(_queue(_file(DownloadState.DONE), _pull(DownloadState.DONE))) == []
    # A new one that fails: the reason, as the daemon says it.
    words.downloads(_queue(_file(DownloadState.DOWNLOADING, "d2")))
    failed = _file(DownloadState.FAILED, "d2", error="The disk is full. Free some space")
    assert words.downloads(_queue(failed)) == [
        Notice(
            NoticeKind.DOWNLOAD_FAILED,
            "tiny-Q8_0.gguf from org/tiny-GGUF did not finish downloading: The disk is full. "
            "Free some space.",
        )
    ]


def test_a_crash_restarted_a_failed_restart_and_a_kill() -> None:
    words = FeedNotices()
    words.instances([_instance(InstanceStatus.READY)])
    crashed = ExitInfo(kind="crash", message="crashed", transient=True)
    # Restarting: nothing yet; ready again: "restarted".
    assert (
        words.instances([_instance(InstanceStatus.RESTARTING, restarts=1, last_exit=crashed)]) == []
    )
    assert words.instances([_instance(InstanceStatus.STARTING, restarts=1)]) == []
    assert words.instances([_instance(InstanceStatus.READY, restarts=1)]) == [
        Notice(
            NoticeKind.ENGINE_CRASHED,
            "llama.cpp serving tiny.gguf stopped unexpectedly and was restarted.",
        )
    ]
    # Again, and this time the restart fails.
    words.instances([_instance(InstanceStatus.RESTARTING, restarts=2)])
    failed = _instance(InstanceStatus.FAILED, restarts=2, error="The engine ran out of memory.")
    assert words.instances([failed]) == [
        Notice(
            NoticeKind.ENGINE_CRASHED,
            "llama.cpp serving tiny.gguf stopped unexpectedly, and the restart failed: The engine "
            "ran out of memory.",
        )
    ]
    # Ready, then killed from outside: not restarted.
    words.instances([_instance(InstanceStatus.READY, id="b2")])
    killed = ExitInfo(kind="killed", message="was killed from outside (SIGKILL)")
    gone = _instance(
        InstanceStatus.FAILED, id="b2", last_exit=killed, error="The engine was killed (SIGKILL)."
    )
    assert words.instances([gone]) == [
        Notice(
            NoticeKind.ENGINE_CRASHED,
            "llama.cpp serving tiny.gguf stopped unexpectedly and was not restarted: The engine "
            "was killed (SIGKILL).",
        )
    ]


def test_a_stop_asked_for_and_others_engines_say_nothing() -> None:
    words = FeedNotices()
    theirs = _instance(InstanceStatus.READY, id="x", origin=InstanceOrigin.EXTERNAL)
    words.instances([_instance(InstanceStatus.READY), theirs])
    by_us = ExitInfo(kind="stopped", message="stopped", by_us=True)
    theirs_gone = theirs.model_copy(update={"status": InstanceStatus.FAILED})
    assert words.instances([_instance(InstanceStatus.FAILED, last_exit=by_us), theirs_gone]) == []


def test_a_model_loaded_on_demand() -> None:
    words = FeedNotices()
    note = "a request for tiny asked for it"
    words.instances([_instance(InstanceStatus.STARTING, launch_note=note)])
    words.instances([_instance(InstanceStatus.LOADING, launch_note=note)])
    ready = _instance(InstanceStatus.READY, launch_note=note, ready_at=104.2)
    assert words.instances([ready]) == [
        Notice(
            NoticeKind.MODEL_LOADED,
            "tiny.gguf is loaded on llama.cpp in 4 s: a request asked for it and the gateway "
            "started it.",
        )
    ]
    # Started and ready between two states of the feed: told too.
    quick = _instance(InstanceStatus.READY, id="q", launch_note=note, ready_at=100.4)
    assert [n.kind for n in words.instances([ready, quick])] == [NoticeKind.MODEL_LOADED]
    # One the user started (no launch note) is not news.
    words.instances([_instance(InstanceStatus.STARTING, id="u")])
    assert words.instances([_instance(InstanceStatus.READY, id="u")]) == []


def test_an_update_is_told_once_per_release() -> None:
    words = FeedNotices()
    assert words.updates(_update(None, False)) == []
    said = words.updates(_update("1.1.0", True))
    assert [n.text for n in said] == [
        "Roundhouse 1.1.0 is out (this is 1.0.0); Settings says how to update."
    ]
    assert words.updates(_update("1.1.0", True)) == []
    assert len(words.updates(_update("1.2.0", True))) == 1


def test_a_burst_is_one_notification() -> None:
    assert coalesce([]) is None
    done = [Notice(NoticeKind.DOWNLOAD_FINISHED, f"f{n} finished downloading.") for n in range(3)]
    assert coalesce([done[0], done[0]]) == ("Download finished", "f0 finished downloading.")
    assert coalesce(done) == (
        "Downloads finished",
        "f0 finished downloading.\nf1 finished downloading.\nf2 finished downloading.",
    )
    crash = Notice(NoticeKind.ENGINE_CRASHED, "e stopped unexpectedly and was restarted.")
    assert coalesce([done[0], crash]) == (
        "Roundhouse",
        "f0 finished downloading.\ne stopped unexpectedly and was restarted.",
    )
