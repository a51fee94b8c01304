"""vLLM's and SGLang's own tokens/s from two scrapes of their /metrics: deltas of the
histograms' sums and counts, idle intervals, restarts, label sets, and the point they reach."""

from __future__ import annotations

import asyncio

import pytest

from roundhouse.api.engines import EngineId
from roundhouse.api.instances import InstanceOrigin
from roundhouse.core.engines.catalog import load_catalog
from roundhouse.core.engines.metrics import parse_prometheus
from roundhouse.core.errors import RoundhouseError
from roundhouse.core.metrics.engine_figures import EngineFigures
from roundhouse.core.metrics.point import build_point
from roundhouse.core.metrics.scraped_rates import (
    NAMES,
    Interval,
    ScrapedRates,
    interval_rates,
)
from tests.unit.builders import idle_inputs, ready_instance

TPOT = "vllm:request_time_per_output_token_seconds"
ITL = "vllm:inter_token_latency_seconds"
PREFILL = "vllm:request_prefill_time_seconds"
PROMPT = "vllm:request_prompt_tokens_sum"


def vllm(
    tpot: tuple[float, float], prefill: tuple[float, float], prompt: float
) -> dict[str, float]:
    """Figures as the scrape keeps them: (count, sum) of the two histograms, prompt tokens."""
    return {
        TPOT + "_count": tpot[0],
        TPOT + "_sum": tpot[1],
        PREFILL + "_count": prefill[0],
        PREFILL + "_sum": prefill[1],
        PROMPT: prompt,
        "vllm:num_requests_running": 0.0,
    }


def test_the_rates_are_deltas_of_counts_over_deltas_of_seconds() -> None:
    before = vllm((10, 0.5), (10, 0.2), 1000)
    # 4 requests at 20 ms a token (50 tok/s), 400 prompt tokens prefilled in 0.1 s.
    after = vllm((14, 0.58), (14, 0.3), 1400)
    got = interval_rates(before, after)
    assert got.output_tps == pytest.approx(50.0)
    assert got.prompt_tps == pytest.approx(4000.0)
    assert not got.reset


def test_no_request_in_the_interval_gives_no_figure() -> None:
    same = vllm((10, 0.5), (10, 0.2), 1000)
    assert interval_rates(same, dict(same)) == Interval()


def test_a_counter_gone_down_is_a_restart() -> None:
    before = vllm((10, 0.5), (10, 0.2), 1000)
    after = vllm((2, 0.04), (2, 0.01), 50)
    assert interval_rates(before, after) == Interval(reset=True)


def test_the_first_histogram_both_scrapes_carry_is_read() -> None:
    # An older vLLM: only the per-token histogram, under its old name.
    old = "vllm:time_per_output_token_seconds"
    before = {old + "_count": 100.0, old + "_sum": 2.0}
    after = {old + "_count": 150.0, old + "_sum": 2.5}
    assert interval_rates(before, after).output_tps == pytest.approx(100.0)
    # A newer one carries both; the per-request one wins (speculative decoding counts right).
    before |= {ITL + "_count": 100.0, ITL + "_sum": 2.0, TPOT + "_count": 1.0, TPOT + "_sum": 0.1}
    after |= {ITL + "_count": 150.0, ITL + "_sum": 3.0, TPOT + "_count": 2.0, TPOT + "_sum": 0.12}
    assert interval_rates(before, after).output_tps == pytest.approx(50.0)


def test_sglang_has_a_generation_rate_and_no_prompt_rate() -> None:
    itl = "sglang:inter_token_latency_seconds"
    before = {itl + "_count": 0.0, itl + "_sum": 0.0, "sglang:prompt_tokens_total": 0.0}
    after = {itl + "_count": 99.0, itl + "_sum": 0.99, "sglang:prompt_tokens_total": 120.0}
    got = interval_rates(before, after)
    assert got.output_tps == pytest.approx(100.0)
    assert got.prompt_tps is None


def _exposition(per_engine: list[tuple[int, float]]) -> str:
    """vLLM's text with one label set per engine (data parallel), each (count, sum)."""
    lines = []
    for index, (count, seconds) in enumerate(per_engine):
        labels = f'{{engine="{index}",model_name="org/m"}}'
        lines += [f"{TPOT}_count{labels} {float(count)}", f"{TPOT}_sum{labels} {seconds}"]
        lines.append(f'{TPOT}_bucket{{engine="{index}",le="+Inf",model_name="org/m"}} {count}')
    return "\n".join(lines) + "\n"


def test_label_sets_are_summed_by_the_scrape() -> None:
    before = parse_prometheus(_exposition([(1, 0.02), (1, 0.02)]), NAMES)
    assert before == {TPOT + "_count": 2.0, TPOT + "_sum": pytest.approx(0.04)}
    # Three more requests on engine 0, one on engine 1, each 20 ms a token: 50 tok/s.
    after = parse_prometheus(_exposition([(4, 0.08), (2, 0.04)]), NAMES)
    assert interval_rates(before, after).output_tps == pytest.approx(50.0)
    # Summed, engine 1's idle label set does not make the interval idle.
    idle_one = parse_prometheus(_exposition([(4, 0.08), (1, 0.02)]), NAMES)
    assert interval_rates(before, idle_one).output_tps == pytest.approx(50.0)


def test_idle_keeps_the_last_figures_and_a_restart_starts_over() -> None:
    rates = ScrapedRates()
    rates.update("v", vllm((0, 0.0), (0, 0.0), 0))
    assert rates.get("v") == (None, None)  # one scrape: nothing to compare with
    rates.update("v", vllm((2, 0.04), (2, 0.01), 100))
    assert rates.get("v") == pytest.approx((10000.0, 50.0))
    rates.update("v", vllm((2, 0.04), (2, 0.01), 100))  # idle
    assert rates.get("v") == pytest.approx((10000.0, 50.0))
    rates.update("v", vllm((1, 0.01), (1, 0.01), 10))  # restarted
    assert rates.get("v") == (None, None)
    rates.update("v", vllm((2, 0.03), (2, 0.02), 20))  # on from the new baseline
    assert rates.get("v") == pytest.approx((1000.0, 50.0))


def test_a_lost_engine_is_a_new_baseline_and_gone_instances_are_forgotten() -> None:
    rates = ScrapedRates()
    rates.update("v", vllm((10, 0.5), (10, 0.2), 1000))
    rates.lost("v")
    # Back restarted, its counters already past the old ones: not an interval.
    rates.update("v", vllm((30, 0.6), (30, 0.9), 3000))
    assert rates.get("v") == (None, None)
    rates.update("v", vllm((31, 0.62), (31, 0.91), 3010))
    assert rates.get("v") == pytest.approx((1000.0, 50.0))
    rates.forget_except(set())
    assert rates.get("v") == (None, None)


def test_every_name_read_is_one_the_catalog_asks_the_engine_for() -> None:
    """The scrape keeps only the catalog's names: a name missing there would never arrive."""
    catalog = {spec.id: set(spec.metric_names) for spec in load_catalog().engines}
    for name in NAMES:
        engine = EngineId.VLLM if name.startswith("vllm:") else EngineId.SGLANG
        assert name in catalog[engine], name


def test_the_scraped_rates_reach_the_point_through_the_figures() -> None:
    scrapes = iter([vllm((0, 0.0), (0, 0.0), 0), vllm((5, 0.1), (5, 0.05), 500)])

    async def scrape(instance_id: str) -> dict[str, float]:
        try:
            return next(scrapes)
        except StopIteration:
            raise RoundhouseError("not answering") from None

    async def run() -> EngineFigures:
        figures = EngineFigures(scrape)
        for now in (0.0, 10.0):
            figures.refresh_due(["v"], now, watched=True)
            for _ in range(3):  # the scrape in the background finishes at once
                await asyncio.sleep(0)
        await figures.aclose()
        return figures

    figures = asyncio.run(run())
    vllm_server = ready_instance(
        "v", engine=EngineId.VLLM, model="org/m", origin=InstanceOrigin.EXTERNAL
    )
    inputs = idle_inputs(
        vllm_server, figures=figures.get("v"), scraped_rates=figures.rates.get("v")
    )
    point = build_point(inputs)
    assert point.engine_output_tps == pytest.approx(50.0)
    assert point.engine_prompt_tps == pytest.approx(10000.0)
