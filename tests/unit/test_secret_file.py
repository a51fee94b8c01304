"""Where no keyring exists the daemon keeps secrets in a 0600 file; a locked one is not bypassed."""

from __future__ import annotations

import json
import stat
from collections.abc import Iterator
from pathlib import Path

import keyring
import keyring.backend
import keyring.backends.fail
import keyring.backends.null
import pytest
from huggingface_hub import HfApi

from roundhouse.api.hub import HubTokenSource
from roundhouse.core.infra import secrets
from roundhouse.core.infra.secrets import SECRETS_ENV, SERVICE, SecretStoreError
from roundhouse.core.models.hub import HubTokenStore
from roundhouse.core.models.hub.token import token_status
from tests.unit.attach.test_secrets import LockedKeyring, MemoryKeyring

NAME = "gateway:api-key"


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The daemon's config folder, named as the daemon names it at start."""
    monkeypatch.delenv(SECRETS_ENV, raising=False)
    previous = keyring.get_keyring()
    secrets.keep_file_in(tmp_path)
    try:
        yield tmp_path
    finally:
        secrets.keep_file_in(None)
        keyring.set_keyring(previous)


def use(backend: keyring.backend.KeyringBackend) -> None:
    keyring.set_keyring(backend)


def stored(folder: Path) -> dict[str, str]:
    loaded: dict[str, str] = json.loads((folder / "secrets.json").read_text(encoding="utf-8"))
    return loaded


def test_no_keyring_keeps_secrets_in_a_file_only_the_user_reads(folder: Path) -> None:
    use(keyring.backends.fail.Keyring())
    assert secrets.get_secret(NAME) is None and secrets.delete_secret(NAME) is False
    secrets.set_secret(NAME, "rh-one")
    secrets.set_secret("huggingface:token", "hf_two")
    path = folder / "secrets.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stored(folder) == {NAME: "rh-one", "huggingface:token": "hf_two"}
    assert secrets.get_secret(NAME) == "rh-one"
    assert secrets.delete_secret(NAME) is True and secrets.get_secret(NAME) is None
    assert stored(folder) == {"huggingface:token": "hf_two"}
    assert str(path) in secrets.kept_in() and "only you can read" in secrets.kept_in()
    # No stray temporary files beside it.
    assert [p.name for p in folder.iterdir()] == ["secrets.json"]


def test_a_keyring_turned_off_does_not_swallow_secrets(folder: Path) -> None:
    # `keyring --disable` picks the null backend, which accepts a key and forgets it.
    use(keyring.backends.null.Keyring())
    secrets.set_secret(NAME, "rh-kept")
    assert stored(folder) == {NAME: "rh-kept"} and secrets.get_secret(NAME) == "rh-kept"


def test_a_locked_keyring_is_not_bypassed(folder: Path) -> None:
    use(LockedKeyring())
    with pytest.raises(SecretStoreError, match=r"locked.*unlock it"):
        secrets.get_secret(NAME)
    assert not (folder / "secrets.json").exists()
    assert secrets.kept_in() == secrets.KEYRING_WORDS


def test_a_keyring_that_appears_later_takes_over_the_files_secrets(folder: Path) -> None:
    use(keyring.backends.fail.Keyring())
    secrets.set_secret(NAME, "rh-from-the-file")
    secrets.set_secret("other", "x")
    memory = MemoryKeyring()
    use(memory)
    assert secrets.kept_in() == secrets.KEYRING_WORDS
    assert secrets.get_secret(NAME) == "rh-from-the-file", "still the user's key"
    secrets.set_secret(NAME, "rh-new")
    assert memory.store == {(SERVICE, NAME): "rh-new"} and stored(folder) == {"other": "x"}
    assert secrets.delete_secret("other") is True and secrets.get_secret("other") is None
    assert stored(folder) == {}


def test_the_environment_chooses_the_store(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    memory = MemoryKeyring()
    use(memory)
    monkeypatch.setenv(SECRETS_ENV, "file")
    secrets.set_secret(NAME, "rh-file")
    assert memory.store == {} and stored(folder) == {NAME: "rh-file"}

    use(keyring.backends.fail.Keyring())
    monkeypatch.setenv(SECRETS_ENV, "keyring")
    with pytest.raises(
        SecretStoreError, match=r"keyrings\.alt package\. Or unset ROUNDHOUSE_SECRETS"
    ):
        secrets.get_secret(NAME)

    monkeypatch.setenv(SECRETS_ENV, "vault")
    with pytest.raises(SecretStoreError, match=r"ROUNDHOUSE_SECRETS is 'vault'.*keyring or file"):
        secrets.set_secret(NAME, "x")


def test_a_file_others_could_read_is_made_private(folder: Path) -> None:
    use(keyring.backends.fail.Keyring())
    path = folder / "secrets.json"
    path.write_text(json.dumps({NAME: "rh-open"}), encoding="utf-8")
    path.chmod(0o644)
    assert secrets.get_secret(NAME) == "rh-open"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_a_file_it_did_not_write_is_refused_in_words(folder: Path, tmp_path: Path) -> None:
    use(keyring.backends.fail.Keyring())
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text("{}", encoding="utf-8")
    (folder / "secrets.json").symlink_to(elsewhere)
    with pytest.raises(SecretStoreError, match="not a plain file of this user's"):
        secrets.set_secret(NAME, "rh-x")
    (folder / "secrets.json").unlink()
    (folder / "secrets.json").write_text("not json", encoding="utf-8")
    with pytest.raises(SecretStoreError, match="cannot be read as Roundhouse's secrets file"):
        secrets.get_secret(NAME)


def test_the_hub_tokens_status_names_the_file(folder: Path) -> None:
    use(keyring.backends.fail.Keyring())
    tokens = HubTokenStore(fallback=lambda: None)
    tokens.store("hf_" + "a" * 34)
    found = tokens.resolve()
    assert found is not None and found.source is HubTokenSource.KEYRING
    status = token_status(HfApi(), found, check=False)
    assert f"stored in {folder / 'secrets.json'}, a file only you can read" in status.message
