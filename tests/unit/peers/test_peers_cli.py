"""`roundhouse peers`: addresses as typed, and the tables at 80 columns with every id whole."""

from __future__ import annotations

import time

import pytest
from rich.console import Console

from roundhouse.api.peers import (
    DiscoveredList,
    DiscoveredPeer,
    PairingCodeReply,
    PeerInfo,
    PeerList,
    PeerListenerStatus,
)
from roundhouse.cli import peers_view
from roundhouse.cli.peers_commands import DEFAULT_PORT, _address

FP = "3f1a09c277d04e11b8a50c6321fe9d4b" * 2


@pytest.mark.parametrize(
    ("typed", "expected"),
    [
        ("192.168.1.20", ("192.168.1.20", DEFAULT_PORT)),
        ("box.local:12000", ("box.local", 12000)),
        ("[fe80::1]:12000", ("fe80::1", 12000)),
        ("fe80::1", ("fe80::1", DEFAULT_PORT)),
        ("  gpu-box ", ("gpu-box", DEFAULT_PORT)),
    ],
)
def test_an_address_as_typed(typed: str, expected: tuple[str, int]) -> None:
    assert _address(typed) == expected


@pytest.mark.parametrize("typed", ["box:http", "box:0", "box:70000", ":11502"])
def test_a_wrong_address_is_said_in_words(typed: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        _address(typed)
    assert exited.value.code == 2
    assert "Error:" in capsys.readouterr().err


def _text(renderable: object, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setattr(peers_view, "console_width", lambda: 80)
    console = Console(width=80, record=True)
    console.print(renderable)
    text = console.export_text()
    assert all(len(line) <= 80 for line in text.splitlines())
    return text


def test_the_list_keeps_ids_and_addresses_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    name = "a-rather-long-machine-name-under-the-desk"
    answer = PeerList(
        peers=[
            PeerInfo(
                id=FP[:12],
                name=name,
                host="192.168.100.200",
                port=11502,
                fingerprint=FP,
                paired_at=time.time() - 3600,
                reachable=False,
                error="gpu-box at 192.168.100.200:11502 refused the connection or cannot be "
                "reached.",
            )
        ],
        listener=PeerListenerStatus(url="https://0.0.0.0:11502", fingerprint=FP),
    )
    text = _text(peers_view.peers_view(answer), monkeypatch)
    assert FP[:12] in text and "192.168.100.200:11502" in text and "refused" in text
    assert "https://0.0.0.0:11502" in text


def test_the_code_says_what_to_type_there(monkeypatch: pytest.MonkeyPatch) -> None:
    answer = PairingCodeReply(
        code="7KQ2M-X9D4P",
        expires_at=time.time() + 600,
        addresses=["192.168.1.20"],
        port=11502,
        fingerprint=FP,
        listening=True,
    )
    text = _text(peers_view.code_view(answer), monkeypatch)
    assert "7KQ2M-X9D4P" in text and "3F1A 09C2 77D0 4E11" in text
    assert "roundhouse peers add 192.168.1.20:11502 --code 7KQ2M-X9D4P" in text.replace("\n", " ")
    off = answer.model_copy(update={"listening": False, "error": "The peer listener is off."})
    assert "The peer listener is off." in _text(peers_view.code_view(off), monkeypatch)


def test_discovered_machines(monkeypatch: pytest.MonkeyPatch) -> None:
    none = _text(peers_view.discovered_view(DiscoveredList(found=[])), monkeypatch)
    assert "peers.discovery" in none
    found = DiscoveredList(
        found=[
            DiscoveredPeer(
                name="gpu-box", addresses=["192.168.1.20"], port=11502, fingerprint=FP, paired=True
            )
        ]
    )
    text = _text(peers_view.discovered_view(found), monkeypatch)
    assert "gpu-box" in text and "192.168.1.20:11502" in text and "yes" in text
