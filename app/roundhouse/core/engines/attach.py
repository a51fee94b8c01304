"""Find engines that already run (Ollama on its port, engine processes) or probe a given URL.

    engines = await find_running_engines(load_catalog(), exclude_pids=our_engine_pids)
    endpoint = await probe_openai_endpoint("http://127.0.0.1:1234", api_key=key_or_none)

`find_running_engines` never raises and never hangs: it asks Ollama at OLLAMA_HOST (default
127.0.0.1:11434) for `GET /` and its version, and, at the same time, scans processes for
engine command lines (`llama-server`, `ollama serve`, `vllm serve`, `python -m
vllm.entrypoints.openai.api_server`, `python -m sglang.launch_server`, `mlx_lm.server`,
`mlx_lm server`), then probes each one's listening port with the catalog's readiness path and
model list, all concurrently, each request bounded by `timeout_s`. Processes in
`exclude_pids`, or started by one of them, are left out: the daemon passes the engines it
runs itself so that none is listed twice. Secret flag values (`--api-key X`) never leave
here: command lines are redacted.

`probe_openai_endpoint` checks a URL the user adds (LM Studio, Jan, LocalAI, a remote
machine) with `GET {url}/v1/models` and raises a RoundhouseError saying what to do when
nothing answers, the key is missing or refused, or the answer is not OpenAI's.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import os
import re
import ssl
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx
import psutil

from roundhouse.api.engines import EngineCatalog, EngineId, EngineSpec, LaunchStyle
from roundhouse.api.external import AttachSource, ExternalEngine
from roundhouse.core.engines.catalog import load_catalog
from roundhouse.core.engines.ollama_api import ollama_base_url
from roundhouse.core.errors import InvalidInputError, RoundhouseError
from roundhouse.core.ports import port_owner
from roundhouse.core.supervise.readiness import model_ids

PROBE_TIMEOUT_S = 1.5
REFUSED = "connection refused"
# Ports tried per process: engines listen on one, but workers may add a few internal ones.
MAX_PORTS_PER_PROCESS = 4
_PYTHON = re.compile(r"^python(\d+(\.\d+)*)?[tw]?(-dbg)?$", re.IGNORECASE)
# Interpreter options that take a value (python -X dev -m module).
_PYTHON_VALUE_OPTIONS = {"-X", "-W", "--check-hash-based-pycs"}
_SECRET_SUFFIXES = ("api-key", "apikey", "token", "secret", "password", "passwd", "access-key")
_LOOPBACK_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost"}


@dataclass(frozen=True)
class ProcessPattern:
    """A command line that runs an engine's server.

    `program` is the executable's or script's file name without .exe/.py (`llama-server`,
    `vllm`), `module` what `python -m` runs; `subcommand` must be the first argument after
    either (`ollama serve`, not `ollama run`).
    """

    engine: EngineId
    program: str | None = None
    module: str | None = None
    subcommand: str | None = None


# Executables that are servers only with a subcommand; the catalog names the executables.
_SUBCOMMANDS = {"ollama": "serve", "vllm": "serve"}
# Newer mlx-lm also serves as `mlx_lm server` and `python -m mlx_lm server`.
_EXTRA_PATTERNS = (
    ProcessPattern(EngineId.MLX, program="mlx_lm", subcommand="server"),
    ProcessPattern(EngineId.MLX, module="mlx_lm", subcommand="server"),
)


def process_patterns(catalog: EngineCatalog) -> tuple[ProcessPattern, ...]:
    """The command lines of every engine the catalog runs (attach-only entries have none)."""
    patterns: list[ProcessPattern] = []
    for spec in catalog.engines:
        if spec.launch == LaunchStyle.ATTACH:
            continue
        for exe in spec.executables:
            patterns.append(ProcessPattern(spec.id, program=exe, subcommand=_SUBCOMMANDS.get(exe)))
        patterns += [ProcessPattern(spec.id, module=module) for module in spec.python_modules]
    return (*patterns, *_EXTRA_PATTERNS)


def _file_name(path: str) -> str:
    name = re.split(r"[\\/]", path)[-1]
    for suffix in (".exe", ".py"):
        if name.lower().endswith(suffix):
            return name[: -len(suffix)]
    return name


def _invocation(argv: Sequence[str]) -> tuple[str | None, str | None, Sequence[str]]:
    """(program or script, module, the arguments after it) of a command line."""
    if not argv:
        return None, None, ()
    first = _file_name(argv[0])
    if not _PYTHON.match(first):
        return first, None, argv[1:]
    i = 1
    while i < len(argv):
        arg = argv[i]
        if arg == "-m":
            return None, (argv[i + 1] if i + 1 < len(argv) else None), argv[i + 2 :]
        if arg.startswith("-m"):
            return None, arg[2:], argv[i + 1 :]
        if arg.startswith("-c"):
            return None, None, ()
        if arg in _PYTHON_VALUE_OPTIONS:
            i += 2
            continue
        if arg.startswith("-"):
            i += 1
            continue
        return _file_name(arg), None, argv[i + 1 :]
    return None, None, ()


def match_cmdline(argv: Sequence[str], patterns: Iterable[ProcessPattern]) -> ProcessPattern | None:
    """The first pattern whose engine this command line runs, or None."""
    program, module, rest = _invocation(argv)
    for pattern in patterns:
        if pattern.program is not None and pattern.program != program:
            continue
        if pattern.module is not None and pattern.module != module:
            continue
        if pattern.program is None and pattern.module is None:
            continue
        if pattern.subcommand is not None and (not rest or rest[0] != pattern.subcommand):
            continue
        return pattern
    return None


def _is_secret_flag(arg: str) -> bool:
    if not arg.startswith("-"):
        return False
    flag = arg.lstrip("-").split("=", 1)[0].lower().replace("_", "-")
    return flag.endswith(_SECRET_SUFFIXES)


def redact_cmdline(argv: Sequence[str]) -> list[str]:
    """The command line with the value of every secret flag (`--api-key X`) shown as ***."""
    out: list[str] = []
    hide_next = False
    for arg in argv:
        if hide_next:
            out.append("***")
            hide_next = False
        elif _is_secret_flag(arg) and "=" in arg:
            out.append(arg.split("=", 1)[0] + "=***")
        else:
            out.append(arg)
            hide_next = _is_secret_flag(arg)
    return out


def _flag_value(argv: Sequence[str], *names: str) -> str | None:
    for i, arg in enumerate(argv):
        for name in names:
            if arg == name and i + 1 < len(argv):
                return argv[i + 1]
            if arg.startswith(name + "="):
                return arg.split("=", 1)[1]
    return None


# -- the process scan (blocking; run in a thread) ----------------------------------------------


@dataclass
class _Candidate:
    pattern: ProcessPattern
    pid: int
    name: str
    cmdline: list[str]
    ancestors: list[int]
    # (host to connect to, port), the preferred first.
    endpoints: list[tuple[str, int]] = field(default_factory=list)


def _connect_host(ip: str) -> str:
    """Where to connect to reach a listener bound to `ip` (0.0.0.0 and :: mean loopback)."""
    try:
        addr = ipaddress.ip_address(ip.split("%", 1)[0])
    except ValueError:
        return "127.0.0.1"
    if addr.is_unspecified:
        return "127.0.0.1" if addr.version == 4 else "::1"
    return addr.compressed


class _ListenTable:
    """Listening sockets by pid: per process where allowed, else the system table (once)."""

    def __init__(self) -> None:
        self._system: dict[int, list[tuple[str, int]]] | None = None

    def of(self, proc: psutil.Process) -> list[tuple[str, int]]:
        # psutil 6 renamed connections() to net_connections(); the project allows 5.9.
        method = getattr(proc, "net_connections", None) or proc.connections
        try:
            conns = method(kind="inet")
        except (psutil.AccessDenied, psutil.ZombieProcess, PermissionError):
            return self._system_table().get(proc.pid, [])
        except psutil.NoSuchProcess:
            return []
        return [
            (c.laddr.ip, c.laddr.port) for c in conns if c.status == psutil.CONN_LISTEN and c.laddr
        ]

    def _system_table(self) -> dict[int, list[tuple[str, int]]]:
        if self._system is None:
            self._system = {}
            try:
                conns = psutil.net_connections(kind="inet")
            except (psutil.AccessDenied, PermissionError):
                conns = []  # macOS without root: only the command line's --port is left
            for c in conns:
                if c.status == psutil.CONN_LISTEN and c.laddr and c.pid is not None:
                    self._system.setdefault(c.pid, []).append((c.laddr.ip, c.laddr.port))
        return self._system


def _endpoints(
    listening: list[tuple[str, int]], cmdline: Sequence[str], spec: EngineSpec
) -> list[tuple[str, int]]:
    """Host and port pairs to probe, best guess first; IPv4 before IPv6 on one port."""
    flag_port = _flag_value(cmdline, "--port")
    wanted = int(flag_port) if flag_port and flag_port.isdigit() else None
    if not listening:
        # Not listening yet (vLLM loads first), or the OS hides its sockets: trust the
        # command line, else the engine's default port.
        port = wanted or spec.default_port
        host = _flag_value(cmdline, "--host") or "127.0.0.1"
        return [(_connect_host(host) if _is_ip(host) else host, port)] if port else []
    by_port: dict[int, str] = {}
    for ip, port in sorted(listening, key=lambda pair: ":" in pair[0]):
        by_port.setdefault(port, _connect_host(ip))
    order = sorted(by_port, key=lambda p: (p != wanted, p != spec.default_port, p))
    return [(by_port[p], p) for p in order[:MAX_PORTS_PER_PROCESS]]


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def _scan(
    catalog: EngineCatalog, patterns: Sequence[ProcessPattern], exclude: Collection[int]
) -> list[_Candidate]:
    table = _ListenTable()
    found: list[_Candidate] = []
    me = os.getpid()
    for proc in psutil.process_iter(["name", "cmdline"]):
        try:
            if proc.pid == me or proc.pid in exclude:
                continue
            name = proc.info.get("name") or ""
            cmdline = list(proc.info.get("cmdline") or [])
            # Without the command line (another user's process) only the name is left.
            pattern = match_cmdline(cmdline or [name], patterns)
            if pattern is None:
                continue
            ancestors = [p.pid for p in proc.parents()]
            if any(pid in exclude for pid in ancestors):
                continue
            candidate = _Candidate(pattern, proc.pid, name, cmdline, ancestors)
            spec = catalog.spec(pattern.engine)
            candidate.endpoints = _endpoints(table.of(proc), cmdline, spec)
            found.append(candidate)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    # Forked workers repeat their parent's command line: keep the topmost of each engine.
    pids = {(c.pattern.engine, c.pid) for c in found}
    return [c for c in found if not any((c.pattern.engine, a) in pids for a in c.ancestors)]


# -- probing -----------------------------------------------------------------------------------


@dataclass
class _Probe:
    answered: bool = False
    healthy: bool = False
    status: str = "no answer"
    version: str | None = None
    model_ids: list[str] = field(default_factory=list)
    needs_api_key: bool = False


def _url(host: str, port: int) -> str:
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


async def _get(
    http: httpx.AsyncClient, url: str, timeout_s: float, headers: Mapping[str, str] | None = None
) -> httpx.Response | str:
    """The answer, or in words why there is none; bounded even against a slow-drip server."""
    try:
        async with asyncio.timeout(timeout_s):
            return await http.get(url, timeout=timeout_s, headers=headers)
    except httpx.ConnectError as exc:
        return _connect_failure(exc)
    except (TimeoutError, httpx.TimeoutException):
        return f"no answer within {timeout_s:g} s"
    except httpx.HTTPError as exc:
        return f"no answer ({type(exc).__name__})"


def _connect_failure(exc: BaseException) -> str:
    """Why a connection failed, in words; the cause sits deep in httpx's exception chain."""
    seen: BaseException | None = exc
    for _ in range(12):  # a bound, not a count: chains are short but could be made to loop
        if seen is None:
            break
        if isinstance(seen, ConnectionRefusedError):
            return REFUSED
        if isinstance(seen, ssl.SSLError):
            return f"a TLS error ({seen})"
        seen = seen.__cause__ or seen.__context__
    return f"no connection ({exc})"


def _json(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return None


async def _probe(
    http: httpx.AsyncClient, spec: EngineSpec, base_url: str, timeout_s: float
) -> _Probe:
    """Readiness, model list and version of one engine at `base_url`, asked at once."""
    readiness = spec.readiness
    version_url = f"{base_url}{spec.version_path}" if spec.version_path else None
    ready, models, version = await asyncio.gather(
        _get(http, f"{base_url}{readiness.path}", timeout_s),
        _get(http, f"{base_url}{spec.models_path}", timeout_s),
        _get(http, version_url, timeout_s) if version_url else asyncio.sleep(0, "none"),
    )
    probe = _Probe()
    if isinstance(ready, str):
        loading = ready == REFUSED and readiness.refused_while_loading
        # vLLM and SGLang open their port only once the model is loaded.
        probe.status = "loading (port not open yet)" if loading else ready
    else:
        probe.answered = True
        code = ready.status_code
        if code == readiness.ready_status and (
            readiness.expect_text is None or readiness.expect_text in ready.text
        ):
            probe.healthy, probe.status = True, "ready"
        elif code in readiness.loading_statuses:
            probe.status = f"loading ({code})"
        else:
            probe.status = f"not ready ({code} on {readiness.path})"
    if isinstance(models, httpx.Response):
        probe.answered = True
        if models.status_code in (401, 403):
            probe.needs_api_key = True
        elif models.status_code == 200:
            probe.model_ids = model_ids(_json(models))
    if isinstance(version, httpx.Response) and version.status_code == 200:
        body = _json(version)
        if isinstance(body, dict):
            found = body.get("version") or body.get("build_info")
            probe.version = str(found) if found else None
    return probe


async def _probe_candidate(
    http: httpx.AsyncClient, spec: EngineSpec, candidate: _Candidate, timeout_s: float
) -> ExternalEngine | None:
    if not candidate.endpoints:
        return None
    urls = [_url(host, port) for host, port in candidate.endpoints]
    probes = await asyncio.gather(*(_probe(http, spec, url, timeout_s) for url in urls))
    # The best guess that is ready, else the best that answered, else the best guess.
    ranked = sorted(
        range(len(urls)), key=lambda i: (not probes[i].healthy, not probes[i].answered, i)
    )
    best = ranked[0]
    probe = probes[best]
    return ExternalEngine(
        engine=spec.id,
        base_url=urls[best],
        found_by=AttachSource.PROCESS_SCAN,
        healthy=probe.healthy,
        status=probe.status,
        pid=candidate.pid,
        process_name=candidate.name or None,
        cmdline=redact_cmdline(candidate.cmdline),
        version=probe.version,
        model_ids=probe.model_ids,
        needs_api_key=probe.needs_api_key,
    )


async def _scan_and_probe(
    http: httpx.AsyncClient,
    catalog: EngineCatalog,
    patterns: Sequence[ProcessPattern],
    exclude: Collection[int],
    timeout_s: float,
) -> list[ExternalEngine]:
    try:
        candidates = await asyncio.to_thread(_scan, catalog, patterns, exclude)
    except (psutil.Error, OSError):
        return []  # no process table to read (a locked-down container): nothing found
    found = await asyncio.gather(
        *(_probe_candidate(http, catalog.spec(c.pattern.engine), c, timeout_s) for c in candidates)
    )
    return [engine for engine in found if engine is not None]


async def _probe_ollama_port(
    http: httpx.AsyncClient, spec: EngineSpec, env: Mapping[str, str], timeout_s: float
) -> ExternalEngine | None:
    try:
        base_url = ollama_base_url(env.get("OLLAMA_HOST"))
    except RoundhouseError:
        base_url = ollama_base_url(None)  # a broken OLLAMA_HOST: look where Ollama defaults
    probe = await _probe(http, spec, base_url, timeout_s)
    if not probe.healthy:
        # Only a server that says "Ollama is running" counts: 11434 may be someone else's.
        return None
    return ExternalEngine(
        engine=EngineId.OLLAMA,
        base_url=base_url,
        found_by=AttachSource.OLLAMA_PORT,
        healthy=True,
        status=probe.status,
        version=probe.version,
        model_ids=probe.model_ids,
    )


def _is_local(host: str) -> bool:
    if host.lower() in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _port_of(url: str) -> tuple[str, int | None]:
    parts = urlsplit(url)
    return parts.hostname or "", parts.port


def _ancestors(pid: int) -> list[int]:
    try:
        return [p.pid for p in psutil.Process(pid).parents()]
    except (psutil.Error, OSError):
        return []  # no process table to read (a locked-down container): nothing found


async def _attach_owner(
    ollama: ExternalEngine, scanned: list[ExternalEngine], exclude: Collection[int]
) -> tuple[ExternalEngine | None, list[ExternalEngine]]:
    """Fill in the process behind Ollama's port; drop it when it is one of ours."""
    host, port = _port_of(ollama.base_url)
    if not _is_local(host) or port is None:
        return ollama, scanned
    same = [e for e in scanned if e.engine == EngineId.OLLAMA and _port_of(e.base_url)[1] == port]
    if same:
        owner = same[0]
        rest = [e for e in scanned if e is not owner]
        return ollama.model_copy(
            update={"pid": owner.pid, "process_name": owner.process_name, "cmdline": owner.cmdline}
        ), rest
    found = await asyncio.to_thread(port_owner, port)
    if found is None:
        return ollama, scanned
    if found.pid in exclude or any(
        p in exclude for p in await asyncio.to_thread(_ancestors, found.pid)
    ):
        return None, scanned
    cmdline: list[str] = []
    with contextlib.suppress(psutil.Error):
        cmdline = redact_cmdline(psutil.Process(found.pid).cmdline())
    return ollama.model_copy(
        update={"pid": found.pid, "process_name": found.name, "cmdline": cmdline}
    ), scanned


async def find_running_engines(
    catalog: EngineCatalog | None = None,
    *,
    exclude_pids: Collection[int] = frozenset(),
    env: Mapping[str, str] | None = None,
    timeout_s: float = PROBE_TIMEOUT_S,
    patterns: Sequence[ProcessPattern] | None = None,
    scan_processes: bool = True,
) -> list[ExternalEngine]:
    """Engines already serving on this machine that Roundhouse did not start. Never raises.

    `env` is where OLLAMA_HOST is read (default: this process's environment); `patterns`
    replaces the command lines recognised (default: `process_patterns(catalog)`).
    """
    catalog = catalog or load_catalog()
    env = os.environ if env is None else env
    patterns = process_patterns(catalog) if patterns is None else patterns
    exclude = frozenset(exclude_pids)
    async with httpx.AsyncClient(trust_env=False, timeout=timeout_s) as http:
        ollama_task = _probe_ollama_port(http, catalog.spec(EngineId.OLLAMA), env, timeout_s)
        scan_task = (
            _scan_and_probe(http, catalog, patterns, exclude, timeout_s)
            if scan_processes
            else asyncio.sleep(0, [])
        )
        ollama, scanned = await asyncio.gather(ollama_task, scan_task)
    if ollama is not None:
        ollama, scanned = await _attach_owner(ollama, scanned, exclude)
    scanned.sort(key=lambda e: (e.engine.value, e.base_url))
    return ([ollama] if ollama is not None else []) + scanned


# -- an endpoint the user adds -----------------------------------------------------------------


class EndpointError(RoundhouseError):
    """The endpoint does not answer, or not as an OpenAI-compatible server does."""

    title = "Endpoint not usable"
    status = 502


class EndpointKeyError(InvalidInputError):
    """The endpoint wants an API key, or refused the one given."""

    title = "API key needed"


def endpoint_base_url(url: str) -> str:
    """`url` as a base URL: http(s)://host[:port][/path], without a trailing /v1 or slash.

    A bare `host:port` gets http://. Raises InvalidInputError for another scheme, a user
    name or password in the URL, a query or a fragment.
    """
    text = url.strip()
    if "://" not in text:
        text = "http://" + text
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https"):
        raise InvalidInputError(
            f"{url!r} is not an http:// or https:// URL. Give the server's address, for "
            "example http://127.0.0.1:1234."
        )
    if not parts.hostname:
        raise InvalidInputError(f"{url!r} has no host. Give one, for example 127.0.0.1:1234.")
    if parts.username or parts.password:
        raise InvalidInputError(
            "Put the API key in its own field, not in the URL: a URL is shown and logged."
        )
    if parts.query or parts.fragment:
        raise InvalidInputError(
            "The URL has a query or fragment: give the base URL only (a key goes in its own field)."
        )
    try:
        parts.port  # noqa: B018 - a bad port raises here
    except ValueError as exc:
        raise InvalidInputError(f"{url!r} has an invalid port.") from exc
    path = parts.path.rstrip("/")
    if path.endswith("/v1"):
        path = path[: -len("/v1")]
    return f"{parts.scheme}://{parts.netloc}{path}"


async def probe_openai_endpoint(
    url: str, api_key: str | None = None, *, timeout_s: float = 5.0
) -> ExternalEngine:
    """Check an OpenAI-compatible server with `GET {url}/v1/models`; its models, or why not.

    Raises InvalidInputError for a malformed URL, EndpointKeyError when the key is missing
    or refused (401/403), EndpointError when nothing answers or the answer is not OpenAI's.
    The key is sent only as `Authorization: Bearer`, never put in the URL or the result.
    """
    base = endpoint_base_url(url)
    host = urlsplit(base).hostname or ""
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    # Proxies must never see loopback traffic; a remote endpoint may need the user's proxy.
    async with httpx.AsyncClient(trust_env=not _is_local(host), timeout=timeout_s) as http:
        answer = await _get(http, f"{base}/v1/models", timeout_s, headers)
    if isinstance(answer, str):
        if answer == REFUSED:
            raise EndpointError(
                f"Nothing answers at {base}. Start the server there (LM Studio: Developer, "
                "Start Server; Jan: Local API Server), or check the address and port."
            )
        raise EndpointError(
            f"Cannot reach {base}: {answer}. Check the address; a remote machine may be off "
            "or behind a firewall."
        )
    code = answer.status_code
    if code in (401, 403):
        if api_key:
            raise EndpointKeyError(f"{base} refused the API key ({code}). Check the key.")
        raise EndpointKeyError(f"{base} needs an API key ({code}). Add the key and try again.")
    if code == 404:
        raise EndpointError(
            f"{base} has no /v1/models: it does not look like an OpenAI-compatible server. "
            "Give its base URL, for example http://127.0.0.1:1234."
        )
    if code != 200:
        raise EndpointError(f"{base}/v1/models answered {code}: {answer.text[:200].strip()}")
    body = _json(answer)
    if not isinstance(body, dict) or not isinstance(body.get("data"), list):
        raise EndpointError(
            f"{base}/v1/models did not answer with OpenAI's model list: it does not look "
            "like an OpenAI-compatible server."
        )
    return ExternalEngine(
        engine=EngineId.OPENAI_COMPATIBLE,
        base_url=base,
        found_by=AttachSource.USER_ENDPOINT,
        healthy=True,
        status="ready",
        model_ids=model_ids(body),
    )
