"""`GET /api/v1/jobs` through a real daemon: a benchmark shows up as a job of the board with its
own shape; no token, a web page's Origin, a forged Host and a kind that is none are refused."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from roundhouse.api.bench import BenchRequest, BenchState
from roundhouse.api.jobs import JobKind, JobState
from roundhouse.client import DaemonClient
from tests.daemon_process import DaemonProcess, running_daemon

JOBS = "/api/v1/jobs"


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DaemonProcess]:
    with running_daemon(tmp_path_factory.mktemp("jobs-route") / "home") as running:
        yield running


def _get(daemon: DaemonProcess, headers: dict[str, str], query: str = "") -> httpx.Response:
    return httpx.get(daemon.url + JOBS + query, headers=headers, trust_env=False, timeout=10)


def _token(daemon: DaemonProcess) -> dict[str, str]:
    return {"Authorization": f"Bearer {daemon.token}"}


def test_a_benchmark_is_listed_as_a_job_with_its_own_shape(daemon: DaemonProcess) -> None:
    async def main() -> None:
        async with DaemonClient(daemon.url, daemon.token) as client:
            request = BenchRequest(model="no-such-model", num_prompts=2, warmups=1)
            started = await client.start_bench(request)
            for _ in range(100):
                listed = (await client.jobs(JobKind.BENCH)).jobs
                if listed and listed[-1].state != JobState.RUNNING:
                    break
                await asyncio.sleep(0.1)
            job = listed[-1]
            assert (job.id, job.kind, job.state) == (started.id, JobKind.BENCH, JobState.FAILED)
            assert job.error and job.detail is not None
            assert job.detail["state"] == BenchState.FAILED.value
            assert (await client.jobs(JobKind.INSTALL)).jobs == []
            assert started.id in [j.id for j in (await client.jobs()).jobs]

    asyncio.run(main())


@pytest.mark.parametrize(
    "headers",
    [{}, {"Authorization": "Bearer not-the-token"}],
    ids=["no token", "wrong token"],
)
def test_without_the_token_nothing_is_listed(
    daemon: DaemonProcess, headers: dict[str, str]
) -> None:
    response = _get(daemon, headers)
    assert response.status_code == 401 and "token" in response.text
    assert '"jobs":' not in response.text


@pytest.mark.parametrize(
    "extra",
    [
        {"Origin": "https://evil.example"},
        {"Sec-Fetch-Site": "cross-site"},
        {"Host": "evil.example"},
    ],
    ids=["foreign origin", "another site's page", "forged host"],
)
def test_a_web_page_or_a_forged_host_is_refused_even_with_the_token(
    daemon: DaemonProcess, extra: dict[str, str]
) -> None:
    assert _get(daemon, {**_token(daemon), **extra}).status_code == 403


def test_a_kind_that_is_none_is_refused_in_words(daemon: DaemonProcess, tmp_path: Path) -> None:
    response = _get(daemon, _token(daemon), "?kind=%3Cscript%3E")
    assert response.status_code == 422 and "kind" in response.text
    assert daemon.process.poll() is None
