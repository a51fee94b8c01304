"""Run the Ollama STAND-IN: `python -m tests.fakes.ollama --port N --state DIR [failure flags]`."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from pathlib import Path
from types import FrameType

from tests.fakes.ollama.server import VERSION, Options, make_server

DEFAULT_HOST, DEFAULT_PORT = "127.0.0.1", 11434


def parse_ollama_host(value: str) -> tuple[str, int]:
    """`OLLAMA_HOST` as `ollama serve` reads it: `host`, `host:port`, `:port`, `http://…`."""
    value = value.strip().split("://", 1)[-1].rstrip("/")
    host, sep, port = value.rpartition(":")
    if not sep or "]" in port:
        host, port = value, ""
    host = host.strip("[]") or DEFAULT_HOST
    return host, int(port) if port else DEFAULT_PORT


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fakes.ollama", description=__doc__)
    parser.add_argument("serve", nargs="?", choices=["serve"], help="accepted, like `ollama serve`")
    parser.add_argument("--host", help="bind address (default: OLLAMA_HOST, else 127.0.0.1)")
    parser.add_argument("--port", type=int, help="port (default: OLLAMA_HOST's, else 11434)")
    parser.add_argument(
        "--state", type=Path, help="folder for the fake registry and pulled models (required)"
    )
    parser.add_argument(
        "--fail-pull-after-bytes", type=int, metavar="N", help="each pull errors after N bytes"
    )
    parser.add_argument(
        "--slow-start", type=float, default=0.0, metavar="S", help="bind, but answer after S s"
    )
    parser.add_argument(
        "--crash-on-chat", action="store_true", help="exit 2 after the first chat chunk"
    )
    parser.add_argument("--pull-delay", type=float, default=0.002, metavar="S")
    parser.add_argument("--token-delay", type=float, default=0.0, metavar="S")
    parser.add_argument("--eval-rate", type=float, default=50.0, metavar="TOK_PER_S")
    parser.add_argument("--gpu-share", type=float, default=1.0, metavar="F")
    args = parser.parse_args(argv)

    env_host, env_port = parse_ollama_host(os.environ.get("OLLAMA_HOST", ""))
    host = args.host or env_host
    port = env_port if args.port is None else args.port
    if args.state is None:
        parser.error("--state DIR is required")
    options = Options(
        state=args.state,
        fail_pull_after_bytes=args.fail_pull_after_bytes,
        slow_start_s=args.slow_start,
        crash_on_chat=args.crash_on_chat,
        pull_delay_s=args.pull_delay,
        token_delay_s=args.token_delay,
        eval_rate=args.eval_rate,
        gpu_share=args.gpu_share,
    )
    try:
        server = make_server(host, port, options)
    except OSError as exc:
        reason = "address already in use" if exc.errno == 98 else str(exc.strerror)
        print(f"Error: listen tcp {host}:{port}: bind: {reason}", file=sys.stderr)
        return 1

    def stop(signum: int, frame: FrameType | None) -> None:
        # Once is enough: later signals (the group's, then the process's own) are ignored.
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print(
        f"Listening on {host}:{server.server_address[1]} (version {VERSION}, Ollama STAND-IN,"
        f" pid {os.getpid()})",
        file=sys.stderr,
        flush=True,
    )
    try:
        server.serve_forever(poll_interval=0.05)
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
