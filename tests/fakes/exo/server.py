"""A strict STAND-IN for exo's API (exo/api/main.py); no model runs and no cluster forms here.

What it speaks, in exo's shapes: `GET /node_id` (a JSON string), `GET /models` and
`/v1/models` (every model card, placed or not, each `owned_by: "exo"`; `?status=downloaded`),
`GET /state` and `/state/{path}` (camelCase; each instance one tag, `{"MlxRingInstance":
{...}}`), `POST /place_instance` and `DELETE /instance/{id}`, and `POST /v1/chat/completions`:
404 `{"error": {"message": "No instance found for model M", "type": "Not Found", "code":
404}}` for a model without an instance; the answer without `stream` as chunked JSON (exo
sends it as a stream); with `stream`, server-sent events that open with a `: keep-alive`
comment, every chunk `"object": "chat.completion"` with `delta.role` set, the last with
`finish_reason` and `usage`, then a `: generation_stats` comment and `data: [DONE]`; a
failed generation streams `data: {"error": {...}}` then `data: [DONE]`, and without `stream`
drops the connection after the 200's headers, as exo does when its collector raises. Routes
it does not have answer FastAPI's `{"detail": "Not Found"}`; a malformed body FastAPI's 422.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.fakes.http_plumbing import StandinHandler
from tests.fakes.ollama.server import NATURAL_LENGTH, WORDS, prompt_tokens

NODE_ID = "12D3KooWStandinNode0000000000000000000000000000000"
# Cards exo ships (a few of resources/inference_model_cards); a placed model needs a card.
BUILTIN_CARDS = (
    "mlx-community/Llama-3.2-1B-Instruct-4bit",
    "mlx-community/Qwen3-0.6B-4bit",
    "mlx-community/Meta-Llama-3.1-8B-Instruct-4bit",
)
ROLES = {"system", "user", "assistant", "developer", "tool", "function"}
FAILURE = "Runner failed: out of memory"


class ExoError(Exception):
    """exo's HTTPException, answered as `{"error": {"message", "type", "param", "code"}}`."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


@dataclass
class Cluster:
    """The stand-in's state: the model cards it knows and the instances placed."""

    cards: list[str]
    token_delay_s: float = 0.0
    # Generation fails after this many tokens (exo's ErrorChunk): None, never.
    fail_after: int | None = None
    instances: dict[str, str] = field(default_factory=dict)  # instance id -> model id
    lock: threading.Lock = field(default_factory=threading.Lock)

    def place(self, model: str) -> str:
        if model not in self.cards:
            raise ExoError(404, f"Model card not found for {model}")
        instance_id = str(uuid.uuid4())
        with self.lock:
            self.instances[instance_id] = model
        return instance_id

    def served(self) -> set[str]:
        with self.lock:
            return set(self.instances.values())

    def state(self) -> dict[str, Any]:
        with self.lock:
            placed = dict(self.instances)
        runner = {iid: f"runner-{iid[:8]}" for iid in placed}
        return {
            "instances": {
                iid: {
                    "MlxRingInstance": {
                        "instanceId": iid,
                        "shardAssignments": {
                            "modelId": model,
                            "runnerToShard": {
                                runner[iid]: {
                                    "PipelineShardMetadata": {
                                        "modelCard": {"modelId": model},
                                        "deviceRank": 0,
                                        "worldSize": 1,
                                        "startLayer": 0,
                                        "endLayer": 16,
                                        "nLayers": 16,
                                    }
                                }
                            },
                            "nodeToRunner": {NODE_ID: runner[iid]},
                        },
                        "hostsByNode": {NODE_ID: [{"ip": "127.0.0.1", "port": 52416}]},
                        "ephemeralPort": 52416,
                    }
                }
                for iid, model in placed.items()
            },
            "runners": {runner[iid]: {"RunnerReady": {}} for iid in placed},
            "downloads": {},
            "tasks": {},
            "lastSeen": {NODE_ID: "2026-01-01T00:00:00Z"},
            "topology": {"nodes": [NODE_ID], "connections": {}},
            "lastEventAppliedIdx": len(placed),
            "nodeIdentities": {NODE_ID: {"friendlyName": "standin"}},
            "nodeMemory": {},
            "nodeDisk": {},
            "nodeSystem": {},
            "nodeNetwork": {},
            "nodeThunderbolt": {},
            "nodeThunderboltBridge": {},
            "nodeRdmaCtl": {},
            "nodeBackends": {},
            "thunderboltBridgeCycles": [],
            "instanceLinks": {},
            "prefillServerPorts": {},
            "customModelCards": {},
        }


def _card(model: str) -> dict[str, Any]:
    return {
        "id": model,
        "object": "model",
        "created": int(time.time()),
        "owned_by": "exo",
        "hugging_face_id": model,
        "name": model.rsplit("/", 1)[-1],
        "description": "",
        "context_length": 131072,
        "tags": [],
        "storage_size_megabytes": 700,
        "supports_tensor": True,
        "tasks": ["TextGeneration"],
        "is_custom": False,
        "family": "llama",
        "quantization": "4bit",
        "base_model": model,
        "capabilities": ["text"],
        "reasoning_dialect": "none",
    }


def _walk(state: Any, path: str) -> Any:
    for attr in path.split("/"):
        if attr == "":
            continue
        if isinstance(state, dict):
            state = state[attr]
        elif isinstance(state, list):
            state = state[int(attr)]
    return state


def _usage(prompt: int, completion: int) -> dict[str, Any]:
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": 0,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


def _texts(messages: list[Any]) -> list[str]:
    texts: list[str] = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            texts += [p.get("text", "") for p in content if isinstance(p, dict)]
        else:
            texts.append("")
    return texts


class ExoHandler(StandinHandler):
    cluster: Cluster

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _error(self, status: int, message: str) -> None:
        phrase = {404: "Not Found", 400: "Bad Request"}.get(status, "Internal Server Error")
        body = {"error": {"message": message, "type": phrase, "param": None, "code": status}}
        self.send_json(status, body)

    def _body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            return json.loads(raw or b"null")
        except ValueError:
            return None

    def _unprocessable(self, where: str, why: str) -> None:
        detail = [{"type": "missing", "loc": ["body", where], "msg": why, "input": None}]
        self.send_json(422, {"detail": detail})

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        path = parts.path
        try:
            if path == "/node_id":
                self.send_json(200, NODE_ID)
            elif path in ("/models", "/v1/models"):
                status = parse_qs(parts.query).get("status", [None])[0]
                cards = self.cluster.cards
                if status == "downloaded":
                    cards = [c for c in cards if c in self.cluster.served()]
                self.send_json(200, {"object": "list", "data": [_card(c) for c in cards]})
            elif path == "/state" or path.startswith("/state/"):
                sub = path[len("/state") :].lstrip("/")
                try:
                    self.send_json(200, _walk(self.cluster.state(), sub))
                except (KeyError, IndexError, ValueError):
                    shown = sub.replace("/", ".")
                    raise ExoError(404, f"unable to find path '{shown}' in state json") from None
            else:
                self.send_json(404, {"detail": "Not Found"})
        except ExoError as exc:
            self._error(exc.status, exc.message)

    def do_DELETE(self) -> None:
        path = urlsplit(self.path).path
        if not path.startswith("/instance/"):
            self.send_json(404, {"detail": "Not Found"})
            return
        instance_id = path[len("/instance/") :]
        with self.cluster.lock:
            found = self.cluster.instances.pop(instance_id, None)
        if found is None:
            self._error(404, "Instance not found")
            return
        body = {
            "message": "Command received.",
            "command_id": str(uuid.uuid4()),
            "instance_id": instance_id,
        }
        self.send_json(200, body)

    def do_POST(self) -> None:
        path = urlsplit(self.path).path
        body = self._body()
        try:
            if path == "/place_instance":
                self._place(body)
            elif path == "/v1/chat/completions":
                self._chat(body)
            else:
                self.send_json(404, {"detail": "Not Found"})
        except ExoError as exc:
            self._error(exc.status, exc.message)

    def _place(self, body: Any) -> None:
        if not isinstance(body, dict) or not isinstance(body.get("model_id"), str):
            self._unprocessable("model_id", "Field required")
            return
        self.cluster.place(body["model_id"])
        reply = {
            "message": "Command received.",
            "command_id": str(uuid.uuid4()),
            "model_card": {"model_id": body["model_id"]},
        }
        self.send_json(200, reply)

    def _chat(self, body: Any) -> None:
        if not isinstance(body, dict) or not isinstance(body.get("model"), str):
            self._unprocessable("model", "Field required")
            return
        messages = body.get("messages")
        if not isinstance(messages, list) or not all(
            isinstance(m, dict) and m.get("role") in ROLES for m in messages
        ):
            self._unprocessable("messages", "Input should be a valid list of messages")
            return
        model = body["model"]
        if model not in self.cluster.served():
            raise ExoError(404, f"No instance found for model {model}")
        limit = body.get("max_tokens")
        count = NATURAL_LENGTH if not isinstance(limit, int) else min(limit, NATURAL_LENGTH)
        finish = "stop" if count == NATURAL_LENGTH else "length"
        pieces = [WORDS[i % len(WORDS)] + ("" if i == count - 1 else " ") for i in range(count)]
        prompt = prompt_tokens(_texts(messages))
        command_id = str(uuid.uuid4())
        if body.get("stream"):
            self._stream(command_id, model, pieces, finish, prompt)
        else:
            self._collected(command_id, model, pieces, finish, prompt)

    def _stream(
        self, command_id: str, model: str, pieces: list[str], finish: str, prompt: int
    ) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.send_header("X-Accel-Buffering", "no")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.close_connection = True
        self.chunk(b": keep-alive\n\n")
        for i, text in enumerate(pieces):
            if self.cluster.token_delay_s:
                time.sleep(self.cluster.token_delay_s)
            if i == self.cluster.fail_after:
                # generate_chat_stream on an ErrorChunk: the error as data, then [DONE].
                error = {"message": FAILURE, "type": "InternalServerError", "code": 500}
                self.chunk(f"data: {json.dumps({'error': error})}\n\n".encode())
                self.chunk(b"data: [DONE]\n\n")
                self.end_stream()
                return
            last = i == len(pieces) - 1
            choice: dict[str, Any] = {"index": 0, "delta": {"role": "assistant", "content": text}}
            chunk: dict[str, Any] = {
                "id": command_id,
                "object": "chat.completion",
                "created": int(time.time()),
                "model": model,
                "choices": [choice],
            }
            if last:
                choice["finish_reason"] = finish
                chunk["usage"] = _usage(prompt, len(pieces))
            self.chunk(f"data: {json.dumps(chunk)}\n\n".encode())
        stats = {
            "prompt_tps": 512.0,
            "generation_tps": 64.0,
            "prompt_tokens": prompt,
            "generation_tokens": len(pieces),
            "peak_memory_usage": {"inBytes": 1 << 30},
            "prefix_cache_hit": "none",
        }
        self.chunk(f": generation_stats {json.dumps(stats)}\n\n".encode())
        self.chunk(b"data: [DONE]\n\n")
        self.end_stream()

    def _collected(
        self, command_id: str, model: str, pieces: list[str], finish: str, prompt: int
    ) -> None:
        if self.cluster.fail_after is not None:
            # collect_chat_response raises once the 200 and its headers are out: uvicorn
            # then drops the connection mid-body.
            self.start_stream("application/json")
            self.wfile.flush()
            self.close_connection = True
            return
        reply = {
            "id": command_id,
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": "".join(pieces)},
                    "finish_reason": finish,
                }
            ],
            "usage": _usage(prompt, len(pieces)),
        }
        # exo answers through a StreamingResponse: chunked, no Content-Length.
        self.start_stream("application/json")
        self.chunk(json.dumps(reply).encode())
        self.end_stream()


def make_server(port: int, cluster: Cluster) -> ThreadingHTTPServer:
    """exo binds 0.0.0.0; the stand-in binds loopback only, so tests never reach the LAN."""
    handler = type("BoundExoHandler", (ExoHandler,), {"cluster": cluster})
    server = ThreadingHTTPServer(("127.0.0.1", port), handler)
    server.daemon_threads = True
    return server
