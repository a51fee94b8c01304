"""The daemon process: one per home, found through its discovery file, stopped cleanly."""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

import uvicorn
from filelock import FileLock, Timeout

from roundhouse import __version__
from roundhouse.api.daemon import Discovery
from roundhouse.api.discovery import read_discovery, write_discovery
from roundhouse.api.engines import DetectedEngine, EngineId, EnginesOverview, EngineSpec
from roundhouse.api.settings import LeftoverAction, Settings
from roundhouse.base.paths import Home
from roundhouse.core.chat.store import CHAT_FILE, ChatStore
from roundhouse.core.engines.install.jobs import InstallJobs
from roundhouse.core.errors import NotFoundError, RoundhouseError
from roundhouse.core.gateway_key import GatewayKeyStore
from roundhouse.core.instances.endpoints import EndpointStore
from roundhouse.core.instances.manager import InstanceManager
from roundhouse.core.instances.presets import PresetStore
from roundhouse.core.instances.service import EngineResolver, InstanceService
from roundhouse.core.logs import configure_logging
from roundhouse.core.models.library.places import hub_cache_dir
from roundhouse.core.ports import PortInUseError, bind_listener
from roundhouse.core.sampler import Sampler
from roundhouse.core.settings import load_settings
from roundhouse.core.updates import UpdateChecker
from roundhouse.server import event_loop
from roundhouse.server.app import create_app
from roundhouse.server.gateway_listener import OllamaPortListener, SecondListener
from roundhouse.server.http_limits import listener_config
from roundhouse.server.metrics_wiring import build_metrics
from roundhouse.server.models_wiring import close_models, open_models
from roundhouse.server.security import write_token
from roundhouse.server.services import DaemonServices, HardwareSource

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


def models_dir(settings: Settings) -> Path:
    """Where models are stored: the setting, else the Hugging Face cache."""
    return hub_cache_dir(settings.models_dir)


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


def engine_resolver(services: DaemonServices) -> EngineResolver:
    """Find the installed engine to start: detected once, detected again on a miss (it may
    have been installed since)."""

    async def resolve(engine: EngineId) -> tuple[EngineSpec, DetectedEngine]:
        overview = await services.engines()
        for refresh in (False, True):
            if refresh:
                overview = await services.engines(refresh=True)
            found = [d for d in overview.detection.found if d.id == engine]
            if found:
                return overview.catalog.spec(engine), found[0]
        why = next((m.why for m in overview.detection.missing if m.id == engine), "not found")
        raise NotFoundError(
            f"{engine.value} is not installed on this machine ({why}). Install it with "
            f"`roundhouse engines install {engine.value}` or from the Engines page."
        )

    return resolve


def instance_service(home: Home, settings: Settings, services: DaemonServices) -> InstanceService:
    manager = InstanceManager(
        home.state_dir,
        home.log_dir / "engines",
        on_leftover="reap" if settings.engines.on_leftover == LeftoverAction.REAP else "adopt",
        # Read at each start, so a changed setting applies without a restart.
        ready_timeout_s=lambda: services.settings.engines.ready_timeout_s,
        hf_hub_cache=models_dir(settings),
        media_domains=lambda: services.settings.gateway.media_domains,
    )
    return InstanceService(
        manager,
        PresetStore(home.config_dir),
        engine_resolver(services),
        endpoints=EndpointStore(home.config_dir),
        inventory=services.inventory,
    )


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
    hardware = await asyncio.to_thread(hardware_factory, home, settings)
    sampler = Sampler(
        hardware.sample_gpus,
        interval_s=settings.daemon.sample_interval_s,
        history_s=settings.daemon.sample_history_s,
    )
    token = write_token(home.token_file)
    bound_host, bound_port = sock.getsockname()[:2]
    # Clients (the discovery file, the app, the CLI, the benchmark) connect to this: on
    # loopback for a wildcard bind, since the Host guard answers no `0.0.0.0`.
    connect_host = _WILDCARD_TO_LOOPBACK.get(bound_host, bound_host)
    url_host = f"[{connect_host}]" if ":" in connect_host else connect_host
    url = f"http://{url_host}:{bound_port}"

    server: _Server | None = None

    def request_shutdown() -> None:
        services.stopping.set()
        if server is not None:
            server.should_exit = True

    services = DaemonServices(
        home=home,
        settings=settings,
        token=token,
        hardware=hardware,
        sampler=sampler,
        version=__version__,
        request_shutdown=request_shutdown,
        detect_engines=engine_detector(home),
        url=url,
        pid=os.getpid(),
        gateway_key=GatewayKeyStore.with_marker_in(home.state_dir),
    )
    # Beyond loopback (`daemon.host`, `serve --host`) connections are bounded as well, and
    # every request needs the key or the token (security.KeyGuard judges the peer).
    own_hosts = () if bound_host in _WILDCARD_TO_LOOPBACK else (bound_host,)
    config = listener_config(create_app(services, hosts=own_hosts), bound_host)
    server = _Server(config, on_exit=services.stopping.set)
    services.instances = instances = instance_service(home, settings, services)
    services.installs = installs = InstallJobs(
        home.data_dir / "engines",
        services.inventory,
        lambda: services.engines(refresh=True),
    )
    # Opened on first use: a damaged chat file costs the chat routes, not the daemon's start.
    services.chats = chats = ChatStore(
        home.data_dir / CHAT_FILE, lambda: services.settings.chat.max_conversations
    )
    services.models_opening = asyncio.create_task(open_models(services), name="models-opening")
    services.metrics = metrics = build_metrics(services)
    # The key before the first request: /v1 must not answer unguarded while it loads.
    await services.gateway_key.load()
    services.second_listener = second_listener = SecondListener(services)
    services.ollama_listener = ollama_listener = OllamaPortListener(services)
    await services.apply_listeners()
    services.updates = updates = UpdateChecker(
        __version__, home.state_dir / "updates.json", lambda: services.settings.ui.check_updates
    )
    sampler.start()
    metrics.start()
    updates.start()
    # Detect engines in the background now, so the first client does not wait for it.
    detection = asyncio.create_task(services.engines(), name="engine-detection")
    # Engines an earlier daemon left: adopted or stopped before any new one starts.
    recovery = asyncio.create_task(_recover_then_scan(instances), name="instance-recovery")
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
        await second_listener.close()
        await ollama_listener.close()
        await updates.stop()
        detection.cancel()
        await recovery
        # Benchmarks end first: their requests would otherwise fail against stopping engines.
        if services.bench is not None:
            await services.bench.aclose()
        # A daemon that stops takes its engines with it: nothing is left running unseen.
        await instances.stop_all()
        await installs.close()
        await close_models(services)
        await chats.close()
        await metrics.stop()
        await services.close_gateway()
        await sampler.stop()
        await asyncio.to_thread(hardware.close)
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
