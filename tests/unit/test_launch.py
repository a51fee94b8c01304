"""Which command lines open the app straight away, without the CLI framework."""

from __future__ import annotations

import pytest

from roundhouse.base.paths import HOME_ENV
from roundhouse.cli.launch import app_launch_home


def test_plain_launch_uses_the_env_home(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(HOME_ENV, raising=False)
    assert app_launch_home([]) is None
    monkeypatch.setenv(HOME_ENV, "/portable")
    assert app_launch_home([]) == "/portable"


@pytest.mark.parametrize(
    ("argv", "home"),
    [
        (["--home", "/h"], "/h"),
        (["--home=/h ü"], "/h ü"),
        (["status"], False),
        (["--home", "/h", "status"], False),
        (["--help"], False),
        (["--home"], False),
        (["--home", "--help"], False),
        (["--home="], False),
        (["--version"], False),
    ],
)
def test_only_app_launches_skip_the_cli(argv: list[str], home: str | bool) -> None:
    assert app_launch_home(argv) == home
