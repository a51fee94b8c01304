"""`roundhouse events`' lines: one per event, saying what changed in words."""

from __future__ import annotations

from roundhouse.api.downloads import DownloadQueueView, DownloadTotals
from roundhouse.api.engines import EngineId
from roundhouse.api.events import (
    DownloadsEvent,
    GatewayEvent,
    JobsEvent,
    ResetEvent,
    ResetReason,
    SettingsEvent,
)
from roundhouse.api.gateway import GatewayModel, GatewayModelList, ModelState
from roundhouse.api.jobs import JobKind, JobList, JobState, JobView
from roundhouse.api.settings import Settings
from roundhouse.cli.events_view import EventLines


def _settings(**chat: object) -> Settings:
    return Settings.model_validate({"chat": chat})


def test_a_line_starts_with_the_seq_the_time_and_the_kind() -> None:
    line = EventLines().line(ResetEvent(seq=42, at=0.0, reason=ResetReason.BEHIND, oldest=7))
    seq, clock, kind, *words = line.split()
    assert (seq, kind) == ("42", "reset") and clock.count(":") == 2
    assert "missed" in " ".join(words)


def test_a_settings_event_says_which_settings_changed() -> None:
    lines = EventLines()
    first = lines.line(SettingsEvent(seq=1, at=0.0, data=_settings()))
    assert first.endswith("the settings in force")
    saved = lines.line(
        SettingsEvent(seq=2, at=0.0, data=_settings(max_conversations=99, active_model="m"))
    )
    assert saved.endswith("saved: chat.active_model = 'm', chat.max_conversations = 99")
    same = lines.line(
        SettingsEvent(seq=3, at=0.0, data=_settings(max_conversations=99, active_model="m"))
    )
    assert same.endswith("saved, nothing changed")


def test_downloads_jobs_and_the_gateway_in_a_few_words() -> None:
    lines = EventLines()
    queue = DownloadQueueView(
        items=[],
        totals=DownloadTotals(
            items=2, active=1, queued=1, unfinished_bytes=2048, unfinished_done_bytes=1024
        ),
        max_concurrent=2,
        hub_cache="/cache",
    )
    assert lines.line(DownloadsEvent(seq=1, at=0.0, data=queue)).endswith(
        "2 items, 1 active, 1 queued, 1.0 KiB of 2.0 KiB"
    )
    jobs = JobList(
        jobs=[
            JobView(
                id="b1", kind=JobKind.BENCH, state=JobState.RUNNING, started_at=0, fraction=0.4
            ),
            JobView(id="i1", kind=JobKind.INSTALL, state=JobState.DONE, started_at=0),
        ]
    )
    assert lines.line(JobsEvent(seq=2, at=0.0, data=jobs)).endswith(
        "1 job under way: bench b1 running 40% (1 ended)"
    )
    models = GatewayModelList(
        models=[
            GatewayModel(id="tiny", engine=EngineId.LLAMA_CPP, state=ModelState.SERVING),
            GatewayModel(id="big", engine=EngineId.LLAMA_CPP, state=ModelState.STARTABLE),
        ],
        active_model="tiny",
    )
    assert lines.line(GatewayEvent(seq=3, at=0.0, data=models)).endswith(
        "serving tiny; 1 startable; active tiny"
    )
