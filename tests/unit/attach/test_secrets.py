"""Secrets go to the keyring under the service "roundhouse"; no keyring is an error in words."""

from __future__ import annotations

from collections.abc import Iterator

import keyring
import keyring.backend
import keyring.backends.fail
import keyring.errors
import pytest

from roundhouse.core.errors import InvalidInputError
from roundhouse.core.infra.secrets import (
    SERVICE,
    SecretStoreError,
    delete_secret,
    get_secret,
    set_secret,
)


class MemoryKeyring(keyring.backend.KeyringBackend):
    """A keyring in a dict, for tests only."""

    priority = 1  # type: ignore[assignment]

    def __init__(self) -> None:
        super().__init__()
        self.store: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, username: str) -> str | None:
        return self.store.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.store[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        if self.store.pop((service, username), None) is None:
            raise keyring.errors.PasswordDeleteError("no such password")


class LockedKeyring(MemoryKeyring):
    def get_password(self, service: str, username: str) -> str | None:
        raise keyring.errors.KeyringLocked("locked")


@pytest.fixture
def memory() -> Iterator[MemoryKeyring]:
    previous = keyring.get_keyring()
    backend = MemoryKeyring()
    keyring.set_keyring(backend)
    try:
        yield backend
    finally:
        keyring.set_keyring(previous)


def test_set_get_delete(memory: MemoryKeyring) -> None:
    name = "endpoint:http://127.0.0.1:1234"
    assert get_secret(name) is None
    set_secret(name, "sk-1")
    assert memory.store == {(SERVICE, name): "sk-1"} and get_secret(name) == "sk-1"
    set_secret(name, "sk-2")
    assert get_secret(name) == "sk-2"
    assert delete_secret(name) is True
    assert get_secret(name) is None and delete_secret(name) is False


def test_empty_names_and_values_are_refused(memory: MemoryKeyring) -> None:
    with pytest.raises(InvalidInputError):
        set_secret(" ", "x")
    with pytest.raises(InvalidInputError, match="empty"):
        set_secret("endpoint:x", "")


def test_no_keyring_backend_says_how_to_get_one() -> None:
    previous = keyring.get_keyring()
    keyring.set_keyring(keyring.backends.fail.Keyring())
    try:
        for call in (
            lambda: get_secret("a"),
            lambda: set_secret("a", "b"),
            lambda: delete_secret("a"),
        ):
            with pytest.raises(SecretStoreError, match=r"Secret Service.*keyrings\.alt"):
                call()
    finally:
        keyring.set_keyring(previous)


def test_a_locked_keyring_says_to_unlock_it() -> None:
    previous = keyring.get_keyring()
    keyring.set_keyring(LockedKeyring())
    try:
        with pytest.raises(SecretStoreError, match=r"locked.*unlock it"):
            get_secret("a")
    finally:
        keyring.set_keyring(previous)
