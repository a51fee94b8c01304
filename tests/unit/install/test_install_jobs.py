"""Install jobs on the daemon's job board: followed to the end, heard by the board's listener,
cancelled with their words, one per engine at a time."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from roundhouse.api.engines import EngineId
from roundhouse.api.hardware import HardwareInventory
from roundhouse.api.installs import InstallJob, InstallRequest
from roundhouse.api.jobs import JobKind, JobState, JobView
from roundhouse.core.engines.install.errors import InstallBusyError
from roundhouse.core.engines.install.jobs import InstallJobs
from roundhouse.core.errors import NotFoundError
from roundhouse.core.infra.jobs import JobBoard
from tests.fakes.releases.server import ReleaseServer
from tests.unit.install.conftest import inventory, run

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="the fake llama-server is sh")


async def _inventory() -> HardwareInventory:
    return inventory()


def test_an_install_is_a_job_of_the_board_followed_to_done(
    server: ReleaseServer, engines_dir: Path
) -> None:
    async def main() -> None:
        board = JobBoard()
        heard: list[JobView] = []
        board.listen(lambda job: heard.append(job.view()))
        detected: list[str] = []

        async def on_installed() -> None:
            detected.append("engines")

        jobs = InstallJobs(
            engines_dir,
            _inventory,
            on_installed,
            jobs=board,
            releases_url=server.releases_url,
        )
        job = jobs.start(EngineId.LLAMA_CPP, InstallRequest(tag="b6000"))
        assert job.state == JobState.RUNNING
        seen = jobs.version(job.id)
        followed: list[InstallJob] = [job]
        while followed[-1].state == JobState.RUNNING:
            latest, seen = await jobs.wait_change(job.id, seen, 10.0)
            followed.append(latest)
        done = followed[-1]
        assert done.state == JobState.DONE and done.build is not None
        assert done.build.tag == "b6000" and done.ended_at is not None
        # The engines were detected again before a follower saw it done.
        assert detected == ["engines"]
        assert jobs.all() == [done]
        views = [v for v in heard if v.id == job.id]
        assert views[0].kind == JobKind.INSTALL and views[-1].state == JobState.DONE
        assert views[-1].detail is not None and views[-1].detail["build"]["tag"] == "b6000"
        assert any(v.fraction for v in views)
        with pytest.raises(NotFoundError, match="No install job"):
            jobs.get("nope")

    run(main())


def test_a_cancelled_install_says_it_resumes_and_a_second_one_waits(
    server: ReleaseServer, engines_dir: Path
) -> None:
    async def main() -> None:
        server.modes.delay_per_chunk_s = 0.02

        async def on_installed() -> None:
            return None

        jobs = InstallJobs(engines_dir, _inventory, on_installed, releases_url=server.releases_url)
        job = jobs.start(EngineId.LLAMA_CPP, InstallRequest(tag="b6000"))
        with pytest.raises(InstallBusyError, match="being installed already"):
            jobs.start(EngineId.LLAMA_CPP, InstallRequest(tag="b6000"))
        seen = jobs.version(job.id)
        while (jobs.get(job.id).progress or None) is None:
            _, seen = await jobs.wait_change(job.id, seen, 10.0)
        cancelled = await jobs.cancel(job.id)
        assert cancelled.state == JobState.CANCELLED
        assert cancelled.error is not None and "resumes" in cancelled.error
        await asyncio.wait_for(jobs.close(), 5.0)

    run(main())
