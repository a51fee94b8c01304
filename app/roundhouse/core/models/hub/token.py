"""The Hugging Face token: kept in the OS keyring, else the one huggingface_hub would use.

Which token a Hub call uses, first found wins:
1. the one stored through Roundhouse, in the keyring under "huggingface:token" (where the
   machine has no keyring, in the daemon's secrets file: core.infra.secrets);
2. `HF_TOKEN`, else the token `hf auth login` saved (huggingface_hub's `get_token()`), so
   a machine already logged in for vLLM or mlx-lm works without another step.
The token never goes to a log, a file of ours, an error message or a command line. The
calls block (a keyring may ask to be unlocked): async code runs them in a thread.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from huggingface_hub import HfApi, get_token
from huggingface_hub import errors as hf_errors

from roundhouse.api.hub import HubTokenSource, HubTokenStatus
from roundhouse.core.errors import InvalidInputError
from roundhouse.core.infra import secrets
from roundhouse.core.models.hub.errors import (
    TOKENS_PAGE,
    HubTokenError,
    HubUnavailableError,
    hub_errors,
    status_of,
)

SECRET_NAME = "huggingface:token"
_MAX_TOKEN_CHARS = 512


@dataclass(frozen=True)
class ResolvedToken:
    value: str
    source: HubTokenSource


class HubTokenStore:
    """Reads and writes the token; `fallback` is huggingface_hub's lookup (tests pass one)."""

    def __init__(self, fallback: Callable[[], str | None] = get_token) -> None:
        self._fallback = fallback
        # Why the keyring could not be read the last time, for the token status to say.
        self.keyring_problem: str | None = None

    def resolve(self) -> ResolvedToken | None:
        """The token to use; a keyring that cannot be read only means none stored there
        (public models must keep working on a machine without one)."""
        try:
            stored = secrets.get_secret(SECRET_NAME)
            self.keyring_problem = None
        except secrets.SecretStoreError as exc:
            stored, self.keyring_problem = None, exc.detail
        if stored:
            return ResolvedToken(stored, HubTokenSource.KEYRING)
        other = self._fallback()
        if other:
            return ResolvedToken(other, HubTokenSource.ENVIRONMENT)
        return None

    def token(self) -> str | None:
        found = self.resolve()
        return found.value if found is not None else None

    def store(self, token: str) -> None:
        secrets.set_secret(SECRET_NAME, check_token_text(token))

    def clear(self) -> bool:
        return secrets.delete_secret(SECRET_NAME)


def check_token_text(token: str) -> str:
    """The token with surrounding blanks removed; refused (without echoing it) when it cannot
    be one: empty, too long, or with spaces or control characters inside."""
    value = token.strip()
    if not value:
        raise InvalidInputError(f"The token is empty: paste one from {TOKENS_PAGE}.")
    if len(value) > _MAX_TOKEN_CHARS or any(ch.isspace() or ord(ch) < 32 for ch in value):
        raise InvalidInputError(
            "That does not look like a Hugging Face token (they are one word, like hf_...): "
            f"copy it again from {TOKENS_PAGE}."
        )
    return value


def token_status(
    api: HfApi, found: ResolvedToken | None, check: bool = True, keyring_problem: str | None = None
) -> HubTokenStatus:
    """What the token state is, asking the Hub who the token belongs to when `check`."""
    if found is None:
        message = (
            "No Hugging Face token is set. Public models work without one; gated ones need "
            f"a token from {TOKENS_PAGE}."
        )
        return HubTokenStatus(
            present=False, message=f"{message} {keyring_problem}" if keyring_problem else message
        )
    keyring = found.source is HubTokenSource.KEYRING
    where = f"stored in {_kept_in()}" if keyring else "from HF_TOKEN or `hf auth login`"
    if not check:
        return HubTokenStatus(
            present=True, source=found.source, message=f"A token is set ({where})."
        )
    try:
        user = whoami(api, found.value)
    except HubTokenError as exc:
        return HubTokenStatus(present=True, source=found.source, valid=False, message=exc.detail)
    except HubUnavailableError as exc:
        return HubTokenStatus(
            present=True,
            source=found.source,
            message=f"A token is set ({where}), but it could not be checked. {exc.detail}",
        )
    return HubTokenStatus(
        present=True,
        source=found.source,
        valid=True,
        user=user,
        message=f"Hugging Face accepts the token ({where}): signed in as {user}.",
    )


def _kept_in() -> str:
    """Where stored secrets are, in words: the keyring, or the daemon's secrets file."""
    try:
        return secrets.kept_in()
    except secrets.SecretStoreError:
        return secrets.KEYRING_WORDS


def whoami(api: HfApi, token: str) -> str:
    """The account name the token belongs to; HubTokenError when the Hub refuses it."""
    try:
        with hub_errors():
            answer = api.whoami(token=token)
    except HubUnavailableError as exc:
        cause = exc.__cause__
        if isinstance(cause, hf_errors.HfHubHTTPError) and status_of(cause) == 403:
            raise HubTokenError(
                "Hugging Face refused the token (HTTP 403): it may lack the read permission. "
                f"Make a read token at {TOKENS_PAGE} and store it again."
            ) from exc
        raise
    name = answer.get("name") if isinstance(answer, dict) else None
    return name if isinstance(name, str) and name else "an unnamed account"
