"""An async client of the daemon's control API with typed results."""

from __future__ import annotations

import json
import ssl
from collections.abc import AsyncGenerator
from contextlib import aclosing
from functools import cache
from typing import Any, TypeVar

import httpx
from httpx_sse import aconnect_sse
from pydantic import BaseModel, ValidationError

from roundhouse.api.daemon import API_PREFIX, DaemonStatus, Problem, ShutdownAccepted
from roundhouse.api.engines import EnginesOverview
from roundhouse.api.gateway import (
    GatewayKey,
    GatewayKeyShown,
    GatewayModelList,
    GatewayRoutes,
    GatewayStatus,
    GatewayUsage,
    ServeRequest,
)
from roundhouse.api.hardware import HardwareInventory, HardwareSample, SampleHistory
from roundhouse.api.installs import (
    BuildList,
    InstalledBuild,
    InstallJob,
    InstallJobList,
    InstallRequest,
)
from roundhouse.api.instances import (
    AddEndpointRequest,
    InstanceInfo,
    InstanceList,
    InstanceLogs,
    InstanceMetrics,
    Preset,
    PresetList,
    PresetRouting,
    StartRequest,
)
from roundhouse.api.jobs import JobKind, JobList
from roundhouse.api.ollama import (
    OllamaLoadedList,
    OllamaLoadRequest,
    OllamaModelList,
    OllamaModelRef,
    OllamaPullProgress,
    OllamaPullRequest,
    OllamaShownModel,
)
from roundhouse.api.settings import Settings
from roundhouse.base.paths import Home
from roundhouse.client.bench import BenchMixin
from roundhouse.client.chats import ChatsMixin
from roundhouse.client.engine_nodes import EngineNodesMixin
from roundhouse.client.errors import ApiError, DaemonUnreachableError
from roundhouse.client.events import EventsMixin
from roundhouse.client.hub import HubMixin
from roundhouse.client.locate import locate
from roundhouse.client.metrics import MetricsMixin
from roundhouse.client.models import ModelsMixin
from roundhouse.client.peers import PeersMixin
from roundhouse.client.rpc import RpcMixin
from roundhouse.client.settings_calls import SettingsCallsMixin

M = TypeVar("M", bound=BaseModel)

# Short: a live daemon answers in milliseconds, and a dead one must not freeze the caller.
DEFAULT_TIMEOUT = httpx.Timeout(10.0, connect=2.0)
JSON = {"Content-Type": "application/json"}
# Stopping waits for the engine's grace time, then kills and reaps its tree.
STOP_TIMEOUT = httpx.Timeout(90.0, connect=2.0)
# Serving a model waits for it to load: the daemon bounds that by the engines' ready timeout.
LOAD_TIMEOUT = httpx.Timeout(10.0, connect=2.0, read=7500.0)


@cache
def _tls_context() -> ssl.SSLContext:
    """One verifying TLS context for every client of this process.

    httpx builds a new one per client, loading the CA bundle each time (about 15 ms and
    1.5 MB); the GUI and the CLI create a client per status probe, so it is built once.
    """
    return httpx.create_ssl_context()


@cache
def _no_tls_context() -> ssl.SSLContext:
    """For a daemon on plain http: verifying, but trusting no certificate at all.

    httpx wants a context even for http; the CA bundle's 1.5 MB stay unloaded (the desktop
    app's idle budget), and a redirect to https could not pass unverified.
    """
    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)


class DaemonClient(
    BenchMixin,
    ChatsMixin,
    EngineNodesMixin,
    EventsMixin,
    HubMixin,
    MetricsMixin,
    ModelsMixin,
    PeersMixin,
    RpcMixin,
    SettingsCallsMixin,
):
    """Talks to one daemon; every call raises ClientError subclasses, never httpx errors."""

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        timeout: httpx.Timeout = DEFAULT_TIMEOUT,
        reuse_connections: bool = True,
    ):
        self.base_url = base_url
        # Without reuse, every request has a connection of its own: one whose set-up was
        # cut short (a cancellation lost inside anyio) cannot hold other requests up.
        limits = httpx.Limits() if reuse_connections else httpx.Limits(max_keepalive_connections=0)
        self._http = httpx.AsyncClient(
            base_url=base_url + API_PREFIX,
            headers={"Authorization": f"Bearer {token}"},
            timeout=timeout,
            limits=limits,
            # A daemon on loopback must not be reached through a proxy from the environment.
            trust_env=False,
            verify=_tls_context() if base_url.startswith("https:") else _no_tls_context(),
        )

    @classmethod
    def for_home(cls, home: Home, **kwargs: Any) -> DaemonClient:
        located = locate(home)
        return cls(located.discovery.url, located.token, **kwargs)

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> DaemonClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def _send(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            response = await self._http.request(method, path, **kwargs)
        except httpx.TransportError as exc:
            raise DaemonUnreachableError(
                f"The Roundhouse daemon at {self.base_url} does not answer "
                f"({type(exc).__name__}). Is it still running? Try `roundhouse status`."
            ) from exc
        _raise_for_problem(response)
        return response

    async def _request(self, method: str, path: str, model: type[M], **kwargs: Any) -> M:
        response = await self._send(method, path, **kwargs)
        try:
            return model.model_validate_json(response.content)
        except ValidationError as exc:
            raise ApiError(
                Problem(
                    title="Unexpected answer",
                    status=response.status_code,
                    detail=f"The daemon's answer to {path} does not match this client "
                    "(are the app and the daemon the same version?).",
                )
            ) from exc

    async def status(self) -> DaemonStatus:
        return await self._request("GET", "/status", DaemonStatus)

    async def shutdown(self) -> ShutdownAccepted:
        return await self._request("POST", "/shutdown", ShutdownAccepted)

    async def settings(self) -> Settings:
        return await self._request("GET", "/settings", Settings)

    async def put_settings(self, settings: Settings) -> Settings:
        body = settings.model_dump_json()
        return await self._request("PUT", "/settings", Settings, content=body, headers=JSON)

    async def gateway_status(self) -> GatewayStatus:
        """The gateway's listeners (or why one does not listen), its key, its usage."""
        return await self._request("GET", "/gateway/status", GatewayStatus)

    async def gateway_key(self) -> str | None:
        """The gateway key to hand to a local client; None when none is set."""
        return (await self._request("GET", "/gateway/key", GatewayKeyShown)).key

    async def generate_gateway_key(self) -> GatewayKey:
        """A new gateway key, stored in the daemon's keyring; this answer is its one showing."""
        return await self._request("POST", "/gateway/key", GatewayKey)

    async def set_gateway_key(self, key: str) -> GatewayKey:
        body = GatewayKey(key=key).model_dump_json()
        return await self._request("POST", "/gateway/key", GatewayKey, content=body, headers=JSON)

    async def clear_gateway_key(self) -> GatewayStatus:
        """Remove the gateway key; answers with the status after (a listener may stop)."""
        return await self._request("DELETE", "/gateway/key", GatewayStatus)

    async def gateway_models(self) -> GatewayModelList:
        """Models the gateway serves, is loading, or can start; with the active model."""
        return await self._request("GET", "/gateway/models", GatewayModelList)

    async def serve_model(self, model: str) -> InstanceInfo:
        """Make sure an instance serves `model` (starting it with its preset); answers once
        it is ready, which takes as long as the engine loads the model."""
        body = ServeRequest(model=model).model_dump_json()
        return await self._request(
            "POST", "/gateway/serve", InstanceInfo, content=body, headers=JSON, timeout=LOAD_TIMEOUT
        )

    async def gateway_usage(self) -> GatewayUsage:
        return await self._request("GET", "/gateway/usage", GatewayUsage)

    async def gateway_routes(self) -> GatewayRoutes:
        """Per model: its instances in the order tried, their health and load, fallbacks."""
        return await self._request("GET", "/gateway/routes", GatewayRoutes)

    async def hardware(self, refresh: bool = False) -> HardwareInventory:
        params = {"refresh": "true"} if refresh else {}
        return await self._request("GET", "/hardware", HardwareInventory, params=params)

    async def engines(self, refresh: bool = False) -> EnginesOverview:
        """The engine catalog and what was found on the daemon's machine."""
        params = {"refresh": "true"} if refresh else {}
        return await self._request("GET", "/engines", EnginesOverview, params=params)

    async def instances(self) -> InstanceList:
        return await self._request("GET", "/instances", InstanceList)

    async def start_instance(self, request: StartRequest) -> InstanceInfo:
        """Ask the daemon to start an engine; it answers at once with status "starting"."""
        body = request.model_dump_json(exclude_defaults=True)
        return await self._request("POST", "/instances", InstanceInfo, content=body, headers=JSON)

    async def instance(self, instance_id: str) -> InstanceInfo:
        return await self._request("GET", f"/instances/{instance_id}", InstanceInfo)

    async def stop_instance(self, instance_id: str, *, force: bool = False) -> InstanceInfo:
        """Stop an instance; `force` also stops an engine Roundhouse did not start."""
        params = {"force": "true"} if force else {}
        return await self._request(
            "DELETE", f"/instances/{instance_id}", InstanceInfo, timeout=STOP_TIMEOUT, params=params
        )

    async def scan_instances(self) -> InstanceList:
        """Look for engines running without Roundhouse; every instance, with those found."""
        return await self._request("POST", "/instances/scan", InstanceList, timeout=STOP_TIMEOUT)

    async def add_endpoint(self, request: AddEndpointRequest) -> InstanceInfo:
        body = request.model_dump_json(exclude_none=True)
        return await self._request("POST", "/endpoints", InstanceInfo, content=body, headers=JSON)

    async def allow_presets(self, instance_id: str, allowed: bool) -> InstanceInfo:
        """Let an engine Roundhouse did not start serve preset models (or stop letting it)."""
        body = PresetRouting(allowed=allowed).model_dump_json()
        path = f"/instances/{instance_id}/may-serve-presets"
        return await self._request("PUT", path, InstanceInfo, content=body, headers=JSON)

    async def restart_instance(self, instance_id: str) -> InstanceInfo:
        return await self._request(
            "POST", f"/instances/{instance_id}/restart", InstanceInfo, timeout=STOP_TIMEOUT
        )

    async def instance_logs(
        self, instance_id: str, since: int = 0, limit: int = 500
    ) -> InstanceLogs:
        params = {"since": str(since), "limit": str(limit)}
        return await self._request(
            "GET", f"/instances/{instance_id}/logs", InstanceLogs, params=params
        )

    async def instance_metrics(self, instance_id: str) -> InstanceMetrics:
        path = f"/instances/{instance_id}/metrics"
        return await self._request("GET", path, InstanceMetrics)

    async def presets(self, engine: str | None = None, model: str | None = None) -> PresetList:
        params = {k: v for k, v in (("engine", engine), ("model", model)) if v is not None}
        return await self._request("GET", "/presets", PresetList, params=params)

    async def save_preset(self, preset: Preset) -> Preset:
        body = preset.model_dump_json()
        return await self._request("PUT", "/presets", Preset, content=body, headers=JSON)

    async def delete_preset(self, engine: str, model: str, name: str = "default") -> None:
        params = {"engine": engine, "model": model, "name": name}
        await self._send("DELETE", "/presets", params=params)

    # -- installs -------------------------------------------------------------------------

    async def install_engine(self, engine: str, request: InstallRequest) -> InstallJob:
        """Start installing `engine` on the daemon's machine; follow the job it returns."""
        body = request.model_dump_json(exclude_none=True)
        path = f"/engines/{engine}/install"
        return await self._request("POST", path, InstallJob, content=body, headers=JSON)

    async def jobs(self, kind: JobKind | None = None) -> JobList:
        """Every job of the daemon's job board (of `kind`), each with its own shape in
        `detail`."""
        params = {"kind": kind.value} if kind is not None else {}
        return await self._request("GET", "/jobs", JobList, params=params)

    async def install_jobs(self) -> InstallJobList:
        return await self._request("GET", "/installs", InstallJobList)

    async def install_job(self, job_id: str) -> InstallJob:
        return await self._request("GET", f"/installs/{job_id}", InstallJob)

    async def cancel_install(self, job_id: str) -> InstallJob:
        return await self._request("DELETE", f"/installs/{job_id}", InstallJob)

    async def follow_install(self, job_id: str) -> AsyncGenerator[InstallJob, None]:
        """The job at each change, until it ends."""
        async with aclosing(self._stream(f"/installs/{job_id}/stream", ("job",))) as events:
            async for _, data in events:
                yield InstallJob.model_validate_json(data)

    async def llamacpp_builds(self) -> BuildList:
        return await self._request("GET", "/engines/llama.cpp/builds", BuildList)

    async def switch_llamacpp_build(self, tag: str) -> InstalledBuild:
        body = json.dumps({"tag": tag})
        path = "/engines/llama.cpp/builds/current"
        return await self._request("PUT", path, InstalledBuild, content=body, headers=JSON)

    async def remove_llamacpp_build(self, tag: str, *, force: bool = False) -> BuildList:
        params = {"force": "true"} if force else {}
        path = f"/engines/llama.cpp/builds/{tag}"
        return await self._request("DELETE", path, BuildList, params=params, timeout=STOP_TIMEOUT)

    async def remove_engine_venv(self, engine: str) -> None:
        await self._send("DELETE", f"/engines/{engine}/venv", timeout=STOP_TIMEOUT)

    # -- Ollama (the one serving, or `instance`) -------------------------------------------

    @staticmethod
    def _instance(instance: str | None) -> dict[str, str]:
        return {"instance": instance} if instance else {}

    async def ollama_models(self, instance: str | None = None) -> OllamaModelList:
        params = self._instance(instance)
        return await self._request("GET", "/ollama/models", OllamaModelList, params=params)

    async def ollama_loaded(self, instance: str | None = None) -> OllamaLoadedList:
        params = self._instance(instance)
        return await self._request("GET", "/ollama/ps", OllamaLoadedList, params=params)

    async def ollama_show(self, model: str, instance: str | None = None) -> OllamaShownModel:
        params = {"model": model, **self._instance(instance)}
        return await self._request("GET", "/ollama/show", OllamaShownModel, params=params)

    async def ollama_delete(self, model: str, instance: str | None = None) -> None:
        body = OllamaModelRef(model=model).model_dump_json()
        params = self._instance(instance)
        await self._send("POST", "/ollama/delete", content=body, headers=JSON, params=params)

    async def ollama_load(self, request: OllamaLoadRequest, instance: str | None = None) -> None:
        body = request.model_dump_json(exclude_none=True)
        # A load waits until the model is in memory: minutes for a big one.
        await self._send(
            "POST",
            "/ollama/load",
            content=body,
            headers=JSON,
            params=self._instance(instance),
            timeout=httpx.Timeout(600.0, connect=2.0),
        )

    async def ollama_unload(self, model: str, instance: str | None = None) -> None:
        body = OllamaModelRef(model=model).model_dump_json()
        params = self._instance(instance)
        await self._send("POST", "/ollama/unload", content=body, headers=JSON, params=params)

    async def ollama_pull(
        self, model: str, instance: str | None = None
    ) -> AsyncGenerator[OllamaPullProgress, None]:
        """Each progress line of the pull; raises ApiError when the pull fails."""
        body = OllamaPullRequest(model=model).model_dump_json()
        stream = self._stream(
            "/ollama/pull",
            ("progress", "error"),
            method="POST",
            content=body,
            headers=JSON,
            params=self._instance(instance),
        )
        async with aclosing(stream) as events:
            async for name, data in events:
                if name == "error":
                    raise ApiError(Problem.model_validate_json(data))
                yield OllamaPullProgress.model_validate_json(data)

    async def samples(self, since: float | None = None) -> SampleHistory:
        params = {"since": str(since)} if since is not None else {}
        return await self._request("GET", "/hardware/samples", SampleHistory, params=params)

    # Each stream closes the generators it iterates itself (aclosing): one left suspended
    # would be closed later by the garbage collector, perhaps with no event loop running
    # (the app's qasync loop between runs), and its HTTP connection with it.

    async def stream_samples(self) -> AsyncGenerator[HardwareSample, None]:
        """Every new hardware sample, as the daemon takes it, until the stream ends."""
        async with aclosing(self._stream("/hardware/samples/stream", ("sample",))) as events:
            async for _, data in events:
                yield HardwareSample.model_validate_json(data)

    async def _stream(
        self, path: str, event_names: tuple[str, ...], *, method: str = "GET", **kwargs: Any
    ) -> AsyncGenerator[tuple[str, str], None]:
        # No read timeout unless the caller gives one: a stream may be quiet for long.
        timeout = kwargs.pop("timeout", httpx.Timeout(10.0, connect=2.0, read=None))
        try:
            async with aconnect_sse(self._http, method, path, timeout=timeout, **kwargs) as source:
                if not source.response.is_success:
                    await source.response.aread()
                    _raise_for_problem(source.response)
                async with aclosing(source.aiter_sse()) as events:
                    async for sse in events:
                        if sse.event in event_names:
                            yield sse.event, sse.data
        except httpx.TransportError as exc:
            raise DaemonUnreachableError(
                f"The live stream from the daemon at {self.base_url} broke ({type(exc).__name__})."
            ) from exc


def _raise_for_problem(response: httpx.Response) -> None:
    if response.is_success:
        return
    try:
        problem = Problem.model_validate_json(response.content)
    except ValidationError:
        problem = Problem(
            title=response.reason_phrase or "Error",
            status=response.status_code,
            detail=response.text[:500] or f"HTTP {response.status_code}",
        )
    raise ApiError(problem)
