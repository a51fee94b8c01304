"""Build the metrics service over the daemon's instances, gateway and hardware."""

from __future__ import annotations

from roundhouse.core.metrics.service import MetricsService
from roundhouse.server.services import DaemonServices


def build_metrics(services: DaemonServices) -> MetricsService:
    instances = services.instance_service()

    async def scrape(instance_id: str) -> dict[str, float]:
        return (await instances.metrics(instance_id)).values

    def gpu_processes() -> dict[int, int]:
        # The inventory's NVML reading of processes per GPU (only called with an NVIDIA GPU,
        # every few seconds, in a worker thread).
        used: dict[int, int] = {}
        for gpu in services.hardware.inventory().gpus:
            for proc in gpu.processes:
                if proc.used_bytes is not None:
                    used[proc.pid] = used.get(proc.pid, 0) + proc.used_bytes
        return used

    return MetricsService(
        lambda: instances.all(memory=False),
        services.gateway,
        scrape,
        services.inventory,
        gpu_processes,
    )
