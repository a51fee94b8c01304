"""Fault rules the tests switch on at run time, and the log of every request served.

A rule is JSON like `{"path": "*.gguf", "drop_after": 4096, "times": 1}`. It applies to
downloads of file bytes (a `resolve` GET answered directly, or a GET on the CDN listener)
whose repo and path match (fnmatch); the first matching rule wins; `times` counts the
requests it still applies to (absent: all of them).
"""

from __future__ import annotations

import fnmatch
import threading
import time
from dataclasses import asdict, dataclass, fields
from typing import Any


@dataclass
class Fault:
    repo: str = "*"
    path: str = "*"
    corrupt: bool = False  # flip one byte in the middle of the file (same size)
    corrupt_at: int | None = None  # ...or at this offset
    drop_after: int | None = None  # close the connection after N body bytes
    stall_after: int | None = None  # after N body bytes, send nothing for stall_s
    stall_s: float = 0.0
    throttle_bps: int | None = None  # at most this many bytes per second
    ignore_range: bool = False  # answer 200 with the whole file
    status: int | None = None  # answer this HTTP status (e.g. 500, 503, 429) with no body
    times: int | None = None

    @classmethod
    def from_json(cls, data: object) -> Fault:
        if not isinstance(data, dict):
            raise ValueError("a fault is a JSON object")
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown fault keys {sorted(unknown)}; known: {sorted(known)}")
        return cls(**data)

    def matches(self, repo: str, path: str) -> bool:
        return fnmatch.fnmatchcase(repo, self.repo) and fnmatch.fnmatchcase(path, self.path)

    def corrupt_offset(self, size: int) -> int | None:
        if self.corrupt_at is not None:
            return self.corrupt_at
        return size // 2 if self.corrupt else None

    def shapes_bytes(self) -> bool:
        """Whether serving must go chunk by chunk (else the kernel's sendfile does it)."""
        limits = (self.corrupt_at, self.drop_after, self.stall_after, self.throttle_bps)
        return self.corrupt or any(value is not None for value in limits)


class FaultBook:
    """The active rules, shared by every serving thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._rules: list[Fault] = []

    def replace(self, rules: list[Fault]) -> None:
        with self._lock:
            self._rules = list(rules)

    def add(self, rules: list[Fault]) -> None:
        with self._lock:
            self._rules.extend(rules)

    def snapshot(self) -> list[dict[str, Any]]:
        with self._lock:
            return [asdict(r) for r in self._rules]

    def take(self, repo: str, path: str) -> Fault | None:
        """The first rule for this file, counting one use of it."""
        with self._lock:
            for rule in self._rules:
                if rule.matches(repo, path):
                    if rule.times is not None:
                        rule.times -= 1
                        if rule.times <= 0:
                            self._rules.remove(rule)
                    return rule
        return None


class RequestLog:
    """Every request but the control ones: method, path, headers, status, body bytes."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: list[dict[str, Any]] = []

    def add(self, entry: dict[str, Any]) -> None:
        entry["time"] = time.time()
        with self._lock:
            self._entries.append(entry)

    def entries(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._entries)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
