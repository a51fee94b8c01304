"""huggingface_hub's errors turned into Roundhouse errors that say what to do."""

from __future__ import annotations

import errno
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit

from huggingface_hub import errors as hf_errors

from roundhouse.api.hub import HUB_REFUSED_TITLE, NO_CONNECTION_TITLE
from roundhouse.core.errors import InvalidInputError, NotFoundError, RoundhouseError

# huggingface_hub raises its HTTP library's errors for network failures (httpx in 1.x,
# httpx2 in 2.x); `errors.HTTPError` is that library's base class.
_NETWORK_ERRORS: tuple[type[BaseException], ...] = (
    getattr(hf_errors, "HTTPError", hf_errors.HfHubHTTPError),
    OSError,
)
TOKENS_PAGE = "https://huggingface.co/settings/tokens"


class HubUnavailableError(RoundhouseError):
    """The Hub cannot be reached, is switched off (offline mode) or answered with an error."""

    title = "Hugging Face unavailable"
    status = 503


class HubUnreachableError(HubUnavailableError):
    """No connection to the Hub at all: no network, a name that cannot be looked up, or a
    connection refused. Known at once, so it is said at once (not after a timeout)."""

    title = NO_CONNECTION_TITLE

    def __init__(self, detail: str, title: str | None = None) -> None:
        super().__init__(detail)
        if title is not None:
            self.title = title


class GatedModelError(RoundhouseError):
    """The repository is gated and the token (if any) has not been granted access."""

    title = "Gated model"
    status = 403


class HubTokenError(RoundhouseError):
    """The Hub refused the token."""

    title = "Hugging Face token refused"
    status = 401


def status_of(exc: hf_errors.HfHubHTTPError) -> int | None:
    return exc.response.status_code if exc.response is not None else None


@contextmanager
def hub_errors(
    repo: str | None = None, revision: str | None = None, site: str | None = None
) -> Iterator[None]:
    """Run huggingface_hub calls; their errors leave as the typed errors above. `site` is
    the Hub's address for the links in messages (None: huggingface.co)."""
    try:
        yield
    except hf_errors.GatedRepoError as exc:  # before RepositoryNotFoundError: a subclass
        page = f"{(site or 'https://huggingface.co').rstrip('/')}/{repo}"
        raise GatedModelError(
            f"{repo} is gated: accept its license on {page} while "
            "logged in, then store a Hugging Face token of that account in Roundhouse "
            f"(make one at {TOKENS_PAGE})."
        ) from exc
    except hf_errors.RepositoryNotFoundError as exc:
        raise NotFoundError(
            f"No model named {repo} on Hugging Face (or it is private): check the name, or "
            "store a token of an account that may read it."
        ) from exc
    except hf_errors.RevisionNotFoundError as exc:
        raise NotFoundError(
            f"{repo} has no revision {revision!r}: give a branch, tag or commit it has "
            "('main' is the usual one)."
        ) from exc
    except hf_errors.DisabledRepoError as exc:
        raise NotFoundError(f"{repo} was disabled on Hugging Face and cannot be used.") from exc
    except hf_errors.HFValidationError as exc:
        raise InvalidInputError(
            f"{repo!r} is not a Hugging Face repository id: write it as owner/name."
        ) from exc
    except hf_errors.HfHubHTTPError as exc:
        status = status_of(exc)
        if status == 401:
            raise HubTokenError(
                "Hugging Face refused the token (HTTP 401): it is wrong, expired or "
                f"revoked. Make a new one at {TOKENS_PAGE} and store it again, or clear it."
            ) from exc
        raise HubUnavailableError(
            f"Hugging Face answered HTTP {status}{_about(repo)}: try again later."
        ) from exc
    except hf_errors.OfflineModeIsEnabled as exc:
        raise HubUnavailableError(
            "Hugging Face is switched off on this machine (HF_HUB_OFFLINE is set): unset it "
            "and restart Roundhouse to search or download; local models still work."
        ) from exc
    except _NETWORK_ERRORS as exc:
        unreachable = unreachable_error(exc, site, repo)
        if unreachable is not None:
            raise unreachable from exc
        raise HubUnavailableError(
            f"Cannot reach Hugging Face{_about(repo)}: {_reason(exc)}. Check the network "
            "connection (and a proxy or HF_ENDPOINT, if set), then try again."
        ) from exc


_CHECK = "Check the network connection (and a proxy or HF_ENDPOINT, if set), then try again."
# How the platforms word a failed name lookup, for errors that carry only the text.
_LOOKUP_WORDS = (
    "name or service not known",
    "temporary failure in name resolution",
    "nodename nor servname",
    "getaddrinfo failed",
    "no address associated",
)
_NO_ROUTE = frozenset({errno.ENETUNREACH, errno.EHOSTUNREACH, errno.ENETDOWN})


def unreachable_error(
    exc: BaseException, site: str | None = None, repo: str | None = None
) -> HubUnreachableError | None:
    """The error in words when `exc` (or what caused it) says there is no connection at all;
    None for anything else (a slow or broken answer is not a missing connection)."""
    host = urlsplit(site).hostname if site else None
    where = f"Hugging Face ({host})" if host else "Hugging Face"
    kind = _connection_failure(exc)
    if kind == "lookup":
        return HubUnreachableError(
            f"{where} could not be looked up{_about(repo)}: this machine seems to have no "
            f"internet connection. {_CHECK}"
        )
    if kind == "no route":
        return HubUnreachableError(
            f"This machine has no route to {where}{_about(repo)}: it seems to have no "
            f"internet connection. {_CHECK}"
        )
    if kind == "refused":
        return HubUnreachableError(
            f"{where} refused the connection{_about(repo)}: nothing answers at its address. "
            f"{_CHECK}",
            title=HUB_REFUSED_TITLE,
        )
    return None


def _connection_failure(exc: BaseException) -> str | None:
    """'lookup', 'no route', 'refused' or None, from the exception and its causes."""
    seen: set[int] = set()
    step: BaseException | None = exc
    while step is not None and id(step) not in seen:
        seen.add(id(step))
        if isinstance(step, socket.gaierror):
            return "lookup"
        if isinstance(step, ConnectionRefusedError):
            return "refused"
        if isinstance(step, OSError) and step.errno in _NO_ROUTE:
            return "no route"
        text = str(step).lower()
        if any(words in text for words in _LOOKUP_WORDS):
            return "lookup"
        if "connection refused" in text:
            return "refused"
        if "network is unreachable" in text or "no route to host" in text:
            return "no route"
        step = step.__cause__ or step.__context__
    return None


def _about(repo: str | None) -> str:
    return f" about {repo}" if repo else ""


def _reason(exc: BaseException) -> str:
    """What went wrong, in words: the library's own text carries errno numbers."""
    name = type(exc).__name__.lower()
    if isinstance(exc, TimeoutError) or "timeout" in name:
        return "it did not answer in time"
    if "ssl" in name or "certificate" in str(exc).lower():
        return "the secure connection could not be set up (a proxy or the system's certificates)"
    return "the connection failed"
