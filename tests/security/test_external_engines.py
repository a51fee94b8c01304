"""Engines Roundhouse did not start, attacked: an engine listening on every address, another
user's engine, a stranger listing a preset's model, an endpoint that redirects to a catcher,
a key kept for a plain-http endpoint. Each is refused or flagged in words, and nothing is sent
where it must not go: the engines left out are never asked anything, the catcher hears nothing.

Real processes throughout: the vLLM and Ollama stand-ins under their real command lines, a
real daemon and the CLI. An engine of another user is a real one where the suite runs as root
(it starts one as an unused uid); the rule itself is also unit-tested with a made-up process
(tests/unit/attach/test_trust.py). Listeners bound to every address are only ever reached on
loopback here.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest

from roundhouse.api.engines import EngineId, InstanceOptions
from roundhouse.api.external import AttachSource, ExternalEngine
from roundhouse.api.instances import AddEndpointRequest, InstanceInfo, InstanceOrigin, Preset
from roundhouse.client import ApiError, DaemonClient
from roundhouse.core.engines.attach import RunningEngines, look_for_engines
from roundhouse.core.engines.attach.trust import FIRST_PERSON_UID
from tests.api.test_cli import roundhouse
from tests.daemon_process import DaemonProcess, start_daemon
from tests.fakes.launchers import console_script
from tests.fakes.ollama import REPO_ROOT, OllamaStandin
from tests.fakes.ollama import start_standin as start_ollama
from tests.fakes.openai_engines import EngineStandin
from tests.processes import free_port

TINY = "org/tiny-chat"
KEY = "sk-external-secret"
# A uid no account has: the "other user" of the tests that run as root.
OTHER_UID = max(os.getuid(), FIRST_PERSON_UID) + 4242


def _vllm(state: Path, port: int, model: str, *, host: str = "127.0.0.1") -> EngineStandin:
    """`vllm serve MODEL --host HOST --port PORT`, ready; reached on loopback whatever HOST."""
    state.mkdir(parents=True, exist_ok=True)
    script = console_script(state / "bin", "vllm", "tests.fakes.openai_engines", "vllm")
    log = state / "vllm.log"
    argv = [str(script), "serve", model, "--host", host, "--port", str(port)]
    with log.open("ab") as out:
        proc = subprocess.Popen(argv, cwd=REPO_ROOT, stdout=out, stderr=out, start_new_session=True)
    standin = EngineStandin(proc, "127.0.0.1", port, state, log, "vllm")
    _ready(standin)
    return standin


def _ready(standin: OllamaStandin) -> None:
    try:
        standin.wait_ready()
    except BaseException:
        standin.stop()
        raise


def _requests(standin: OllamaStandin) -> list[str]:
    """The requests the stand-in logged (`"GET /health HTTP/1.1" 200`)."""
    return [line for line in standin.log_text().splitlines() if ' "' in line and "HTTP/" in line]


def _look(ollama_port: int | None = None) -> RunningEngines:
    env = {"OLLAMA_HOST": f"127.0.0.1:{ollama_port or free_port()}"}
    return asyncio.run(look_for_engines(env=env))


def _at_port(engines: list[ExternalEngine], port: int) -> list[ExternalEngine]:
    return [e for e in engines if e.base_url.endswith(f":{port}")]


# -- the scan ---------------------------------------------------------------------------------


def test_an_engine_listening_on_every_address_is_left_out_and_never_asked(
    tmp_path: Path,
) -> None:
    exposed = _vllm(tmp_path / "exposed", free_port(), "org/exposed", host="0.0.0.0")
    local = _vllm(tmp_path / "local", free_port(), "org/local")
    try:
        before = _requests(exposed)
        found = _look()
        assert [e.model_ids for e in _at_port(found.engines, local.port)] == [["org/local"]]
        assert _at_port(found.engines, exposed.port) == []
        (left,) = [e for e in found.left_out if e.pid == exposed.proc.pid]
        words = str(left)
        assert words.startswith(f"vllm (pid {exposed.proc.pid} on port {exposed.port})")
        assert f"0.0.0.0:{exposed.port} (every address of this machine)" in words
        assert "other machines can reach it" in words
        assert "Restart it listening on 127.0.0.1 only" in words
        assert _requests(exposed) == before, "an engine left out is never asked anything"
    finally:
        exposed.stop()
        local.stop()


def test_ollama_listening_on_every_address_is_not_adopted_at_its_port(tmp_path: Path) -> None:
    port = free_port()
    ollama = start_ollama(tmp_path / "ollama", port, host="0.0.0.0")
    try:
        found = _look(port)
        assert [e for e in found.engines if e.engine == EngineId.OLLAMA] == []
        (left,) = [e for e in found.left_out if e.engine == EngineId.OLLAMA]
        assert left.pid == ollama.proc.pid and left.ports == (port,)
        assert f"0.0.0.0:{port} (every address of this machine)" in str(left)
    finally:
        ollama.stop()


def _python_for(uid: int) -> str:
    """A Python another account can run (the suite's own may sit under root's home)."""
    for candidate in ("/usr/bin/python3", "/usr/local/bin/python3", sys.executable):
        if not Path(candidate).exists():
            continue
        check = [candidate, "-c", "import sys; assert sys.version_info >= (3, 11)"]
        try:
            done = subprocess.run(check, user=uid, group=uid, capture_output=True, timeout=30)
        except OSError:
            continue
        if done.returncode == 0:
            return candidate
    pytest.skip("no Python here that another account can run")


@dataclass
class OtherUser:
    """Starts stand-ins as another account, from a folder that account can read."""

    uid: int
    python: str
    folder: Path
    started: list[OllamaStandin] = field(default_factory=list)

    def script(self, name: str, package: str, personality: str | None) -> Path:
        prefix = f"{personality!r}, " if personality else ""
        body = (
            f"#!{self.python}\nimport sys\nsys.dont_write_bytecode = True\n"
            f"sys.path.insert(0, {str(REPO_ROOT)!r})\n"
            f"from {package}.__main__ import main\nsys.exit(main([{prefix}*sys.argv[1:]]))\n"
        )
        path = self.folder / name
        path.write_text(body)
        path.chmod(0o755)
        return path

    def popen(self, argv: list[str], log: Path, env: dict[str, str] | None = None) -> Any:
        with log.open("ab") as out:
            return subprocess.Popen(
                argv,
                cwd=self.folder,
                env={**os.environ, **(env or {})},
                stdout=out,
                stderr=out,
                start_new_session=True,
                user=self.uid,
                group=self.uid,
            )


@pytest.fixture
def other_user(tmp_path: Path) -> Iterator[OtherUser]:
    if sys.platform == "win32" or os.geteuid() != 0:
        pytest.skip("starting another user's process needs root; the rule is unit-tested")
    folder = Path(tempfile.mkdtemp(prefix="roundhouse-other-"))
    folder.chmod(0o755)
    user = OtherUser(OTHER_UID, _python_for(OTHER_UID), folder)
    try:
        yield user
    finally:
        for standin in user.started:
            standin.stop()
        shutil.rmtree(folder, ignore_errors=True)


def test_another_users_engine_on_loopback_is_left_out_and_never_asked(
    other_user: OtherUser, tmp_path: Path
) -> None:
    port = free_port()
    script = other_user.script("vllm", "tests.fakes.openai_engines", "vllm")
    argv = [str(script), "serve", "org/theirs", "--host", "127.0.0.1", "--port", str(port)]
    log = tmp_path / "theirs.log"
    standin = EngineStandin(other_user.popen(argv, log), "127.0.0.1", port, tmp_path, log, "vllm")
    other_user.started.append(standin)
    _ready(standin)
    assert psutil.Process(standin.proc.pid).uids().real == OTHER_UID
    before = _requests(standin)

    found = _look()
    assert _at_port(found.engines, port) == []
    (left,) = [e for e in found.left_out if e.pid == standin.proc.pid]
    assert f"it runs as another user (uid {OTHER_UID})" in str(left)
    assert "attach its URL if you trust it" in str(left)
    assert _requests(standin) == before, "another user's engine is never asked anything"


def test_another_users_ollama_at_ollama_host_is_not_adopted(
    other_user: OtherUser, tmp_path: Path
) -> None:
    port = free_port()
    script = other_user.script("ollama", "tests.fakes.ollama", None)
    state = other_user.folder / "state"
    state.mkdir()
    state.chmod(0o777)
    argv = [str(script), "serve", "--state", str(state)]
    log = tmp_path / "ollama.log"
    proc = other_user.popen(argv, log, {"OLLAMA_HOST": f"127.0.0.1:{port}"})
    standin = OllamaStandin(proc, "127.0.0.1", port, state, log)
    other_user.started.append(standin)
    _ready(standin)

    found = _look(port)
    assert [e for e in found.engines if e.engine == EngineId.OLLAMA] == []
    (left,) = [e for e in found.left_out if e.engine == EngineId.OLLAMA and e.ports == (port,)]
    assert f"runs as another user (uid {OTHER_UID})" in str(left)


# -- through the daemon -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DaemonProcess]:
    root = tmp_path_factory.mktemp("daemon")
    env = {
        "OLLAMA_HOST": f"127.0.0.1:{free_port()}",
        "PYTHON_KEYRING_BACKEND": "tests.fakes.keyring_backend.FileKeyring",
        "ROUNDHOUSE_TEST_KEYRING": str(root / "keyring.json"),
    }
    process = start_daemon(root / "home", env=env)
    try:
        yield process
    finally:
        process.stop(timeout=60)


def _run(daemon: DaemonProcess, call: Any) -> Any:
    async def main() -> Any:
        async with DaemonClient(daemon.url, daemon.token) as client:
            return await call(client)

    return asyncio.run(main())


def _chat(daemon: DaemonProcess, model: str) -> httpx.Response:
    body = {"model": model, "messages": [{"role": "user", "content": "a secret prompt"}]}
    return httpx.post(daemon.url + "/v1/chat/completions", json=body, trust_env=False, timeout=60)


def _cli(daemon: DaemonProcess, *args: str) -> subprocess.CompletedProcess[str]:
    assert daemon.home.root is not None
    return roundhouse(daemon.home.root, *args, columns=400)


def _posts(standin: OllamaStandin) -> list[str]:
    return [line for line in _requests(standin) if '"POST /v1/chat/completions' in line]


def test_a_presets_model_never_goes_to_an_engine_the_user_did_not_allow(
    daemon: DaemonProcess, tmp_path: Path
) -> None:
    stranger = _vllm(tmp_path / "stranger", free_port(), TINY)
    try:
        preset = Preset(engine=EngineId.VLLM, model=TINY, options=InstanceOptions(model=TINY))
        _run(daemon, lambda c: c.save_preset(preset))
        listed = _run(daemon, lambda c: c.scan_instances()).instances
        (found,) = [i for i in listed if i.port == stranger.port]
        assert found.origin == InstanceOrigin.EXTERNAL and TINY in found.models
        assert not found.may_serve_presets
        assert found.unprotected is not None and "any program on this machine" in found.unprotected

        refused = _chat(daemon, TINY)
        # The preset's start fails here (no vLLM installed), and says how to use the stranger.
        assert refused.status_code == 503, refused.text
        message = refused.json()["error"]["message"]
        assert "could not start 'org/tiny-chat' on vllm" in message
        assert f"{found.id} at {stranger.base_url}, which Roundhouse did not start" in message
        assert f"`roundhouse engines allow-presets {found.id}`" in message
        assert _posts(stranger) == [], "the stranger got the preset's request"
        models = {m.id: m for m in _run(daemon, lambda c: c.gateway_models()).models}
        assert models[TINY].instance is None and models[TINY].preset == "default"

        ps = _cli(daemon, "engines", "ps")
        assert ps.returncode == 0, ps.stderr
        assert "unprotected" in ps.stdout and "Not protected by Roundhouse" in ps.stdout
        assert "roundhouse engines allow-presets ID" in ps.stdout

        allowed = _cli(daemon, "engines", "allow-presets", found.id)
        assert allowed.returncode == 0, allowed.stderr
        assert "may now serve the models your presets start" in allowed.stdout
        routes = daemon.home.config_dir / "preset_routes.json"
        assert json.loads(routes.read_text()) == [{"engine": "vllm", "url": stranger.base_url}]
        served = _chat(daemon, TINY)
        assert served.status_code == 200, served.text
        assert len(_posts(stranger)) == 1
        info: InstanceInfo = _run(daemon, lambda c: c.instance(found.id))
        assert info.may_serve_presets
        assert "serves presets" in _cli(daemon, "engines", "ps").stdout

        # Kept across scans, and taken back from the CLI.
        _run(daemon, lambda c: c.scan_instances())
        assert _chat(daemon, TINY).status_code == 200
        off = _cli(daemon, "engines", "allow-presets", found.id, "--off")
        assert off.returncode == 0 and "no longer serves" in off.stdout
        assert _chat(daemon, TINY).status_code != 200
        assert len(_posts(stranger)) == 2
    finally:
        _run(daemon, lambda c: c.delete_preset("vllm", TINY, "default"))
        stranger.stop()


class Recorder(ThreadingHTTPServer):
    """A server that notes every request it gets (method, path, Authorization)."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        super().__init__((host, 0), _Handler)
        self.seen: list[tuple[str, str, str | None]] = []
        self.redirect_to: str | None = None
        self.redirect_models = False
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host!s}:{port}"


class _Handler(BaseHTTPRequestHandler):
    server: Recorder

    def log_message(self, format: str, *args: object) -> None:
        pass

    def _note(self) -> None:
        self.server.seen.append((self.command, self.path, self.headers.get("Authorization")))
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)

    def _redirect(self) -> None:
        self.send_response(307 if self.command == "POST" else 302)
        self.send_header("Location", f"{self.server.redirect_to}{self.path}")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self) -> None:
        self._note()
        if self.server.redirect_to and self.server.redirect_models:
            return self._redirect()
        body = json.dumps({"object": "list", "data": [{"id": "org/redir", "object": "model"}]})
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body.encode())

    def do_POST(self) -> None:
        self._note()
        if self.server.redirect_to:
            return self._redirect()
        self.send_response(500)
        self.send_header("Content-Length", "0")
        self.end_headers()


@pytest.fixture
def catcher() -> Iterator[Recorder]:
    server = Recorder()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def redirector(catcher: Recorder) -> Iterator[Recorder]:
    server = Recorder()
    server.redirect_to = catcher.url
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def test_an_endpoint_that_redirects_is_not_attached_and_the_key_stays_home(
    daemon: DaemonProcess, redirector: Recorder, catcher: Recorder
) -> None:
    redirector.redirect_models = True
    request = AddEndpointRequest(url=redirector.url, api_key=KEY)
    with pytest.raises(ApiError) as refused:
        _run(daemon, lambda c: c.add_endpoint(request))
    problem = refused.value.problem
    assert problem.status == 502
    assert f"answered with a redirect (302 to {catcher.url}/v1/models)" in problem.detail
    assert "does not follow redirects" in problem.detail
    assert catcher.seen == [], "the redirect was followed"
    assert redirector.seen == [("GET", "/v1/models", f"Bearer {KEY}")]


def test_a_redirect_from_an_endpoint_is_an_error_and_not_followed(
    daemon: DaemonProcess, redirector: Recorder, catcher: Recorder
) -> None:
    request = AddEndpointRequest(url=redirector.url, api_key=KEY)
    added = _run(daemon, lambda c: c.add_endpoint(request))
    try:
        assert added.found_by == AttachSource.USER_ENDPOINT and added.models == ["org/redir"]
        answer = _chat(daemon, "org/redir")
        assert answer.status_code == 502, answer.text
        message = answer.json()["error"]["message"]
        assert f"answered with a redirect to {catcher.url}/v1/chat/completions" in message
        assert "does not follow redirects" in message
        assert ("POST", "/v1/chat/completions", f"Bearer {KEY}") in redirector.seen
        assert catcher.seen == [], "the prompt and the key went where the redirect said"
    finally:
        _run(daemon, lambda c: c.stop_instance(added.id))


def _own_address() -> str:
    """An IPv4 address of this machine beyond loopback (traffic to it never leaves it)."""
    for addresses in psutil.net_if_addrs().values():
        for address in addresses:
            if address.family == socket.AF_INET and not address.address.startswith("127."):
                return str(address.address)
    pytest.skip("this machine has no address beyond loopback")


def test_a_key_kept_for_a_plain_http_endpoint_elsewhere_warns(daemon: DaemonProcess) -> None:
    server = Recorder(_own_address())
    added: InstanceInfo | None = None
    try:
        argv = [sys.executable, "-m", "roundhouse", "--home", str(daemon.home.root)]
        attach = subprocess.run(
            [*argv, "engines", "attach", server.url, "--api-key-stdin"],
            input=KEY + "\n",
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "COLUMNS": "400"},
        )
        assert attach.returncode == 0, attach.stderr
        assert "Warning:" in attach.stderr and "Its API key travels in clear text" in attach.stderr
        assert "https://" in attach.stderr
        listed = _run(daemon, lambda c: c.instances()).instances
        (added,) = [i for i in listed if i.url == server.url]
        (warning,) = added.warnings
        assert warning.startswith(f"Its API key travels in clear text: {server.url} is plain")
        ps = _cli(daemon, "engines", "ps")
        assert f"Warning ({added.id}): Its API key travels in clear text" in ps.stdout
        assert KEY not in ps.stdout + attach.stdout + attach.stderr
    finally:
        if added is not None:
            _run(daemon, lambda c: c.stop_instance(added.id))
        server.shutdown()
        server.server_close()
