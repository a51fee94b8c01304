"""`roundhouse gateway usage` says how many requests each client API sent, and which way."""

from __future__ import annotations

import io

from rich.console import Console

from roundhouse.api.gateway import GatewayUsage, InstanceUsage
from roundhouse.cli.gateway_view import usage_view


def _render(answer: GatewayUsage) -> str:
    out = io.StringIO()
    Console(file=out, width=160, color_system=None).print(usage_view(answer, now=lambda: 100.0))
    return out.getvalue()


def test_usage_names_each_api_and_the_path_it_took() -> None:
    answer = GatewayUsage(
        usage=[
            InstanceUsage(
                instance="i1",
                requests=5,
                by_api={"openai/passthrough": 2, "anthropic/translated": 3},
                last_used_at=90.0,
            ),
            InstanceUsage(instance="i2"),
        ]
    )
    text = _render(answer)
    assert "i1: anthropic/translated 3, openai/passthrough 2" in text
    assert "i2:" not in text
    assert "10s ago" in text


def test_usage_with_no_requests_shows_the_table_alone() -> None:
    text = _render(GatewayUsage(usage=[InstanceUsage(instance="i1")]))
    assert "Requests by API" not in text and "never" in text
