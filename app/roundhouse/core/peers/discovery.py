"""mDNS on the LAN (python-zeroconf), opt-in (`peers.discovery`): advertise where this daemon's
peer listener is, with its certificate's fingerprint, and list the daemons that answer.

Discovery only says where to find a daemon; it trusts nothing and pairs nothing: pairing still
needs the code, and the fingerprint shown lets a person compare it with the other screen.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from dataclasses import dataclass
from typing import TYPE_CHECKING

from roundhouse.core.errors import ServiceUnavailableError

if TYPE_CHECKING:
    from zeroconf import ServiceInfo
    from zeroconf.asyncio import AsyncZeroconf

SERVICE_TYPE = "_roundhouse._tcp.local."
# What a browse waits for answers.
BROWSE_S = 2.0
_MISSING = (
    "mDNS discovery needs the `zeroconf` package, which is not installed: `pip install "
    "zeroconf` in Roundhouse's environment. Pairing by address works without it."
)


@dataclass(frozen=True)
class Found:
    """A daemon that answered on the LAN."""

    name: str
    addresses: tuple[str, ...]
    port: int
    fingerprint: str
    version: str


def _instance_name(name: str, fingerprint: str) -> str:
    # Unique per daemon even where two machines share a host name.
    label = "".join(c if c.isalnum() or c in "-_ " else "-" for c in name)[:40] or "roundhouse"
    return f"{label} {fingerprint[:8]}.{SERVICE_TYPE}"


def service_info(
    name: str, port: int, fingerprint: str, version: str, addresses: list[str]
) -> ServiceInfo:
    """The record this daemon advertises."""
    from zeroconf import ServiceInfo

    packed = [ipaddress.ip_address(a).packed for a in addresses]
    return ServiceInfo(
        SERVICE_TYPE,
        _instance_name(name, fingerprint),
        port=port,
        properties={"name": name[:200], "fp": fingerprint, "v": version},
        addresses=packed,
        server=f"{socket.gethostname().split('.', 1)[0] or 'roundhouse'}.local.",
    )


def found_from(info: ServiceInfo) -> Found | None:
    """What a record says, or None when it is not a Roundhouse daemon's."""
    props = {
        (k.decode("utf-8", "replace") if isinstance(k, bytes) else str(k)): (
            v.decode("utf-8", "replace") if isinstance(v, bytes) else ""
        )
        for k, v in info.properties.items()
    }
    fingerprint = props.get("fp", "")
    if len(fingerprint) != 64 or not info.port:
        return None
    return Found(
        name=props.get("name") or info.name.removesuffix("." + SERVICE_TYPE),
        addresses=tuple(info.parsed_addresses()),
        port=info.port,
        fingerprint=fingerprint,
        version=props.get("v", ""),
    )


def _zeroconf() -> AsyncZeroconf:
    try:
        from zeroconf.asyncio import AsyncZeroconf
    except ImportError as exc:
        raise ServiceUnavailableError(_MISSING) from exc
    return AsyncZeroconf()


class Advertiser:
    """Advertises one record while `peers.discovery` is on and the listener listens."""

    def __init__(self) -> None:
        self._zc: AsyncZeroconf | None = None
        self._info: ServiceInfo | None = None

    @property
    def active(self) -> bool:
        return self._info is not None

    async def start(self, info: ServiceInfo) -> None:
        await self.stop()
        self._zc = _zeroconf()
        await self._zc.async_register_service(info)
        self._info = info

    async def stop(self) -> None:
        zc, info = self._zc, self._info
        self._zc = self._info = None
        if zc is None:
            return
        if info is not None:
            await zc.async_unregister_service(info)
        await zc.async_close()


async def browse(seconds: float = BROWSE_S) -> list[Found]:
    """The daemons that answer within `seconds`."""
    from zeroconf import ServiceStateChange
    from zeroconf.asyncio import AsyncServiceBrowser, AsyncServiceInfo

    zc = _zeroconf()
    names: set[str] = set()

    def seen(
        zeroconf: object, service_type: str, name: str, state_change: ServiceStateChange
    ) -> None:
        if state_change is not ServiceStateChange.Removed:
            names.add(name)

    browser = AsyncServiceBrowser(zc.zeroconf, [SERVICE_TYPE], handlers=[seen])
    try:
        await asyncio.sleep(seconds)
        found: list[Found] = []
        for name in sorted(names):
            info = AsyncServiceInfo(SERVICE_TYPE, name)
            if await info.async_request(zc.zeroconf, 1000):
                entry = found_from(info)
                if entry is not None:
                    found.append(entry)
        return found
    finally:
        await browser.async_cancel()
        await zc.async_close()
