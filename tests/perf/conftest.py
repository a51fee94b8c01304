"""Benchmarks report their figures into tests/perf/results/ and on the terminal."""

from __future__ import annotations

import json
import platform
import time
from pathlib import Path
from typing import Any

import pytest

RESULTS = Path(__file__).parent / "results"


class Report:
    def __init__(self, name: str) -> None:
        self.name = name
        self.figures: dict[str, Any] = {}

    def add(self, key: str, value: Any) -> None:
        self.figures[key] = value
        print(f"[{self.name}] {key}: {value}")

    def save(self) -> Path:
        RESULTS.mkdir(exist_ok=True)
        path = RESULTS / f"{self.name}.json"
        record = {
            "benchmark": self.name,
            "when": time.strftime("%Y-%m-%d %H:%M:%S"),
            "machine": f"{platform.system()} {platform.machine()}, {platform.processor()}",
            "figures": self.figures,
        }
        path.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
        return path


@pytest.fixture
def report(request: pytest.FixtureRequest) -> Any:
    rep = Report(request.node.name)
    yield rep
    rep.save()
