"""Cache folders other accounts can write are refused before a download writes into them.

Whoever can create names in a repository's `blobs/` can plant a link where a partial file
goes, or change a model after it was verified. So the cache folder and the repository's
folders must be writable by this account alone (root counts as this account: it can write
anywhere anyway). The cache folder itself may be a shared one with the sticky bit, as /tmp
is: others may add folders there but not replace ours, and what they add is checked in turn.
POSIX permission bits only: on Windows, ACLs decide, and the partial file's own checks (no
link, no second name) are what remain.
"""

from __future__ import annotations

import functools
import os
import shlex
import stat
import sys
from dataclasses import dataclass
from pathlib import Path

from roundhouse.core.models.downloads.errors import UnsafeFolderError

# What the words suggest instead, in the GUI and on the command line.
_ELSEWHERE = (
    "choose a folder of your own in Settings > Models > Download models to "
    "(`roundhouse settings set models_dir /path/to/your/folder`)"
)
# Folders of a repository that a download writes in (the repository folder itself too).
_REPO_FOLDERS = ("blobs", "snapshots", "refs")


@dataclass(frozen=True)
class Account:
    """Who may write a cache folder: this account (or root), and its own private group."""

    uid: int
    # The effective group when it is this user's own (named as the user, no other member):
    # group-writable folders are the default where the umask is 002, and harmless there.
    private_gid: int | None = None


@functools.cache
def current_account() -> Account | None:
    """This process's account; None on Windows, where the bits do not say who may write."""
    if sys.platform == "win32":
        return None
    import grp
    import pwd

    uid, gid = os.geteuid(), os.getegid()
    try:
        name = pwd.getpwuid(uid).pw_name
        group = grp.getgrgid(gid)
    except KeyError:  # an account without a name (a container's arbitrary uid)
        return Account(uid)
    private = group.gr_name == name and set(group.gr_mem) <= {name}
    return Account(uid, gid if private else None)


def others_can_write(info: os.stat_result, account: Account, *, shared_ok: bool) -> str | None:
    """Why accounts other than `account` can write the folder `info` describes, or None.
    `shared_ok`: a sticky, shared folder is fine (the cache folder, not a repository's)."""
    if info.st_uid not in (account.uid, 0):
        return f"it belongs to another account ({_user_name(info.st_uid)})"
    mode = info.st_mode
    if shared_ok and mode & stat.S_ISVTX:
        return None
    if mode & stat.S_IWOTH:
        return "every account on this computer may write to it"
    if mode & stat.S_IWGRP and info.st_gid != account.private_gid:
        return f"the group {_group_name(info.st_gid)} may write to it"
    return None


def check_cache_folders(
    hub_cache: Path, repo_root: Path | None = None, account: Account | None = None
) -> None:
    """UnsafeFolderError when other accounts can write the cache folder or, when given, the
    repository's folder or its blobs/, snapshots/ or refs/. Folders not made yet pass (a
    download makes them with this account's umask, and they are checked again). Blocking."""
    account = account or current_account()
    if account is None:
        return
    folders = [(hub_cache, True)]
    if repo_root is not None:
        folders += [(repo_root, False)] + [(repo_root / name, False) for name in _REPO_FOLDERS]
    for folder, shared_ok in folders:
        try:
            info = folder.stat()
        except OSError:
            continue  # not there yet; or unreadable, which the write itself reports
        reason = others_can_write(info, account, shared_ok=shared_ok)
        if reason is not None:
            raise UnsafeFolderError(unsafe_folder_words(folder, reason, info.st_uid, account))


def unsafe_folder_words(folder: Path, reason: str, owner: int, account: Account) -> str:
    """What the user reads: which folder, why, and the command that fixes it."""
    said = (
        f"Roundhouse will not download into {folder}: {reason}, so another account could "
        "put a link or a changed file where a model's files go."
    )
    if owner not in (account.uid, 0):
        return f"{said} Ask its owner to hand it over, or {_ELSEWHERE}."
    fix = f"chmod go-w {shlex.quote(str(folder))}"
    return f"{said} Make it writable by you alone (`{fix}`), or {_ELSEWHERE}."


def _user_name(uid: int) -> str:
    if sys.platform == "win32":
        return str(uid)
    import pwd

    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"user id {uid}"


def _group_name(gid: int) -> str:
    if sys.platform == "win32":
        return str(gid)
    import grp

    try:
        return f"'{grp.getgrgid(gid).gr_name}'"
    except KeyError:
        return f"id {gid}"
