"""The shared transfer engine against a real local file host: resume with Range, retries with
backoff until the attempts run out, a file that fails its check set aside, the caller's words."""

from __future__ import annotations

import asyncio
import hashlib
import os
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import pytest

from roundhouse.core.infra.transfer.fetch import (
    Transfer,
    TransferPlan,
    TransferPolicy,
    new_session,
)
from roundhouse.core.infra.transfer.rate import RollingRate
from roundhouse.core.infra.transfer.verify import Expected, check_finished
from roundhouse.core.infra.transfer.words import TransferError, TransferWords
from tests.fakes.releases.server import API_PREFIX, FakeRelease, ReleaseServer

TAG = "b1"
NAME = "model.bin"
DATA = os.urandom(600_000)
SHA256 = hashlib.sha256(DATA).hexdigest()


class Hooks:
    """Records what the transfer reports; a retry can arm the host's next failure."""

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.retries: list[tuple[str, float]] = []
        self.durable: list[int] = []
        self.rearm: Callable[[], None] | None = None

    def attempt_started(self, offset: int) -> None:
        self.starts.append(offset)

    def received(self, received: int) -> None: ...

    def progress(self, received: int) -> None: ...

    async def checkpoint(self, durable: int, validator: str | None) -> None:
        self.durable.append(durable)

    def retrying(self, reason: str, delay_s: float) -> None:
        self.retries.append((reason, delay_s))
        if self.rearm is not None:
            self.rearm()


class Sleeps(list[float]):
    """asyncio.sleep that only records how long the engine would wait."""

    async def __call__(self, delay: float) -> None:
        self.append(delay)


class OwnWords(TransferWords):
    def wrong_size(self, label: str, offered: int, size: int) -> Exception:
        return LookupError(f"{label}: offered {offered}, listed {size}")

    def refused(self, label: str, url: str, status: int, headers: Mapping[str, str]) -> Exception:
        return LookupError(f"{label}: HTTP {status}")


@pytest.fixture
def host() -> Iterator[ReleaseServer]:
    with ReleaseServer([FakeRelease(TAG, {NAME: DATA})]) as server:
        yield server


def plan_for(host: ReleaseServer, partial: Path, **fields: object) -> TransferPlan:
    url = f"{host.base_url}{API_PREFIX}/download/{TAG}/{NAME}"
    return TransferPlan(NAME, url, partial, len(DATA), {}, **fields)  # type: ignore[arg-type]


def fetch(
    plan: TransferPlan, hooks: Hooks, *, attempts: int = 5, sleep: Sleeps | None = None
) -> None:
    async def body() -> None:
        async with new_session() as session:
            await Transfer(
                session,
                plan,
                hooks,
                TransferPolicy(attempts=attempts),
                monotonic=time.monotonic,
                sleep=sleep if sleep is not None else Sleeps(),
            ).run()

    asyncio.run(body())


def test_a_partial_file_is_resumed_with_range(host: ReleaseServer, tmp_path: Path) -> None:
    partial = tmp_path / "model.bin.incomplete"
    partial.write_bytes(DATA[:250_000])
    hooks = Hooks()
    fetch(plan_for(host, partial, durable=250_000), hooks)
    assert partial.read_bytes() == DATA
    assert [r.headers.get("range") for r in host.downloads(NAME)] == ["bytes=250000-"]
    assert hooks.starts == [250_000]
    # Bytes past what was recorded durable are not trusted: cut back, then resumed.
    partial.write_bytes(DATA[:300_000] + b"junk")
    fetch(plan_for(host, partial, durable=300_000), Hooks())
    assert partial.read_bytes() == DATA
    assert host.downloads(NAME)[-1].headers["range"] == "bytes=300000-"


def test_drops_are_retried_with_backoff_until_the_attempts_run_out(
    host: ReleaseServer, tmp_path: Path
) -> None:
    partial = tmp_path / "model.bin.incomplete"
    host.modes.drop_after[NAME] = 100_000
    hooks, sleeps = Hooks(), Sleeps()
    fetch(plan_for(host, partial), hooks, sleep=sleeps)
    assert partial.read_bytes() == DATA
    assert [r.headers.get("range") for r in host.downloads(NAME)] == [None, "bytes=100000-"]
    assert sleeps == [1.0] and hooks.retries[0][1] == 1.0

    # A host that drops every time: 1 s, 2 s, 4 s between tries, then the caller's words.
    partial.unlink()
    sleeps = Sleeps()
    hooks = Hooks()
    cut = iter(range(50_000, 600_000, 50_000))
    host.modes.drop_after[NAME] = next(cut)
    hooks.rearm = lambda: host.modes.drop_after.update({NAME: next(cut)})
    with pytest.raises(TransferError, match=r"model.bin failed: .*4 times in a row") as failed:
        fetch(plan_for(host, partial), hooks, attempts=4, sleep=sleeps)
    assert sleeps == [1.0, 2.0, 4.0]
    assert "kept" in failed.value.detail
    # What arrived is kept for the next try, which resumes where the last attempt ended.
    kept = partial.read_bytes()
    assert kept == DATA[:200_000]
    assert hooks.durable[-1] == 200_000


def test_a_file_that_fails_its_check_is_quarantined_or_deleted(
    host: ReleaseServer, tmp_path: Path
) -> None:
    host.modes.corrupt.add(NAME)
    partial = tmp_path / "model.bin.incomplete"
    fetch(plan_for(host, partial), Hooks())
    quarantine = tmp_path / "quarantine"
    expected = Expected(size=len(DATA), sha256=SHA256)

    verdict = asyncio.run(
        check_finished(partial, expected, quarantine_dir=quarantine, name="7-model.bin")
    )
    assert not verdict.ok and verdict.wanted == SHA256 and verdict.digest != SHA256
    assert verdict.reason.startswith("its sha256 is ") and "the source lists" in verdict.reason
    assert verdict.moved_to == quarantine / "7-model.bin"
    assert verdict.moved_to.read_bytes()[:-1] == DATA[:-1]  # kept, not deleted
    assert not partial.exists()

    fetch(plan_for(host, partial), Hooks())
    verdict = asyncio.run(check_finished(partial, expected, quarantine_dir=None))
    assert not verdict.ok and verdict.moved_to is None and not partial.exists()

    host.modes.corrupt.clear()
    fetch(plan_for(host, partial), Hooks())
    verdict = asyncio.run(check_finished(partial, expected, quarantine_dir=quarantine))
    assert verdict.ok and partial.read_bytes() == DATA
    assert sorted(p.name for p in quarantine.iterdir()) == ["7-model.bin"]


def test_failures_are_told_in_the_callers_words(host: ReleaseServer, tmp_path: Path) -> None:
    host.modes.wrong_size.add(NAME)
    partial = tmp_path / "model.bin.incomplete"
    with pytest.raises(LookupError, match=f"offered {len(DATA) + 1000}, listed {len(DATA)}"):
        fetch(plan_for(host, partial, words=OwnWords()), Hooks())
    plan = plan_for(host, partial, words=OwnWords())
    plan.url = f"{host.base_url}{API_PREFIX}/download/{TAG}/missing.bin"
    with pytest.raises(LookupError, match="HTTP 404"):
        fetch(plan, Hooks())
    # Without words of its own a caller gets the plain ones.
    with pytest.raises(TransferError, match="The server offers"):
        fetch(plan_for(host, partial), Hooks())


def test_the_rate_meter_measures_only_with_two_samples() -> None:
    rate = RollingRate(window_s=5.0)
    rate.reset(10.0, 0)
    before = (rate.measuring, rate.speed(10.0))
    rate.add(12.0, 2_000_000)
    assert before == (False, 0.0)
    assert rate.measuring
    assert rate.speed(12.0) == pytest.approx(1_000_000)
