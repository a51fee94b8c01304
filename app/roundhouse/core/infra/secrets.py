"""Secrets (API keys, tokens): in the OS keyring, or in a file only the user can read where
no keyring exists (a headless server; ADR 35).

    set_secret("endpoint:http://127.0.0.1:1234", "sk-...")
    get_secret("endpoint:http://127.0.0.1:1234")   # the key, or None when none is stored
    delete_secret("endpoint:http://127.0.0.1:1234")  # True when one was removed
    kept_in()   # where they go now, in words: "the system keyring" or the file's path

The daemon names its file with `keep_file_in(config_dir)` when it starts; until then (and
with ROUNDHOUSE_SECRETS=keyring) only the keyring is used. ROUNDHOUSE_SECRETS=file uses the
file even where a keyring exists. A keyring that exists but is locked is never bypassed: the
error says to unlock it, since the desktop user expects the key there.

The calls block (a keyring may ask the desktop to unlock it): from async code run them with
`asyncio.to_thread`. Each raises SecretStoreError, saying what to do, when the store cannot
be used.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path

import keyring
import keyring.backends.chainer
import keyring.backends.fail
import keyring.backends.null
import keyring.errors

from roundhouse.core.errors import InvalidInputError, RoundhouseError
from roundhouse.core.infra.secret_file import FILE_NAME, SecretFile, SecretFileError

SERVICE = "roundhouse"
SECRETS_ENV = "ROUNDHOUSE_SECRETS"
KEYRING_WORDS = "the system keyring"

_NO_BACKEND = (
    "No system keyring is available to keep secrets in. On Linux, install and start a "
    "Secret Service provider (GNOME Keyring or KWallet), or install the keyrings.alt package."
)


class SecretStoreError(RoundhouseError):
    """The secret store cannot be used: the message says how to get one working."""

    title = "Keyring unavailable"
    status = 503


class Store(StrEnum):
    """What ROUNDHOUSE_SECRETS may say; unset is AUTO."""

    AUTO = "auto"
    KEYRING = "keyring"
    FILE = "file"


# The daemon's file (None until it names one): one per process, as the keyring is one per user.
_file: SecretFile | None = None


def keep_file_in(folder: Path | None) -> None:
    """Keep secrets in `folder`/secrets.json where no keyring exists; None: keyring only."""
    global _file
    _file = SecretFile(folder / FILE_NAME) if folder is not None else None


def kept_in() -> str:
    """Where a secret set now goes, in words for the user."""
    chosen = _file_in_use()
    if chosen is None:
        return KEYRING_WORDS
    return f"{chosen.path}, a file only you can read"


def get_secret(name: str) -> str | None:
    """The secret stored under `name`, or None when there is none."""
    _check(name)
    chosen = _file_in_use()
    found: str | None = None
    try:
        if chosen is None:
            found = keyring.get_password(SERVICE, name)
    except keyring.errors.KeyringError as exc:
        chosen = _fallback(exc)
        if chosen is None:
            raise _error(exc, "read") from exc
    if chosen is None and found is None and _file is not None and _store() is Store.AUTO:
        chosen = _file  # kept there while this machine had no keyring: still the user's key
    if chosen is not None:
        with _file_errors():
            found = chosen.get(name)
    return found


def set_secret(name: str, value: str) -> None:
    """Store `value` under `name`, replacing what was there."""
    _check(name)
    if not value:
        raise InvalidInputError("The secret is empty: give the key, or delete the stored one.")
    chosen = _file_in_use()
    try:
        if chosen is None:
            keyring.set_password(SERVICE, name, value)
    except keyring.errors.KeyringError as exc:
        chosen = _fallback(exc)
        if chosen is None:
            raise _error(exc, "store") from exc
    with _file_errors():
        if chosen is not None:
            chosen.set(name, value)
        elif _file is not None and _store() is Store.AUTO and _file.path.exists():
            _file.delete(name)  # a copy from before the keyring came must not linger


def delete_secret(name: str) -> bool:
    """Remove the secret stored under `name`; False when there was none."""
    _check(name)
    chosen = _file_in_use()
    removed = False
    try:
        if chosen is None and keyring.get_password(SERVICE, name) is not None:
            keyring.delete_password(SERVICE, name)
            removed = True
    except keyring.errors.PasswordDeleteError:
        pass  # gone meanwhile: what the caller wanted
    except keyring.errors.KeyringError as exc:
        chosen = _fallback(exc)
        if chosen is None:
            raise _error(exc, "delete") from exc
    if chosen is None and _file is not None and _store() is Store.AUTO and _file.path.exists():
        chosen = _file  # a copy from before the keyring came goes too
    if chosen is not None:
        with _file_errors():
            removed = chosen.delete(name) or removed
    return removed


def _store() -> Store:
    chosen = os.environ.get(SECRETS_ENV, "").strip().lower() or Store.AUTO.value
    try:
        return Store(chosen)
    except ValueError:
        raise SecretStoreError(
            f"{SECRETS_ENV} is {chosen!r}: set it to keyring or file, or unset it (the "
            "keyring, or a file only you can read where there is no keyring)."
        ) from None


def _file_in_use() -> SecretFile | None:
    """The file when secrets go there now, else None (the keyring)."""
    store = _store()
    if store is Store.KEYRING:
        return None
    if store is Store.FILE and _file is None:
        raise SecretStoreError(
            f"{SECRETS_ENV}=file keeps secrets in the daemon's file, and this process is not "
            "the daemon: unset it here, or run the command through `roundhouse serve`."
        )
    return _file if store is Store.FILE or _no_keyring() else None


def _no_keyring() -> bool:
    """True where keyring found no backend at all, or was turned off (`keyring --disable`
    picks the null backend, which forgets what it is given); not where one exists but is
    locked."""
    backend = keyring.get_keyring()
    if isinstance(backend, keyring.backends.fail.Keyring | keyring.backends.null.Keyring):
        return True
    return isinstance(backend, keyring.backends.chainer.ChainerBackend) and not backend.backends


@contextmanager
def _file_errors() -> Iterator[None]:
    try:
        yield
    except SecretFileError as exc:
        raise SecretStoreError(exc.detail) from exc


def _fallback(exc: keyring.errors.KeyringError) -> SecretFile | None:
    """The file, when a keyring call failed for want of any backend and the file may serve."""
    if isinstance(exc, keyring.errors.NoKeyringError) and _file is not None:
        return _file if _store() is Store.AUTO else None
    return None


def _check(name: str) -> None:
    if not name.strip():
        raise InvalidInputError("A secret needs a name (for example endpoint:<url>).")


def _error(exc: keyring.errors.KeyringError, verb: str) -> SecretStoreError:
    if isinstance(exc, keyring.errors.NoKeyringError):
        if _file is not None:  # the daemon, told to use the keyring only
            return SecretStoreError(
                f"{_NO_BACKEND} Or unset {SECRETS_ENV} (it says keyring): the daemon then "
                "keeps them in a file only you can read."
            )
        return SecretStoreError(_NO_BACKEND)
    if isinstance(exc, keyring.errors.KeyringLocked):
        return SecretStoreError(
            f"The keyring is locked, so Roundhouse cannot {verb} the secret: unlock it "
            "(log in to the desktop session) and try again."
        )
    return SecretStoreError(
        f"The keyring refused to {verb} the secret ({exc}). Check that the system keyring "
        "works, then try again."
    )
