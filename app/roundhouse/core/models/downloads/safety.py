"""Names a server sends (file paths, digests, etags, commits) checked before any is written.

A repository is someone else's input: a file named `../../.bashrc`, `C:evil`, or
`\\\\host\\share\\x` must never decide where Roundhouse writes (Ollama CVE-2024-37032). The
rules hold on every OS, so a cache filled on Linux stays safe when read on Windows.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from huggingface_hub.errors import HFValidationError

# Public and documented, but exported lazily, so mypy cannot see it.
from huggingface_hub.utils import validate_repo_id  # type: ignore[attr-defined]

from roundhouse.core.errors import InvalidInputError

_DIGEST = re.compile(r"sha256[:-]?([0-9a-fA-F]{64})")
_HEX64 = re.compile(r"[0-9a-fA-F]{64}")
# Matched whole (fullmatch): `$` would let a trailing newline through.
_OBJECT_ID = re.compile(r"[0-9a-fA-F]{40}|[0-9a-fA-F]{64}")
# Characters Windows refuses in a name, or reads as a drive or a stream (`a.gguf:hidden`).
_WINDOWS_FORBIDDEN = frozenset('<>:"|?*')
_WINDOWS_DEVICES = frozenset(
    {"con", "prn", "aux", "nul", "conin$", "conout$"}
    | {f"com{n}" for n in "123456789¹²³"}
    | {f"lpt{n}" for n in "123456789¹²³"}
)
_MAX_PART_BYTES = 255
_MAX_PATH_CHARS = 1024


class UnsafeNameError(InvalidInputError):
    """A name from a server would write outside its folder, or is not what it claims."""

    title = "Unsafe name refused"
    status = 502


def unsafe_reason(name: str) -> str | None:
    """Why `name` is not a safe path relative to a folder, or None when it is."""
    if not name:
        return "is empty"
    if len(name) > _MAX_PATH_CHARS:
        return f"is longer than {_MAX_PATH_CHARS} characters"
    if "\x00" in name:
        return "contains a NUL character"
    if any(ord(c) < 32 or ord(c) == 127 for c in name):
        return "contains a control character"
    if "\\" in name:
        return "contains a backslash, a folder separator on Windows"
    if name.startswith("/"):
        return "is an absolute path"
    if ":" in name:
        return "contains a colon, which names a drive or a stream on Windows"
    for part in name.split("/"):
        reason = _part_reason(part)
        if reason is not None:
            return reason
    return None


def _part_reason(part: str) -> str | None:
    if part == "":
        return "has an empty part (a doubled or trailing slash)"
    if part in (".", ".."):
        return f"has a '{part}' part, which steps out of its folder"
    if part != part.rstrip(" ."):
        return "has a part ending in a dot or a space, which Windows silently drops"
    if _WINDOWS_FORBIDDEN.intersection(part):
        return 'contains one of <>:"|?*, which Windows does not allow in names'
    if part.split(".", 1)[0].rstrip(" ").lower() in _WINDOWS_DEVICES:
        return "uses a Windows device name (CON, NUL, COM1...)"
    if len(part.encode("utf-8", "surrogatepass")) > _MAX_PART_BYTES:
        return f"has a part longer than {_MAX_PART_BYTES} bytes"
    return None


def check_repo_path(name: str) -> str:
    """`name` itself when it is a safe '/'-separated relative path; UnsafeNameError if not."""
    reason = unsafe_reason(name)
    if reason is not None:
        raise UnsafeNameError(
            f"The repository lists a file named {name!r}, which {reason}. Roundhouse refuses "
            "to write it; choose other files, or ask the repository's owner to rename it."
        )
    return name


def check_revision(revision: str) -> str:
    """A branch, tag or commit name, safe as a path under `refs/`."""
    reason = unsafe_reason(revision)
    if reason is not None:
        raise InvalidInputError(
            f"The revision {revision!r} {reason}; give a branch, a tag or a commit hash."
        )
    return revision


def check_repo_id(repo: str) -> str:
    """A Hub repository id ('org/name' or 'name'); InvalidInputError with the rule broken."""
    try:
        validate_repo_id(repo)
    except HFValidationError as exc:
        raise InvalidInputError(
            f"{repo!r} is not a Hugging Face repository id ({exc}). Give it as "
            "'organisation/name', for example 'Qwen/Qwen3-0.6B-GGUF'."
        ) from exc
    return repo


def parse_sha256(digest: str) -> str:
    """The lowercase hex of 'sha256:<hex>', 'sha256-<hex>', 'sha256<hex>' or bare 64 hex."""
    found = _DIGEST.fullmatch(digest)
    if found:
        return found.group(1).lower()
    if _HEX64.fullmatch(digest):
        return digest.lower()
    raise UnsafeNameError(
        f"The Hub gave {digest[:80]!r} as a sha256 digest, which it is not; Roundhouse cannot "
        "verify the file. Try again later."
    )


def normalize_etag(etag: str) -> str:
    """The blob name an ETag stands for: W/ and quotes removed, then 40 or 64 hex digits
    (a git object id or a sha256), lowercase. UnsafeNameError for anything else."""
    text = etag.strip()
    if text.startswith("W/"):
        text = text[2:]
    text = text.strip('"')
    if _DIGEST.fullmatch(text):
        return parse_sha256(text)
    if not _OBJECT_ID.fullmatch(text):
        raise UnsafeNameError(
            f"The Hub gave the ETag {etag[:80]!r}, which is not a sha256 or a git object id; "
            "Roundhouse will not use it as a file name. Try again later."
        )
    return text.lower()


def check_commit(commit: str) -> str:
    """A commit hash (40 or 64 hex digits), lowercase."""
    if not _OBJECT_ID.fullmatch(commit):
        raise UnsafeNameError(
            f"The Hub gave {commit[:80]!r} as a commit hash, which it is not. Try again later."
        )
    return commit.lower()


def contained(root: Path, relative: str) -> Path:
    """`root / relative`, checked: the name is safe and its folder, with every link in it
    resolved, lies inside `root` (a planted link to another folder is refused too)."""
    check_repo_path(relative)
    target = root.joinpath(*relative.split("/"))
    real_root = os.path.realpath(root)
    real_parent = os.path.realpath(target.parent)
    if os.path.commonpath([real_root, real_parent]) != real_root:
        raise UnsafeNameError(
            f"Writing {relative!r} would leave {root}: a folder in the way links elsewhere. "
            "Remove that link, then try again."
        )
    return target
