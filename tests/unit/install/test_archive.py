"""Unpacking refuses any name or link that would write outside the target folder."""

from __future__ import annotations

import io
import os
import sys
import tarfile
from pathlib import Path

import pytest

from roundhouse.core.engines.install.archive import extract_archive
from roundhouse.core.engines.install.errors import UnsafeArchiveError
from tests.fakes.releases import archives


def write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def files_under(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.mark.parametrize(
    "name",
    ["../evil.txt", "ok/../../evil.txt", "/tmp/evil.txt", "C:\\evil.txt", "ok\\..\\..\\evil.txt"],
)
def test_zip_names_that_leave_the_folder_are_refused(tmp_path: Path, name: str) -> None:
    zip_path = write(
        tmp_path, "evil.zip", archives.zip_bytes([("fine.txt", b"ok", 0o644), (name, b"x", 0o644)])
    )
    dest = tmp_path / "out" / "dest"
    with pytest.raises(UnsafeArchiveError, match=r"evil\.zip"):
        extract_archive(zip_path, dest)
    assert not (tmp_path / "out" / "evil.txt").exists()
    assert not (tmp_path / "evil.txt").exists()


@pytest.mark.parametrize("target", ["../../outside", "/etc", "sub/../../outside", "C:\\Windows"])
def test_tar_links_that_leave_the_folder_are_refused(tmp_path: Path, target: str) -> None:
    tar_path = write(
        tmp_path,
        "evil.tar.gz",
        archives.tar_gz([("a/b.txt", b"ok", 0o644)], links=[("a/link", target)]),
    )
    with pytest.raises(UnsafeArchiveError, match="leaves its folder"):
        extract_archive(tar_path, tmp_path / "dest")
    assert not (tmp_path / "dest" / "a" / "link").is_symlink()


def test_a_zip_symlink_that_escapes_is_refused(tmp_path: Path) -> None:
    zip_path = write(
        tmp_path, "evil.zip", archives.zip_bytes([], links=[("lib", "../../../etc/passwd")])
    )
    with pytest.raises(UnsafeArchiveError, match="leaves its folder"):
        extract_archive(zip_path, tmp_path / "dest")


@pytest.mark.skipif(sys.platform == "win32", reason="symlinks need privileges on Windows")
def test_links_inside_the_folder_are_kept_and_writes_through_them_stay_inside(
    tmp_path: Path,
) -> None:
    tar_path = write(
        tmp_path,
        "good.tar.gz",
        archives.tar_gz(
            [
                ("top/lib/libllama.so.0.0.1", b"lib", 0o644),
                ("top/llama-server", b"#!/bin/sh\n", 0o4755),
            ],
            links=[("top/lib/libllama.so.0", "libllama.so.0.0.1"), ("top/alias", "lib")],
        ),
    )
    dest = tmp_path / "dest"
    extract_archive(tar_path, dest)
    link = dest / "top" / "lib" / "libllama.so.0"
    assert link.is_symlink() and link.read_bytes() == b"lib"
    server = dest / "top" / "llama-server"
    # The execute bits survive; setuid never does.
    assert server.stat().st_mode & 0o7777 == 0o755
    assert (dest / "top" / "alias" / "libllama.so.0.0.1").read_bytes() == b"lib"


def test_a_member_written_through_an_escaping_link_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    dest = tmp_path / "dest"
    dest.mkdir()
    # A link made before (not by this archive) that points out must not carry writes out.
    (dest / "sneaky").symlink_to(outside)
    tar_path = write(tmp_path, "a.tar.gz", archives.tar_gz([("sneaky/x.txt", b"x", 0o644)]))
    with pytest.raises(UnsafeArchiveError, match="through a link"):
        extract_archive(tar_path, dest)
    assert list(outside.iterdir()) == []


def test_devices_and_dangling_hard_links_are_refused(tmp_path: Path) -> None:
    for kind, linkname in ((tarfile.CHRTYPE, ""), (tarfile.LNKTYPE, "not/in/archive")):
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:gz") as tar:
            info = tarfile.TarInfo("thing")
            info.type, info.linkname = kind, linkname
            tar.addfile(info)
        path = write(tmp_path, "odd.tar.gz", buf.getvalue())
        with pytest.raises(UnsafeArchiveError):
            extract_archive(path, tmp_path / f"dest{kind!r}")


def test_a_hard_link_to_an_unpacked_file_is_copied(tmp_path: Path) -> None:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        info = tarfile.TarInfo("bin/llama-server")
        info.size, info.mode = 4, 0o755
        tar.addfile(info, io.BytesIO(b"real"))
        hard = tarfile.TarInfo("bin/llama-cli")
        hard.type, hard.linkname = tarfile.LNKTYPE, "bin/llama-server"
        tar.addfile(hard)
    dest = tmp_path / "dest"
    extract_archive(write(tmp_path, "h.tar.gz", buf.getvalue()), dest)
    assert (dest / "bin" / "llama-cli").read_bytes() == b"real"


def test_an_archive_larger_than_allowed_is_refused(tmp_path: Path) -> None:
    zip_path = write(tmp_path, "big.zip", archives.zip_bytes([("zeros", b"\0" * 100_000, 0o644)]))
    with pytest.raises(UnsafeArchiveError, match="more than it should"):
        extract_archive(zip_path, tmp_path / "dest", max_bytes=50_000)


def test_damaged_and_unknown_archives_are_named(tmp_path: Path) -> None:
    with pytest.raises(UnsafeArchiveError, match="damaged"):
        extract_archive(write(tmp_path, "broken.zip", b"PK\x03\x04 not a zip"), tmp_path / "d1")
    with pytest.raises(UnsafeArchiveError, match="neither"):
        extract_archive(write(tmp_path, "thing.rar", b"Rar!"), tmp_path / "d2")


def test_zip_execute_bits_are_kept(tmp_path: Path) -> None:
    dest = tmp_path / "dest"
    extract_archive(write(tmp_path, "old.zip", archives.old_linux_zip("b4000")), dest)
    assert files_under(dest) == [
        "build",
        "build/bin",
        "build/bin/libggml.so",
        "build/bin/llama-server",
    ]
    if os.name == "posix":
        assert os.access(dest / "build" / "bin" / "llama-server", os.X_OK)
        assert not os.access(dest / "build" / "bin" / "libggml.so", os.X_OK)
