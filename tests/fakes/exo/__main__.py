"""Run the exo STAND-IN with the flags the real `exo` takes.

    python -m tests.fakes.exo [--api-port P] [-v] [-q] [--offline] [--no-worker] ...
        [--standin-place MODEL]... [--standin-card MODEL]... [--token-delay S]

exo's own flags that change nothing here are accepted and ignored; unknown flags exit 2 as
argparse does. Stand-in-only flags: --standin-place places MODEL on the "cluster" at start
(exo: place it in the dashboard or `POST /place_instance`), --standin-card adds a model card,
--token-delay slows each streamed token, --standin-fail-after N fails each generation after N
tokens as exo does when a runner fails.
"""

from __future__ import annotations

import argparse
import signal
import sys
from types import FrameType

from tests.fakes.exo.server import BUILTIN_CARDS, Cluster, make_server


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="EXO")
    p.add_argument("-q", "--quiet", action="store_const", const=-1, dest="verbosity", default=0)
    p.add_argument("-v", "--verbose", action="count", dest="verbosity", default=0)
    p.add_argument("-m", "--force-master", action="store_true")
    p.add_argument("--no-api", action="store_false", dest="spawn_api")
    p.add_argument("--api-port", type=int, dest="api_port", default=52415)
    p.add_argument("--no-worker", action="store_true")
    p.add_argument("--no-downloads", action="store_true")
    p.add_argument("--offline", action="store_true")
    p.add_argument("--no-batch", action="store_true")
    p.add_argument("--bootstrap-peers", default="")
    p.add_argument("--namespace", default="")
    p.add_argument("--standin-place", action="append", default=[])
    p.add_argument("--standin-card", action="append", default=[])
    p.add_argument("--token-delay", type=float, default=0.0)
    p.add_argument("--standin-fail-after", type=int, default=None)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if not args.spawn_api:
        print("The stand-in has only the API to run; --no-api leaves nothing.", file=sys.stderr)
        return 2
    cards = list(dict.fromkeys([*BUILTIN_CARDS, *args.standin_card, *args.standin_place]))
    cluster = Cluster(
        cards=cards, token_delay_s=args.token_delay, fail_after=args.standin_fail_after
    )
    for model in args.standin_place:
        cluster.place(model)
    server = make_server(args.api_port, cluster)

    def stop(signum: int, frame: FrameType | None) -> None:
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)
    print(f"exo stand-in API on 127.0.0.1:{args.api_port}", flush=True)
    try:
        server.serve_forever(0.05)
    except (SystemExit, KeyboardInterrupt):
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
