"""Pytest fixtures for the fake Hub: load with `pytest_plugins = ["tests.fakes.hub.fixtures"]`
in a root conftest, or import the fixtures into a test module.

- `fake_hub_repos`: the standard repos (build.build_test_repos), built once per session.
- `fake_hub_session`: one server over them for the whole session.
- `fake_hub`: that server, reset (no faults, empty log, initial settings) before the test.
- `fake_hub_url`: its base URL, for `HfApi(endpoint=...)`, `hf_hub_download(endpoint=...)`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakes.hub import HubStandin, running_hub
from tests.fakes.hub.build import build_test_repos


@pytest.fixture(scope="session")
def fake_hub_repos(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_test_repos(tmp_path_factory.mktemp("fake-hub") / "repos")


@pytest.fixture(scope="session")
def fake_hub_session(fake_hub_repos: Path) -> Iterator[HubStandin]:
    with running_hub(fake_hub_repos) as hub:
        yield hub


@pytest.fixture
def fake_hub(fake_hub_session: HubStandin) -> HubStandin:
    fake_hub_session.reset()
    return fake_hub_session


@pytest.fixture
def fake_hub_url(fake_hub: HubStandin) -> str:
    return fake_hub.base_url
