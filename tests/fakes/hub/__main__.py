"""Run the fake Hub: `python -m tests.fakes.hub --repos DIR [--port 0] [--ready-file F]`.

When both listeners are bound it prints one JSON line on stdout, and writes the same to
`--ready-file` (atomically): `{"hub": URL, "cdn": URL, "pid": N}`. SIGTERM stops it.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
from pathlib import Path
from types import FrameType

from tests.fakes.hub.server import HubServers
from tests.fakes.hub.state import HubState, Settings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fakes.hub", description=__doc__)
    parser.add_argument("--repos", type=Path, required=True, help="folder of <org>/<name> repos")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="Hub port (0: any free one)")
    parser.add_argument("--cdn-port", type=int, default=0, help="CDN port (0: any free one)")
    parser.add_argument("--ready-file", type=Path, help="where to write the URLs once bound")
    parser.add_argument("--no-redirect", action="store_true", help="serve LFS files directly")
    parser.add_argument("--page-size", type=int, default=1000, help="/api/models page size")
    parser.add_argument("--tree-page-size", type=int, default=1000, help="/tree page size")
    parser.add_argument(
        "--token", action="append", default=[], help="a token that opens every repo (repeatable)"
    )
    args = parser.parse_args(argv)
    if not args.repos.is_dir():
        parser.error(f"--repos {args.repos} is not a folder")

    settings = Settings(not args.no_redirect, args.page_size, args.tree_page_size)
    state = HubState(args.repos, settings, {token: {"*"} for token in args.token})
    try:
        servers = HubServers(state, args.host, args.port, args.cdn_port)
    except OSError as exc:
        print(f"Error: cannot listen on {args.host}: {exc.strerror}", file=sys.stderr)
        return 1
    hub_url, cdn_url = servers.urls()
    done = threading.Event()

    def stop(signum: int, frame: FrameType | None) -> None:
        done.set()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    servers.start()
    ready = json.dumps({"hub": hub_url, "cdn": cdn_url, "pid": os.getpid()})
    if args.ready_file is not None:
        tmp = args.ready_file.with_name(args.ready_file.name + ".tmp")
        tmp.write_text(ready, encoding="utf-8")
        tmp.replace(args.ready_file)
    print(ready, flush=True)
    print(f"fake Hub (a STAND-IN) on {hub_url}, CDN on {cdn_url}", file=sys.stderr, flush=True)
    while not done.wait(0.2):
        pass
    servers.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
