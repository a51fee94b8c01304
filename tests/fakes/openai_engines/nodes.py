"""The vLLM STAND-IN across nodes: its --nnodes/--node-rank/--headless checks and rendezvous.

The head (rank 0) listens on --master-addr:--master-port, as torch.distributed's store on
rank 0 does, and waits for every follower before it loads the model and opens its API.
Followers (--headless, ranks 1..n-1) connect there, retrying until --join-timeout, send
their rank and serve no HTTP. A follower whose head goes away ends with an error; a head
that loses a follower ends with an error too (vLLM's engine dies with a worker), so one
node's death ends the whole instance unless the supervisor is faster.

With --distributed-executor-backend ray, one process (the head) joins the Ray cluster at
RAY_ADDRESS (the Ray stand-in, tests/fakes/ray) and holds -tp x -pp of its GPUs: no cluster
there, or too few GPUs, ends it with vLLM's and Ray's errors; the cluster's end ends it too.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import threading
import time
from dataclasses import dataclass, replace

DEFAULT_MASTER_PORT = 29501  # vllm/config/parallel.py


@dataclass(frozen=True)
class NodeArgs:
    nnodes: int
    node_rank: int
    master_addr: str
    master_port: int
    headless: bool
    backend: str | None
    join_timeout_s: float
    world_size: int = 1

    @property
    def multi(self) -> bool:
        return self.nnodes > 1


def add_node_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("multi-node (checked)")
    group.add_argument("--nnodes", type=int, default=1)
    group.add_argument("--node-rank", type=int, default=0)
    group.add_argument("--master-addr", default="127.0.0.1")
    group.add_argument("--master-port", type=int, default=DEFAULT_MASTER_PORT)
    group.add_argument("--headless", action="store_true")
    group.add_argument(
        "--distributed-executor-backend", choices=["mp", "ray", "uni", "external_launcher"]
    )
    group.add_argument("--join-timeout", type=float, default=30.0, metavar="S")


def node_args(parser: argparse.ArgumentParser, args: argparse.Namespace) -> NodeArgs:
    """The node flags, refused where vLLM refuses them (and where the stand-in is stricter)."""
    nodes = NodeArgs(
        nnodes=args.nnodes,
        node_rank=args.node_rank,
        master_addr=args.master_addr,
        master_port=args.master_port,
        headless=args.headless,
        backend=args.distributed_executor_backend,
        join_timeout_s=args.join_timeout,
    )
    if nodes.nnodes < 1:
        parser.error(f"--nnodes must be at least 1, not {nodes.nnodes}")
    if not 0 <= nodes.node_rank < nodes.nnodes:
        parser.error(f"--node-rank {nodes.node_rank} must be in [0, {nodes.nnodes}) (--nnodes)")
    if nodes.multi and nodes.backend not in (None, "mp", "uni", "external_launcher"):
        # vllm/config/parallel.py, word for word.
        parser.error(
            "nnodes > 1 can only be set when distributed executor backend is mp, uni or "
            "external_launcher."
        )
    if nodes.headless and nodes.node_rank == 0:
        parser.error("--headless is for the other nodes: node rank 0 serves the API")
    # Stricter than vLLM, which would start a second API server on a worker node.
    if nodes.multi and nodes.node_rank > 0 and not nodes.headless:
        parser.error(f"node rank {nodes.node_rank} runs --headless (only rank 0 serves the API)")
    tp = int(getattr(args, "tensor_parallel_size", None) or 1)
    pp = int(getattr(args, "pipeline_parallel_size", None) or 1)
    if nodes.multi and (tp * pp) % nodes.nnodes:
        parser.error(
            f"world size {tp * pp} (-tp {tp} x -pp {pp}) does not divide over {nodes.nnodes} nodes"
        )
    return replace(nodes, world_size=tp * pp)


def log(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


class Head:
    """Rank 0's rendezvous: every follower's connection, watched for as long as it serves."""

    def __init__(self, nodes: NodeArgs, stopping: threading.Event) -> None:
        self.nodes = nodes
        self.stopping = stopping
        self.listener = socket.create_server((nodes.master_addr, nodes.master_port))
        self.listener.settimeout(0.1)
        self.peers: dict[int, socket.socket] = {}
        self.lost = threading.Event()

    def gather(self) -> bool:
        """Wait for every follower; False on stop or timeout (logged)."""
        deadline = time.monotonic() + self.nodes.join_timeout_s
        want = self.nodes.nnodes - 1
        log(f"INFO:     waiting for {want} node(s) at {self.nodes.master_addr}:"
            f"{self.nodes.master_port}")  # fmt: skip
        while len(self.peers) < want:
            if self.stopping.is_set():
                return False
            if time.monotonic() > deadline:
                log(f"ERROR:    timed out after {self.nodes.join_timeout_s:.0f} s waiting for "
                    f"{want - len(self.peers)} node(s) to join the process group")  # fmt: skip
                return False
            try:
                conn, _ = self.listener.accept()
            except TimeoutError:
                continue
            conn.settimeout(5.0)
            line = conn.makefile("r").readline().split()
            if len(line) != 2 or line[0] != "JOIN" or not line[1].isdigit():
                conn.close()
                continue
            rank = int(line[1])
            if not 0 < rank < self.nodes.nnodes or rank in self.peers:
                log(f"ERROR:    node rank {rank} cannot join (ranks 1..{want}, each once)")
                conn.sendall(b"REFUSED\n")
                conn.close()
                continue
            conn.sendall(b"WELCOME\n")
            conn.settimeout(None)
            self.peers[rank] = conn
            log(f"INFO:     node rank {rank} joined")
        for rank, conn in self.peers.items():
            threading.Thread(target=self._watch, args=(rank, conn), daemon=True).start()
        return True

    def _watch(self, rank: int, conn: socket.socket) -> None:
        try:
            gone = conn.recv(1) == b""
        except OSError:
            gone = True
        if gone and not self.stopping.is_set():
            log(f"ERROR:    EngineDeadError: the workers of node rank {rank} died")
            self.lost.set()

    def close(self) -> None:
        for conn in self.peers.values():
            conn.close()
        self.listener.close()


def follow(nodes: NodeArgs, stopping: threading.Event) -> int:
    """A headless node: join the head, then live as long as it does (no HTTP)."""
    deadline = time.monotonic() + nodes.join_timeout_s
    where = f"{nodes.master_addr}:{nodes.master_port}"
    log(f"INFO:     headless node rank {nodes.node_rank}, head node address {where}")
    while True:
        if stopping.is_set():
            return 0
        try:
            conn = socket.create_connection((nodes.master_addr, nodes.master_port), timeout=1.0)
            break
        except OSError:
            if time.monotonic() > deadline:
                log(f"ERROR:    could not reach the head node at {where} "
                    f"in {nodes.join_timeout_s:.0f} s")  # fmt: skip
                return 1
            stopping.wait(0.1)
    with conn:
        conn.sendall(f"JOIN {nodes.node_rank}\n".encode())
        answer = conn.makefile("r").readline().strip()
        if answer != "WELCOME":
            log(f"ERROR:    the head node refused node rank {nodes.node_rank}")
            return 1
        log(f"INFO:     node rank {nodes.node_rank} joined the head node at {where}")
        conn.settimeout(0.1)
        while not stopping.is_set():
            try:
                if conn.recv(1) == b"":
                    break
            except TimeoutError:
                continue
            except OSError:
                break
    if stopping.is_set():
        return 0
    log("ERROR:    the head node went away; this node's workers stop")
    return 1


class RayDriver:
    """--distributed-executor-backend ray: vLLM's placement group on the Ray cluster at
    RAY_ADDRESS (the Ray stand-in's GCS), held while it serves; the cluster's end is the
    engine's (its workers die with it)."""

    def __init__(self, conn: socket.socket, stopping: threading.Event) -> None:
        self.conn = conn
        self.stopping = stopping
        self.lost = threading.Event()
        threading.Thread(target=self._watch, daemon=True).start()

    @classmethod
    def attach(cls, gpus: int, stopping: threading.Event) -> RayDriver | None:
        """The placement group of `gpus` GPUs, or None (logged as vLLM and Ray say it)."""
        address = os.environ.get("RAY_ADDRESS")
        if not address:
            # Real vLLM would start a one-node Ray of its own here: the stand-in will not.
            log("ERROR:    RAY_ADDRESS is not set: the stand-in joins a Ray cluster only")
            return None
        host, _, port = address.rpartition(":")
        try:
            conn = socket.create_connection((host.strip("[]"), int(port)), timeout=5.0)
            conn.sendall(f"DRIVER {gpus}\n".encode())
            answer = conn.makefile("r").readline().split()
        except (OSError, ValueError) as exc:
            log(f"ERROR:    ConnectionError: Could not find any running Ray instance at "
                f"{address} ({exc})")  # fmt: skip
            return None
        if answer != ["OK"]:
            conn.close()
            log(
                "ERROR:    ValueError: The number of required GPUs exceeds the total number of "
                f"available GPUs in the placement group ({gpus} asked; {' '.join(answer)})"
            )
            return None
        log(f"INFO:     connected to the Ray cluster at {address}; placement group of {gpus} GPUs")
        conn.settimeout(None)
        return cls(conn, stopping)

    def _watch(self) -> None:
        try:
            gone = self.conn.recv(1) == b""
        except OSError:
            gone = True
        if gone and not self.stopping.is_set():
            log("ERROR:    EngineDeadError: the Ray cluster went away (RayActorError)")
            self.lost.set()

    def close(self) -> None:
        self.conn.close()
