"""The stand-in GCS: the nodes that joined, their GPUs, and the drivers holding some of them.

One line per request over TCP: `JOIN ADDRESS GPUS` (a node; it counts while its connection
stays open), `DRIVER GPUS` (vLLM's placement group: refused when too few GPUs are free,
held while the connection stays open) and `STATUS` (the whole as one JSON line).
"""

from __future__ import annotations

import json
import socket
import threading
import uuid
from dataclasses import dataclass


@dataclass
class Node:
    id: str
    address: str
    gpus: float


class Gcs:
    def __init__(self, host: str, port: int, head: Node) -> None:
        self.listener = socket.create_server((host, port))
        self.listener.settimeout(0.1)
        self.nodes: dict[str, Node] = {head.id: head}
        self.used = 0.0
        self.lock = threading.Lock()

    def status(self) -> dict[str, object]:
        with self.lock:
            nodes = [vars(node) for node in self.nodes.values()]
            return {"nodes": nodes, "used": self.used}

    def serve(self, stopping: threading.Event) -> None:
        while not stopping.is_set():
            try:
                conn, _ = self.listener.accept()
            except TimeoutError:
                continue
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()
        self.listener.close()

    def _one(self, conn: socket.socket) -> None:
        with conn:
            words = conn.makefile("r").readline().split()
            if words == ["STATUS"]:
                conn.sendall((json.dumps(self.status()) + "\n").encode())
            elif len(words) == 3 and words[0] == "JOIN":
                node = Node("node_" + uuid.uuid4().hex, words[1], float(words[2]))
                with self.lock:
                    self.nodes[node.id] = node
                conn.sendall(f"OK {node.id}\n".encode())
                self._hold(conn)
                with self.lock:
                    del self.nodes[node.id]
            elif len(words) == 2 and words[0] == "DRIVER":
                wanted = float(words[1])
                with self.lock:
                    total = sum(n.gpus for n in self.nodes.values())
                    granted = total - self.used >= wanted
                    if granted:
                        self.used += wanted
                if not granted:
                    conn.sendall(f"INSUFFICIENT {total:g} {self.used:g}\n".encode())
                    return
                conn.sendall(b"OK\n")
                self._hold(conn)
                with self.lock:
                    self.used -= wanted

    @staticmethod
    def _hold(conn: socket.socket) -> None:
        try:
            while conn.recv(1):
                pass
        except OSError:
            pass


def ask(address: str, line: str, timeout_s: float = 5.0) -> socket.socket:
    """A connection to the GCS at HOST:PORT with `line` sent (OSError when none answers)."""
    host, _, port = address.rpartition(":")
    conn = socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s)
    conn.sendall((line + "\n").encode())
    return conn
