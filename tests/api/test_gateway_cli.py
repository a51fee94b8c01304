"""`roundhouse gateway status|key` and `roundhouse settings show|set` against a real daemon
whose keyring is the tests' file backend."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator

import httpx
import pytest

from tests.daemon_process import DaemonProcess, running_daemon
from tests.support import cli
from tests.support.standins import keyring_env


@pytest.fixture(scope="module")
def keyed_daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DaemonProcess]:
    folder = tmp_path_factory.mktemp("gateway-cli")
    with running_daemon(folder / "home", env=keyring_env(folder)) as process:
        yield process


def roundhouse(
    daemon: DaemonProcess, *args: str, stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    return cli.roundhouse(daemon, *args, input=stdin, timeout=60)


def models_with(daemon: DaemonProcess, key: str | None) -> int:
    headers = {"authorization": f"Bearer {key}"} if key else {}
    return httpx.get(daemon.url + "/v1/models", headers=headers, trust_env=False).status_code


def test_key_generate_set_and_clear(keyed_daemon: DaemonProcess) -> None:
    daemon = keyed_daemon
    refused = roundhouse(daemon, "gateway", "key")
    assert refused.returncode == 2 and "--generate" in refused.stderr

    generated = roundhouse(daemon, "gateway", "key", "--generate")
    assert generated.returncode == 0, generated.stderr
    key = next(line for line in generated.stdout.splitlines() if line.startswith("rh-"))
    assert "Authorization: Bearer" in generated.stdout
    assert models_with(daemon, None) == 401 and models_with(daemon, key) == 200

    status = json.loads(roundhouse(daemon, "gateway", "status", "--json").stdout)
    assert status["key_set"] is True
    assert status["listeners"] == [{"url": daemon.url + "/v1", "needs_key": True, "error": None}]
    table = roundhouse(daemon, "gateway", "status")
    assert table.returncode == 0 and "required" in table.stdout and key not in table.stdout

    short = roundhouse(daemon, "gateway", "key", "--set", stdin="short\n")
    assert short.returncode == 1 and "too short" in short.stderr
    mine = "my-own-gateway-key-42"
    chosen = roundhouse(daemon, "gateway", "key", "--set", stdin=mine + "\n")
    assert chosen.returncode == 0, chosen.stderr
    assert mine not in chosen.stdout, "a key the user typed is not echoed"
    assert models_with(daemon, key) == 401 and models_with(daemon, mine) == 200

    cleared = roundhouse(daemon, "gateway", "key", "--clear")
    assert cleared.returncode == 0 and "Cleared" in cleared.stdout
    assert models_with(daemon, None) == 200


def test_settings_show_and_set(keyed_daemon: DaemonProcess) -> None:
    daemon = keyed_daemon
    changed = roundhouse(daemon, "settings", "set", "gateway.cors_origins", "http://a, http://b")
    assert changed.returncode == 0, changed.stderr
    assert "gateway.cors_origins = http://a, http://b" in changed.stdout
    assert roundhouse(daemon, "settings", "set", "gateway.idle_ttl_s", "600").returncode == 0
    shown = json.loads(roundhouse(daemon, "settings", "show", "--json").stdout)
    assert shown["gateway"]["cors_origins"] == ["http://a", "http://b"]
    assert shown["gateway"]["idle_ttl_s"] == 600
    table = roundhouse(daemon, "settings", "show")
    assert "gateway.idle_ttl_s" in table.stdout and "600" in table.stdout

    unknown = roundhouse(daemon, "settings", "set", "gateway.idle_ttl", "5")
    assert unknown.returncode == 2
    assert "no setting 'gateway.idle_ttl'" in unknown.stderr
    assert "gateway.idle_ttl_s" in unknown.stderr
    bad = roundhouse(daemon, "settings", "set", "gateway.idle_ttl_s", "-5")
    assert bad.returncode == 2 and "greater than or equal to 0" in bad.stderr
    # Nothing was lost: the earlier values stand.
    again = json.loads(roundhouse(daemon, "settings", "show", "--json").stdout)
    assert again["gateway"]["idle_ttl_s"] == 600

    cleared = roundhouse(daemon, "settings", "set", "gateway.cors_origins", "")
    assert cleared.returncode == 0 and "(none)" in cleared.stdout
