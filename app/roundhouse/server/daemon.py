"""The daemon process: one per home, found through its discovery file, stopped cleanly."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import FrameType

import uvicorn
from filelock import FileLock, Timeout

from roundhouse import __version__
from roundhouse.api.daemon import Discovery
from roundhouse.api.discovery import read_discovery, write_discovery
from roundhouse.api.engines import EnginesOverview
from roundhouse.api.settings import Settings
from roundhouse.base.paths import Home
from roundhouse.core.errors import RoundhouseError
from roundhouse.core.infra import secrets
from roundhouse.core.infra.logs import configure_logging
from roundhouse.core.infra.ports import PortInUseError, bind_listener
from roundhouse.core.infra.settings import load_settings
from roundhouse.core.instances.service import InstanceService
from roundhouse.server import event_loop
from roundhouse.server.app import create_app
from roundhouse.server.compose import (
    build_services,
    close_services,
    models_dir,
    start_services,
)
from roundhouse.server.http_limits import listener_config
from roundhouse.server.security import write_token
from roundhouse.server.services import DaemonState, HardwareSource

log = logging.getLogger(__name__)

HardwareFactory = Callable[[Home, Settings], HardwareSource]
_WILDCARD_TO_LOOPBACK = {"0.0.0.0": "127.0.0.1", "::": "::1"}


class DaemonStartError(Exception):
    """The daemon cannot start; str() says why and what to do."""


class AlreadyRunningError(DaemonStartError):
    """Another daemon holds this home."""


@dataclass(frozen=True)
class ServeOptions:
    host: str | None = None
    port: int | None = None


def engine_detector(home: Home) -> Callable[[Settings], EnginesOverview]:
    """Detect the engines of this machine: PATH, the usual places, Roundhouse's own builds
    and the Pythons the settings name."""

    def detect(settings: Settings) -> EnginesOverview:
        from roundhouse.core.engines.catalog import load_catalog
        from roundhouse.core.engines.detect import detect_engines
        from roundhouse.core.engines.host import LocalEngineHost

        catalog = load_catalog()
        detection = detect_engines(
            LocalEngineHost(),
            catalog,
            pythons=settings.engines.python_paths,
            managed_dir=str(home.data_dir / "engines"),
        )
        return EnginesOverview(catalog=catalog, detection=detection, detected_at=time.time())

    return detect


def default_hardware(home: Home, settings: Settings) -> HardwareSource:
    from roundhouse.core.hardware.inventory import HardwareProbe

    return HardwareProbe.for_this_machine(models_dir=models_dir(settings))


class _Server(uvicorn.Server):
    """uvicorn's server, told to stop our streams first and to exit 0 on SIGTERM/SIGINT."""

    def __init__(self, config: uvicorn.Config, on_exit: Callable[[], None]) -> None:
        super().__init__(config)
        self._on_exit = on_exit

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        super().handle_exit(sig, frame)
        # uvicorn re-raises captured signals after shutdown, which would kill the process
        # before our own clean-up runs; a signal here means "stop gracefully", nothing more.
        self._captured_signals.clear()
        self._on_exit()

    async def on_tick(self, counter: int) -> bool:
        should_exit = await super().on_tick(counter)
        if should_exit:
            self._on_exit()
        return should_exit


@contextlib.contextmanager
def _stop_on_signals(stop: Callable[[], None]) -> Iterator[None]:
    """SIGINT and SIGTERM call `stop` (a graceful stop) while this is entered; a second
    Ctrl+C interrupts a stop that hangs, as it does while uvicorn serves. uvicorn puts its own
    handlers over these while it serves and gives them back after."""
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread may set handlers; a daemon run elsewhere has none
        return
    asked = False

    def signalled(sig: int, frame: FrameType | None) -> None:
        nonlocal asked
        if asked and sig == signal.SIGINT:
            signal.default_int_handler(sig, frame)
        asked = True
        stop()

    previous = {sig: signal.signal(sig, signalled) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _already_running_message(home: Home) -> str:
    found = read_discovery(home.discovery_file)
    if found is None:
        return f"A Roundhouse daemon is starting or running for {home.label}."
    return f"A Roundhouse daemon already serves this home: pid {found.pid} at {found.url}."


def _bind(host: str, port: int, explicit: bool) -> socket.socket:
    try:
        return bind_listener(host, port)
    except PortInUseError as exc:
        if explicit:
            raise DaemonStartError(f"{exc.strerror} Choose another with --port.") from exc
        # The default port is only a preference: clients find the real one in the
        # discovery file, so another free port is as good.
        log.warning("%s Serving on a free port instead.", exc.strerror)
        return bind_listener(host, 0)


def run_daemon(
    home: Home,
    options: ServeOptions = ServeOptions(),
    hardware_factory: HardwareFactory = default_hardware,
    on_ready: Callable[[Discovery], None] | None = None,
) -> int:
    """Run the daemon in this process until it is told to stop; return the exit code."""
    home.ensure()
    configure_logging(home.log_dir, "daemon")
    lock = FileLock(str(home.lock_file), timeout=0)
    try:
        lock.acquire()
    except Timeout as exc:
        raise AlreadyRunningError(_already_running_message(home)) from exc
    try:
        stale = read_discovery(home.discovery_file)
        if stale is not None:
            # We hold the lock, so whoever wrote this file is gone (killed or crashed).
            log.warning("Replacing the discovery file of a daemon that ended (pid %d).", stale.pid)
        try:
            settings = load_settings(home.settings_file)
        except RoundhouseError as exc:
            raise DaemonStartError(exc.detail) from exc
        # Where no keyring exists (a headless server), keys go to a file only this user can
        # read, in this home's private config folder (ADR 35).
        secrets.keep_file_in(home.config_dir)
        host = options.host or settings.daemon.host
        port = options.port if options.port is not None else settings.daemon.port
        sock = _bind(host, port, explicit=options.port is not None)
        event_loop.run(_serve(home, settings, sock, hardware_factory, on_ready))
        return 0
    finally:
        _remove_own_files(home)
        lock.release()


def _remove_own_files(home: Home) -> None:
    found = read_discovery(home.discovery_file)
    if found is not None and found.pid == os.getpid():
        home.discovery_file.unlink(missing_ok=True)
        home.token_file.unlink(missing_ok=True)


async def _serve(
    home: Home,
    settings: Settings,
    sock: socket.socket,
    hardware_factory: HardwareFactory,
    on_ready: Callable[[Discovery], None] | None,
) -> None:
    server: _Server | None = None
    stopping = asyncio.Event()

    def request_shutdown() -> None:
        stopping.set()
        if server is not None:
            server.should_exit = True

    # From here, not only once uvicorn captures them inside `serve`: a stop asked while the
    # daemon starts (its token and discovery files written) must end it cleanly too.
    with _stop_on_signals(request_shutdown):
        hardware = await asyncio.to_thread(hardware_factory, home, settings)
        token = write_token(home.token_file)
        bound_host, bound_port = sock.getsockname()[:2]
        # Clients (the discovery file, the app, the CLI, the benchmark) connect to this: on
        # loopback for a wildcard bind, since the Host guard answers no `0.0.0.0`.
        connect_host = _WILDCARD_TO_LOOPBACK.get(bound_host, bound_host)
        url_host = f"[{connect_host}]" if ":" in connect_host else connect_host
        url = f"http://{url_host}:{bound_port}"

        state = DaemonState(home, settings, hardware, engine_detector(home))
        services = build_services(
            state, token=token, url=url, request_shutdown=request_shutdown, stopping=stopping
        )
        # Beyond loopback (`daemon.host`, `serve --host`) connections are bounded as well, and
        # every request needs the key or the token (security.KeyGuard judges the peer).
        own_hosts = () if bound_host in _WILDCARD_TO_LOOPBACK else (bound_host,)
        config = listener_config(create_app(services, hosts=own_hosts), bound_host)
        server = _Server(config, on_exit=stopping.set)
        if stopping.is_set():
            server.should_exit = True  # asked to stop before there was a server to tell
        await start_services(services)
        # Detect engines in the background now, so the first client does not wait for it.
        detection = asyncio.create_task(services.engines(), name="engine-detection")
        # Engines an earlier daemon left: adopted or stopped before any new one starts.
        recovery = asyncio.create_task(
            _recover_then_scan(services.instances), name="instance-recovery"
        )
        discovery = Discovery(
            url=url,
            pid=os.getpid(),
            version=__version__,
            started_at=services.started_at,
            home=home.label,
        )
        write_discovery(home.discovery_file, discovery)
        log.info("Roundhouse daemon %s serving %s (pid %d)", __version__, url, os.getpid())
        if on_ready is not None:
            on_ready(discovery)
        started = time.monotonic()
        try:
            await server.serve(sockets=[sock])
        finally:
            detection.cancel()
            await recovery
            await close_services(services)
            log.info("Daemon stopped after %.1f s", time.monotonic() - started)


async def _recover_then_scan(instances: InstanceService) -> None:
    await instances.recover()
    # Then what runs without us, so it is listed before anyone asks.
    try:
        await instances.scan_external()
    except Exception:
        log.exception("Looking for engines already running failed")


def print_ready(discovery: Discovery) -> None:
    """What `roundhouse serve` prints once the daemon accepts requests."""
    sys.stdout.write(f"Roundhouse daemon {discovery.version} serving {discovery.url} ")
    sys.stdout.write(f"(pid {discovery.pid}). Stop with Ctrl+C or `roundhouse stop`.\n")
    sys.stdout.flush()
