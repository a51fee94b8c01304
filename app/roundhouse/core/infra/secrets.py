"""Secrets (API keys, tokens) in the OS keyring under the service "roundhouse", never in files.

    set_secret("endpoint:http://127.0.0.1:1234", "sk-...")
    get_secret("endpoint:http://127.0.0.1:1234")   # the key, or None when none is stored
    delete_secret("endpoint:http://127.0.0.1:1234")  # True when one was removed

The calls block (a keyring may ask the desktop to unlock it): from async code run them with
`asyncio.to_thread`. Each raises SecretStoreError, saying what to do, when no keyring backend
exists or the keyring is locked or refuses.
"""

from __future__ import annotations

import keyring
import keyring.errors

from roundhouse.core.errors import InvalidInputError, RoundhouseError

SERVICE = "roundhouse"

_NO_BACKEND = (
    "No system keyring is available to keep secrets in. On Linux, install and start a "
    "Secret Service provider (GNOME Keyring or KWallet); on a headless machine, install the "
    "keyrings.alt package. Roundhouse never writes keys to plain files."
)


class SecretStoreError(RoundhouseError):
    """The OS keyring cannot be used: the message says how to get one working."""

    title = "Keyring unavailable"
    status = 503


def get_secret(name: str) -> str | None:
    """The secret stored under `name`, or None when there is none."""
    _check(name)
    try:
        return keyring.get_password(SERVICE, name)
    except keyring.errors.KeyringError as exc:
        raise _error(exc, "read") from exc


def set_secret(name: str, value: str) -> None:
    """Store `value` under `name`, replacing what was there."""
    _check(name)
    if not value:
        raise InvalidInputError("The secret is empty: give the key, or delete the stored one.")
    try:
        keyring.set_password(SERVICE, name, value)
    except keyring.errors.KeyringError as exc:
        raise _error(exc, "store") from exc


def delete_secret(name: str) -> bool:
    """Remove the secret stored under `name`; False when there was none."""
    _check(name)
    try:
        if keyring.get_password(SERVICE, name) is None:
            return False
        keyring.delete_password(SERVICE, name)
    except keyring.errors.PasswordDeleteError:
        return False  # gone meanwhile: what the caller wanted
    except keyring.errors.KeyringError as exc:
        raise _error(exc, "delete") from exc
    return True


def _check(name: str) -> None:
    if not name.strip():
        raise InvalidInputError("A secret needs a name (for example endpoint:<url>).")


def _error(exc: keyring.errors.KeyringError, verb: str) -> SecretStoreError:
    if isinstance(exc, keyring.errors.NoKeyringError):
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
