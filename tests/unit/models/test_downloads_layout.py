"""The Hugging Face cache layout: links (and their fallbacks), refs, quarantine, space words;
and the rolling speed, ETA and stall display."""

from __future__ import annotations

from pathlib import Path

import pytest
from huggingface_hub import hf_hub_download, scan_cache_dir

from roundhouse.core.infra.transfer.rate import RollingRate
from roundhouse.core.infra.transfer.verify import move_to_quarantine
from roundhouse.core.models.downloads import NotEnoughSpaceError
from roundhouse.core.models.downloads.layout import RepoCache
from roundhouse.core.models.downloads.space import (
    check_space,
    disk_full_words,
    existing_folder,
)
from roundhouse.core.models.library.places import hub_cache_dir

COMMIT = "1" * 40
ETAG = "e" * 64


def _cache_with_blob(root: Path, data: bytes = b"weights") -> RepoCache:
    cache = RepoCache(root, "org/model")
    cache.prepare()
    cache.blob(ETAG).write_bytes(data)
    return cache


def test_links_are_relative_and_depth_aware(tmp_path: Path) -> None:
    cache = _cache_with_blob(tmp_path)
    top = cache.link(COMMIT, "model.gguf", ETAG)
    deep = cache.link(COMMIT, "a/b/model.gguf", ETAG)
    assert str(top.readlink()) == f"../../blobs/{ETAG}"
    assert str(deep.readlink()) == f"../../../../blobs/{ETAG}"
    assert deep.read_bytes() == b"weights"
    assert cache.link(COMMIT, "a/b/model.gguf", ETAG) == deep  # again: unchanged
    cache.write_ref("main", COMMIT)
    found = hf_hub_download(
        "org/model", "a/b/model.gguf", cache_dir=tmp_path, local_files_only=True
    )
    assert Path(found).read_bytes() == b"weights"


def test_without_symlinks_a_hard_link_then_a_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = _cache_with_blob(tmp_path)

    def refuse(*args: object, **kwargs: object) -> None:
        raise OSError(1314, "A required privilege is not held by the client")

    monkeypatch.setattr(Path, "symlink_to", refuse)
    hard = cache.link(COMMIT, "hard.gguf", ETAG)
    assert not hard.is_symlink() and hard.stat().st_ino == cache.blob(ETAG).stat().st_ino
    monkeypatch.setattr("os.link", refuse)
    copied = cache.link(COMMIT, "sub/copy.gguf", ETAG)
    assert not copied.is_symlink() and copied.read_bytes() == b"weights"
    assert copied.stat().st_ino != cache.blob(ETAG).stat().st_ino
    cache.write_ref("main", COMMIT)
    (repo,) = scan_cache_dir(tmp_path).repos
    assert repo.nb_files == 2


def test_refs(tmp_path: Path) -> None:
    cache = RepoCache(tmp_path, "org/model")
    cache.prepare()
    cache.write_ref("main", COMMIT)
    cache.write_ref("refs/pr/1", COMMIT)
    cache.write_ref(COMMIT, COMMIT)  # a commit needs no ref
    refs = cache.root / "refs"
    assert (refs / "main").read_text() == COMMIT
    assert (refs / "refs" / "pr" / "1").read_text() == COMMIT
    assert sorted(p.name for p in refs.rglob("*") if p.is_file()) == ["1", "main"]
    assert not list(cache.root.glob(".ref-*"))


def test_hub_cache_dir_follows_the_setting(tmp_path: Path) -> None:
    assert hub_cache_dir(str(tmp_path)) == tmp_path
    assert hub_cache_dir("  ") == hub_cache_dir(None)
    assert hub_cache_dir(None).name == "hub"


def test_quarantine_keeps_every_file(tmp_path: Path) -> None:
    for n in range(3):
        source = tmp_path / f"bad{n}"
        source.write_bytes(b"x")
        moved = move_to_quarantine(source, tmp_path / "quarantine", "id-model.gguf")
        assert moved.exists() and not source.exists()
    assert len(list((tmp_path / "quarantine").iterdir())) == 3


def test_space_words(tmp_path: Path) -> None:
    check_space(tmp_path, remaining=100, free=120)
    with pytest.raises(NotEnoughSpaceError) as refused:
        check_space(tmp_path, remaining=10_000_000_000, free=5_000_000_000)
    words = refused.value.detail
    assert "10.0 GB" in words and "12.0 GB with room to spare" in words
    assert "5.0 GB free" in words and "Free 7.0 GB" in words
    full = disk_full_words(tmp_path, remaining=2_000_000_000, free=0, kept=1_500_000_000)
    assert f"The disk holding {tmp_path} is full: free 2.4 GB and resume" in full
    assert "1.5 GB downloaded so far are kept" in full
    assert existing_folder(tmp_path / "not" / "yet") == tmp_path


def test_speed_over_a_rolling_window_and_stalls() -> None:
    rate = RollingRate(window_s=5.0)
    rate.reset(0.0, 0)
    for t in range(1, 11):
        rate.add(float(t), t * 1000)  # 1000 B/s
    assert rate.speed(10.0) == pytest.approx(1000)
    progress = rate.progress(10.0, remaining=5000)
    assert progress.eta_s == pytest.approx(5.0) and not progress.stalled
    # Nothing arrives: the speed falls, and after a few seconds the item shows stalled.
    assert rate.speed(12.0) == pytest.approx(600)
    assert not rate.progress(14.0, remaining=5000).stalled
    late = rate.progress(15.5, remaining=5000)
    assert late.stalled and late.eta_s is None
    assert rate.progress(11.0, remaining=5000, retrying=True).stalled
    assert rate.progress(11.0, remaining=0).eta_s == 0.0
    fresh = RollingRate()
    assert fresh.speed(1.0) == 0.0 and fresh.progress(1.0, 10).eta_s is None
