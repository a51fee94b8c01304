"""The vLLM and SGLang stand-ins' time-per-token and prefill histograms follow what they
served, so the engine-side rates read from them match the stand-in's pace."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from roundhouse.core.engines.metrics import parse_prometheus
from roundhouse.core.metrics.scraped_rates import NAMES, interval_rates
from tests.fakes.openai_engines import start_standin
from tests.processes import free_port

DELAY_S = 0.02  # the stand-in's pace: 50 tokens/s
USER = [{"role": "user", "content": "hello there friend"}]  # 4 prompt tokens


def _scrape(url: str) -> dict[str, float]:
    return parse_prometheus(httpx.get(f"{url}/metrics", timeout=5).text, NAMES)


def _chats(url: str, model: str, count: int, max_tokens: int) -> None:
    with httpx.Client(base_url=url, timeout=10) as http:
        for _ in range(count):
            body = {"model": model, "messages": USER, "max_tokens": max_tokens, "stream": True}
            with http.stream("POST", "/v1/chat/completions", json=body) as reply:
                assert reply.status_code == 200
                for _line in reply.iter_lines():
                    pass


@pytest.mark.parametrize("names", ["both", "old"])
def test_vllm_histograms_give_its_pace(tmp_path: Path, names: str) -> None:
    args = ("serve", "m", "--token-delay", str(DELAY_S), "--load-seconds", "0")
    standin = start_standin("vllm", tmp_path, free_port(), *args, "--metric-names", names)
    try:
        before = _scrape(standin.base_url)
        _chats(standin.base_url, "m", 3, 8)
        after = _scrape(standin.base_url)
    finally:
        standin.stop()
    delta = {name: after[name] - before.get(name, 0.0) for name in after}
    assert delta["vllm:request_prefill_time_seconds_count"] == 3
    assert delta["vllm:request_prompt_tokens_sum"] == 3 * 4
    if names == "both":
        assert delta["vllm:request_time_per_output_token_seconds_count"] == 3
        assert delta["vllm:inter_token_latency_seconds_count"] == 3 * 7
    else:  # an older vLLM: the per-token histogram under its old name, and only that
        assert delta["vllm:time_per_output_token_seconds_count"] == 3 * 7
        assert "vllm:inter_token_latency_seconds_count" not in after
    rates = interval_rates(before, after)
    assert rates.output_tps is not None and 30 < rates.output_tps <= 51, rates
    # Its prefill is the wait for the first token: 4 tokens in about 20 ms.
    assert rates.prompt_tps is not None and 120 < rates.prompt_tps <= 205, rates


def test_sglang_inter_token_histogram_gives_its_pace_and_no_prompt_rate(tmp_path: Path) -> None:
    args = ("--model-path", "m", "--enable-metrics", "--token-delay", str(DELAY_S))
    standin = start_standin("sglang", tmp_path, free_port(), *args, "--load-seconds", "0")
    try:
        before = _scrape(standin.base_url)
        _chats(standin.base_url, "m", 2, 8)
        after = _scrape(standin.base_url)
    finally:
        standin.stop()
    count = "sglang:inter_token_latency_seconds_count"
    assert after[count] - before[count] == 2 * 7
    rates = interval_rates(before, after)
    assert rates.output_tps is not None and 30 < rates.output_tps <= 51, rates
    assert rates.prompt_tps is None
