"""Shared helpers: recorded machines and the NVML stand-in."""

from __future__ import annotations

from pathlib import Path

import pytest

from roundhouse.core.hardware.recorded import RecordedHost

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "hardware"


def machine(name: str) -> RecordedHost:
    """A recorded machine from tests/fixtures/hardware/<name>."""
    return RecordedHost(FIXTURES / name)


@pytest.fixture
def models_dir(tmp_path: Path) -> Path:
    return tmp_path / "not-yet" / "models"
