"""The gateway key's store (keyring, marker, fail closed) and the pure parts of its checks:
which headers carry a key, what counts as loopback, which Host names a listener accepts."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator
from pathlib import Path

import keyring
import pytest

from roundhouse.core.errors import InvalidInputError
from roundhouse.core.gateway.key import SECRET_NAME, GatewayKeyStore, check_key, generate_key
from roundhouse.core.infra.secrets import SERVICE
from roundhouse.server.security import is_loopback, key_accepted, machine_hosts, presented_keys
from tests.unit.attach.test_secrets import LockedKeyring, MemoryKeyring


class CountingKeyring(MemoryKeyring):
    def __init__(self) -> None:
        super().__init__()
        self.reads = 0

    def get_password(self, service: str, username: str) -> str | None:
        self.reads += 1
        return super().get_password(service, username)


@pytest.fixture
def memory() -> Iterator[CountingKeyring]:
    previous = keyring.get_keyring()
    backend = CountingKeyring()
    keyring.set_keyring(backend)
    try:
        yield backend
    finally:
        keyring.set_keyring(previous)


def test_set_load_clear_with_a_marker(memory: CountingKeyring, tmp_path: Path) -> None:
    store = GatewayKeyStore.with_marker_in(tmp_path)
    asyncio.run(store.load())
    assert memory.reads == 0, "no key was ever set: the keyring is not touched"
    assert store.current is None and not store.is_set

    key = asyncio.run(store.set())
    assert key.startswith("rh-") and store.current == key
    assert memory.store == {(SERVICE, SECRET_NAME): key}
    marker = next(tmp_path.iterdir())
    assert key not in marker.read_text(), "the marker holds no secret"

    again = GatewayKeyStore.with_marker_in(tmp_path)
    asyncio.run(again.load())
    assert again.current == key and memory.reads == 1

    assert asyncio.run(again.clear()) is True
    assert memory.store == {} and not marker.exists() and again.current is None


def test_a_key_that_cannot_be_read_matches_nothing(tmp_path: Path) -> None:
    (tmp_path / "gateway-key.set").touch()
    previous = keyring.get_keyring()
    keyring.set_keyring(LockedKeyring())
    try:
        store = GatewayKeyStore.with_marker_in(tmp_path)
        asyncio.run(store.load())
    finally:
        keyring.set_keyring(previous)
    assert store.is_set and store.current == ""
    assert store.error is not None and "Unlock the keyring" in store.error
    assert not key_accepted([b""], [store.current or ""])
    assert key_accepted([b"token"], [store.current or "", "token"])


def test_a_key_removed_from_the_keyring_is_gone(memory: CountingKeyring, tmp_path: Path) -> None:
    marker = tmp_path / "gateway-key.set"
    marker.touch()
    store = GatewayKeyStore.with_marker_in(tmp_path)
    asyncio.run(store.load())
    assert store.current is None and store.error is None and not marker.exists()


def test_keys_are_checked() -> None:
    assert len({generate_key() for _ in range(20)}) == 20
    assert check_key("  my-own-gateway-key-42\n") == "my-own-gateway-key-42"
    with pytest.raises(InvalidInputError, match="too short"):
        check_key("short")
    with pytest.raises(InvalidInputError, match="no spaces"):
        check_key("a key with spaces in it")
    with pytest.raises(InvalidInputError, match="no spaces"):
        check_key("ключ-на-русском-языке")


def _scope(*headers: tuple[bytes, bytes]) -> dict[str, object]:
    return {"type": "http", "path": "/v1/models", "headers": list(headers)}


def test_keys_are_found_in_bearer_and_x_api_key() -> None:
    scope = _scope((b"authorization", b"Bearer  k1 "), (b"x-api-key", b"k2"))
    assert presented_keys(scope) == [b"k1", b"k2"]
    assert presented_keys(_scope((b"authorization", b"bearer k1"))) == [b"k1"]
    assert presented_keys(_scope((b"authorization", b"Basic abc"))) == []
    assert key_accepted([b"k2"], ["k1", "k2"])
    assert not key_accepted([b"k3"], ["k1", ""])
    # Non-ASCII in a header is bytes, not an error.
    assert not key_accepted(["é".encode()], ["k1"])


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.0.0.2", True),
        ("::1", True),
        ("[::1]", True),
        ("localhost", True),
        ("0.0.0.0", False),
        ("::", False),
        ("192.168.1.5", False),
        ("gpu-box.lan", False),
    ],
)
def test_is_loopback(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_machine_hosts() -> None:
    hosts = machine_hosts("0.0.0.0", ["GPU-box.example:8080", " ", "[fe80::1]"])
    assert {"localhost", "127.0.0.1", "::1", "gpu-box.example", "fe80::1"} <= hosts
    short = socket.gethostname().lower().split(".")[0]
    assert {short, f"{short}.local"} <= hosts
    assert "0.0.0.0" not in hosts and "" not in hosts
    assert "192.0.2.7" in machine_hosts("192.0.2.7")
