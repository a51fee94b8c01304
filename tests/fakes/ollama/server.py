"""A strict STAND-IN for `ollama serve` (its documented HTTP API); no real model runs here."""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tests.fakes.http_plumbing import StandinHandler
from tests.fakes.ollama.catalog import MEDIA_MODEL, TEMPLATE, blob_name, write_registry
from tests.fakes.ollama.guards import (
    ALLOW_HEADERS,
    ALLOW_METHODS,
    MAX_AGE_S,
    allow_all,
    host_allowed,
    is_cors_request,
    origin_allowed,
    origins_from_env,
)

VERSION = "0.6.8"
DEFAULT_KEEP_ALIVE_S = 300.0
DEFAULT_NUM_CTX = 4096
NATURAL_LENGTH = 12  # tokens a reply has when no num_predict cuts it short
WORDS = ("The", "quick", "brown", "fox", "jumps", "over", "the", "lazy", "dog.")
PULL_CHUNK = 1024
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?(:[\w][\w.-]*)?$")
DURATION_RE = re.compile(r"^[-+]?(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+$")
DURATION_PART_RE = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")
UNIT_S = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
FOREVER = datetime(2318, 1, 1, tzinfo=UTC)


class ApiError(Exception):
    """An error answered as Ollama does: `{"error": message}` with an HTTP status."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass
class Options:
    """Command-line settings, failure modes included."""

    state: Path
    fail_pull_after_bytes: int | None = None
    slow_start_s: float = 0.0
    crash_on_chat: bool = False
    pull_delay_s: float = 0.002
    token_delay_s: float = 0.0
    eval_rate: float = 50.0
    gpu_share: float = 1.0


@dataclass
class Loaded:
    """A model held in (pretend) memory until `expires` (None: forever)."""

    name: str
    expires: float | None
    context_length: int
    size: int
    used: float = field(default_factory=time.monotonic)


def now_iso() -> str:
    return datetime.now(UTC).astimezone().isoformat()


def normalize(name: str) -> str:
    if not NAME_RE.match(name):
        raise ApiError(400, "invalid model name")
    return name if ":" in name.rsplit("/", 1)[-1] else f"{name}:latest"


def parse_keep_alive(value: object, *, from_env: bool = False) -> float | None:
    """Seconds to keep a model loaded: None is forever (negative), 0 unloads now.

    A request's string is a Go duration only (time.ParseDuration: "-1" has no unit and is
    refused); OLLAMA_KEEP_ALIVE also takes whole seconds ("-1", "300"), as envconfig does.
    """
    if isinstance(value, bool):
        raise ApiError(400, "json: cannot unmarshal bool into Go value of type api.Duration")
    if isinstance(value, int | float):
        seconds = float(value)
    elif isinstance(value, str):
        if value.lstrip("+-") == "0":
            seconds = 0.0
        elif DURATION_RE.match(value):
            seconds = sum(float(n) * UNIT_S[u] for n, u in DURATION_PART_RE.findall(value))
            seconds = -seconds if value.startswith("-") else seconds
        elif from_env and re.fullmatch(r"[-+]?\d+", value):
            seconds = float(value)
        elif re.fullmatch(r"[-+]?\d+(\.\d*)?", value):
            raise ApiError(400, f'time: missing unit in duration "{value}"')
        else:
            raise ApiError(400, f'time: invalid duration "{value}"')
    else:
        raise ApiError(400, "json: cannot unmarshal value into Go value of type api.Duration")
    return None if seconds < 0 else seconds


_JSON_TYPE = {dict: "object", list: "array", str: "string", bool: "bool", type(None): "null"}


def _json_type(value: object) -> str:
    return "number" if isinstance(value, int | float) else _JSON_TYPE.get(type(value), "value")


def get(body: dict[str, Any], key: str, kind: type | tuple[type, ...], struct: str) -> Any:
    """`body[key]` if present and of `kind` (bools are not numbers), else a 400 like Go's."""
    value = body.get(key)
    if value is None:
        return None
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if (isinstance(value, bool) and bool not in kinds) or not isinstance(value, kinds):
        go = {str: "string", bool: "bool", dict: "map", list: "slice", int: "int"}
        raise ApiError(
            400,
            f"json: cannot unmarshal {_json_type(value)} into Go struct field "
            f"{struct}.{key} of type {go.get(kinds[0], 'value')}",
        )
    return value


class Store:
    """Pulled models on disk and loaded models in memory; every method is thread-safe."""

    def __init__(self, options: Options) -> None:
        self.options = options
        self.registry = options.state / "registry"
        models_env = os.environ.get("OLLAMA_MODELS")
        self.models = Path(models_env) if models_env else options.state / "models"
        self.blobs = self.models / "blobs"
        self.manifests = self.models / "manifests" / "registry.ollama.ai" / "library"
        self.blobs.mkdir(parents=True, exist_ok=True)
        self.manifests.mkdir(parents=True, exist_ok=True)
        write_registry(self.registry)
        self.lock = threading.RLock()
        self.pull_locks: dict[str, threading.Lock] = {}
        self.loaded: dict[str, Loaded] = {}
        self.max_loaded = int(os.environ.get("OLLAMA_MAX_LOADED_MODELS", "0") or 0)
        env_keep = os.environ.get("OLLAMA_KEEP_ALIVE")
        self.default_keep: float | None = (
            parse_keep_alive(env_keep, from_env=True) if env_keep else DEFAULT_KEEP_ALIVE_S
        )
        self.default_ctx = int(os.environ.get("OLLAMA_CONTEXT_LENGTH") or DEFAULT_NUM_CTX)

    # -- pulled models ------------------------------------------------------------------------

    def _manifest_path(self, root: Path, name: str) -> Path:
        repo, tag = name.rsplit(":", 1)
        return root / repo / tag

    def manifest(self, name: str) -> dict[str, Any] | None:
        path = self._manifest_path(self.manifests, name)
        return json.loads(path.read_text()) if path.is_file() else None

    def require(self, given: str, message: str) -> tuple[str, dict[str, Any]]:
        name = normalize(given)
        manifest = self.manifest(name)
        if manifest is None:
            raise ApiError(404, message.format(given))
        return name, manifest

    def config(self, manifest: dict[str, Any]) -> dict[str, Any]:
        data = (self.blobs / blob_name(manifest["config"]["digest"])).read_text()
        config: dict[str, Any] = json.loads(data)
        return config

    def names(self) -> list[str]:
        found = []
        for path in sorted(self.manifests.rglob("*")):
            if path.is_file():
                rel = path.relative_to(self.manifests)
                found.append(f"{'/'.join(rel.parts[:-1])}:{rel.parts[-1]}")
        return found

    def describe(self, name: str) -> dict[str, Any]:
        path = self._manifest_path(self.manifests, name)
        raw = path.read_bytes()
        manifest = json.loads(raw)
        config = self.config(manifest)
        size = manifest["config"]["size"] + sum(layer["size"] for layer in manifest["layers"])
        modified = datetime.fromtimestamp(path.stat().st_mtime, UTC).astimezone()
        return {
            "name": name,
            "model": name,
            "modified_at": modified.isoformat(),
            "size": size,
            "digest": hashlib.sha256(raw).hexdigest(),
            "details": self.details(config),
        }

    @staticmethod
    def details(config: dict[str, Any]) -> dict[str, Any]:
        return {
            "parent_model": "",
            "format": config["model_format"],
            "family": config["model_family"],
            "families": config["model_families"],
            "parameter_size": config["model_type"],
            "quantization_level": config["file_type"],
        }

    def delete(self, name: str) -> None:
        with self.lock:
            self.loaded.pop(name, None)
            path = self._manifest_path(self.manifests, name)
            path.unlink()
            keep = set()
            for other in self.names():
                manifest = self.manifest(other) or {}
                keep |= {manifest["config"]["digest"]} | {x["digest"] for x in manifest["layers"]}
            for blob in self.blobs.iterdir():
                if blob.name.replace("-", ":", 1) not in keep and not blob.name.endswith(
                    "-partial"
                ):
                    blob.unlink()

    def pull(self, given: str) -> Iterator[dict[str, Any]]:
        """Progress lines of a pull; resumes from `-partial` blobs; the last is success/error."""
        name = normalize(given)
        yield {"status": "pulling manifest"}
        source = self._manifest_path(self.registry / "manifests", name)
        if not source.is_file():
            yield {"error": "pull model manifest: file does not exist"}
            return
        with self.lock:
            pull_lock = self.pull_locks.setdefault(name, threading.Lock())
        with pull_lock:  # concurrent pulls of one model wait, then find its blobs in place
            manifest = json.loads(source.read_text())
            budget = self.options.fail_pull_after_bytes
            for layer in [*manifest["layers"], manifest["config"]]:
                digest, total = layer["digest"], layer["size"]
                status = f"pulling {digest.removeprefix('sha256:')[:12]}"
                final = self.blobs / blob_name(digest)
                if final.is_file():
                    yield {"status": status, "digest": digest, "total": total, "completed": total}
                    continue
                partial = final.with_name(final.name + "-partial")
                done = partial.stat().st_size if partial.is_file() else 0
                first: dict[str, Any] = {"status": status, "digest": digest, "total": total}
                if done:
                    first["completed"] = done
                yield first
                data = (self.registry / "blobs" / blob_name(digest)).read_bytes()
                with partial.open("ab") as out:
                    while done < total:
                        step = min(PULL_CHUNK, total - done)
                        if budget is not None:
                            if budget <= 0:
                                yield {"error": "max retries exceeded: unexpected EOF"}
                                return
                            step = min(step, budget)
                            budget -= step
                        out.write(data[done : done + step])
                        out.flush()
                        done += step
                        time.sleep(self.options.pull_delay_s)
                        line = {"status": status, "digest": digest, "total": total}
                        yield line | {"completed": done}
            yield {"status": "verifying sha256 digest"}
            for layer in [*manifest["layers"], manifest["config"]]:
                final = self.blobs / blob_name(layer["digest"])
                partial = final.with_name(final.name + "-partial")
                if partial.is_file():
                    got = "sha256:" + hashlib.sha256(partial.read_bytes()).hexdigest()
                    if got != layer["digest"]:
                        partial.unlink()
                        yield {"error": f"digest mismatch, expected {layer['digest']}, got {got}"}
                        return
                    partial.replace(final)
            yield {"status": "writing manifest"}
            target = self._manifest_path(self.manifests, name)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(source.read_text())
            yield {"status": "success"}

    # -- loaded models ------------------------------------------------------------------------

    def _expire(self) -> None:
        now = time.monotonic()
        for name in [n for n, m in self.loaded.items() if m.expires is not None]:
            expires = self.loaded[name].expires
            if expires is not None and expires <= now:
                del self.loaded[name]

    def load(self, name: str, keep: object, options: dict[str, Any]) -> bool:
        """Load (or refresh) `name`; keep_alive 0 unloads. True when it was newly loaded."""
        seconds = self.default_keep if keep is None else parse_keep_alive(keep)
        num_ctx = get(options, "num_ctx", int, "Options")
        with self.lock:
            self._expire()
            if seconds == 0:
                self.loaded.pop(name, None)
                return False
            expires = None if seconds is None else time.monotonic() + seconds
            current = self.loaded.get(name)
            ctx = num_ctx or (current.context_length if current else self.default_ctx)
            if current and current.context_length == ctx:
                current.expires, current.used = expires, time.monotonic()
                return False
            manifest = self.manifest(name) or {}
            weights = sum(x["size"] for x in manifest["layers"] if x["mediaType"] == MEDIA_MODEL)
            size = weights + ctx * 64  # weights plus a pretend KV cache
            self.loaded[name] = Loaded(name, expires, ctx, size)
            if self.max_loaded and len(self.loaded) > self.max_loaded:
                oldest = min(self.loaded.values(), key=lambda m: m.used)
                del self.loaded[oldest.name]
            return True

    def kept(self, name: str, prompt: int, *, truncate: bool = True) -> int:
        """What Ollama keeps of a `prompt`-token prompt to `name`: it cuts one longer than
        the loaded context to fit, without a word (the runner's "truncating input prompt"
        is only logged), and counts what it kept in prompt_eval_count. Its own API told
        `truncate: false` (0.12.6 on) refuses such a prompt instead, as its runner does."""
        with self.lock:
            loaded = self.loaded.get(name)
        if loaded is None or prompt <= loaded.context_length:
            return prompt
        if not truncate:
            raise ApiError(400, "the input length exceeds the context length")
        return loaded.context_length

    def running(self) -> list[dict[str, Any]]:
        with self.lock:
            self._expire()
            loaded = list(self.loaded.values())
        out = []
        now = time.monotonic()
        for model in loaded:
            info = self.describe(model.name)
            expires = (
                FOREVER
                if model.expires is None
                else datetime.now(UTC) + timedelta(seconds=model.expires - now)
            )
            out.append(
                {
                    "name": model.name,
                    "model": model.name,
                    "size": model.size,
                    "digest": info["digest"],
                    "details": info["details"],
                    "expires_at": expires.astimezone().isoformat(),
                    "size_vram": int(model.size * self.options.gpu_share),
                    "context_length": model.context_length,
                }
            )
        return out


def prompt_tokens(texts: list[str]) -> int:
    """Pretend tokenizer: one token per word, plus one per message for its role."""
    return sum(len(text.split()) + 1 for text in texts)


def reply_tokens(options: dict[str, Any]) -> tuple[list[str], str]:
    """The deterministic reply's tokens (one per word) and why it stopped."""
    limit = get(options, "num_predict", int, "Options")
    count = NATURAL_LENGTH if limit is None or limit < 0 else min(limit, NATURAL_LENGTH)
    reason = "length" if limit is not None and 0 <= limit < NATURAL_LENGTH else "stop"
    return [("" if i == 0 else " ") + WORDS[i % len(WORDS)] for i in range(count)], reason


class Handler(StandinHandler):
    """Routes Ollama's API; answers errors as `{"error": "..."}`."""

    json_content_type = "application/json; charset=utf-8"
    server_version = "ollama-standin"
    store: Store
    ready_at: float
    extra_headers: list[tuple[str, str]]  # CORS headers the guards add to this reply

    # -- plumbing -----------------------------------------------------------------------------

    def log_message(self, format: str, *args: object) -> None:
        sys.stderr.write(f"[GIN] {self.address_string()} {format % args}\n")

    def _wait_ready(self) -> None:
        delay = self.ready_at - time.monotonic()
        if delay > 0:
            time.sleep(delay)

    def body(self, struct: str) -> dict[str, Any]:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if not raw.strip():
            raise ApiError(400, "missing request body")
        try:
            body = json.loads(raw)
        except ValueError as exc:
            raise ApiError(400, f"invalid character in request body: {exc}") from None
        if not isinstance(body, dict):
            raise ApiError(
                400, f"json: cannot unmarshal {_json_type(body)} into Go value of type {struct}"
            )
        return body

    def end_headers(self) -> None:
        for name, value in self.__dict__.pop("extra_headers", ()):
            self.send_header(name, value)
        super().end_headers()

    def abort(self, status: int) -> None:
        """gin's AbortWithStatus: the status, the headers set so far, no body."""
        self.close_connection = True  # a body left unread must not become the next request
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.send_header("Connection", "close")
        self.end_headers()

    def guarded(self) -> bool:
        """Ollama's CORS then Host middleware (see guards); True when one of them answered."""
        origin = self.headers.get("Origin")
        host = self.headers.get("Host") or ""
        if origin and is_cors_request(origin, host):
            allowed = origins_from_env()
            if not origin_allowed(origin, allowed):
                self.abort(403)
                return True
            everyone = allow_all(allowed)
            extra = [("Access-Control-Allow-Origin", "*" if everyone else origin)]
            extra += [] if everyone else [("Vary", "Origin")]
            if self.command == "OPTIONS":
                extra += [
                    ("Access-Control-Allow-Methods", ALLOW_METHODS),
                    ("Access-Control-Allow-Headers", ALLOW_HEADERS),
                    ("Access-Control-Max-Age", MAX_AGE_S),
                ]
                self.extra_headers = extra
                self.abort(204)
                return True
            self.extra_headers = extra
        bound = self.server.server_address
        if not host_allowed(host, str(bound[0] if isinstance(bound, tuple) else bound)):
            self.abort(403)
            return True
        if self.command == "OPTIONS":
            self.abort(204)
            return True
        return False

    def dispatch(self, routes: dict[str, Callable[[], None]]) -> None:
        self._wait_ready()
        if self.guarded():
            return
        path = self.path.split("?", 1)[0]
        route = routes.get(path)
        if route is None:
            known = path in ALL_PATHS
            status, text = (405, "405 method not allowed") if known else (404, "404 page not found")
            self.send_bytes(status, text.encode(), "text/plain")
            return
        try:
            route()
        except ApiError as exc:
            if path.startswith("/v1/"):
                kind = "not_found_error" if exc.status == 404 else "invalid_request_error"
                error = {"message": exc.message, "type": kind, "param": None, "code": None}
                self.send_json(exc.status, {"error": error})
            else:
                self.send_json(exc.status, {"error": exc.message})

    def do_GET(self) -> None:
        self.dispatch(
            {
                "/": self.root,
                "/api/version": self.version,
                "/api/tags": self.tags,
                "/api/ps": self.ps,
                "/v1/models": self.v1_models,
            }
        )

    def do_HEAD(self) -> None:
        self.dispatch({"/": self.root, "/api/version": self.version})

    def do_POST(self) -> None:
        self.dispatch(
            {
                "/api/pull": self.pull,
                "/api/show": self.show,
                "/api/generate": self.generate,
                "/api/chat": self.chat,
                "/api/embed": self.embed,
                "/v1/chat/completions": self.v1_chat,
            }
        )

    def do_DELETE(self) -> None:
        self.dispatch({"/api/delete": self.delete})

    def do_OPTIONS(self) -> None:
        self.dispatch({})  # always answered by the guards: a preflight, or a 204

    # -- endpoints ----------------------------------------------------------------------------

    def root(self) -> None:
        self.send_bytes(200, b"Ollama is running", "text/plain; charset=utf-8")

    def version(self) -> None:
        self.send_json(200, {"version": VERSION})

    def tags(self) -> None:
        self.send_json(200, {"models": [self.store.describe(n) for n in self.store.names()]})

    def ps(self) -> None:
        self.send_json(200, {"models": self.store.running()})

    def model_field(self, body: dict[str, Any], struct: str, *, alias: bool = False) -> str:
        given = get(body, "model", str, struct) or (
            get(body, "name", str, struct) if alias else None
        )
        if not given:
            raise ApiError(400, "model is required")
        return str(given)

    def pull(self) -> None:
        body = self.body("api.PullRequest")
        given = self.model_field(body, "PullRequest", alias=True)
        stream = get(body, "stream", bool, "PullRequest")
        get(body, "insecure", bool, "PullRequest")
        normalize(given)  # as Ollama: a bad name is a 400 before any progress is streamed
        lines = self.store.pull(given)
        if stream is False:
            last: dict[str, Any] = {}
            for last in lines:
                if "error" in last:
                    raise ApiError(500, last["error"])
            self.send_json(200, last)
            return
        self.start_stream("application/x-ndjson")
        for line in lines:
            self.chunk(json.dumps(line).encode() + b"\n")
        self.end_stream()

    def show(self) -> None:
        body = self.body("api.ShowRequest")
        given = self.model_field(body, "ShowRequest", alias=True)
        get(body, "verbose", bool, "ShowRequest")
        name, manifest = self.store.require(given, "model '{}' not found")
        config = self.store.config(manifest)
        info = self.store.describe(name)
        self.send_json(
            200,
            {
                "license": "",
                "modelfile": f"# Modelfile generated by the Ollama stand-in\nFROM {name}\n",
                "parameters": 'stop "<|user|>"',
                "template": TEMPLATE,
                "details": self.store.details(config),
                "model_info": config["model_info"],
                "capabilities": config["capabilities"],
                "modified_at": info["modified_at"],
            },
        )

    def delete(self) -> None:
        body = self.body("api.DeleteRequest")
        given = self.model_field(body, "DeleteRequest", alias=True)
        name, _ = self.store.require(given, "model '{}' not found")
        self.store.delete(name)
        self.send_bytes(200, b"", "application/json; charset=utf-8")

    def _runnable(self, body: dict[str, Any], struct: str, need: str) -> tuple[str, bool, float]:
        """Check model, capability and options; load it. Returns (name, stream, load seconds)."""
        given = self.model_field(body, struct)
        name, manifest = self.store.require(given, 'model "{}" not found, try pulling it first')
        stream = get(body, "stream", bool, struct)
        options = get(body, "options", dict, struct) or {}
        keep = body.get("keep_alive")
        if need not in self.store.config(manifest)["capabilities"]:
            raise ApiError(400, f'"{given}" does not support {need}')
        fresh = self.store.load(name, keep, options)
        return name, stream is not False, 0.05 if fresh else 0.001

    def _stats(
        self, load_s: float, prompt_count: int, eval_count: int, reason: str
    ) -> dict[str, Any]:
        prompt_ns = prompt_count * 1_000_000
        eval_ns = int(eval_count / self.store.options.eval_rate * 1e9)
        load_ns = int(load_s * 1e9)
        return {
            "done_reason": reason,
            "done": True,
            "total_duration": load_ns + prompt_ns + eval_ns,
            "load_duration": load_ns,
            "prompt_eval_count": prompt_count,
            "prompt_eval_duration": prompt_ns,
            "eval_count": eval_count,
            "eval_duration": eval_ns,
        }

    def _crash_if_asked(self) -> None:
        if self.store.options.crash_on_chat:
            sys.stderr.write("panic: stand-in crashed on chat (--crash-on-chat)\n")
            sys.stderr.flush()
            os._exit(2)  # like a Go panic: no cleanup, exit status 2

    def generate(self) -> None:
        body = self.body("api.GenerateRequest")
        prompt = get(body, "prompt", str, "GenerateRequest")
        system = get(body, "system", str, "GenerateRequest")
        options = get(body, "options", dict, "GenerateRequest") or {}
        if not prompt:
            self._load_only(body, "GenerateRequest", {"response": ""})
            return
        name, stream, load_s = self._runnable(body, "GenerateRequest", "completion")
        truncate = get(body, "truncate", bool, "GenerateRequest") is not False
        get(body, "shift", bool, "GenerateRequest")
        tokens, reason = reply_tokens(options)
        prompt_count = self.store.kept(
            name, prompt_tokens([t for t in (system, prompt) if t]), truncate=truncate
        )
        stats = self._stats(load_s, prompt_count, len(tokens), reason)
        head = {"model": name, "created_at": now_iso()}
        if not stream:
            self.send_json(200, head | {"response": "".join(tokens)} | stats)
            return
        self.start_stream("application/x-ndjson")
        for token in tokens:
            self.chunk(json.dumps(head | {"response": token, "done": False}).encode() + b"\n")
            time.sleep(self.store.options.token_delay_s)
        self.chunk(json.dumps(head | {"response": ""} | stats).encode() + b"\n")
        self.end_stream()

    def _load_only(self, body: dict[str, Any], struct: str, empty: dict[str, Any]) -> None:
        keep = body.get("keep_alive")
        unload = keep is not None and parse_keep_alive(keep) == 0
        given = self.model_field(body, struct)
        name, manifest = self.store.require(given, 'model "{}" not found, try pulling it first')
        # As Ollama: unloading skips the scheduler; loading checks the capability first.
        if not unload and "completion" not in self.store.config(manifest)["capabilities"]:
            verb = "generate" if struct == "GenerateRequest" else "chat"
            raise ApiError(400, f'"{given}" does not support {verb}')
        self.store.load(name, keep, get(body, "options", dict, struct) or {})
        reason = "unload" if unload else "load"
        self.send_json(
            200,
            {"model": name, "created_at": now_iso()}
            | empty
            | {"done_reason": reason, "done": True},
        )

    def embed(self) -> None:
        """`/api/embed`: no input only loads the model (how Ollama preloads embedding models)."""
        body = self.body("api.EmbedRequest")
        given = self.model_field(body, "EmbedRequest")
        raw = body.get("input")
        if raw is None or (isinstance(raw, str) and not raw):
            inputs: list[str] = []
        elif isinstance(raw, str):
            inputs = [raw]
        elif isinstance(raw, list) and all(isinstance(x, str) for x in raw):
            inputs = [x for x in raw if x]
        else:
            raise ApiError(400, "invalid input type")
        get(body, "truncate", bool, "EmbedRequest")
        options = get(body, "options", dict, "EmbedRequest") or {}
        name, manifest = self.store.require(given, 'model "{}" not found, try pulling it first')
        keep = body.get("keep_alive")
        self.store.load(name, keep, options)
        if not inputs:
            self.send_json(200, {"model": name, "embeddings": []})
            return
        config = self.store.config(manifest)
        arch = config["model_info"]["general.architecture"]
        width = config["model_info"][f"{arch}.embedding_length"]
        vectors = []
        for text in inputs:
            seed = hashlib.sha256(text.encode()).digest()
            vectors.append([(seed[i % len(seed)] - 128) / 128 for i in range(width)])
        self.send_json(
            200,
            {
                "model": name,
                "embeddings": vectors,
                "total_duration": 1_000_000,
                "load_duration": 500_000,
                "prompt_eval_count": prompt_tokens(inputs) - len(inputs),
            },
        )

    def _messages(self, body: dict[str, Any], struct: str) -> list[dict[str, Any]]:
        messages = get(body, "messages", list, struct) or []
        for message in messages:
            if not isinstance(message, dict):
                raise ApiError(
                    400, f"json: cannot unmarshal {_json_type(message)} into api.Message"
                )
            role = get(message, "role", str, "Message")
            get(message, "content", str, "Message")
            if not role:
                raise ApiError(400, "message role is required")
        return list(messages)

    def chat(self) -> None:
        body = self.body("api.ChatRequest")
        messages = self._messages(body, "ChatRequest")
        options = get(body, "options", dict, "ChatRequest") or {}
        if not messages:
            self._load_only(body, "ChatRequest", {"message": {"role": "assistant", "content": ""}})
            return
        name, stream, load_s = self._runnable(body, "ChatRequest", "completion")
        truncate = get(body, "truncate", bool, "ChatRequest") is not False
        get(body, "shift", bool, "ChatRequest")
        tokens, reason = reply_tokens(options)
        prompt = self.store.kept(
            name, prompt_tokens([m.get("content") or "" for m in messages]), truncate=truncate
        )
        stats = self._stats(load_s, prompt, len(tokens), reason)
        head = {"model": name, "created_at": now_iso()}
        if not stream:
            self._crash_if_asked()
            message = {"role": "assistant", "content": "".join(tokens)}
            self.send_json(200, head | {"message": message} | stats)
            return
        self.start_stream("application/x-ndjson")
        for i, token in enumerate(tokens):
            message = {"role": "assistant", "content": token}
            self.chunk(json.dumps(head | {"message": message, "done": False}).encode() + b"\n")
            if i == 0:
                self._crash_if_asked()
            time.sleep(self.store.options.token_delay_s)
        message = {"role": "assistant", "content": ""}
        self.chunk(json.dumps(head | {"message": message} | stats).encode() + b"\n")
        self.end_stream()

    # -- OpenAI compatibility -----------------------------------------------------------------

    def v1_models(self) -> None:
        data = []
        for name in self.store.names():
            created = int(
                datetime.fromisoformat(self.store.describe(name)["modified_at"]).timestamp()
            )
            data.append({"id": name, "object": "model", "created": created, "owned_by": "library"})
        self.send_json(200, {"object": "list", "data": data})

    def v1_chat(self) -> None:
        body = self.body("openai.ChatCompletionRequest")
        given = get(body, "model", str, "ChatCompletionRequest")
        if not given:
            raise ApiError(400, "model is required")
        messages = self._messages(body, "ChatCompletionRequest")
        if not messages:
            raise ApiError(400, "[] is too short - 'messages'")
        stream = get(body, "stream", bool, "ChatCompletionRequest") is True
        stream_options = get(body, "stream_options", dict, "ChatCompletionRequest") or {}
        include_usage = get(stream_options, "include_usage", bool, "StreamOptions") is True
        limit = get(body, "max_completion_tokens", int, "ChatCompletionRequest")
        if limit is None:
            limit = get(body, "max_tokens", int, "ChatCompletionRequest")
        for key in ("temperature", "top_p"):
            get(body, key, (int, float), "ChatCompletionRequest")
        name, manifest = self.store.require(given, 'model "{}" not found, try pulling it first')
        if "completion" not in self.store.config(manifest)["capabilities"]:
            raise ApiError(400, f'"{given}" does not support chat')
        self.store.load(name, None, {})
        tokens, reason = reply_tokens({} if limit is None else {"num_predict": limit})
        prompt = self.store.kept(name, prompt_tokens([m.get("content") or "" for m in messages]))
        usage = {
            "prompt_tokens": prompt,
            "completion_tokens": len(tokens),
            "total_tokens": prompt + len(tokens),
        }
        head = {
            "id": f"chatcmpl-{int(time.time() * 1000) % 1000}",
            "created": int(time.time()),
            "model": name,
            "system_fingerprint": "fp_ollama",
        }
        if not stream:
            self._crash_if_asked()
            choice = {
                "index": 0,
                "message": {"role": "assistant", "content": "".join(tokens)},
                "finish_reason": reason,
            }
            body_out = head | {"object": "chat.completion", "choices": [choice], "usage": usage}
            self.send_json(200, body_out)
            return
        self.start_stream("text/event-stream")
        chunk_head = head | {"object": "chat.completion.chunk"}

        def event(payload: dict[str, Any]) -> None:
            self.chunk(b"data: " + json.dumps(payload).encode() + b"\n\n")

        for i, token in enumerate(tokens):
            delta = {"role": "assistant", "content": token}
            event(chunk_head | {"choices": [{"index": 0, "delta": delta, "finish_reason": None}]})
            if i == 0:
                self._crash_if_asked()
            time.sleep(self.store.options.token_delay_s)
        delta = {"role": "assistant", "content": ""}
        event(chunk_head | {"choices": [{"index": 0, "delta": delta, "finish_reason": reason}]})
        if include_usage:
            event(chunk_head | {"choices": [], "usage": usage})
        self.chunk(b"data: [DONE]\n\n")
        self.end_stream()


ALL_PATHS = {
    "/",
    "/api/version",
    "/api/tags",
    "/api/ps",
    "/api/pull",
    "/api/show",
    "/api/delete",
    "/api/generate",
    "/api/chat",
    "/api/embed",
    "/v1/chat/completions",
    "/v1/models",
}


def make_server(host: str, port: int, options: Options) -> ThreadingHTTPServer:
    """Bind now; requests wait until --slow-start has passed."""
    store = Store(options)
    handler = type(
        "BoundHandler",
        (Handler,),
        {"store": store, "ready_at": time.monotonic() + options.slow_start_s},
    )
    server = ThreadingHTTPServer((host, port), handler)
    server.daemon_threads = True
    return server
