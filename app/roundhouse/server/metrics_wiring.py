"""Build the metrics service over the daemon's instances, gateway and hardware."""

from __future__ import annotations

from roundhouse.core.gateway.gateway import Gateway
from roundhouse.core.instances.service import InstanceService
from roundhouse.core.metrics.service import MetricsService
from roundhouse.server.services import DaemonState


def build_metrics(
    state: DaemonState, instances: InstanceService, gateway: Gateway
) -> MetricsService:
    async def scrape(instance_id: str) -> dict[str, float]:
        return (await instances.metrics(instance_id)).values

    def gpu_processes() -> dict[int, int]:
        # The inventory's NVML reading of processes per GPU (only called with an NVIDIA GPU,
        # every few seconds, in a worker thread).
        used: dict[int, int] = {}
        for gpu in state.hardware.inventory().gpus:
            for proc in gpu.processes:
                if proc.used_bytes is not None:
                    used[proc.pid] = used.get(proc.pid, 0) + proc.used_bytes
        return used

    return MetricsService(
        lambda: instances.all(memory=False),
        lambda: gateway,
        scrape,
        state.inventory,
        gpu_processes,
    )
