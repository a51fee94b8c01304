"""Benchmarks as jobs of the job board, against the stand-in streaming server: followed to the
end without polling, heard by the board's listener with their progress, cancelled."""

from __future__ import annotations

import asyncio
from pathlib import Path

from aiohttp import web

from roundhouse.api.bench import BenchRequest, BenchState
from roundhouse.api.jobs import JobKind, JobState, JobView
from roundhouse.core.bench.service import BenchService
from roundhouse.core.infra.jobs import JobBoard
from tests.fakes.bench_stream import make_app


async def _serve(tokens_per_s: float) -> tuple[web.AppRunner, str]:
    runner = web.AppRunner(make_app(tokens_per_s=tokens_per_s), access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    return runner, f"http://127.0.0.1:{runner.addresses[0][1]}/v1"


def _request(prompts: int, tokens: int) -> BenchRequest:
    return BenchRequest(
        model="stand-in",
        num_prompts=prompts,
        max_concurrency=2,
        input_len=4,
        output_len=tokens,
        warmups=0,
    )


def test_a_benchmark_is_a_job_followed_to_done_and_its_result_kept(tmp_path: Path) -> None:
    async def main() -> None:
        runner, url = await _serve(tokens_per_s=500.0)
        try:
            board = JobBoard()
            heard: list[JobView] = []
            board.listen(lambda job: heard.append(job.view()))
            bench = BenchService(tmp_path / "bench", url, "key", jobs=board)
            started = bench.start(_request(4, 4), engine="llama.cpp")
            assert started.state is BenchState.RUNNING and started.total == 4
            job = board.find(started.id, JobKind.BENCH)
            assert job is not None
            seen = job.version
            while not job.ended:
                seen = await job.wait(seen, 10.0)
            done = bench.progress(started.id)
            assert (done.state, done.done, done.kept, done.error) == (
                BenchState.DONE,
                4,
                True,
                None,
            )
            assert bench.result(started.id).engine == "llama.cpp"
            fractions = [v.fraction for v in heard if v.fraction is not None]
            assert fractions and fractions[-1] == 1.0
            last = heard[-1]
            assert last.state == JobState.DONE and last.detail is not None
            assert last.detail["done"] == 4 and last.detail["state"] == "done"
        finally:
            await runner.cleanup()

    asyncio.run(main())


def test_a_cancelled_benchmark_ends_cancelled_and_close_ends_the_rest(tmp_path: Path) -> None:
    async def main() -> None:
        runner, url = await _serve(tokens_per_s=20.0)
        try:
            board = JobBoard()
            bench = BenchService(tmp_path / "bench", url, "key", jobs=board)
            one = bench.start(_request(4, 200))
            two = bench.start(_request(4, 200))
            await asyncio.sleep(0.2)
            assert bench.cancel(one.id).state is BenchState.RUNNING  # ends shortly after
            job = board.find(one.id)
            assert job is not None and job.task is not None
            await asyncio.wait({job.task}, timeout=5.0)
            assert bench.progress(one.id).state is BenchState.CANCELLED
            await asyncio.wait_for(bench.aclose(), 5.0)
            assert bench.progress(two.id).state is BenchState.CANCELLED
        finally:
            await runner.cleanup()

    asyncio.run(main())
