"""What one engine's estimate found, before it becomes a FitReport: loads per device."""

from __future__ import annotations

from dataclasses import dataclass

from roundhouse.api.fit import DeviceFit, DeviceKind, FitVerdict


@dataclass(frozen=True)
class Load:
    """What a device would hold, and what it has; sizes in bytes."""

    label: str
    kind: DeviceKind
    index: int | None
    free: int
    weights: int = 0
    kv: int = 0
    compute: int = 0
    footprint: int = 0
    layers: int = 0
    capacity: int | None = None
    note: str = ""
    margin: int = 0  # kept free
    # vLLM/SGLang: the share of the GPU the engine claims: at most this is usable, and at
    # least this must be free for the engine to start.
    claim: int | None = None

    @property
    def total(self) -> int:
        return self.weights + self.kv + self.compute + self.footprint

    @property
    def short(self) -> int:
        """Bytes missing on this device (0 when it fits with its margin)."""
        if self.claim is not None:
            return max(self.total - self.claim, self.claim - self.free, 0)
        return max(self.total + self.margin - self.free, 0)

    @property
    def fits(self) -> bool:
        return self.short == 0

    def device_fit(self) -> DeviceFit:
        return DeviceFit(
            label=self.label,
            kind=self.kind,
            index=self.index,
            layers=self.layers,
            weights_bytes=self.weights,
            kv_bytes=self.kv,
            compute_bytes=self.compute,
            footprint_bytes=self.footprint,
            total_bytes=self.total,
            free_bytes=self.free,
            capacity_bytes=self.capacity,
            margin_bytes=self.margin,
            fits=self.fits,
            note=self.note,
        )


@dataclass(frozen=True)
class Outcome:
    """One estimate: the verdict, the loads, and the totals the report shows."""

    verdict: FitVerdict
    gpu_layers: int
    total_layers: int
    loads: tuple[Load, ...]
    weights: int
    kv: int
    compute: int
    total: int  # memory needed in all, unified memory counted once
    missing: int = 0
    notes: tuple[str, ...] = ()

    @property
    def fits(self) -> bool:
        return self.verdict != FitVerdict.DOES_NOT_FIT

    def gpu_loads(self) -> tuple[Load, ...]:
        return tuple(load for load in self.loads if load.kind == DeviceKind.GPU)
