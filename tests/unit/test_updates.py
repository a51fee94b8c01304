"""The update check: version order, PyPI's answer read strictly, what the GET sends (against a
local PyPI stand-in), and the once-a-day schedule with an injected clock."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from roundhouse.core.system.updates import (
    CHECK_EVERY_S,
    UpdateChecker,
    UpdateCheckError,
    fetch_latest,
    is_newer,
    parse_answer,
    version_key,
)
from tests.fakes.pypi import PypiStandin
from tests.processes import free_port
from tests.support.clock import Clock


def test_versions_order_as_pep_440_says() -> None:
    ordered = ["0.9", "1.0.dev1", "1.0a1", "1.0a2", "1.0b1", "1.0rc1", "1.0", "1.0.post1", "1.1"]
    keys = [version_key(v) for v in ordered]
    assert None not in keys
    assert keys == sorted(keys)  # type: ignore[type-var]
    assert len(set(keys)) == len(keys)
    assert version_key("1.0") == version_key("1.0.0") == version_key("v1.0")
    assert is_newer("0.10.0", "0.9.5") and not is_newer("0.1.0", "0.1.0")
    assert not is_newer("0.1.0", "0.2.0.dev0")
    for bad in ("", "latest", "1.0-final", "1..0"):
        assert version_key(bad) is None, bad
    assert not is_newer("banana", "0.1.0")


def test_parse_answer_is_strict() -> None:
    assert parse_answer(json.dumps({"info": {"version": " 1.2.3 "}}).encode(), "x") == "1.2.3"
    with pytest.raises(UpdateCheckError, match="not JSON"):
        parse_answer(b"<html>", "pypi.example")
    for body in ({}, {"info": {}}, {"info": {"version": 3}}, {"info": {"version": "soon"}}, []):
        with pytest.raises(UpdateCheckError, match="without a version"):
            parse_answer(json.dumps(body).encode(), "pypi.example")


def test_the_get_sends_only_a_user_agent_with_the_version() -> None:
    with PypiStandin("2.0.0") as pypi:
        assert asyncio.run(fetch_latest(pypi.url, "0.1.0")) == "2.0.0"
        [request] = pypi.requests()
    assert request.method == "GET" and request.path == "/pypi/roundhouse/json"
    headers = {name.lower(): value for name, value in request.headers.items()}
    assert headers["user-agent"] == "Roundhouse/0.1.0"
    # Nothing that could identify the user or the machine: no cookie, no auth, no extras.
    allowed = {"host", "user-agent", "accept", "accept-encoding", "connection"}
    assert set(headers) <= allowed, headers


@pytest.mark.parametrize(
    ("answer", "status", "words"),
    [
        ("not-json", 200, "not JSON"),
        ("no-version", 200, "without a version"),
        ("json", 503, "HTTP 503"),
    ],
)
def test_bad_answers_are_errors_in_words(answer: str, status: int, words: str) -> None:
    with (
        PypiStandin(answer=answer, status=status) as pypi,
        pytest.raises(UpdateCheckError, match=words) as info,
    ):
        asyncio.run(fetch_latest(pypi.url, "0.1.0"))
    assert "127.0.0.1" in str(info.value) and "works the same without it" in str(info.value)


def test_offline_is_an_error_in_words() -> None:
    url = f"http://127.0.0.1:{free_port()}/pypi/roundhouse/json"
    with pytest.raises(UpdateCheckError, match=r"Could not reach 127\.0\.0\.1"):
        asyncio.run(fetch_latest(url, "0.1.0"))


class Fetches:
    """A fetch that answers from a list of versions (or errors) and counts its calls."""

    def __init__(self, *answers: str | UpdateCheckError) -> None:
        self.answers = list(answers)
        self.calls: list[tuple[str, str]] = []

    async def __call__(self, url: str, current: str) -> str:
        self.calls.append((url, current))
        answer = self.answers.pop(0)
        if isinstance(answer, UpdateCheckError):
            raise answer
        return answer


def test_schedule_off_means_never_and_on_means_once_a_day(tmp_path: Path) -> None:
    clock, enabled = Clock(1_800_000_000.0), [False]
    state = tmp_path / "state" / "updates.json"

    def checker(fetch: Fetches) -> UpdateChecker:
        return UpdateChecker(
            "0.1.0", state, lambda: enabled[0], url="http://x/json", clock=clock, fetch=fetch
        )

    fetch = Fetches("0.2.0", UpdateCheckError("offline"), "0.3.0")
    first = checker(fetch)
    assert first.seconds_until_due() is None
    status = first.status()
    assert (status.enabled, status.latest, status.checked_at, status.newer) == (
        False,
        None,
        None,
        False,
    )
    assert status.summary() == "Not checked yet."
    enabled[0] = True
    assert first.seconds_until_due() == 0

    checked = asyncio.run(first.check())
    assert (checked.latest, checked.newer, checked.error) == ("0.2.0", True, None)
    assert checked.checked_at == clock.now and checked.source == "http://x/json"
    assert checked.summary().startswith("Roundhouse 0.2.0 is out (this is 0.1.0).")
    assert first.seconds_until_due() == CHECK_EVERY_S
    clock.now += 3600
    assert first.seconds_until_due() == CHECK_EVERY_S - 3600

    # The result outlives the daemon: a restart within the day does not ask again.
    second = checker(fetch)
    assert second.status().latest == "0.2.0"
    assert second.seconds_until_due() == CHECK_EVERY_S - 3600
    clock.now += CHECK_EVERY_S
    assert second.seconds_until_due() == 0
    failed = asyncio.run(second.check())
    assert failed.error == "offline" and failed.latest == "0.2.0", "the last good answer stays"
    assert "The last check failed: offline" in failed.summary()
    assert second.seconds_until_due() == CHECK_EVERY_S, "a failure counts as the day's check"
    clock.now -= 10 * CHECK_EVERY_S
    assert second.seconds_until_due() == 0, "a clock that went back makes the check due"
    assert len(fetch.calls) == 2 and fetch.calls[0] == ("http://x/json", "0.1.0")


def test_the_loop_sleeps_while_off_and_checks_when_turned_on(tmp_path: Path) -> None:
    enabled = [False]
    fetch = Fetches("0.1.0")

    async def scenario() -> None:
        checker = UpdateChecker(
            "0.1.0", tmp_path / "updates.json", lambda: enabled[0], url="u", fetch=fetch
        )
        checker.start()
        await asyncio.sleep(0.2)
        checker.settings_changed()  # another setting saved: still off
        await asyncio.sleep(0.1)
        assert fetch.calls == []
        enabled[0] = True
        checker.settings_changed()
        for _ in range(100):
            if checker.status().checked_at is not None:
                break
            await asyncio.sleep(0.02)
        status = checker.status()
        assert status.latest == "0.1.0" and not status.newer and len(fetch.calls) == 1
        assert status.summary().startswith("Roundhouse 0.1.0 is up to date")
        checker.settings_changed()
        await asyncio.sleep(0.1)
        assert len(fetch.calls) == 1, "once a day, however often the settings change"
        await checker.stop()

    asyncio.run(scenario())


def test_a_damaged_state_file_is_a_fresh_start(tmp_path: Path) -> None:
    state = tmp_path / "updates.json"
    state.write_text("{not json", encoding="utf-8")
    checker = UpdateChecker("0.1.0", state, lambda: True, url="u", fetch=Fetches())
    assert checker.status().checked_at is None and checker.seconds_until_due() == 0
