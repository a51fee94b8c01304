"""The Machines page's words and `roundhouse events`' line for the peers kind: a machine's
hardware, whether it answers or why not, an instance's load, and a peers event in a line."""

from __future__ import annotations

import time

from roundhouse.api.events import PeersEvent
from roundhouse.api.hardware import CpuInfo, GpuInfo, GpuVendor, HardwareInventory, MemoryInfo
from roundhouse.api.peers import (
    PeerInfo,
    PeerListenerStatus,
    PeerLoad,
    PeerSeen,
    PeerState,
    PeersView,
)
from roundhouse.cli.events_view import EventLines, peers_line
from roundhouse.gui.widgets.machines_words import hardware_line, load_text, reachability

GIB = 2**30


def _hardware(gpus: list[GpuInfo]) -> HardwareInventory:
    return HardwareInventory(
        os="Linux",
        os_version="6",
        cpu=CpuInfo(
            brand="AMD EPYC", arch="x86_64", physical_cores=8, logical_cores=16, features=[]
        ),
        memory=MemoryInfo(total_bytes=64 * GIB, available_bytes=32 * GIB),
        disk=None,
        gpus=gpus,
        unseen=[],
        recommendations=[],
    )


def _peer(**update: object) -> PeerInfo:
    peer = PeerInfo(
        id="3f1a09c277d0",
        name="gpu-box",
        host="192.168.1.20",
        port=11502,
        fingerprint="ab" * 32,
        paired_at=time.time(),
    )
    return peer.model_copy(update=update)


def test_the_hardware_in_a_line() -> None:
    gpu = GpuInfo(
        index=0,
        vendor=GpuVendor.NVIDIA,
        name="RTX 4090",
        memory_total_bytes=24 * GIB,
        source="nvml",
    )
    assert hardware_line(_hardware([gpu])) == (
        "RTX 4090 (24.0 GiB); 64.0 GiB RAM; AMD EPYC, 16 threads"
    )
    assert hardware_line(_hardware([])).startswith("No GPU; 64.0 GiB RAM")
    assert hardware_line(None) == "Hardware not known yet."


def test_whether_it_answers_or_why_not() -> None:
    answers = reachability(_peer(reachable=True, version="0.2.0"))
    assert answers == "Reachable at 192.168.1.20:11502 (Roundhouse 0.2.0)"
    assert "not heard from yet" in reachability(_peer())
    why = "gpu-box at 192.168.1.20:11502 did not answer in time."
    assert reachability(_peer(reachable=False, error=why)) == f"Not reachable: {why}"


def test_an_instances_load() -> None:
    load = [PeerLoad(instance="a1", in_flight=2, queued=1)]
    assert load_text(load, "a1") == "2 in flight, 1 queued"
    assert load_text(load, "b2") == "—"


def test_a_peers_event_in_a_line() -> None:
    state = PeerState(name="gpu-box", version="0.2.0", fingerprint="ab" * 32)
    view = PeersView(
        peers=[_peer(reachable=True), _peer(id="77aa", name="old-mac", reachable=False, error="x")],
        listener=PeerListenerStatus(fingerprint="cd" * 32),
        seen=[PeerSeen(id="3f1a09c277d0", state=state), PeerSeen(id="77aa", error="x")],
    )
    assert peers_line(view) == "2 paired machines: gpu-box (0 instances), old-mac (not reachable)"
    empty = PeersView(peers=[], listener=view.listener, seen=[])
    line = EventLines().line(PeersEvent(seq=7, at=time.time(), data=empty))
    assert line.startswith("7 ") and line.endswith("peers     no paired machines")
