"""Extra arguments, checked as the engine will read them: no secret, listener or trust change.

Flags are normalised before any check, so no spelling slips past: `--api_key` and `--API-KEY`
are `--api-key`, `--host=0.0.0.0` is `--host`, and for engines that parse their command line
with Python's argparse (mlx_lm.server, vLLM, SGLang), which accepts any unambiguous prefix,
`--ho` is `--host`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NoReturn

from roundhouse.core.errors import InvalidInputError

TRUST_REMOTE_CODE = "--trust-remote-code"

# Where and to whom the engine answers: Roundhouse keeps engines on loopback, behind their
# instance's key, with no CORS and no web UI (ADR 21).
LISTENER_FLAGS = frozenset(
    {
        "--host", "--port", "--uds", "--config", "--path", "--api-prefix", "--root-path",
        "--ssl-keyfile", "--ssl-certfile", "--allowed-origins", "--allowed-methods",
        "--allowed-headers", "--allow-credentials", "--cors-origins", "--cors-methods",
        "--cors-headers", "--cors-credentials", "--ui", "--webui", "--middleware",
        "--allowed-local-media-path", "--allowed-media-domains",
    }
)  # fmt: skip
# Secrets that are not words in a flag's name.
SECRET_FLAGS = frozenset({"-hft", "--hf-token", "--token"})
# Secret-carrying long flags the engines have, so that a prefix of one is read as it.
_KNOWN_SECRET_FLAGS = frozenset({"--api-key", "--admin-api-key", "--api-key-file", "--hf-token"})
_SECRET_WORDS = ("api-key", "apikey", "password", "secret")


def canonical_flag(arg: str) -> str | None:
    """The flag `arg` names, as the checks compare it; None when `arg` is a value."""
    if not arg.startswith("-") or arg in ("-", "--") or _is_number(arg):
        return None
    flag = arg.split("=", 1)[0].lower()
    return flag.replace("_", "-")


def check_extra_args(
    title: str, args: Iterable[str], owned: Iterable[str], *, prefixes: bool
) -> None:
    """Refuse, in words, an extra argument that carries a secret, changes the listener or
    the trust model, or overrides what Roundhouse sets (`owned`). `prefixes`: the engine
    takes any unambiguous prefix of a long flag (argparse)."""
    owned_flags = {c for c in (canonical_flag(o) for o in owned) if c}
    protected = LISTENER_FLAGS | owned_flags | _KNOWN_SECRET_FLAGS | {TRUST_REMOTE_CODE}
    for arg in args:
        flag = canonical_flag(arg)
        if flag is None:
            continue
        read_as = _read_as(flag, protected) if prefixes else flag
        if _is_secret(flag) or _is_secret(read_as):
            _refuse(
                f"{arg} cannot go in the extra arguments: a secret on a command line is "
                "visible to every user of this machine. Roundhouse keeps keys in the keyring "
                "and gives each engine a key of its own."
            )
        named = "" if read_as == flag else f" ({title} reads it as {read_as})"
        if read_as == TRUST_REMOTE_CODE:
            _refuse(
                f"{arg} cannot go in the extra arguments{named}: it runs Python code from the "
                "model's repository. If you trust this repository, turn on Trust remote code "
                "in the start dialog (`roundhouse engines start ... --trust-remote-code`)."
            )
        if read_as in owned_flags:
            _refuse(
                f"{arg} cannot go in the extra arguments{named}: Roundhouse sets it for "
                f"{title}. Use the matching setting instead."
            )
        if read_as in LISTENER_FLAGS:
            _refuse(
                f"{arg} cannot go in the extra arguments{named}: it changes where or to whom "
                f"{title} answers. Roundhouse keeps every engine on this machine behind a key "
                "of its own; the gateway is the door for other apps and machines."
            )


def flags_given(args: Iterable[str], flags: Iterable[str], *, prefixes: bool) -> set[str]:
    """Which of `flags` the arguments give, read as the engine reads them (normalised, and
    with `prefixes` an unambiguous prefix counts): a flag Roundhouse would add is then left
    to the user's value instead of appearing twice."""
    wanted = {c for c in (canonical_flag(f) for f in flags) if c}
    found: set[str] = set()
    for arg in args:
        flag = canonical_flag(arg)
        if flag is None:
            continue
        if flag in wanted:
            found.add(flag)
        elif prefixes and flag.startswith("--") and len(flag) >= 4:
            matches = [w for w in wanted if w.startswith(flag)]
            if len(matches) == 1:
                found.add(matches[0])
    return found


def _read_as(flag: str, protected: Iterable[str]) -> str:
    """The protected long flag that `flag` abbreviates, else `flag` itself."""
    if not flag.startswith("--") or len(flag) < 4:
        return flag
    for full in sorted(protected):
        if full.startswith(flag):
            return full
    return flag


def _is_secret(flag: str) -> bool:
    if flag in SECRET_FLAGS or flag.endswith("-token"):
        return True
    return any(word in flag for word in _SECRET_WORDS)


def _is_number(arg: str) -> bool:
    try:
        float(arg)
    except ValueError:
        return False
    return True


def _refuse(message: str) -> NoReturn:
    raise InvalidInputError(message)
