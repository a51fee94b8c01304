"""Prometheus text as engines write it: named series summed over labels, the rest skipped."""

from __future__ import annotations

from roundhouse.core.engines.metrics import parse_prometheus

TEXT = """\
# HELP llamacpp:prompt_tokens_total Number of prompt tokens processed.
# TYPE llamacpp:prompt_tokens_total counter
llamacpp:prompt_tokens_total 42
llamacpp:tokens_predicted_total 7.5e1
vllm:generation_tokens_total{model_name="a",engine="0"} 10
vllm:generation_tokens_total{model_name="b",engine="0"} 5
vllm:num_requests_running{model_name="a"} NaN
vllm:e2e_request_latency_seconds_bucket{le="0.3"} 3
other_metric 1
broken{ 9
"""


def test_named_series_are_read_and_summed_over_labels() -> None:
    names = [
        "llamacpp:prompt_tokens_total",
        "llamacpp:tokens_predicted_total",
        "vllm:generation_tokens_total",
        "vllm:num_requests_running",
        "broken",
    ]
    assert parse_prometheus(TEXT, names) == {
        "llamacpp:prompt_tokens_total": 42.0,
        "llamacpp:tokens_predicted_total": 75.0,
        "vllm:generation_tokens_total": 15.0,
    }


def test_nothing_named_is_nothing_found() -> None:
    assert parse_prometheus(TEXT, []) == {}
    assert parse_prometheus("", ["x"]) == {}
