"""The Hugging Face token: in the keyring, checked with the Hub (whoami), never shown or logged."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator

import keyring
import keyring.backend
import keyring.backends.fail
import keyring.errors
import pytest

from roundhouse.api.hub import HubSearchRequest, HubTokenSource
from roundhouse.core.errors import InvalidInputError
from roundhouse.core.infra.secrets import SERVICE, SecretStoreError
from roundhouse.core.models.hub import SECRET_NAME, HubService, HubTokenError, HubTokenStore
from tests.fakes.hub.build import ACCESS_TOKEN, GATED_REPO, NO_ACCESS_TOKEN, PRIVATE_REPO


class MemoryKeyring(keyring.backend.KeyringBackend):
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


@pytest.fixture
def memory() -> Iterator[MemoryKeyring]:
    previous = keyring.get_keyring()
    backend = MemoryKeyring()
    keyring.set_keyring(backend)
    try:
        yield backend
    finally:
        keyring.set_keyring(previous)


@pytest.fixture
def no_keyring() -> Iterator[None]:
    previous = keyring.get_keyring()
    keyring.set_keyring(keyring.backends.fail.Keyring())
    try:
        yield
    finally:
        keyring.set_keyring(previous)


def hub(url: str, fallback: str | None = None) -> HubService:
    return HubService(url, HubTokenStore(lambda: fallback))


def test_a_stored_token_is_checked_kept_in_the_keyring_and_opens_gated_repos(
    fake_hub_url: str, memory: MemoryKeyring, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    service = hub(fake_hub_url)
    before = asyncio.run(service.search(HubSearchRequest(kinds=["gguf"])))
    assert PRIVATE_REPO not in [m.id for m in before.models]

    status = asyncio.run(service.set_token(f"  {ACCESS_TOKEN}\n"))
    assert (status.present, status.valid, status.user) == (True, True, "roundhouse-tester")
    assert status.source is HubTokenSource.KEYRING
    assert memory.store[(SERVICE, SECRET_NAME)] == ACCESS_TOKEN

    after = asyncio.run(service.search(HubSearchRequest(kinds=["gguf"])))
    assert [m.private for m in after.models if m.id == PRIVATE_REPO] == [True]
    assert asyncio.run(service.details(GATED_REPO)).gated
    assert ACCESS_TOKEN not in status.model_dump_json()
    assert ACCESS_TOKEN not in caplog.text

    cleared = asyncio.run(service.clear_token())
    assert not cleared.present
    assert (SERVICE, SECRET_NAME) not in memory.store
    assert "No Hugging Face token is set" in cleared.message


def test_a_token_the_hub_refuses_is_not_stored(fake_hub_url: str, memory: MemoryKeyring) -> None:
    with pytest.raises(HubTokenError, match="HTTP 401") as caught:
        asyncio.run(hub(fake_hub_url).set_token("hf_notAKnownToken"))
    assert "hf_notAKnownToken" not in caught.value.detail
    assert memory.store == {}


def test_malformed_tokens_are_refused_without_echoing_them(
    fake_hub_url: str, memory: MemoryKeyring
) -> None:
    for bad in ("", "   ", "hf_abc def", "x" * 600, "hf_\x00abc"):
        with pytest.raises(InvalidInputError) as caught:
            asyncio.run(hub(fake_hub_url).set_token(bad))
        assert bad.strip() == "" or bad not in caught.value.detail
    assert memory.store == {}


def test_environment_token_is_used_and_the_keyring_wins(
    fake_hub_url: str, memory: MemoryKeyring
) -> None:
    service = hub(fake_hub_url, fallback=NO_ACCESS_TOKEN)
    status = asyncio.run(service.token_status())
    assert (status.source, status.valid) == (HubTokenSource.ENVIRONMENT, True)
    assert asyncio.run(service.token()) == NO_ACCESS_TOKEN
    asyncio.run(service.set_token(ACCESS_TOKEN))
    assert asyncio.run(service.token()) == ACCESS_TOKEN
    unchecked = asyncio.run(service.token_status(check=False))
    assert (unchecked.source, unchecked.valid) == (HubTokenSource.KEYRING, None)


def test_an_environment_token_the_hub_refuses_is_reported(
    fake_hub_url: str, memory: MemoryKeyring
) -> None:
    status = asyncio.run(hub(fake_hub_url, fallback="hf_revoked").token_status())
    assert (status.present, status.valid) == (True, False)
    assert "expired or revoked" in status.message


def test_without_a_keyring_public_search_works_and_storing_says_why(
    fake_hub_url: str, no_keyring: None
) -> None:
    service = hub(fake_hub_url)
    found = asyncio.run(service.search(HubSearchRequest(query="tiny")))
    assert found.models
    status = asyncio.run(service.token_status())
    assert not status.present
    assert "No system keyring" in status.message
    with pytest.raises(SecretStoreError, match="keyring"):
        asyncio.run(service.set_token(ACCESS_TOKEN))


def test_a_token_is_stored_when_the_hub_cannot_be_reached(memory: MemoryKeyring) -> None:
    service = hub("http://127.0.0.1:9")
    status = asyncio.run(service.set_token(ACCESS_TOKEN))
    assert (status.present, status.valid) == (True, None)
    assert "could not be checked" in status.message
    assert memory.store[(SERVICE, SECRET_NAME)] == ACCESS_TOKEN
