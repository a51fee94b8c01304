"""Ollama pull jobs' pure parts: progress lines into bytes and states, items, queue totals."""

from __future__ import annotations

import pytest

from roundhouse.api.downloads import DownloadQueueView, DownloadState, DownloadTotals
from roundhouse.api.ollama import OllamaPullProgress
from roundhouse.core.errors import InvalidInputError
from roundhouse.core.models.ollama_pulls.jobs import (
    PullJob,
    apply_step,
    check_model_name,
    item_of,
)
from roundhouse.core.models.ollama_pulls.records import PullEntry
from roundhouse.core.models.queue import combine


def entry(state: DownloadState = DownloadState.DOWNLOADING) -> PullEntry:
    return PullEntry(
        id="ollama-0123456789",
        seq=1,
        model="tiny",
        base_url="http://127.0.0.1:11434",
        instance=None,
        state=state,
        status="",
        error=None,
        note=None,
        created_at=0.0,
        updated_at=0.0,
    )


def step(
    status: str, digest: str | None = None, total: int | None = None, done: int | None = None
) -> OllamaPullProgress:
    return OllamaPullProgress(status=status, digest=digest, total=total, completed=done)


def test_bytes_are_summed_over_layers_and_a_first_line_keeps_what_was_had() -> None:
    pulled = entry()
    assert not apply_step(pulled, step("pulling manifest"))
    assert (pulled.size, pulled.bytes_done, pulled.status) == (0, 0, "pulling manifest")
    apply_step(pulled, step("pulling aaa", "sha256:a", 100, 40))
    apply_step(pulled, step("pulling bbb", "sha256:b", 50))
    assert (pulled.size, pulled.bytes_done) == (150, 40)
    # A resumed pull's first line of a layer has no `completed`: the bytes had stay.
    apply_step(pulled, step("pulling aaa", "sha256:a", 100))
    assert pulled.bytes_done == 40
    apply_step(pulled, step("pulling bbb", "sha256:b", 50, 50))
    assert pulled.bytes_done == 90 and pulled.state == DownloadState.DOWNLOADING
    assert apply_step(pulled, step("verifying sha256 digest"))
    assert pulled.state == DownloadState.VERIFYING
    apply_step(pulled, step("success"))
    assert pulled.bytes_done == pulled.size == 150


def test_an_item_has_no_eta_while_the_manifest_is_read_and_is_full_once_verifying() -> None:
    job = PullJob(entry())
    job.rate.reset(0.0, 0)
    item = item_of(job, 1.0)
    assert item.size == 0 and item.eta_s is None and not item.stalled
    apply_step(job.entry, step("pulling aaa", "sha256:a", 1000, 100))
    job.rate.add(1.0, 100)
    moving = item_of(job, 1.0)
    assert moving.speed_bps == pytest.approx(100.0) and moving.eta_s == pytest.approx(9.0)
    # No bytes for a while: stalled, and no ETA.
    quiet = item_of(job, 10.0)
    assert quiet.stalled and quiet.eta_s is None
    job.entry.state = DownloadState.VERIFYING
    assert item_of(job, 10.0).bytes_done == 1000


def test_combine_adds_the_pulls_and_counts_them_in_the_totals() -> None:
    empty = DownloadQueueView(items=[], totals=DownloadTotals(), max_concurrent=2, hub_cache="/hf")
    assert combine(empty, []) is empty
    job = PullJob(entry(DownloadState.QUEUED))
    apply_step(job.entry, step("pulling aaa", "sha256:a", 1000, 250))
    view = combine(empty, [item_of(job, 0.0)])
    assert [i.id for i in view.ollama] == ["ollama-0123456789"]
    totals = view.totals
    assert (totals.items, totals.queued, totals.active) == (1, 1, 0)
    assert (totals.unfinished_bytes, totals.unfinished_done_bytes) == (1000, 250)


@pytest.mark.parametrize("bad", ["", "   ", "two words", "tab\there"])
def test_a_bad_model_name_is_refused_in_words(bad: str) -> None:
    with pytest.raises(InvalidInputError, match="not an Ollama model name"):
        check_model_name(bad)
    assert check_model_name(" qwen2.5:0.5b ") == "qwen2.5:0.5b"
