"""Scripted bad engines for the supervisor's tests, and the LaunchPlan that runs each."""

from __future__ import annotations

import sys
from pathlib import Path

from roundhouse.api.engines import EngineId, LaunchPlan, ReadinessProbe, StopMethod

SCRIPTS = Path(__file__).resolve().parent
MODEL_ID = "fake-model"


def fake_plan(
    script: str,
    port: int,
    *args: str,
    stop_grace_s: float = 2.0,
    env: dict[str, str] | None = None,
    secret_env: tuple[str, ...] = (),
) -> LaunchPlan:
    """Run tests/fakes/engines/`script` with this Python, probed like llama-server."""
    base = f"http://127.0.0.1:{port}"
    return LaunchPlan(
        engine=EngineId.LLAMA_CPP,
        argv=(sys.executable, str(SCRIPTS / script), str(port), *args),
        env=env or {},
        secret_env=secret_env,
        host="127.0.0.1",
        port=port,
        base_url=f"{base}/v1",
        probe_url=f"{base}/health",
        readiness=ReadinessProbe(path="/health", loading_statuses=[503]),
        models_url=f"{base}/v1/models",
        metrics_url=None,
        expected_model_id=MODEL_ID,
        stop=StopMethod.SIGNAL,
        stop_grace_s=stop_grace_s,
    )
