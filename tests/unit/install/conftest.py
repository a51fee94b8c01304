"""A fake GitHub release host, a machine to install for, and an engines folder to install into."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from roundhouse.api.hardware import CpuInfo, GpuInfo, HardwareInventory, MemoryInfo
from roundhouse.api.installs import InstallProgress
from tests.fakes.releases.server import ReleaseServer

T = TypeVar("T")


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


def inventory(
    system: str = "Linux", arch: str = "x86_64", gpus: list[GpuInfo] | None = None
) -> HardwareInventory:
    return HardwareInventory(
        os=system,
        os_version="test",
        cpu=CpuInfo(brand="Test CPU", arch=arch, physical_cores=2, logical_cores=2, features=[]),
        memory=MemoryInfo(total_bytes=16 * 1024**3, available_bytes=8 * 1024**3),
        disk=None,
        gpus=gpus or [],
        unseen=[],
        recommendations=[],
    )


class Events(list[InstallProgress]):
    """A progress callback that keeps every event."""

    def __call__(self, event: InstallProgress) -> None:
        self.append(event)

    def stages(self) -> list[str]:
        return list(dict.fromkeys(e.stage.value for e in self))


@pytest.fixture
def server() -> Iterator[ReleaseServer]:
    with ReleaseServer() as fake:
        yield fake


@pytest.fixture
def engines_dir(tmp_path: Path) -> Path:
    # A user's data folder named in two scripts (llama.cpp #18571).
    return tmp_path / "данные 数据" / "engines"
