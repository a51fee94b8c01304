"""OLLAMA_HOST is read as Ollama reads it, then made connectable; keep_alive as its API takes it."""

from __future__ import annotations

import pytest

from roundhouse.core.engines.ollama_api import keep_alive_value, ollama_base_url
from roundhouse.core.errors import InvalidInputError


@pytest.mark.parametrize(
    ("value", "url"),
    [
        (None, "http://127.0.0.1:11434"),
        ("", "http://127.0.0.1:11434"),
        ("   ", "http://127.0.0.1:11434"),
        ("127.0.0.1:11435", "http://127.0.0.1:11435"),
        ("0.0.0.0", "http://127.0.0.1:11434"),  # bind-all: connect over loopback
        ("0.0.0.0:8080", "http://127.0.0.1:8080"),
        (":11435", "http://127.0.0.1:11435"),
        ("localhost", "http://localhost:11434"),
        ("example.com", "http://example.com:11434"),
        ("example.com:1234", "http://example.com:1234"),
        ("192.168.1.20", "http://192.168.1.20:11434"),
        ("http://example.com", "http://example.com:80"),  # Ollama: the scheme's own port
        ("https://example.com", "https://example.com:443"),
        ("http://127.0.0.1:11434/", "http://127.0.0.1:11434"),
        ("http://10.0.0.5:11434", "http://10.0.0.5:11434"),
        ("https://gpu-box:8443/ollama", "https://gpu-box:8443/ollama"),
        ("[::1]:11434", "http://[::1]:11434"),
        ("::1", "http://[::1]:11434"),
        ("[::1]", "http://[::1]:11434"),
        ("[::]:9000", "http://[::1]:9000"),
        ("::", "http://[::1]:11434"),
        ("0:0:0:0:0:0:0:1", "http://[::1]:11434"),
        ("  localhost:99999 ", "http://localhost:11434"),  # out of range: the default port
        ("localhost:abc", "http://localhost:11434"),
        ("localhost:", "http://localhost:11434"),
    ],
)
def test_ollama_host_table(value: str | None, url: str) -> None:
    assert ollama_base_url(value) == url


def test_an_unknown_scheme_is_refused_in_words() -> None:
    with pytest.raises(InvalidInputError, match=r"http:// or https://.*127\.0\.0\.1:11434"):
        ollama_base_url("tcp://127.0.0.1:11434")


@pytest.mark.parametrize(
    ("given", "sent"),
    [
        (-1, -1),
        (0, 0),
        (300, 300),
        (2.5, 2.5),
        ("-1", -1),  # Ollama refuses a string without a unit: send the number
        ("300", 300),
        ("0", 0),
        ("1.5", 1.5),
        ("10m", "10m"),
        ("-1m", "-1m"),
        ("1h30m", "1h30m"),
        (" 5m ", "5m"),
    ],
)
def test_keep_alive_is_sent_as_ollama_reads_it(given: str | int, sent: str | int) -> None:
    assert keep_alive_value(given) == sent
    assert type(keep_alive_value(given)) is type(sent)


@pytest.mark.parametrize("given", ["soon", "10 minutes", "m", "", True])
def test_a_keep_alive_that_is_no_duration_is_refused(given: str | bool) -> None:
    with pytest.raises(InvalidInputError, match="negative number to keep the model loaded"):
        keep_alive_value(given)
