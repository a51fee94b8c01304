"""The split across machines proposed from a fit estimate: layers by free memory, llama.cpp's
device order (workers, then this machine's GPUs), and the sentence when it would be slower."""

from __future__ import annotations

from roundhouse.api.fit import DeviceFit, DeviceKind, FitEngine, FitReport, FitVerdict
from roundhouse.api.rpc import MachineMemory
from roundhouse.core.knowledge.fit.split import propose_split

GIB = 1024**3


def device(kind: DeviceKind, free: int, index: int | None = None) -> DeviceFit:
    return DeviceFit(
        label="GPU 0" if kind == DeviceKind.GPU else "RAM",
        kind=kind,
        index=index,
        weights_bytes=0,
        kv_bytes=0,
        compute_bytes=0,
        footprint_bytes=0,
        total_bytes=0,
        free_bytes=free,
        fits=False,
    )


def report(verdict: FitVerdict, devices: list[DeviceFit], layers: int = 81) -> FitReport:
    # A 40 GiB model with 8 GiB of KV cache, 1 GiB of work buffers on each machine.
    return FitReport(
        verdict=verdict,
        engine=FitEngine.LLAMA_CPP,
        summary="",
        context_length=8192,
        n_parallel=1,
        gpu_layers=0,
        total_layers=layers,
        devices=devices,
        weights_bytes=40 * GIB,
        kv_bytes=8 * GIB,
        kv_bytes_per_token=1,
        compute_bytes=1 * GIB,
        total_bytes=49 * GIB,
    )


def test_a_model_too_big_for_one_gpu_is_split_by_free_memory() -> None:
    here = report(FitVerdict.DOES_NOT_FIT, [device(DeviceKind.GPU, 27 * GIB, 0)])
    workers = [MachineMemory(address="10.0.0.2:50052", free_bytes=27 * GIB)]
    proposal = propose_split(here, workers)
    assert sorted(s.layers for s in proposal.shares) == [40, 41]
    assert proposal.fits and all(s.fits for s in proposal.shares)
    # llama.cpp lists RPC workers before the GPUs: the worker's share comes first.
    worker_share = proposal.shares[1].layers
    assert proposal.tensor_split == [float(worker_share), float(81 - worker_share)]
    assert proposal.n_gpu_layers == 81
    assert proposal.slower == ""
    assert proposal.summary.startswith("Split over 2 machines: this machine ")


def test_without_a_gpu_here_this_machines_share_stays_on_its_cpu() -> None:
    here = report(FitVerdict.DOES_NOT_FIT, [device(DeviceKind.CPU, 10 * GIB)])
    workers = [
        MachineMemory(address="10.0.0.2:50052", free_bytes=21 * GIB),
        MachineMemory(address="10.0.0.3:50052", free_bytes=31 * GIB),
    ]
    proposal = propose_split(here, workers)
    layers = [s.layers for s in proposal.shares]
    assert layers[0] < layers[1] < layers[2] and sum(layers) == 81
    assert proposal.tensor_split == [float(layers[1]), float(layers[2])]
    assert proposal.n_gpu_layers == 81 - layers[0]
    assert proposal.fits


def test_too_little_free_anywhere_says_where() -> None:
    here = report(FitVerdict.DOES_NOT_FIT, [device(DeviceKind.GPU, 8 * GIB, 0)])
    proposal = propose_split(here, [MachineMemory(address="10.0.0.2:50052", free_bytes=8 * GIB)])
    assert not proposal.fits
    assert "Too little free on this machine, 10.0.0.2:50052." in proposal.summary


def test_it_says_plainly_when_one_machine_would_be_faster() -> None:
    fits = report(FitVerdict.FULL_GPU, [device(DeviceKind.GPU, 80 * GIB, 0)])
    worker = [MachineMemory(address="10.0.0.2:50052", free_bytes=80 * GIB)]
    assert "one machine is faster" in propose_split(fits, worker).slower
    cpu = report(FitVerdict.CPU_ONLY, [device(DeviceKind.CPU, 64 * GIB)])
    assert "lends memory, not speed" in propose_split(cpu, worker).slower
    big = report(FitVerdict.DOES_NOT_FIT, [device(DeviceKind.GPU, 30 * GIB, 0)])
    assert "100 Mbit/s" in propose_split(big, worker, link_mbps=100).slower
    assert propose_split(big, worker, link_mbps=10_000).slower == ""


def test_one_device_in_all_needs_no_tensor_split() -> None:
    here = report(FitVerdict.DOES_NOT_FIT, [device(DeviceKind.CPU, 0)])
    proposal = propose_split(here, [MachineMemory(address="10.0.0.2:50052", free_bytes=60 * GIB)])
    assert proposal.tensor_split == []
    assert proposal.n_gpu_layers == 81
    assert [s.layers for s in proposal.shares] == [0, 81]
