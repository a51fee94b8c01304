"""The partial file is opened without following links or second names, and cache folders
other accounts can write are refused with the command that fixes them."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest

from roundhouse.core.infra.transfer.writer import (
    fsync_path,
    open_no_follow,
    partial_size,
    truncate_partial,
)
from roundhouse.core.models.downloads import UnsafeFolderError
from roundhouse.core.models.downloads.folders import (
    Account,
    check_cache_folders,
    others_can_write,
)
from roundhouse.core.models.downloads.layout import RepoCache, open_partial
from roundhouse.core.models.downloads.words import HUB_WORDS

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX links and modes")

SECRET = b"the user's own file, which a download must never write\n"
ME = Account(uid=os.geteuid())


def _victim(tmp_path: Path) -> tuple[Path, os.stat_result]:
    victim = tmp_path / "elsewhere" / "victim.txt"
    victim.parent.mkdir()
    victim.write_bytes(SECRET)
    return victim, victim.stat()


def _untouched(victim: Path, before: os.stat_result) -> None:
    assert victim.read_bytes() == SECRET
    after = victim.stat()
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)


@pytest.mark.parametrize("append", [False, True])
def test_a_planted_symlink_is_refused_and_its_target_untouched(
    tmp_path: Path, append: bool
) -> None:
    victim, before = _victim(tmp_path)
    partial = tmp_path / "blobs" / f"{'a' * 64}.incomplete"
    partial.parent.mkdir()
    partial.symlink_to(victim)
    with pytest.raises(UnsafeFolderError, match="is a link") as caught:
        open_partial(partial, append)
    assert str(partial) in caught.value.detail and "Delete it" in caught.value.detail
    with pytest.raises(UnsafeFolderError, match="is a link"):
        truncate_partial(partial, 0, HUB_WORDS)
    with pytest.raises(UnsafeFolderError, match="is a link"):
        fsync_path(partial, HUB_WORDS)
    assert partial_size(partial) == 0  # a link is not a partial: nothing to resume from
    _untouched(victim, before)


def test_without_o_nofollow_a_look_first_refuses_the_link(tmp_path: Path) -> None:
    # Windows has no O_NOFOLLOW: the link (a reparse point there) is seen before the open.
    victim, before = _victim(tmp_path)
    partial = tmp_path / "x.incomplete"
    partial.symlink_to(victim)
    with pytest.raises(UnsafeFolderError, match="is a link"):
        open_no_follow(partial, os.O_WRONLY | os.O_CREAT, nofollow=None, words=HUB_WORDS)
    _untouched(victim, before)
    fresh = tmp_path / "y.incomplete"
    os.close(open_no_follow(fresh, os.O_WRONLY | os.O_CREAT, nofollow=None, words=HUB_WORDS))
    assert fresh.is_file()


def test_a_planted_hard_link_is_refused_before_anything_is_emptied(tmp_path: Path) -> None:
    victim, before = _victim(tmp_path)
    partial = tmp_path / "b.incomplete"
    os.link(victim, partial)
    with pytest.raises(UnsafeFolderError, match="hard link"):
        open_partial(partial, False)  # emptying first would have emptied the victim
    with pytest.raises(UnsafeFolderError, match="hard link"):
        truncate_partial(partial, 0, HUB_WORDS)
    _untouched(victim, before)


def test_a_planted_fifo_is_not_a_partial_file(tmp_path: Path) -> None:
    partial = tmp_path / "c.incomplete"
    os.mkfifo(partial)
    with pytest.raises(UnsafeFolderError, match="not a plain file"):
        open_partial(partial, True)  # without a reader, a blocking open would hang here
    with pytest.raises(UnsafeFolderError, match="not a plain file"):
        truncate_partial(partial, 0, HUB_WORDS)
    assert partial_size(partial) == 0


def test_the_partial_file_is_created_private_appended_and_emptied(tmp_path: Path) -> None:
    partial = tmp_path / "d.incomplete"
    handle = open_partial(partial, False)
    handle.write(b"abc")
    handle.close()
    assert stat.S_IMODE(partial.stat().st_mode) & 0o022 == 0
    handle = open_partial(partial, True)
    handle.write(b"def")
    handle.close()
    assert partial.read_bytes() == b"abcdef" and partial_size(partial) == 6
    truncate_partial(partial, 2, HUB_WORDS)
    assert partial.read_bytes() == b"ab"
    open_partial(partial, False).close()
    assert partial.read_bytes() == b""


def _info(mode: int, uid: int = 1000, gid: int = 1000) -> os.stat_result:
    return os.stat_result((stat.S_IFDIR | mode, 1, 1, 2, uid, gid, 4096, 0, 0, 0))


@pytest.mark.parametrize(
    ("mode", "uid", "gid", "shared_ok", "words"),
    [
        (0o755, 1000, 1000, False, None),
        (0o700, 0, 0, False, None),  # root's: root may write anywhere anyway
        (0o775, 1000, 1000, False, None),  # the user's own private group
        (0o775, 1000, 50, False, "the group"),
        (0o757, 1000, 1000, False, "every account"),
        (0o777, 0, 0, False, "every account"),
        (0o1777, 0, 0, True, None),  # a shared cache folder with the sticky bit, as /tmp
        (0o1777, 0, 0, False, "every account"),  # not for a repository's folders
        (0o3777, 0, 0, False, "every account"),
        (0o1777, 2000, 2000, True, "another account"),  # its owner may still replace ours
        (0o755, 2000, 1000, False, "another account"),
    ],
)
def test_who_else_can_write_a_folder(
    mode: int, uid: int, gid: int, shared_ok: bool, words: str | None
) -> None:
    account = Account(uid=1000, private_gid=1000)
    reason = others_can_write(_info(mode, uid, gid), account, shared_ok=shared_ok)
    assert (reason is None) if words is None else (reason is not None and words in reason)


def test_a_world_writable_cache_folder_is_refused_with_the_fix(tmp_path: Path) -> None:
    cache = tmp_path / "shared cache"
    repo = RepoCache(cache, "org/model")
    repo.prepare()
    check_cache_folders(cache, repo.root, ME)  # private: fine
    cache.chmod(0o777)
    with pytest.raises(UnsafeFolderError) as caught:
        check_cache_folders(cache, repo.root, ME)
    detail = caught.value.detail
    assert f"into {cache}:" in detail and "every account" in detail
    assert f"chmod go-w '{cache}'" in detail and "Settings > Models" in detail
    assert "roundhouse settings set models_dir" in detail
    assert caught.value.status == 409
    cache.chmod(0o1777)  # sticky: others may add folders beside ours, not replace them
    check_cache_folders(cache, repo.root, ME)


def test_a_writable_blobs_folder_is_refused_even_when_sticky(tmp_path: Path) -> None:
    repo = RepoCache(tmp_path, "org/model")
    repo.prepare()
    blobs = repo.root / "blobs"
    blobs.chmod(0o1777)
    with pytest.raises(UnsafeFolderError, match="every account") as caught:
        check_cache_folders(tmp_path, repo.root, ME)
    assert f"into {blobs}:" in caught.value.detail


def test_folders_not_made_yet_pass(tmp_path: Path) -> None:
    check_cache_folders(tmp_path / "not yet", tmp_path / "not yet" / "models--a--b", ME)
