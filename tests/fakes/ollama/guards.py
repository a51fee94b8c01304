"""Ollama's two guards in front of every route: its CORS check and, on loopback, its Host check.

As `ollama serve` (server/routes.go, GenerateRoutes) installs them, in this order:

    r.Use(cors.New(corsConfig), allowedHostsMiddleware(s.addr))

- gin-contrib/cors (AllowWildcard and AllowBrowserExtensions on, AllowOrigins from
  envconfig.AllowedOrigins): a request with no Origin, or whose Origin is `http://` or
  `https://` + its own Host, is not a CORS request and passes untouched. Any other Origin not
  in the list is aborted with 403 and no CORS header; an allowed one gets
  `Access-Control-Allow-Origin: <origin>` echoed, and an OPTIONS request then ends there, 204.
- envconfig.AllowedOrigins: OLLAMA_ORIGINS (spaces and quotes trimmed, split on commas),
  then http(s)://localhost, 127.0.0.1 and 0.0.0.0, each also with `:*`, then `app://*`,
  `file://*`, `tauri://*`, `vscode-webview://*` and `vscode-file://*`.
- allowedHostsMiddleware: only when the listener is on a loopback address. The Host header's
  name (net.SplitHostPort, or the whole value) passes when it is a loopback, private,
  unspecified or this machine's IP, empty, `localhost`, this machine's host name, or ends in
  `.localhost`, `.local` or `.internal`; anything else is aborted with 403 and no body. An
  OPTIONS request that passes ends there, 204 (current releases).

Standard library only, like the rest of the stand-in.
"""

from __future__ import annotations

import ipaddress
import os
import socket
from functools import cache

DEFAULT_ORIGIN_HOSTS = ("localhost", "127.0.0.1", "0.0.0.0")
APP_ORIGINS = ("app://*", "file://*", "tauri://*", "vscode-webview://*", "vscode-file://*")
LOCAL_SUFFIXES = (".localhost", ".local", ".internal")
# cors.DefaultConfig's methods, and the headers Ollama's GenerateRoutes allows.
ALLOW_METHODS = "GET,POST,PUT,PATCH,DELETE,HEAD,OPTIONS"
ALLOW_HEADERS = (
    "Authorization,Content-Type,User-Agent,Accept,X-Requested-With,Openai-Beta,"
    "x-stainless-arch,x-stainless-async,x-stainless-custom-poll-interval,"
    "x-stainless-helper-method,x-stainless-lang,x-stainless-os,x-stainless-package-version,"
    "x-stainless-poll-helper,x-stainless-retry-count,x-stainless-runtime,"
    "x-stainless-runtime-version,x-stainless-timeout"
)
MAX_AGE_S = "43200"  # cors.DefaultConfig: 12 hours
# Go's netip.Addr.IsPrivate: RFC 1918 and RFC 4193, nothing more (Python's is wider).
_GO_PRIVATE = tuple(
    ipaddress.ip_network(n) for n in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "fc00::/7")
)


def allowed_origins(env_value: str | None) -> list[str]:
    """envconfig.AllowedOrigins for this OLLAMA_ORIGINS value."""
    value = (env_value or "").strip().strip("\"'")
    origins = value.split(",") if value else []
    for host in DEFAULT_ORIGIN_HOSTS:
        origins += [f"http://{host}", f"https://{host}", f"http://{host}:*", f"https://{host}:*"]
    return [*origins, *APP_ORIGINS]


def origin_allowed(origin: str, allowed: list[str]) -> bool:
    """gin-contrib/cors validateOrigin with AllowWildcard: exact, or one `*` as prefix/suffix."""
    for rule in (r.strip().lower() for r in allowed):
        if rule == "*" or origin == rule:
            return True
        if "*" in rule:
            prefix, _, suffix = rule.partition("*")
            if origin.startswith(prefix) and origin.endswith(suffix):
                return True
    return False


def allow_all(allowed: list[str]) -> bool:
    """`*` in the list: every origin, answered `Access-Control-Allow-Origin: *`."""
    return any(r.strip() == "*" for r in allowed)


def is_cors_request(origin: str | None, host: str) -> bool:
    """A present Origin that is not this server's own `http(s)://` + Host."""
    return bool(origin) and origin not in (f"http://{host}", f"https://{host}")


def _split_host(value: str) -> str:
    """net.SplitHostPort's host, or the whole value where it fails (no port, bad brackets)."""
    if value.startswith("["):
        end = value.find("]")
        if end > 0 and value[end + 1 : end + 2] == ":":
            return value[1:end]
        return value
    if value.count(":") == 1:
        return value.split(":", 1)[0]
    return value


@cache
def _own_addresses() -> frozenset[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    """isLocalIP's interface addresses, approximated by what this host name resolves to."""
    found: set[ipaddress.IPv4Address | ipaddress.IPv6Address] = set()
    try:
        for info in socket.getaddrinfo(socket.gethostname(), None):
            found.add(ipaddress.ip_address(str(info[4][0]).split("%", 1)[0]))
    except (OSError, ValueError):
        pass
    return frozenset(found)


def host_allowed(host_header: str, bound_address: str) -> bool:
    """allowedHostsMiddleware: may a request with this Host reach a server bound here?"""
    try:
        if not ipaddress.ip_address(bound_address).is_loopback:
            return True  # bound beyond loopback: Ollama checks no Host at all
    except ValueError:
        return True
    host = _split_host(host_header)
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        address = None
    if address is not None and (
        address.is_loopback
        or address.is_unspecified
        or any(address in net for net in _GO_PRIVATE)
        or address in _own_addresses()
    ):
        return True
    host = host.lower()
    if host in ("", "localhost") or host == socket.gethostname().lower():
        return True
    return host.endswith(LOCAL_SUFFIXES)


def origins_from_env() -> list[str]:
    return allowed_origins(os.environ.get("OLLAMA_ORIGINS"))
