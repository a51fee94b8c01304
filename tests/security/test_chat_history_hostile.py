"""The chat history's new routes (search, presets, export, import, branch) against hostile
requests, through a real daemon: no token (401), a web page's Origin (403), a forged Host
(403), a body over the cap (413), hostile search words and names (answered, never SQL), a
malformed import (422 in words, nothing kept). The same requests with the token pass, so
each refusal is the guard's."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest

from tests.api.test_chat_history_api import BRANCHED
from tests.daemon_process import DaemonProcess, running_daemon
from tests.security.oversize import answer_to_oversize_post

CHATS = "/api/v1/chats"
EVIL = "https://evil.example"
JSON = {"Content-Type": "application/json"}


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DaemonProcess]:
    with running_daemon(tmp_path_factory.mktemp("history-hostile") / "home") as running:
        yield running


@pytest.fixture(scope="module")
def chat_id(daemon: DaemonProcess) -> str:
    with daemon.control() as client:
        answer = client.post(f"{CHATS}/import", json=BRANCHED)
        assert answer.status_code == 201, answer.text
        chat: str = answer.json()["id"]
        return chat


def _requests(chat_id: str) -> list[tuple[str, str, bytes]]:
    """Each new route once, as a client would call it."""
    return [
        ("GET", f"{CHATS}/search?q=diesel", b""),
        ("GET", f"{CHATS}/presets", b""),
        ("PUT", f"{CHATS}/presets/Evil", json.dumps({"text": "Obey"}).encode()),
        ("DELETE", f"{CHATS}/presets/Brief", b""),
        ("POST", f"{CHATS}/import", json.dumps(BRANCHED).encode()),
        ("GET", f"{CHATS}/{chat_id}/export", b""),
        ("GET", f"{CHATS}/{chat_id}/export?format=md", b""),
        ("POST", f"{CHATS}/{chat_id}/branch", json.dumps({"message_id": 1}).encode()),
    ]


def _count(daemon: DaemonProcess) -> tuple[int, int]:
    with daemon.control() as client:
        chats = client.get(CHATS).json()["conversations"]
        presets = client.get(f"{CHATS}/presets").json()["presets"]
        return len(chats), len(presets)


def _send(
    daemon: DaemonProcess, method: str, path: str, body: bytes, headers: dict[str, str]
) -> httpx.Response:
    with httpx.Client(base_url=daemon.url, trust_env=False, timeout=30) as client:
        return client.request(method, path, content=body, headers={**JSON, **headers})


@pytest.mark.parametrize(
    "headers",
    [{}, {"Authorization": "Bearer not-the-token"}],
    ids=["no token", "wrong token"],
)
def test_without_the_token_every_new_route_is_refused(
    daemon: DaemonProcess, chat_id: str, headers: dict[str, str]
) -> None:
    before = _count(daemon)
    for method, path, body in _requests(chat_id):
        answer = _send(daemon, method, path, body, headers)
        assert answer.status_code == 401, (method, path, answer.text)
        assert "diesel" not in answer.text.lower()
    assert _count(daemon) == before


@pytest.mark.parametrize(
    "extra",
    [{"Origin": EVIL}, {"Sec-Fetch-Site": "cross-site"}, {"Host": "evil.example"}],
    ids=["foreign origin", "another site's page", "forged host"],
)
def test_a_web_page_or_a_forged_host_is_refused_even_with_the_token(
    daemon: DaemonProcess, chat_id: str, extra: dict[str, str]
) -> None:
    before = _count(daemon)
    token = {"Authorization": f"Bearer {daemon.token}"}
    for method, path, body in _requests(chat_id):
        answer = _send(daemon, method, path, body, {**token, **extra})
        assert answer.status_code == 403, (method, path, answer.text)
    assert _count(daemon) == before


def test_with_the_token_from_loopback_each_route_answers(
    daemon: DaemonProcess, chat_id: str
) -> None:
    token = {"Authorization": f"Bearer {daemon.token}"}
    statuses = [
        _send(daemon, method, path, body, token).status_code
        for method, path, body in _requests(chat_id)
    ]
    # DELETE Brief: no such preset was saved (404 in words), the rest succeed.
    assert statuses == [200, 200, 200, 404, 201, 200, 200, 200]


def test_an_import_over_the_cap_is_refused_before_it_is_read(daemon: DaemonProcess) -> None:
    answer = answer_to_oversize_post(daemon, f"{CHATS}/import")
    assert answer.startswith("HTTP/1.1 413"), answer[:200]


@pytest.mark.parametrize(
    "words", ["' OR 1=1 --", '"; DROP TABLE messages; --', "NEAR(a b)", "*", "x" * 1000, "%_\\"]
)
def test_hostile_search_words_are_words(daemon: DaemonProcess, chat_id: str, words: str) -> None:
    with daemon.control() as client:
        answer = client.get(f"{CHATS}/search", params={"q": words})
        assert answer.status_code == 200, answer.text
        assert answer.json()["hits"] == []
        assert client.get(f"{CHATS}/{chat_id}").status_code == 200


@pytest.mark.parametrize(
    ("body", "words"),
    [
        (
            {
                **BRANCHED,
                "messages": [{"id": 1, "role": "system", "content": "x", "created_at": 1}],
            },
            "role",
        ),
        (
            {
                **BRANCHED,
                "messages": [
                    {
                        "id": 1,
                        "role": "user",
                        "content": "x",
                        "created_at": 1,
                        "images": ["https://evil.example/x.png"],
                    }
                ],
            },
            "data: URL",
        ),
        (
            {
                **BRANCHED,
                "messages": [
                    {"id": 1, "parent": 1, "role": "user", "content": "x", "created_at": 1}
                ],
            },
            "does not come before",
        ),
        ({**BRANCHED, "surprise": True}, "surprise"),
        ({**BRANCHED, "format": "something-else"}, "not a Roundhouse chat export"),
    ],
    ids=[
        "a role no chat has",
        "an image that is a link",
        "a message its own parent",
        "an unknown field",
        "another format",
    ],
)
def test_a_malformed_import_is_refused_in_words_and_keeps_nothing(
    daemon: DaemonProcess, body: dict[str, object], words: str
) -> None:
    before = _count(daemon)
    with daemon.control() as client:
        answer = client.post(f"{CHATS}/import", json=body)
    assert answer.status_code == 422, answer.text
    assert words in answer.json()["detail"] and "Traceback" not in answer.text
    assert _count(daemon) == before


@pytest.mark.parametrize("message_id", ['"all"', "-1", "99999999999999999999999", "1e400"])
def test_a_branch_that_is_not_a_message_is_refused(
    daemon: DaemonProcess, chat_id: str, message_id: str
) -> None:
    with daemon.control() as client:
        body = '{"message_id": ' + message_id + "}"
        answer = client.post(f"{CHATS}/{chat_id}/branch", content=body, headers=JSON)
    assert answer.status_code in (404, 422), answer.text
    assert daemon.process.poll() is None


def test_the_hostile_requests_left_the_daemon_serving(daemon: DaemonProcess) -> None:
    assert daemon.process.poll() is None
    with daemon.control() as client:
        assert client.get("/api/v1/status").status_code == 200
