"""Which engines found running the scan may adopt: whose they are and where they listen.

Another user's process is made up here (a psutil-like object with that user's uids); the
hostile tests in tests/security/test_external_engines.py run a real one where they can.
"""

from __future__ import annotations

import os
import socket
import struct
import sys
from pathlib import Path
from typing import Any

import psutil
import pytest

from roundhouse.api.engines import EngineId
from roundhouse.base.hosts import is_loopback_host, key_sent_in_clear
from roundhouse.core.engines.attach import scan as scan_module
from roundhouse.core.engines.attach import trust
from roundhouse.core.engines.attach.trust import (
    FIRST_PERSON_UID,
    exposure_problem,
    not_adopted,
    owner_problem,
    socket_listeners,
)
from roundhouse.core.engines.catalog import load_catalog

posix_only = pytest.mark.skipif(sys.platform == "win32", reason="uids are POSIX's")


class Uids:
    def __init__(self, uid: int) -> None:
        self.real = self.effective = self.saved = uid


class MadeUpProcess:
    """What the checks read of a process: its uids, or AccessDenied."""

    def __init__(self, uid: int | None) -> None:
        self._uid = uid

    def uids(self) -> Uids:
        if self._uid is None:
            raise psutil.AccessDenied(pid=4242)
        return Uids(self._uid)


def owner_of(uid: int | None) -> str | None:
    return owner_problem(MadeUpProcess(uid))  # type: ignore[arg-type]


@posix_only
def test_the_users_own_process_and_system_services_are_trusted() -> None:
    assert owner_of(os.getuid()) is None
    assert owner_problem(psutil.Process()) is None
    # The packaged Ollama on Linux runs as a system account only root can run programs as.
    assert owner_of(FIRST_PERSON_UID - 1) is None


@posix_only
def test_another_persons_process_is_not() -> None:
    import pwd

    other = max(os.getuid(), FIRST_PERSON_UID) + 4242
    with pytest.raises(KeyError):
        pwd.getpwuid(other)
    assert owner_of(other) == f"runs as another user (uid {other})"
    assert owner_of(None) == "runs as a user the system does not name to Roundhouse"


@pytest.mark.parametrize(
    "listening",
    [
        [("127.0.0.1", 8080)],
        [("127.3.4.5", 8080), ("::1", 8080)],
        [("::ffff:127.0.0.1", 8080)],
        [("localhost", 8080)],
        [],
    ],
)
def test_loopback_listeners_are_fine(listening: list[tuple[str, int]]) -> None:
    assert exposure_problem(listening) is None


def test_listeners_beyond_loopback_are_named() -> None:
    assert exposure_problem([("127.0.0.1", 1), ("0.0.0.0", 8080)]) == (
        "listens on 0.0.0.0:8080 (every address of this machine), beyond this machine's "
        "loopback, so other machines can reach it"
    )
    why = exposure_problem([("192.168.1.20", 8000), ("::", 8001), ("fd00::5", 8002)])
    assert why is not None
    assert "192.168.1.20:8000" in why and ":::8001 (every address" in why
    assert "[fd00::5]:8002" in why


def test_the_words_say_what_to_do() -> None:
    assert not_adopted(None, None) is None
    owner = not_adopted("runs as another user (bob)", "listens on 0.0.0.0:1")
    assert owner is not None and owner.startswith("it runs as another user (bob).")
    assert "attach its URL if you trust it" in owner
    exposed = not_adopted(None, "listens on 0.0.0.0:1 (every address of this machine)")
    assert exposed is not None and "Restart it listening on 127.0.0.1 only" in exposed


def _proc_net_line(address: bytes, port: int, uid: int, state: str = "0A") -> str:
    words = struct.unpack(f"={len(address) // 4}I", address)
    hex_address = "".join(f"{w:08X}" for w in words)
    return (
        f"   0: {hex_address}:{port:04X} {'0' * len(hex_address)}:0000 {state} "
        f"00000000:00000000 00:00000000 00000000 {uid:5d}        0 12345 1"
    )


def test_the_linux_socket_table_is_read_for_every_users_listeners(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    header = "  sl  local_address rem_address   st ..."
    v4 = socket.inet_pton(socket.AF_INET, "0.0.0.0")
    v4_lo = socket.inet_pton(socket.AF_INET, "127.0.0.1")
    v6 = socket.inet_pton(socket.AF_INET6, "::1")
    (tmp_path / "tcp").write_text(
        "\n".join(
            [
                header,
                _proc_net_line(v4, 11434, 997),
                _proc_net_line(v4_lo, 11435, 1000),
                _proc_net_line(v4_lo, 11434, 1000, state="01"),  # a connection, not a listener
            ]
        )
    )
    (tmp_path / "tcp6").write_text("\n".join([header, _proc_net_line(v6, 11434, 997)]))
    monkeypatch.setattr(trust, "_PROC_NET", tmp_path)
    assert sorted(socket_listeners(11434) or []) == [("0.0.0.0", 997), ("::1", 997)]
    assert socket_listeners(11435) == [("127.0.0.1", 1000)]
    assert socket_listeners(1) == []
    monkeypatch.setattr(trust, "_PROC_NET", tmp_path / "absent")
    assert socket_listeners(11434) is None


@pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="Linux's socket table")
def test_a_real_listener_is_in_the_socket_table() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        assert ("127.0.0.1", os.getuid()) in (socket_listeners(port) or [])


def _left_out(cmdline: list[str], engine: EngineId, uid: int | None = None) -> str | None:
    spec = load_catalog().spec(engine)
    proc: Any = MadeUpProcess(os.getuid() if uid is None else uid)
    return scan_module._left_out(proc, [], cmdline, spec)


@posix_only
def test_an_engine_not_listening_yet_is_judged_by_its_command_line() -> None:
    assert _left_out(["llama-server", "--port", "8080"], EngineId.LLAMA_CPP) is None
    assert _left_out(["vllm", "serve", "m", "--host", "127.0.0.1"], EngineId.VLLM) is None
    # vLLM binds every address unless told otherwise.
    bare = _left_out(["vllm", "serve", "m", "--port", "8001"], EngineId.VLLM)
    assert bare is not None and "0.0.0.0:8001 (every address" in bare
    lan = _left_out(["llama-server", "--host", "192.168.1.5", "--port", "9"], EngineId.LLAMA_CPP)
    assert lan is not None and "192.168.1.5:9" in lan
    named = _left_out(["llama-server", "--host", "box.lan"], EngineId.LLAMA_CPP)
    assert named is not None and "box.lan:8080" in named
    assert _left_out(["llama-server", "--host", "localhost"], EngineId.LLAMA_CPP) is None
    other = _left_out(["llama-server"], EngineId.LLAMA_CPP, uid=os.getuid() + 4242)
    assert other is not None and "runs as another user" in other


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("localhost", True),
        ("LOCALHOST", True),
        ("127.0.0.2", True),
        ("[::1]", True),
        ("::ffff:127.0.0.1", True),
        ("0.0.0.0", False),
        ("192.168.1.2", False),
        ("localhost.evil.example", False),
        ("", False),
    ],
)
def test_loopback_hosts(host: str, loopback: bool) -> None:
    assert is_loopback_host(host) is loopback


@pytest.mark.parametrize(
    ("url", "clear"),
    [
        ("http://192.168.1.9:1234", True),
        ("box.lan:1234", True),
        ("http://[fd00::1]:8000/v1", True),
        ("https://192.168.1.9:1234", False),
        ("http://127.0.0.1:1234", False),
        ("http://localhost:1234", False),
        ("http://[::1]:1234", False),
    ],
)
def test_a_key_for_plain_http_beyond_loopback_travels_in_clear(url: str, clear: bool) -> None:
    assert key_sent_in_clear(url) is clear
