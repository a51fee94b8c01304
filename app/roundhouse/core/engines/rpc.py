"""llama.cpp's RPC split: rpc-server's argv and the `--rpc`/`--tensor-split` of llama-server."""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath, PureWindowsPath

from roundhouse.api.engines import EngineId, LaunchPlan, ReadinessProbe, StopMethod
from roundhouse.core.engines.host import EngineHost
from roundhouse.core.engines.install.layout import RPC_SERVER_NAMES
from roundhouse.core.errors import InvalidInputError

DEFAULT_RPC_PORT = 50052
# rpc-server ends on SIGTERM at once: it holds no state worth a longer wait.
RPC_STOP_GRACE_S = 5.0
# Where a worker's local cache of large tensors goes (its -c option) unless told.
CACHE_ENV = "LLAMA_CACHE"
WILDCARDS = ("0.0.0.0", "::", "[::]", "*", "")

NO_AUTH = (
    "rpc-server has no authentication: anyone who reaches its port can run work on this "
    "machine and read what it holds."
)


@dataclass(frozen=True)
class RpcAddress:
    """Where one rpc-server listens (and llama-server connects): an address and a port."""

    host: str
    port: int

    def __str__(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"

    @property
    def loopback(self) -> bool:
        try:
            return ipaddress.ip_address(self.host).is_loopback
        except ValueError:
            return self.host == "localhost"


def parse_rpc_address(text: str) -> RpcAddress:
    """`HOST:PORT` (IPv6 in brackets) as an RpcAddress; refused in words when it is not one,
    or when it names every interface (0.0.0.0, ::): an RPC worker is bound to one address."""
    value = text.strip()
    host, sep, port_text = value.rpartition(":")
    if not sep or not host:
        raise InvalidInputError(
            f"{value!r} is not an RPC worker's address: write HOST:PORT, such as "
            f"192.168.1.20:{DEFAULT_RPC_PORT}."
        )
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if not port_text.isdigit() or not 1 <= int(port_text) <= 65535:
        raise InvalidInputError(
            f"The port of {value!r} is not a port: give a number from 1 to 65535, such as "
            f"{DEFAULT_RPC_PORT}."
        )
    refuse_wildcard(host)
    return RpcAddress(host, int(port_text))


def parse_rpc_list(texts: Sequence[str]) -> tuple[RpcAddress, ...]:
    """Each of `texts` (which may themselves be comma-separated) as addresses, once each."""
    parts = [p for text in texts for p in text.split(",") if p.strip()]
    addresses = tuple(parse_rpc_address(p) for p in parts)
    seen: set[RpcAddress] = set()
    for address in addresses:
        if address in seen:
            raise InvalidInputError(f"The RPC worker {address} is named twice: name it once.")
        seen.add(address)
    return addresses


def refuse_wildcard(host: str) -> None:
    if host.strip() in WILDCARDS:
        raise InvalidInputError(
            f"An RPC worker is never bound to every interface ({host or 'no address'}): "
            f"{NO_AUTH} Give the one address the other machine reaches it on, such as "
            "the LAN address agreed with the peer, or 127.0.0.1 on this machine."
        )


def check_bind_host(host: str) -> None:
    """rpc-server binds an IPv4 address literally (inet_addr): refuse anything else in words."""
    refuse_wildcard(host)
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        raise InvalidInputError(
            f"rpc-server binds an IPv4 address, not the name {host!r}: give the address "
            "itself, such as 192.168.1.20 or 127.0.0.1."
        ) from None
    if ip.version != 4:
        raise InvalidInputError(
            f"rpc-server binds IPv4 addresses only, not {host}: give this machine's IPv4 "
            "address on the link the other machine uses."
        )


def build_rpc_server(
    binary: str,
    address: RpcAddress,
    *,
    threads: int | None = None,
    cache: bool = False,
    cache_dir: str | None = None,
    devices: Sequence[str] = (),
) -> LaunchPlan:
    """The argv and environment that start one rpc-server on `address`; runs nothing.

    `cache` turns on its local cache of large tensors (-c), so a model's weights cross the
    network once: in `cache_dir` (LLAMA_CACHE) when given, else llama.cpp's own
    (~/.cache/llama.cpp/rpc); `devices` limits what it offers (-d CUDA0,...).
    """
    check_bind_host(address.host)
    if threads is not None and threads < 1:
        raise InvalidInputError("An RPC worker needs at least one thread.")
    argv = [binary, "--host", address.host, "--port", str(address.port)]
    if threads is not None:
        argv += ["--threads", str(threads)]
    if devices:
        argv += ["--device", ",".join(devices)]
    env: dict[str, str] = {}
    if cache or cache_dir:
        argv.append("--cache")
    if cache_dir:
        env[CACHE_ENV] = cache_dir
    url = f"tcp://{address}"
    return LaunchPlan(
        engine=EngineId.LLAMA_CPP,
        argv=tuple(argv),
        env=env,
        host=address.host,
        port=address.port,
        base_url=url,
        # Not HTTP: ready is when the port accepts (RpcWorkers waits for that).
        probe_url=url,
        readiness=ReadinessProbe(path=""),
        models_url=url,
        metrics_url=None,
        expected_model_id=None,
        stop=StopMethod.SIGNAL,
        stop_grace_s=RPC_STOP_GRACE_S,
        notes=(f"RPC worker on {address}. {NO_AUTH} It is bound to {address.host} only.",),
    )


def rpc_args(
    rpc: Sequence[str], tensor_split: Sequence[float], *, across: bool = False
) -> list[str]:
    """llama-server's `--rpc a,b` and `--tensor-split x,y,...` for the instance's options.

    `across`: paired machines will lend workers (ADR 40), whose addresses are known only once
    they are asked, at the start; a split is checked with them."""
    if not rpc:
        if across:
            return []
        if tensor_split:
            raise InvalidInputError(
                "A split needs RPC workers: name them with --rpc HOST:PORT, or clear the split."
            )
        return []
    addresses = parse_rpc_list(rpc)
    args = ["--rpc", ",".join(str(a) for a in addresses)]
    if tensor_split:
        if any(share < 0 for share in tensor_split) or not any(tensor_split):
            raise InvalidInputError(
                "A split is a list of shares, one per device, none negative and not all 0, "
                "such as 1,1."
            )
        args += ["--tensor-split", ",".join(_share(s) for s in tensor_split)]
    return args


def _share(value: float) -> str:
    return f"{value:g}"


def rpc_server_beside(host: EngineHost, llama_server: str) -> str | None:
    """The rpc-server in the same folder as `llama_server`, when there is one."""
    windows = host.system == "Windows"
    folder = (PureWindowsPath if windows else PurePosixPath)(llama_server).parent
    for name in RPC_SERVER_NAMES:
        path = folder / (f"{name}.exe" if windows else name)
        if host.is_file(str(path)):
            return str(path)
    return None
