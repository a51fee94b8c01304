"""The update check through a real daemon and the CLI, with a local PyPI stand-in that counts
requests: off (the default) asks nothing; `roundhouse update check` asks anyway; turned on,
the daemon asks once and not again after a restart the same day; a malformed answer and no
network are errors in words, and the daemon keeps serving."""

from __future__ import annotations

import json
import time
from pathlib import Path

from roundhouse import __version__
from tests.daemon_process import running_daemon
from tests.fakes.pypi import PypiStandin
from tests.processes import free_port, wait_for
from tests.support.cli import roundhouse


def test_off_asks_nothing_check_asks_on_asks_once_a_day(home_root: Path) -> None:
    with PypiStandin("99.0.0") as pypi:
        env = {"ROUNDHOUSE_UPDATES_URL": pypi.url}
        with running_daemon(home_root, env=env):
            time.sleep(0.5)  # the daemon's loop has had its chance to ask, wrongly
            status = roundhouse(home_root, "update", "status", "--json")
            assert status.returncode == 0, status.stderr
            found = json.loads(status.stdout)
            assert found["enabled"] is False and found["checked_at"] is None
            assert found["current"] == __version__ and found["source"] == pypi.url
            assert roundhouse(home_root, "update", "status").stdout.startswith("Not checked yet")
            # Saving other settings (with it still off) asks nothing either.
            saved = roundhouse(home_root, "settings", "set", "gateway.idle_ttl_s", "60")
            assert saved.returncode == 0, saved.stderr
            time.sleep(0.3)
            assert pypi.requests() == [], "off means no request at all"

            # Turned on: the daemon asks at once, once.
            on = roundhouse(home_root, "settings", "set", "ui.check_updates", "true")
            assert on.returncode == 0 and "ui.check_updates = True" in on.stdout, on.stderr
            wait_for(lambda: len(pypi.requests()) == 1, "the check at the switch")
            shown = roundhouse(home_root, "update", "status")
            assert f"Roundhouse 99.0.0 is out (this is {__version__})" in shown.stdout
            assert "pypi.org/project/roundhouse" in shown.stdout
        # A restart the same day: the result is remembered, nothing is asked.
        with running_daemon(home_root, env=env):
            time.sleep(0.5)
            assert len(pypi.requests()) == 1
            again = json.loads(roundhouse(home_root, "update", "status", "--json").stdout)
            assert again["enabled"] is True and again["latest"] == "99.0.0" and again["newer"]
            # Asked for explicitly, it asks now.
            checked = roundhouse(home_root, "update", "check")
            assert checked.returncode == 0, checked.stderr
            assert "99.0.0 is out" in checked.stdout and len(pypi.requests()) == 2
        assert {r.headers["User-Agent"] for r in pypi.requests()} == {f"Roundhouse/{__version__}"}


def test_check_with_it_off_a_malformed_answer_and_no_network(home_root: Path) -> None:
    with (
        PypiStandin(__version__, answer="not-json") as pypi,
        running_daemon(home_root, env={"ROUNDHOUSE_UPDATES_URL": pypi.url}),
    ):
        bad = roundhouse(home_root, "update", "check")
        assert bad.returncode == 1 and len(pypi.requests()) == 1
        assert "not JSON" in bad.stderr and "Traceback" not in bad.stderr, bad.stderr
        pypi.answer = "json"
        good = roundhouse(home_root, "update", "check", "--json")
        assert good.returncode == 0, good.stderr
        answer = json.loads(good.stdout)
        assert answer["latest"] == __version__ and not answer["newer"] and not answer["error"]
        assert answer["enabled"] is False, "an explicit check does not turn the setting on"

    offline = f"http://127.0.0.1:{free_port()}/pypi/roundhouse/json"
    with running_daemon(home_root, env={"ROUNDHOUSE_UPDATES_URL": offline}):
        failed = roundhouse(home_root, "update", "check")
        assert failed.returncode == 1
        assert "Could not reach 127.0.0.1" in failed.stderr, failed.stderr
        # The last good answer is still known, with the failure beside it.
        status = json.loads(roundhouse(home_root, "update", "status", "--json").stdout)
        assert status["latest"] == __version__ and "Could not reach" in status["error"]
        assert roundhouse(home_root, "status").returncode == 0, "the daemon keeps serving"
