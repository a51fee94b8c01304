"""Exits at once: tries to bind its port, which the test holds (llama-server's wording)."""

import socket
import sys

port = int(sys.argv[1])
print("main: loading model", flush=True)
sock = socket.socket()
try:
    sock.bind(("127.0.0.1", port))
except OSError as exc:
    print(f"bind: {exc.strerror}", file=sys.stderr, flush=True)
    print(
        f"main: couldn't bind HTTP server socket, hostname: 127.0.0.1, port: {port}",
        file=sys.stderr,
        flush=True,
    )
    sys.exit(1)
print("bound: the test expected the port to be taken", flush=True)
sys.exit(3)
