"""The Host guard and the token file."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from roundhouse.server.security import host_allowed, host_without_port, token_matches, write_token


@pytest.mark.parametrize(
    ("header", "host"),
    [
        ("localhost:11500", "localhost"),
        ("127.0.0.1:80", "127.0.0.1"),
        ("[::1]:11500", "::1"),
        ("[::1]", "::1"),
        ("EXAMPLE.com", "example.com"),
    ],
)
def test_host_without_port(header: str, host: str) -> None:
    assert host_without_port(header) == host


@pytest.mark.parametrize(
    ("header", "allowed"),
    [
        ("localhost:1", True),
        ("127.0.0.1:1", True),
        ("[::1]:1", True),
        ("app.localhost:1", True),
        ("attacker.example:11500", False),
        ("127.0.0.1.nip.io", False),
        ("localhost.attacker.example", False),
        ("", False),
        (None, False),
    ],
)
def test_host_allowed(header: str | None, allowed: bool) -> None:
    assert host_allowed(header) is allowed


def test_token_file_is_private_and_fresh(tmp_path: Path) -> None:
    path = tmp_path / "state" / "daemon.token"
    first = write_token(path)
    second = write_token(path)
    assert first != second
    assert len(second) >= 40
    assert path.read_text(encoding="ascii") == second
    if os.name == "posix":
        assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_token_matches_only_exact_bearer() -> None:
    assert token_matches("Bearer abc", "abc")
    assert not token_matches("Bearer abd", "abc")
    assert not token_matches("abc", "abc")
    assert not token_matches(None, "abc")
    assert not token_matches("Basic abc", "abc")
