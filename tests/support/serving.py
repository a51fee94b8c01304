"""A real daemon serving real instances for a test module: started, each instance ready, and
stopped with its engines at the end."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from roundhouse.api.engines import EngineId, InstanceOptions
from roundhouse.api.instances import InstanceInfo, StartRequest
from roundhouse.api.settings import EngineSettings, Settings
from roundhouse.base.paths import resolve_home
from roundhouse.core.infra.settings import save_settings
from tests.daemon_process import DaemonProcess, running_daemon, start_ready


def llama_cpp(model: Path, **options: Any) -> StartRequest:
    """A llama.cpp start of the GGUF file `model` with these InstanceOptions."""
    return StartRequest(
        engine=EngineId.LLAMA_CPP, options=InstanceOptions(model=str(model), **options)
    )


def mlx(model: Path) -> StartRequest:
    return StartRequest(engine=EngineId.MLX, options=InstanceOptions(model=str(model)))


def mlx_home(root: Path, mlx_python: str) -> Path:
    """`root` as a home whose settings find MLX in `mlx_python`, its models beside it."""
    home = resolve_home(root)
    home.ensure()
    settings = Settings(
        models_dir=str(root.parent / "hub"), engines=EngineSettings(python_paths=[mlx_python])
    )
    save_settings(home.settings_file, settings)
    return root


@contextmanager
def serving(
    root: Path,
    *requests: StartRequest,
    env: dict[str, str] | None = None,
    ready_timeout_s: float = 60.0,
) -> Iterator[tuple[DaemonProcess, list[InstanceInfo]]]:
    """A daemon at `root` with an instance per request, each ready, in order; the daemon
    stops with its engines after the block, unless the test stopped it already."""
    with running_daemon(root, env=env) as daemon:
        infos = [asyncio.run(start_ready(daemon, r, ready_timeout_s)) for r in requests]
        yield daemon, infos
