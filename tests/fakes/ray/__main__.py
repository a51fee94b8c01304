"""`ray start --head|--address=... --block` and `ray status --address=...`, played.

Stricter than Ray: `ray start` runs in the foreground only (--block), and the GPUs of a
node are given (--num-gpus), as the stand-in detects none.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
import uuid
from datetime import datetime
from types import FrameType

from tests.fakes.ray.gcs import Gcs, Node, ask


def _stop_on_signals(stopping: threading.Event) -> None:
    def stop(signum: int, frame: FrameType | None) -> None:
        stopping.set()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)


def start(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="ray start", allow_abbrev=False)
    parser.add_argument("--head", action="store_true")
    parser.add_argument("--address")
    parser.add_argument("--port", type=int, default=6379)
    parser.add_argument("--node-ip-address", default="127.0.0.1")
    parser.add_argument("--num-gpus", type=float, default=0.0)
    parser.add_argument("--block", action="store_true")
    args = parser.parse_args(argv)
    if not args.block:
        parser.error("the stand-in runs in the foreground only: add --block")
    if args.head == bool(args.address):
        parser.error("give --head, or --address of the head to join")
    stopping = threading.Event()
    _stop_on_signals(stopping)
    if args.head:
        head = Node("node_" + uuid.uuid4().hex, args.node_ip_address, args.num_gpus)
        gcs = Gcs(args.node_ip_address, args.port, head)
        print(f"Ray runtime started. GCS at {args.node_ip_address}:{args.port}", flush=True)
        gcs.serve(stopping)
        return 0
    try:
        conn = ask(args.address, f"JOIN {args.node_ip_address} {args.num_gpus:g}")
        conn.makefile("r").readline()
    except OSError as exc:
        print(f"ConnectionError: could not reach the head at {args.address}: {exc}",
              file=sys.stderr)  # fmt: skip
        return 1
    print(f"Ray runtime started, joined {args.address}", flush=True)
    conn.settimeout(0.1)
    while not stopping.is_set():
        try:
            if conn.recv(1) == b"":
                return 1  # the head went away
        except TimeoutError:
            continue
    return 0


def status(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="ray status", allow_abbrev=False)
    parser.add_argument("--address", required=True)
    args = parser.parse_args(argv)
    try:
        conn = ask(args.address, "STATUS")
        with conn:
            found = json.loads(conn.makefile("r").readline())
    except (OSError, ValueError) as exc:
        print(f"ConnectionError: Could not find any running Ray instance at {args.address} "
              f"({exc}).", file=sys.stderr)  # fmt: skip
        return 1
    total = sum(node["gpus"] for node in found["nodes"])
    nodes = "\n".join(f" 1 {node['id']}" for node in found["nodes"])
    print(f"""======== Autoscaler status: {datetime.now()} ========
Node status
---------------------------------------------------------------
Active:
{nodes}
Pending:
 (no pending nodes)
Recent failures:
 (no failures)

Resources
---------------------------------------------------------------
Total Usage:
 0.0/16.0 CPU
 {found["used"]:.1f}/{total:.1f} GPU
 0B/64.00GiB memory

Pending Demands:
 (no resource demands)""")
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    commands = {"start": start, "status": status}
    if not argv or argv[0] not in commands:
        print("usage: ray {start,status} ...", file=sys.stderr)
        return 2
    return commands[argv[0]](argv[1:])


if __name__ == "__main__":
    sys.exit(main())
