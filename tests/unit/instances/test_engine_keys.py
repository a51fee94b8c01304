"""Per-instance engine keys: derived from a seed only this user can read, stable, never stored."""

from __future__ import annotations

import base64
import hashlib
import hmac
import stat
import sys
from pathlib import Path

import pytest

from roundhouse.core.instances.keys import SEED_FILE, EngineKeys, auth_headers

posix_only = pytest.mark.skipif(sys.platform == "win32", reason="POSIX modes and owners")


def test_each_instance_has_its_own_key_and_an_adopting_daemon_derives_the_same(
    tmp_path: Path,
) -> None:
    first = EngineKeys(tmp_path)
    a, b = first.key_for("aaaa"), first.key_for("bbbb")
    assert a != b and a.startswith("rhe-") and len(a) > 40
    # A later daemon, reading the same seed: the same keys, nothing stored per instance.
    again = EngineKeys(tmp_path)
    assert again.key_for("aaaa") == a and again.key_for("bbbb") == b
    assert [p.name for p in tmp_path.iterdir()] == [SEED_FILE]
    assert a not in (tmp_path / SEED_FILE).read_text()
    # Another home: other keys.
    assert EngineKeys(tmp_path / "other").key_for("aaaa") != a


@posix_only
def test_the_seed_is_readable_by_this_user_alone(tmp_path: Path) -> None:
    EngineKeys(tmp_path).key_for("x")
    seed = tmp_path / SEED_FILE
    assert stat.S_IMODE(seed.stat().st_mode) == 0o600
    key = EngineKeys(tmp_path).key_for("x")
    seed.chmod(0o644)
    assert EngineKeys(tmp_path).key_for("x") == key, "the same seed, its mode tightened"
    assert stat.S_IMODE(seed.stat().st_mode) == 0o600


@posix_only
def test_a_planted_link_or_a_damaged_seed_is_replaced_not_followed(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.write_text("ab" * 32)
    seed = tmp_path / "state" / SEED_FILE
    seed.parent.mkdir()
    seed.symlink_to(target)
    key = EngineKeys(seed.parent).key_for("x")
    assert not seed.is_symlink() and target.read_text() == "ab" * 32
    assert key != _key_from_hex("ab" * 32, "x")
    seed.write_text("not hex")
    assert EngineKeys(seed.parent).key_for("x") != key
    assert len(bytes.fromhex(seed.read_text())) == 32


def test_the_key_travels_as_a_bearer_token() -> None:
    assert auth_headers("rhe-k") == {"authorization": "Bearer rhe-k"}
    assert auth_headers(None) == {}


def _key_from_hex(seed_hex: str, instance_id: str) -> str:
    """The key a seed of `seed_hex` would give: what following the link would have made."""
    digest = hmac.new(bytes.fromhex(seed_hex), instance_id.encode(), hashlib.sha256).digest()
    return "rhe-" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
