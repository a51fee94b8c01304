"""A strict STAND-IN for vLLM's and SGLang's OpenAI-compatible HTTP servers; no model runs here.

One engine state (counters, histograms, a scheduler of `max_running` slots) behind a stdlib
`ThreadingHTTPServer` speaking HTTP/1.1 with chunked SSE streams. The two personalities differ
only where the real servers do: readiness, auth, native endpoints and metric names.
"""

from __future__ import annotations

import json
import sys
import threading
import time
import uuid
from collections.abc import Callable, Generator
from contextlib import closing
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from tests.fakes.http_plumbing import StandinHandler
from tests.fakes.ollama.server import NATURAL_LENGTH, WORDS, prompt_tokens
from tests.fakes.openai_engines.exposition import (
    TOKEN_BUCKETS,
    Histogram,
    sglang_metrics,
    vllm_metrics,
)
from tests.fakes.openai_engines.shapes import (
    REASONING_PIECES,
    Piece,
    Script,
    Writer,
    completion_id,
    dumps,
    first_tool_name,
    script,
    timings_for,
    tool_call_id,
    usage_for,
)

VLLM_VERSION = "0.11.0"
SGLANG_VERSION = "0.5.4"
ROLES = {"system", "user", "assistant", "tool", "developer"}
KV_CAPACITY_PER_SEQ = 4  # pretend KV cache: max_model_len * 4 tokens in all


class ApiError(Exception):
    """An OpenAI-shaped error: `{"error": {"message", "type", "param", "code"}}`."""

    def __init__(self, status: int, message: str, kind: str = "BadRequestError") -> None:
        super().__init__(message)
        self.status, self.message, self.kind = status, message, kind
        self.param: str | None = "model" if status == 404 else None


@dataclass
class Settings:
    """What the command line chose; `server_args` is echoed by SGLang's /get_server_info."""

    personality: str  # "vllm" or "sglang"
    model: str
    served_names: list[str]
    host: str
    port: int
    api_key: str | None = None
    load_s: float = 0.3
    token_delay_s: float = 0.0
    die_after_s: float | None = None
    wedge_after_s: float | None = None
    wedge_timeout_s: float = 20.0
    max_model_len: int = 4096
    max_running: int = 256
    enable_metrics: bool = True
    metric_names: str = "both"
    server_args: dict[str, Any] = field(default_factory=dict)
    # --allowed-media-domains: none means every host, as in both engines.
    allowed_media_domains: list[str] = field(default_factory=list)
    # Stand-in only: a JSON-lines file each request body received is appended to.
    record_path: str | None = None
    # vLLM: --enable-auto-tool-choice; both: --tool-call-parser, --reasoning-parser.
    auto_tool_choice: bool = False
    tool_parser: str | None = None
    reasoning_parser: str | None = None
    # Stand-in only: whose bytes a reply with reasoning or tool calls has (llamacpp, vllm,
    # sglang; default: the personality's), and vLLM's reasoning field for its version.
    shape: str | None = None
    reasoning_field: str = "reasoning"


class Engine:
    """The pretend engine: readiness clock, scheduler slots and every served-token counter."""

    def __init__(self, settings: Settings, ready_at: float) -> None:
        self.settings = settings
        self.ready_at = ready_at
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.slots = threading.Semaphore(settings.max_running)
        self.running = 0
        self.waiting = 0
        self.kv_tokens = 0
        self.prompt_tokens = 0
        self.cached_prompt_tokens = 0
        self.generation_tokens = 0
        self.success: dict[str, int] = {}
        self.ttft = Histogram()
        self.itl = Histogram()
        self.e2e = Histogram()
        # Observed as each request ends, as vLLM does: its mean time per output token after
        # the first, its prefill (scheduled to first token) and its prompt size.
        self.request_tpot = Histogram()
        self.prefill = Histogram()
        self.request_prompt = Histogram(TOKEN_BUCKETS)
        self.last_throughput = 0.0
        self.seen_prompts: set[str] = set()

    # -- state --------------------------------------------------------------------------------

    def ready(self) -> bool:
        return time.monotonic() >= self.ready_at

    def dead(self) -> bool:
        after = self.settings.die_after_s
        return after is not None and time.monotonic() >= self.ready_at + after

    def wedged(self) -> bool:
        after = self.settings.wedge_after_s
        return after is not None and time.monotonic() >= self.ready_at + after

    def kv_usage(self) -> float:
        return self.kv_tokens / (self.settings.max_model_len * KV_CAPACITY_PER_SEQ)

    def wait_ready(self) -> None:
        self.stop.wait(max(0.0, self.ready_at - time.monotonic()))

    def record(self, entry: dict[str, Any]) -> None:
        """Append `entry` to --record-requests, before the request is answered."""
        if self.settings.record_path is None:
            return
        with self.lock, Path(self.settings.record_path).open("a", encoding="utf-8") as out:
            out.write(json.dumps(entry) + "\n")

    # -- generation ---------------------------------------------------------------------------

    def generate(
        self, prompt: int, key: str, tokens: list[str], reason: str
    ) -> Generator[str, None, None]:
        """Schedule, 'prefill', then yield tokens paced by --token-delay; counts as it goes."""
        start = time.monotonic()
        with self.lock:
            self.waiting += 1
        self.slots.acquire()
        scheduled = time.monotonic()
        with self.lock:
            self.waiting -= 1
            self.running += 1
            self.kv_tokens += prompt
            self.prompt_tokens += prompt
            if key in self.seen_prompts:
                self.cached_prompt_tokens += prompt
            self.seen_prompts.add(key)
        made = 0
        first = last = start
        try:
            for token in tokens:
                if self.stop.wait(self.settings.token_delay_s):
                    return
                now = time.monotonic()
                with self.lock:
                    self.generation_tokens += 1
                    self.kv_tokens += 1
                    made += 1
                    if made == 1:
                        first = now
                        self.ttft.observe(now - start)
                    else:
                        self.itl.observe(now - last)
                last = now
                yield token
            with self.lock:
                self.success[reason] = self.success.get(reason, 0) + 1
                if made > 1:
                    self.last_throughput = (made - 1) / max(last - first, 1e-6)
        finally:
            with self.lock:
                self.running -= 1
                self.kv_tokens -= prompt + made
                self.e2e.observe(time.monotonic() - start)
                self.request_tpot.observe((last - first) / (made - 1) if made > 1 else 0.0)
                self.prefill.observe(first - scheduled if made else 0.0)
                self.request_prompt.observe(prompt)
            self.slots.release()

    # -- metrics ------------------------------------------------------------------------------

    def metrics(self) -> str:
        with self.lock:
            if self.settings.personality == "vllm":
                return vllm_metrics(self)
            return sglang_metrics(self)


# -- request parsing --------------------------------------------------------------------------


def _check(body: dict[str, Any], key: str, kind: type | tuple[type, ...]) -> Any:
    """`body[key]` if present and of `kind` (bools are not numbers), else a 400."""
    value = body.get(key)
    if value is None:
        return None
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if (isinstance(value, bool) and bool not in kinds) or not isinstance(value, kinds):
        names = " or ".join(k.__name__ for k in kinds)
        raise ApiError(400, f"1 validation error: '{key}' should be a valid {names}")
    return value


def _text(content: object) -> str:
    if isinstance(content, list):
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content or "")


def _check_tool_turns(message: dict[str, Any]) -> None:
    """As the engines' request models: a tool message names its call; an assistant's calls
    are functions with a name and arguments as a JSON string."""
    if message.get("role") == "tool" and not isinstance(message.get("tool_call_id"), str):
        raise ApiError(400, "1 validation error: tool message: 'tool_call_id' field required")
    for call in message.get("tool_calls") or []:
        function = call.get("function") if isinstance(call, dict) else None
        if (
            not isinstance(call, dict)
            or not isinstance(call.get("id"), str)
            or not isinstance(function, dict)
            or not isinstance(function.get("name"), str)
            or not isinstance(function.get("arguments"), str)
        ):
            raise ApiError(400, f"1 validation error: invalid tool call {call!r}")


def _unparsed_call(tool: str, think: bool) -> Script:
    """What a model's Hermes-style call looks like when no parser reads it: content."""
    call = json.dumps({"name": tool, "arguments": {"location": "Paris, France"}})
    texts = ["<tool_call>", "\n", call, "\n", "</tool_call>"]
    thought = [Piece("reasoning", t) for t in REASONING_PIECES] if think else []
    return Script((*thought, *(Piece("content", t) for t in texts)), None, "stop")


def _sglang_validate(context_len: int, prompt: int, limit: int | None) -> None:
    """SGLang's own length checks (tokenizer_manager): the total must stay below the
    context length, in its own words."""
    if prompt >= context_len:
        raise ApiError(
            400,
            f"The input ({prompt} tokens) is longer than the model's context length "
            f"({context_len} tokens).",
        )
    if limit is not None and prompt + limit >= context_len:
        raise ApiError(
            400,
            "Requested token count exceeds the model's maximum context length of "
            f"{context_len} tokens. You requested a total of {prompt + limit} tokens: {prompt} "
            f"tokens from the input messages and {limit} tokens for the completion. Please "
            "reduce the number of tokens in the input messages or the completion to fit "
            "within the limit.",
        )


@dataclass
class Job:
    """A validated request: who asked, the pretend prompt and reply, and how to stream."""

    model: str
    prompt: int
    key: str
    tokens: list[str]
    reason: str
    stream: bool
    include_usage: bool
    continuous_usage: bool

    def usage(self, completion: int | None = None) -> dict[str, Any]:
        done = len(self.tokens) if completion is None else completion
        return {
            "prompt_tokens": self.prompt,
            "total_tokens": self.prompt + done,
            "completion_tokens": done,
            "prompt_tokens_details": None,
        }


# Starlette's CORSMiddleware with allow_methods=["*"]: what a preflight is told.
CORS_METHODS = "DELETE, GET, HEAD, OPTIONS, PATCH, POST, PUT"
CORS_MAX_AGE_S = "600"


class Handler(StandinHandler):
    """Routes the OpenAI API shared by both engines; subclasses add their own endpoints.

    As the real servers stack their middleware: the API-key check outermost (OPTIONS always
    passes it, and its 401 carries no CORS header), then Starlette's CORSMiddleware with
    allow_origins=["*"], allow_methods=["*"], allow_headers=["*"]: every origin is told
    `Access-Control-Allow-Origin: *`, and a preflight is answered 200 whatever its origin.
    """

    engine: Engine
    owned_by = "vllm"
    # vLLM's --allow-credentials defaults to off; SGLang turns credentials on.
    cors_credentials = False
    extra_headers: list[tuple[str, str]]  # CORS headers added to this reply

    # -- plumbing (as the Ollama stand-in, with FastAPI's 404/405) ------------------------------

    def log_message(self, format: str, *args: object) -> None:
        sys.stderr.write(f"INFO:     {self.address_string()} - {format % args}\n")

    def event(self, payload: object) -> None:
        self.chunk(b"data: " + json.dumps(payload).encode() + b"\n\n")

    def read_body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        self.engine.record({"path": self.path, "body": raw.decode("utf-8", "replace")})
        return raw

    def json_body(self, raw: bytes) -> dict[str, Any]:
        try:
            body = json.loads(raw)
        except ValueError as exc:
            raise ApiError(400, f"JSON decode error: {exc}") from None
        if not isinstance(body, dict):
            raise ApiError(400, "1 validation error: Input should be a valid dictionary")
        return body

    def routes(self, method: str) -> dict[str, Callable[[bytes], None]]:
        raise NotImplementedError

    def allowed(self, path: str) -> bool:
        """Whether the request passes the API-key check (each engine guards its own paths)."""
        key = self.engine.settings.api_key
        return not key or self.headers.get("Authorization") == f"Bearer {key}"

    def end_headers(self) -> None:
        for name, value in self.__dict__.pop("extra_headers", ()):
            self.send_header(name, value)
        super().end_headers()

    def cors_simple(self, origin: str) -> None:
        """Starlette's simple response with every origin allowed: `*`, or the origin itself
        when credentials are on and the request carries a cookie."""
        extra = [("Access-Control-Allow-Origin", "*")]
        if self.cors_credentials:
            extra.append(("Access-Control-Allow-Credentials", "true"))
            if self.headers.get("Cookie"):
                extra = [("Access-Control-Allow-Origin", origin), *extra[1:], ("Vary", "Origin")]
        self.extra_headers = extra

    def cors_preflight(self, origin: str) -> None:
        """Starlette's preflight answer: 200 "OK" for any origin, method and headers."""
        extra = [("Access-Control-Allow-Methods", CORS_METHODS)]
        extra.append(("Access-Control-Max-Age", CORS_MAX_AGE_S))
        if self.cors_credentials:  # explicit origin, as Starlette does with credentials
            extra += [("Access-Control-Allow-Origin", origin), ("Vary", "Origin")]
            extra.append(("Access-Control-Allow-Credentials", "true"))
        else:
            extra.append(("Access-Control-Allow-Origin", "*"))
        requested = self.headers.get("Access-Control-Request-Headers")
        if requested:
            extra.append(("Access-Control-Allow-Headers", requested))
        self.extra_headers = extra
        self.send_bytes(200, b"OK", "text/plain; charset=utf-8")

    def dispatch(self, method: str) -> None:
        raw = self.read_body() if method == "POST" else b""
        path = self.path.split("?", 1)[0]
        origin = self.headers.get("Origin")
        if method == "OPTIONS" and origin and self.headers.get("Access-Control-Request-Method"):
            self.cors_preflight(origin)
            return
        if method != "OPTIONS" and not self.allowed(path):
            self.send_json(401, {"error": "Unauthorized"})
            return
        if origin:
            self.cors_simple(origin)
        route = self.routes(method).get(path)
        if route is None:
            known = any(path in self.routes(m) for m in ("GET", "POST"))
            if known:
                self.send_json(405, {"detail": "Method Not Allowed"})
            else:
                self.send_json(404, {"detail": "Not Found"})
            return
        try:
            route(raw)
        except ApiError as exc:
            error = {"message": exc.message, "type": exc.kind, "param": exc.param}
            self.send_json(exc.status, {"error": error | {"code": exc.status}})
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def do_GET(self) -> None:
        self.dispatch("GET")

    def do_POST(self) -> None:
        self.dispatch("POST")

    def do_HEAD(self) -> None:
        self.dispatch("GET")

    def do_DELETE(self) -> None:
        self.dispatch("DELETE")

    def do_OPTIONS(self) -> None:
        self.dispatch("OPTIONS")

    # -- shared endpoints ---------------------------------------------------------------------

    def metrics(self, raw: bytes) -> None:
        text = self.engine.metrics().encode()
        self.send_bytes(200, text, "text/plain; version=0.0.4; charset=utf-8")

    def v1_models(self, raw: bytes) -> None:
        settings = self.engine.settings
        data = [
            {
                "id": name,
                "object": "model",
                "created": int(time.time()),
                "owned_by": self.owned_by,
                "root": settings.model,
                "parent": None,
                "max_model_len": settings.max_model_len,
            }
            for name in settings.served_names
        ]
        self.send_json(200, {"object": "list", "data": data})

    def before_generate(self) -> None:
        """Hook: wait, hang or refuse before generating (the engines differ)."""

    def tokenize(self, raw: bytes) -> None:
        """vLLM's `POST /tokenize` (a `prompt`, or a chat's `messages` rendered and counted)
        and SGLang's `POST /v1/tokenize` (a `prompt` only): `{"tokens", "count",
        "max_model_len"}`, counted as chat and completions count the prompt here."""
        body = self.json_body(raw)
        settings = self.engine.settings
        given = _check(body, "model", str)
        if given and given not in settings.served_names:
            raise ApiError(404, f"The model `{given}` does not exist.", "NotFoundError")
        messages = body.get("messages")
        if messages is not None and settings.personality == "vllm":
            if not isinstance(messages, list):
                raise ApiError(400, "1 validation error: 'messages' should be a valid list")
            count = prompt_tokens([_text(m.get("content")) for m in messages])
        else:
            prompt = body.get("prompt")
            if not isinstance(prompt, str):
                raise ApiError(400, "1 validation error: 'prompt' field required")
            count = max(len(prompt.split()), 1)
        answer = {"count": count, "max_model_len": settings.max_model_len}
        self.send_json(200, answer | {"tokens": list(range(count))})

    def _job(self, body: dict[str, Any], prompt: int, key: str) -> Job:
        settings = self.engine.settings
        given = _check(body, "model", str)
        if given and given not in settings.served_names:
            raise ApiError(404, f"The model `{given}` does not exist.", "NotFoundError")
        stream = _check(body, "stream", bool) is True
        options = _check(body, "stream_options", dict)
        if options is not None and not stream:
            raise ApiError(400, "Stream options can only be defined when `stream=True`.")
        options = options or {}
        limit = _check(body, "max_completion_tokens", int)
        if limit is None:
            limit = _check(body, "max_tokens", int)
        if limit is not None and limit < 1:
            raise ApiError(400, f"max_tokens must be at least 1, got {limit}.")
        n = _check(body, "n", int)
        if n not in (None, 1):
            raise ApiError(400, "n must be 1 (the stand-in serves one choice)")
        for name in ("temperature", "top_p", "presence_penalty", "frequency_penalty"):
            _check(body, name, (int, float))
        _check(body, "stop", (str, list))
        ignore_eos = _check(body, "ignore_eos", bool) is True
        if settings.personality == "sglang":
            _sglang_validate(settings.max_model_len, prompt, limit)
        room = settings.max_model_len - prompt
        if room < 0:
            raise ApiError(
                400,
                f"This model's maximum context length is {settings.max_model_len} tokens. "
                f"However, your request has {prompt} input tokens. Please reduce the length "
                "of the input messages.",
            )
        if limit is not None and limit > room:
            raise ApiError(
                400,
                f"This model's maximum context length is {settings.max_model_len} tokens. "
                f"However, you requested {prompt + limit} tokens ({prompt} in the messages, "
                f"{limit} in the completion). Please reduce the length of the messages or "
                "completion.",
            )
        natural = room if ignore_eos else NATURAL_LENGTH
        count = min(natural, room) if limit is None else min(limit, natural)
        reason = "length" if count < NATURAL_LENGTH or ignore_eos else "stop"
        tokens = [("" if i == 0 else " ") + WORDS[i % len(WORDS)] for i in range(count)]
        return Job(
            model=given or settings.served_names[0],
            prompt=prompt,
            key=key,
            tokens=tokens,
            reason=reason,
            stream=stream,
            include_usage=_check(options, "include_usage", bool) is True,
            continuous_usage=_check(options, "continuous_usage_stats", bool) is True,
        )

    def chat(self, raw: bytes) -> None:
        body = self.json_body(raw)
        messages = _check(body, "messages", list)
        if not messages:
            raise ApiError(400, "1 validation error: 'messages' field required, non-empty")
        for message in messages:
            if not isinstance(message, dict) or message.get("role") not in ROLES:
                raise ApiError(400, f"1 validation error: invalid message {message!r}")
            _check(message, "content", (str, list))
        for message in messages:
            self._check_media(message.get("content"))
            _check_tool_turns(message)
        texts = [_text(m.get("content")) for m in messages]
        job = self._job(body, prompt_tokens(texts), json.dumps(messages, sort_keys=True))
        tool = self._tool_to_call(body)
        settings = self.engine.settings
        think = settings.reasoning_parser is not None
        self.before_generate()
        if tool is not None or think or settings.shape is not None:
            self.serve_shaped(job, body, tool, think)
            return
        self.serve(job, chat=True)

    def _tool_to_call(self, body: dict[str, Any]) -> str | None:
        """The tool a scripted turn calls; refused as the engine refuses it."""
        tools = _check(body, "tools", list)
        for tool in tools or []:
            function = tool.get("function") if isinstance(tool, dict) else None
            if not isinstance(function, dict) or not isinstance(function.get("name"), str):
                raise ApiError(400, f"1 validation error: invalid tool {tool!r}")
        name = first_tool_name(body)
        last = body["messages"][-1]
        if last.get("role") == "tool":
            # The call was answered: the scripted model now answers in words.
            name = None
        settings = self.engine.settings
        auto = body.get("tool_choice") in (None, "auto")
        if name is None or not auto:
            return name
        if settings.personality == "vllm" and not (
            settings.auto_tool_choice and settings.tool_parser
        ):
            # vLLM's own words (serving_chat.py) when started without a parser.
            raise ApiError(
                400,
                '"auto" tool choice requires --enable-auto-tool-choice and '
                "--tool-call-parser to be set",
            )
        return name

    def serve_shaped(self, job: Job, body: dict[str, Any], tool: str | None, think: bool) -> None:
        """A scripted reply (reasoning, a tool call, words) in the chosen engine's bytes."""
        settings = self.engine.settings
        shape = settings.shape or settings.personality
        if tool is not None and settings.personality == "sglang" and not settings.tool_parser:
            # SGLang without a parser passes the model's call through as plain text.
            reply = _unparsed_call(tool, think)
        else:
            reply = script(think=think, tool_name=tool, words=job.tokens, finish_reason=job.reason)
        limit = _check(body, "max_completion_tokens", int) or _check(body, "max_tokens", int)
        if limit is not None and limit < len(reply.pieces):
            kept = reply.pieces[:limit]
            called = reply.tool_name if any(p.kind == "name" for p in kept) else None
            reply = Script(kept, called, "length")
        seed = job.key + json.dumps(body.get("tools"), sort_keys=True)
        writer = Writer(
            shape,
            completion=completion_id(shape, seed),
            model=job.model,
            created=int(time.time()),
            call_id=tool_call_id(shape, seed),
            reasoning_field=settings.reasoning_field,
        )
        pieces = reply.pieces
        usage = usage_for(shape, job.prompt, len(pieces))
        timings = timings_for(shape, job.prompt, len(pieces))
        tokens = self.engine.generate(job.prompt, job.key, [p.text for p in pieces], job.reason)
        if not job.stream:
            with closing(tokens):
                for _ in tokens:
                    pass
            body_bytes = dumps(shape, writer.whole(reply, usage, timings))
            self.send_bytes(200, body_bytes, self.json_content_type)
            return
        self.start_stream("text/event-stream; charset=utf-8")

        def send(payload: dict[str, Any]) -> None:
            self.chunk(b"data: " + dumps(shape, payload) + b"\n\n")

        send(writer.first())
        with closing(tokens):
            for index, _ in enumerate(tokens):
                send(writer.piece(pieces[index]))
        send(writer.finish(reply.finish_reason, None if job.include_usage else timings))
        if job.include_usage:
            send(writer.usage_chunk(usage, timings))
        self.chunk(b"data: [DONE]\n\n")
        self.end_stream()

    def _check_media(self, content: object) -> None:
        """As vLLM's media connector: an http(s) URL must be on an allowed host (when any
        is set). The stand-in fetches nothing either way."""
        allowed = self.engine.settings.allowed_media_domains
        for part in content if isinstance(content, list) else []:
            for key in ("image_url", "video_url", "audio_url"):
                media = part.get(key) if isinstance(part, dict) else None
                url = media.get("url") if isinstance(media, dict) else media
                if not isinstance(url, str) or not url.startswith("http"):
                    continue
                host = urlsplit(url).hostname
                if allowed and host not in allowed:
                    raise ApiError(
                        400,
                        f"The URL must be from one of the allowed domains: {allowed}. "
                        f"Input URL domain: {host}",
                    )

    def completions(self, raw: bytes) -> None:
        body = self.json_body(raw)
        prompt = body.get("prompt")
        if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], str):
            prompt = prompt[0]
        if isinstance(prompt, str):
            count = len(prompt.split())
        elif isinstance(prompt, list) and prompt and all(type(x) is int for x in prompt):
            count = len(prompt)
        else:
            raise ApiError(400, "1 validation error: 'prompt' must be a string or token ids")
        job = self._job(body, max(count, 1), json.dumps(prompt))
        self.before_generate()
        self.serve(job, chat=False)

    def serve(self, job: Job, *, chat: bool) -> None:
        kind = "chat.completion" if chat else "text_completion"
        head = {
            "id": f"{'chatcmpl' if chat else 'cmpl'}-{uuid.uuid4().hex}",
            "object": kind,
            "created": int(time.time()),
            "model": job.model,
        }
        tokens = self.engine.generate(job.prompt, job.key, job.tokens, job.reason)
        if not job.stream:
            text = "".join(tokens)
            if chat:
                message = {"role": "assistant", "content": text, "tool_calls": []}
                choice: dict[str, Any] = {"index": 0, "message": message}
            else:
                choice = {"index": 0, "text": text}
            choice |= {"logprobs": None, "finish_reason": job.reason, "stop_reason": None}
            self.send_json(200, head | {"choices": [choice], "usage": job.usage()})
            return
        head["object"] = f"{kind}.chunk" if chat else kind
        self.start_stream("text/event-stream; charset=utf-8")

        def emit(index: int, choice: dict[str, Any]) -> None:
            payload = head | {"choices": [{"index": 0, **choice, "logprobs": None}]}
            if job.continuous_usage:
                payload["usage"] = job.usage(index)
            elif job.include_usage:
                payload["usage"] = None
            self.event(payload)

        if chat:
            emit(0, {"delta": {"role": "assistant", "content": ""}, "finish_reason": None})
        with closing(tokens):
            for i, token in enumerate(tokens, 1):
                last = i == len(job.tokens)
                piece = {"delta": {"content": token}} if chat else {"text": token}
                emit(i, piece | {"finish_reason": job.reason if last else None})
        if not job.tokens:
            empty: dict[str, Any] = {"delta": {}} if chat else {"text": ""}
            emit(0, empty | {"finish_reason": job.reason})
        if job.include_usage:
            self.event(head | {"choices": [], "usage": job.usage()})
        self.chunk(b"data: [DONE]\n\n")
        self.end_stream()


class VllmHandler(Handler):
    """vLLM: the server binds only once loaded; /health 503 once the engine died."""

    owned_by = "vllm"

    def allowed(self, path: str) -> bool:
        return not path.startswith("/v1") or super().allowed(path)

    def routes(self, method: str) -> dict[str, Callable[[bytes], None]]:
        if method == "GET":
            return {
                "/health": self.health,
                "/ping": self.health,
                "/version": self.version,
                "/metrics": self.metrics,
                "/v1/models": self.v1_models,
            }
        if method == "POST":
            return {
                "/v1/chat/completions": self.chat,
                "/v1/completions": self.completions,
                "/tokenize": self.tokenize,
                "/ping": self.health,
            }
        return {}

    def health(self, raw: bytes) -> None:
        self.send_bytes(503 if self.engine.dead() else 200, b"", "application/json")

    def version(self, raw: bytes) -> None:
        self.send_json(200, {"version": VLLM_VERSION})

    def before_generate(self) -> None:
        if self.engine.dead():
            raise ApiError(
                500,
                "EngineCore encountered an issue. See stack trace (above) for the root cause.",
                "InternalServerError",
            )


class SglangHandler(Handler):
    """SGLang: binds at once; /health is liveness only, /health_generate really generates."""

    owned_by = "sglang"
    cors_credentials = True  # http_server.py: CORSMiddleware(..., allow_credentials=True)

    def allowed(self, path: str) -> bool:
        if path.startswith(("/health", "/metrics")):
            return True
        return super().allowed(path)

    def routes(self, method: str) -> dict[str, Callable[[bytes], None]]:
        if method == "GET":
            routes: dict[str, Callable[[bytes], None]] = {
                "/health": self.health,
                "/health_generate": self.health_generate,
                "/get_model_info": self.model_info,
                "/model_info": self.model_info,
                "/get_server_info": self.server_info,
                "/server_info": self.server_info,
                "/v1/models": self.v1_models,
            }
            if self.engine.settings.enable_metrics:
                routes["/metrics"] = self.metrics
            return routes
        if method == "POST":
            return {
                "/v1/chat/completions": self.chat,
                "/v1/completions": self.completions,
                "/v1/tokenize": self.tokenize,
                "/tokenize": self.tokenize,
            }
        return {}

    def health(self, raw: bytes) -> None:
        self.send_bytes(200, b"", "application/json")

    def _hang_if_wedged(self) -> bool:
        """Wedged: hang up to --wedge-timeout (or until SIGTERM). True when it gave up."""
        if not self.engine.wedged():
            return False
        self.engine.stop.wait(self.engine.settings.wedge_timeout_s)
        return True

    def health_generate(self, raw: bytes) -> None:
        if not self.engine.ready() or self._hang_if_wedged():
            self.send_bytes(503, b"", "application/json")
            return
        with closing(self.engine.generate(1, "health_generate", ["."], "length")) as tokens:
            for _ in tokens:
                pass
        self.send_bytes(200, b"", "application/json")

    def before_generate(self) -> None:
        self.engine.wait_ready()  # requests queue while the model loads
        if self._hang_if_wedged():
            raise ApiError(503, "The server is not responding (wedged).", "ServiceUnavailable")

    def model_info(self, raw: bytes) -> None:
        model = self.engine.settings.model
        self.send_json(
            200,
            {
                "model_path": model,
                "tokenizer_path": model,
                "is_generation": True,
                "preferred_sampling_params": None,
                "weight_version": "default",
            },
        )

    def server_info(self, raw: bytes) -> None:
        settings = self.engine.settings
        info = dict(settings.server_args)
        info |= {
            "version": SGLANG_VERSION,
            "max_total_num_tokens": settings.max_model_len * KV_CAPACITY_PER_SEQ,
            "internal_states": [{"last_gen_throughput": self.engine.last_throughput}],
        }
        self.send_json(200, info)


def make_server(settings: Settings, ready_at: float) -> tuple[ThreadingHTTPServer, Engine]:
    """Bind now (the caller chooses when: vLLM after loading, SGLang at once)."""
    engine = Engine(settings, ready_at)
    base = VllmHandler if settings.personality == "vllm" else SglangHandler
    handler = type("BoundHandler", (base,), {"engine": engine})
    server = ThreadingHTTPServer((settings.host, settings.port), handler)
    server.daemon_threads = True
    return server, engine
