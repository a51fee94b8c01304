"""Names from a server (paths, digests, etags, commits) are checked before anything is written."""

from __future__ import annotations

from pathlib import Path

import pytest

from roundhouse.core.errors import InvalidInputError
from roundhouse.core.models.downloads.safety import (
    UnsafeNameError,
    check_commit,
    check_repo_id,
    check_repo_path,
    check_revision,
    contained,
    normalize_etag,
    parse_sha256,
    unsafe_reason,
)

HEX64 = "ab" * 32
HEX40 = "cd" * 20

HOSTILE = [
    "",
    "..",
    ".",
    "../model.gguf",
    "a/../../b",
    "a/./b",
    "a/..",
    "/etc/passwd",
    "//server/share/x",
    "\\\\server\\share\\x",
    "\\\\?\\C:\\x",
    "C:evil.gguf",
    "C:/evil.gguf",
    "C:\\Windows\\evil",
    "c:",
    "a\\..\\..\\b",
    "a\\b",
    "model.gguf\x00.txt",
    "a/\x00",
    "line\nbreak",
    "tab\there",
    "a//b",
    "a/",
    "/",
    "model.gguf:hidden",
    "dir./x",
    "dir /x",
    "x.",
    "CON",
    "nul.txt",
    "a/COM1.gguf",
    "con.d/x",
    "lpt9",
    "a<b",
    'a"b',
    "a|b",
    "a?b",
    "a*b",
    "x" * 256,
    "a/" * 600 + "b",
    "\x7f",
]

FINE = [
    "model.gguf",
    "Q4_K_M/model-00001-of-00002.gguf",
    "a/b/c/d/e.safetensors",
    ".gitattributes",
    "..hidden",
    "a..b",
    "модель/файл.gguf",
    "模型.gguf",
    "name with spaces.gguf",
    "console/x",  # a device name only as the whole part before the first dot
    "x" * 255,
]


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_names_are_refused(name: str) -> None:
    assert unsafe_reason(name) is not None
    with pytest.raises(UnsafeNameError) as refused:
        check_repo_path(name)
    assert "refuses to write it" in refused.value.detail
    assert refused.value.status == 502


@pytest.mark.parametrize("name", FINE)
def test_plain_names_pass(name: str) -> None:
    assert unsafe_reason(name) is None
    assert check_repo_path(name) == name


def test_contained_joins_inside_and_refuses_a_planted_link(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    assert contained(root, "sub/x.gguf") == root / "sub" / "x.gguf"
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "link").symlink_to(outside)
    with pytest.raises(UnsafeNameError, match="links elsewhere"):
        contained(root, "link/x.gguf")
    with pytest.raises(UnsafeNameError):
        contained(root, "../outside/x")


@pytest.mark.parametrize(
    "digest",
    [f"sha256:{HEX64}", f"sha256-{HEX64}", f"sha256{HEX64}", HEX64, HEX64.upper()],
)
def test_sha256_digests_in_every_accepted_form(digest: str) -> None:
    assert parse_sha256(digest) == HEX64


@pytest.mark.parametrize(
    "digest",
    [
        "",
        "sha256:",
        f"sha256:{HEX64}0",
        f"sha256:{HEX64[:-1]}",
        f"sha512:{HEX64}",
        f"sha256:{HEX64[:-1]}g",
        f"sha256:../../{HEX64}",
        HEX40,
        f"md5:{HEX40}",
        f"{HEX64}\n",
        f" {HEX64}",
    ],
)
def test_other_digests_are_refused(digest: str) -> None:
    with pytest.raises(UnsafeNameError, match="not"):
        parse_sha256(digest)


@pytest.mark.parametrize(
    ("etag", "blob"),
    [
        (f'"{HEX64}"', HEX64),
        (f'W/"{HEX40}"', HEX40),
        (HEX40.upper(), HEX40),
        (f'"sha256:{HEX64}"', HEX64),
    ],
)
def test_etags_name_blobs(etag: str, blob: str) -> None:
    assert normalize_etag(etag) == blob


@pytest.mark.parametrize(
    "etag", ['"../../x"', f'"{HEX64}/.."', '"abc"', f'"{HEX64}.incomplete"', '""', "W/"]
)
def test_odd_etags_are_refused(etag: str) -> None:
    with pytest.raises(UnsafeNameError, match="ETag"):
        normalize_etag(etag)


def test_commits_are_hex() -> None:
    assert check_commit(HEX40.upper()) == HEX40
    assert check_commit(HEX64) == HEX64
    for bad in ("main", "../" + HEX40, HEX40[:-1], HEX40 + "\n", "\n" + HEX40, ""):
        with pytest.raises(UnsafeNameError, match="commit hash"):
            check_commit(bad)


def test_repo_ids_and_revisions() -> None:
    assert check_repo_id("Qwen/Qwen3-0.6B-GGUF") == "Qwen/Qwen3-0.6B-GGUF"
    assert check_repo_id("gpt2") == "gpt2"
    for bad in ("../x", "a/b/c", "a--b/c", "org/na me", ""):
        with pytest.raises(InvalidInputError, match="not a Hugging Face repository id"):
            check_repo_id(bad)
    assert check_revision("refs/pr/1") == "refs/pr/1"
    for bad in ("../main", "/main", "C:main", "a//b"):
        with pytest.raises(InvalidInputError, match="revision"):
            check_revision(bad)
