"""What users give for Ollama, read as Ollama reads it: OLLAMA_HOST, keep_alive, model names."""

from __future__ import annotations

import ipaddress
import re

from roundhouse.core.errors import InvalidInputError

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 11434
# Go's time.ParseDuration: a sign, then one or more number+unit parts ("1h30m", "-1m").
_DURATION_PART = r"(\d+(\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)"
_GO_DURATION = re.compile(rf"^[-+]?({_DURATION_PART})+$")
_NUMBER = re.compile(r"^[-+]?(\d+(\.\d*)?|\.\d+)$")

KeepAlive = str | int | float


def ollama_base_url(value: str | None = None) -> str:
    """The URL to reach Ollama at, from an `OLLAMA_HOST` value, read as Ollama reads it.

    `host:port`, `http://host:port`, a bare host or IP (port 11434), `:port` (127.0.0.1),
    `http://host` (port 80, as in Ollama), `https://host` (443), `[::1]:port`, an optional
    path after the host; empty or None is 127.0.0.1:11434. Unspecified bind addresses
    (0.0.0.0, ::) become loopback, since one cannot connect to them. Raises InvalidInputError
    for a scheme other than http or https.
    """
    text = (value or "").strip()
    default_port = DEFAULT_PORT
    scheme, sep, hostport = text.partition("://")
    if not sep:
        scheme, hostport = "http", text
    elif scheme == "http":
        default_port = 80
    elif scheme == "https":
        default_port = 443
    else:
        raise InvalidInputError(
            f"OLLAMA_HOST={value!r} uses the scheme {scheme!r}: Ollama speaks http:// or "
            "https://. Set it to host:port, for example 127.0.0.1:11434."
        )
    hostport, _, path = hostport.partition("/")
    split = _split_host_port(hostport)
    if split is None:
        host, port_text = DEFAULT_HOST, str(default_port)
        bare = hostport.strip("[]")
        ip = _parse_ip(bare)
        if ip is not None:
            host = ip.compressed
        elif hostport:
            host = hostport
    else:
        host, port_text = split
    port = int(port_text) if port_text.isdigit() and int(port_text) <= 65535 else default_port
    ip = _parse_ip(host)
    if not host or (ip is not None and ip.is_unspecified):
        host = "::1" if ip is not None and ip.version == 6 else DEFAULT_HOST
    elif ip is not None:
        host = ip.compressed
    shown = f"[{host}]" if ":" in host else host
    return f"{scheme}://{shown}:{port}" + (f"/{path}" if path else "")


def _parse_ip(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def _split_host_port(hostport: str) -> tuple[str, str] | None:
    """Go's net.SplitHostPort: None where it fails (no port, or an unbracketed IPv6)."""
    if hostport.startswith("["):
        end = hostport.find("]")
        if end < 0 or hostport[end + 1 : end + 2] != ":":
            return None
        return hostport[1:end], hostport[end + 2 :]
    host, sep, port = hostport.rpartition(":")
    if not sep or ":" in host or "[" in host or "]" in host:
        return None
    return host, port


def keep_alive_value(value: KeepAlive) -> str | int | float:
    """`keep_alive` as Ollama's API takes it: a number of seconds or a Go duration string.

    Numbers in a string ("-1", "300") become numbers: Ollama reads a string only as a
    duration with units and refuses "-1". Raises InvalidInputError for anything else.
    """
    if isinstance(value, bool):
        raise InvalidInputError(_KEEP_ALIVE_HINT.format(value=value))
    if isinstance(value, int | float):
        return value
    text = value.strip()
    if _NUMBER.match(text):
        number = float(text)
        return int(number) if number.is_integer() else number
    if _GO_DURATION.match(text):
        return text
    raise InvalidInputError(_KEEP_ALIVE_HINT.format(value=value))


_KEEP_ALIVE_HINT = (
    "keep_alive {value!r} is not a duration. Give seconds (300), a duration ('10m', "
    "'1h30m'), a negative number to keep the model loaded until Ollama stops, or 0 to unload."
)


def check_name(model: str) -> None:
    """Refuse a model name Ollama could never have (empty, spaces, control characters)."""
    if not model.strip() or any(ch.isspace() or not ch.isprintable() for ch in model):
        raise InvalidInputError(
            f"{model!r} is not an Ollama model name. Use a tag such as 'qwen2.5:7b' or 'llama3.2'."
        )
