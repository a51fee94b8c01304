"""The user's Ray cluster for vLLM: found beside vLLM, asked with `ray status`, read."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from roundhouse.api.engines import DetectedEngine
from roundhouse.core.engines.common import refuse
from roundhouse.core.engines.host import EngineHost

# `ray status` connects to the GCS, asks the autoscaler's report and prints it: a few
# seconds on a live cluster; an address nobody answers fails after Ray's own connect
# timeout. Bounded well inside the client's wait for the start's answer (ACROSS_TIMEOUT).
STATUS_TIMEOUT_S = 45.0
# The node groups of the report's "Node status" section (Healthy: Ray before 2.5; Idle:
# nodes with nothing placed on them yet), each line " COUNT NODE-TYPE".
_NODE_SECTIONS = ("Active:", "Healthy:", "Idle:")
_NODE_LINE = re.compile(r"^\s*(\d+)\s+\S")
# A resource line of "Usage:" (or "Total Usage:"): " USED/TOTAL GPU".
_GPU_LINE = re.compile(r"^\s*[\d.]+/([\d.]+)\s+GPU\s*$")


@dataclass(frozen=True)
class RayCluster:
    """What `ray status` said of the cluster at `address`."""

    address: str
    nodes: int
    gpus: float


def ray_program(detected: DetectedEngine, host: EngineHost) -> str | None:
    """The `ray` of vLLM's own environment (installed beside its program or its Python, as
    pip puts console scripts), else the one on PATH: the Ray vLLM imports is that one."""
    windows = host.system == "Windows"
    name = "ray.exe" if windows else "ray"
    for program in (detected.path, detected.python):
        if program and Path(program).is_absolute():
            beside = str(Path(program).parent / name)
            if host.is_file(beside):
                return beside
    return host.which("ray")


def status_argv(ray: str, address: str) -> list[str]:
    return [ray, "status", f"--address={address}"]


def read_status(output: str, address: str) -> RayCluster | None:
    """The nodes and GPUs of a `ray status` report; None when it is not one."""
    nodes = 0
    gpus = 0.0
    section = ""
    seen_report = False
    for line in output.splitlines():
        stripped = line.strip()
        if stripped in ("Node status", "Resources"):
            seen_report = True
        if stripped.endswith(":") and not line.startswith(" "):
            section = stripped
            continue
        if section in _NODE_SECTIONS and (match := _NODE_LINE.match(line)):
            nodes += int(match.group(1))
        elif section.endswith("Usage:") and (match := _GPU_LINE.match(line)):
            gpus = float(match.group(1))
    return RayCluster(address, nodes, gpus) if seen_report and nodes else None


def check_cluster(
    host: EngineHost,
    detected: DetectedEngine,
    address: str,
    *,
    machines: int,
    gpus_needed: int,
    start_lines: Sequence[str],
) -> RayCluster:
    """The cluster at `address`, or a refusal in words that gives the `ray start` line to
    run on each machine. Runs `ray status`: call it from a worker thread."""
    how = " Start it first, on each machine in this order: " + " ; ".join(start_lines) + "."
    ray = ray_program(detected, host)
    if ray is None:
        refuse(
            "Ray is not installed beside vLLM on this machine: install it there and on every "
            f"other machine (`pip install 'ray[default]'` in vLLM's environment).{how}"
        )
    answer = host.run(status_argv(ray, address), timeout=STATUS_TIMEOUT_S)
    cluster = read_status(answer, address) if answer is not None else None
    if cluster is None:
        refuse(f"No Ray cluster answers at {address} (`ray status` there found none).{how}")
    short: list[str] = []
    if cluster.nodes < machines:
        short.append(f"{cluster.nodes} of the {machines} machines have joined it")
    if cluster.gpus < gpus_needed:
        short.append(f"it has {cluster.gpus:g} GPUs and the split needs {gpus_needed}")
    if short:
        refuse(
            f"The Ray cluster at {address} is too small for this split: {'; '.join(short)}. "
            f"Join the missing machines to it.{how}"
        )
    return cluster
