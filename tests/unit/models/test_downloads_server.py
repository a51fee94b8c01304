"""A small Hub for the download tests (stdlib, in a thread), and checks that huggingface_hub
reads it as it reads the real one.

It speaks the part of the Hub's HTTP API a download uses: model info, the file tree (LFS
sha256 and git ids), HEAD and GET on `resolve` with ETag, X-Repo-Commit, Range/206 and
redirects to a second server on another port (a CDN: another origin). Faults are set per
test: hold the body at a byte count (a stall), ignore Range, flip a byte, refuse.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import shutil
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from huggingface_hub import HfApi, hf_hub_download, scan_cache_dir
from huggingface_hub.file_download import get_hf_file_metadata, hf_hub_url

from roundhouse.api.downloads import DownloadItem, DownloadState
from roundhouse.api.settings import ModelsSettings
from roundhouse.core.models.downloads import DownloadService

COMMIT = "0123456789abcdef0123456789abcdef01234567"
_RANGE = re.compile(r"^bytes=(\d+)-$")


def git_oid(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\x00" % len(data) + data).hexdigest()


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass
class RepoFiles:
    files: dict[str, bytes]
    lfs: set[str] = field(default_factory=set)
    commit: str = COMMIT
    gated: bool = False
    # Hostile answers: a tree entry naming these paths, an ETag, a commit.
    tree_extra: list[str] = field(default_factory=list)
    etag_override: str | None = None


@dataclass
class Faults:
    hold_at: int | None = None  # send this many bytes, then wait for `release`
    hold_times: int = 0  # ...in this many GET replies (0: every one while hold_at is set)
    ignore_range: bool = False  # answer 200 with the whole file to a Range request
    flip_byte_at: int | None = None  # send a wrong byte here
    redirect: bool = False  # GET resolve answers 302 to the CDN server
    chunk: int = 64 * 1024
    chunk_delay_s: float = 0.0  # a slow server


@dataclass
class Request:
    server: str
    method: str
    path: str
    headers: dict[str, str]


class FakeHub:
    """The Hub server and its CDN (another port, so another origin)."""

    def __init__(self) -> None:
        self.repos: dict[str, RepoFiles] = {}
        self.faults = Faults()
        self.release = threading.Event()
        self.requests: list[Request] = []
        self.open_gets = 0
        self.max_open_gets = 0
        self._held = 0
        self._lock = threading.Lock()
        self.hub = _server(self, "hub")
        self.cdn = _server(self, "cdn")
        self.url = f"http://127.0.0.1:{self.hub.server_address[1]}"
        self.cdn_url = f"http://127.0.0.1:{self.cdn.server_address[1]}"

    def add(self, repo: str, files: RepoFiles) -> None:
        self.repos[repo] = files

    def file_gets(self) -> list[Request]:
        """GETs of file bytes, wherever they were served."""
        return [
            r
            for r in self.requests
            if r.method == "GET" and ("/resolve/" in r.path or r.path.startswith("/cdn/"))
        ]

    def should_hold(self) -> bool:
        with self._lock:
            if self.faults.hold_at is None:
                return False
            if self.faults.hold_times and self._held >= self.faults.hold_times:
                return False
            self._held += 1
            return True

    def get_started(self) -> None:
        with self._lock:
            self.open_gets += 1
            self.max_open_gets = max(self.max_open_gets, self.open_gets)

    def get_ended(self) -> None:
        with self._lock:
            self.open_gets -= 1

    def close(self) -> None:
        self.release.set()
        for server in (self.hub, self.cdn):
            server.shutdown()
            server.server_close()


def _server(hub: FakeHub, name: str) -> ThreadingHTTPServer:
    handler = type(f"{name}Handler", (_Handler,), {"hub": hub, "name": name})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    hub: FakeHub
    name: str

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_HEAD(self) -> None:
        self._dispatch()

    def do_GET(self) -> None:
        self._dispatch()

    def _dispatch(self) -> None:
        path = urlsplit(self.path).path
        self.hub.requests.append(
            Request(self.name, self.command, path, {k.lower(): v for k, v in self.headers.items()})
        )
        if self.name == "cdn":
            match = re.match(r"^/cdn/([^/]+/[^/]+)/(.+)$", unquote(path))
            if not match:
                return self._json(404, {"error": "no such blob"})
            return self._send_file(match.group(1), match.group(2))
        api = re.match(r"^/api/models/([^/]+/[^/]+)(?:/revision/([^/]+))?$", path)
        if api:
            return self._model_info(api.group(1))
        tree = re.match(r"^/api/models/([^/]+/[^/]+)/tree/([^/]+)$", path)
        if tree:
            return self._tree(tree.group(1))
        resolve = re.match(r"^/([^/]+/[^/]+)/resolve/([^/]+)/(.+)$", path)
        if resolve:
            return self._resolve(resolve.group(1), unquote(resolve.group(3)))
        self._json(404, {"error": "not found"})

    def _repo(self, name: str) -> RepoFiles | None:
        repo = self.hub.repos.get(name)
        if repo is None:
            self._json(404, {"error": "Repository not found"}, code="RepoNotFound")
        return repo

    def _model_info(self, name: str) -> None:
        repo = self._repo(name)
        if repo is not None:
            siblings = [{"rfilename": p} for p in [*repo.files, *repo.tree_extra]]
            self._json(200, {"id": name, "sha": repo.commit, "siblings": siblings})

    def _tree(self, name: str) -> None:
        repo = self._repo(name)
        if repo is None:
            return
        entries: list[dict[str, Any]] = []
        for path, data in repo.files.items():
            entry: dict[str, Any] = {
                "type": "file",
                "path": path,
                "size": len(data),
                "oid": git_oid(data),
            }
            if path in repo.lfs:
                entry["lfs"] = {"oid": sha256(data), "size": len(data), "pointerSize": 130}
            entries.append(entry)
        for path in repo.tree_extra:
            entries.append({"type": "file", "path": path, "size": 10, "oid": "0" * 40})
        self._json(200, entries)

    def _etag(self, repo: RepoFiles, path: str) -> str:
        if repo.etag_override is not None:
            return repo.etag_override
        data = repo.files[path]
        return sha256(data) if path in repo.lfs else git_oid(data)

    def _resolve(self, name: str, path: str) -> None:
        repo = self._repo(name)
        if repo is None:
            return
        if repo.gated and "authorization" not in {k.lower() for k in self.headers}:
            return self._json(401, {"error": "gated"}, code="GatedRepo")
        if path not in repo.files:
            return self._json(404, {"error": "Entry not found"}, code="EntryNotFound")
        if self.hub.faults.redirect and path in repo.lfs:
            data = repo.files[path]
            self.send_response(302)
            self.send_header("Location", f"{self.hub.cdn_url}/cdn/{name}/{path}")
            self.send_header("X-Repo-Commit", repo.commit)
            self.send_header("X-Linked-Etag", f'"{self._etag(repo, path)}"')
            self.send_header("X-Linked-Size", str(len(data)))
            self.send_header("Content-Length", "0")
            self.end_headers()
            return None
        return self._send_file(name, path)

    def _send_file(self, name: str, path: str) -> None:
        repo = self.hub.repos[name]
        data = repo.files[path]
        faults = self.hub.faults
        start = 0
        wanted = _RANGE.match(self.headers.get("Range", ""))
        if_range = self.headers.get("If-Range")
        etag = f'"{self._etag(repo, path)}"'
        if wanted and not faults.ignore_range and (if_range is None or if_range == etag):
            start = int(wanted.group(1))
            if start >= len(data):
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{len(data)}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        else:
            self.send_response(200)
        self.send_header("Content-Length", str(len(data) - start))
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("ETag", etag)
        self.send_header("X-Repo-Commit", repo.commit)
        self.end_headers()
        if self.command == "HEAD":
            return
        self._stream(data, start)

    def _stream(self, data: bytes, start: int) -> None:
        faults = self.hub.faults
        body = bytearray(data)
        if faults.flip_byte_at is not None and faults.flip_byte_at < len(body):
            body[faults.flip_byte_at] ^= 0xFF
        hold = faults.hold_at if self.hub.should_hold() else None
        self.hub.get_started()
        try:
            offset = start
            while offset < len(body):
                if hold is not None and offset >= hold:
                    while not self.hub.release.wait(0.02):
                        pass
                    hold = None
                end = min(len(body), offset + faults.chunk)
                if hold is not None and offset < hold < end:
                    end = hold
                self.wfile.write(body[offset:end])
                offset = end
                if faults.chunk_delay_s:
                    time.sleep(faults.chunk_delay_s)
        except (BrokenPipeError, ConnectionResetError):
            pass
        finally:
            self.hub.get_ended()

    def _json(self, status: int, body: object, code: str | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if code:
            self.send_header("X-Error-Code", code)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)


@contextmanager
def fake_hub() -> Iterator[FakeHub]:
    hub = FakeHub()
    try:
        yield hub
    finally:
        hub.close()


def payload(size: int, seed: int = 1) -> bytes:
    """Deterministic bytes that differ at every offset of a block."""
    block = hashlib.sha256(str(seed).encode()).digest() * 2048  # 64 KiB
    return (block * (size // len(block) + 1))[:size]


# -- the stand-in is what huggingface_hub expects ------------------------------------------------


def test_huggingface_hub_reads_the_stand_in(tmp_path: Path) -> None:
    data = payload(300_000)
    with fake_hub() as hub:
        hub.add(
            "org/model", RepoFiles({"w/model.gguf": data, "README.md": b"hi"}, {"w/model.gguf"})
        )
        api = HfApi(endpoint=hub.url)
        assert api.model_info("org/model").sha == COMMIT
        tree = {f.path: f for f in api.list_repo_tree("org/model", recursive=True)}
        assert tree["w/model.gguf"].lfs.sha256 == sha256(data)  # type: ignore[union-attr]
        meta = get_hf_file_metadata(hf_hub_url("org/model", "w/model.gguf", endpoint=hub.url))
        assert (meta.commit_hash, meta.etag, meta.size) == (COMMIT, sha256(data), len(data))
        path = hf_hub_download("org/model", "w/model.gguf", cache_dir=tmp_path, endpoint=hub.url)
        assert Path(path).read_bytes() == data
    assert [r.repo_id for r in scan_cache_dir(tmp_path).repos] == ["org/model"]


def test_redirect_metadata_comes_from_the_hub_reply() -> None:
    data = payload(1000)
    with fake_hub() as hub:
        hub.add("org/model", RepoFiles({"m.gguf": data}, {"m.gguf"}))
        hub.faults.redirect = True
        meta = get_hf_file_metadata(hf_hub_url("org/model", "m.gguf", endpoint=hub.url))
        assert (meta.etag, meta.size) == (sha256(data), len(data))
        assert meta.location.startswith(hub.cdn_url)


# -- a queue over the stand-in ---------------------------------------------------------------


@dataclass
class Rig:
    """A service's surroundings: the Hub, folders, settings, recorded sleeps, a disk."""

    hub: FakeHub  # the stand-in (its faults, its request log)
    root: Path
    settings: ModelsSettings | None = None
    sleeps: list[float] = field(default_factory=list)
    free_bytes: int | None = None  # None: the real disk
    token: str | None = None
    endpoint: str | None = None  # another Hub (the fake Hub process); default: the stand-in

    @property
    def data_dir(self) -> Path:
        return self.root / "data"

    @property
    def cache(self) -> Path:
        return self.root / "hub cache"

    def service(self, **overrides: Any) -> DownloadService:
        settings = self.settings or ModelsSettings()

        async def sleep(delay: float) -> None:
            self.sleeps.append(delay)
            await asyncio.sleep(0)

        def disk_usage(path: Path) -> Any:
            real = shutil.disk_usage(path)
            if self.free_bytes is None:
                return real
            return type(real)(real.total, real.used, self.free_bytes)

        options: dict[str, Any] = {
            "hub_cache": lambda: self.cache,
            "settings": lambda: self.settings or settings,
            "token": lambda: self.token,
            "endpoint": self.endpoint or self.hub.url,
            "disk_usage": disk_usage,
            "sleep": sleep,
        }
        options.update(overrides)
        return DownloadService(self.data_dir, **options)


async def wait_state(
    service: DownloadService, item_id: str, *states: DownloadState, within_s: float = 15.0
) -> DownloadItem:
    """The item once it is in one of `states` (AssertionError with its last state if not)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within_s
    while True:
        seen = service.changes.version
        item = service.get(item_id)
        if item.state in states:
            return item
        left = deadline - loop.time()
        if left <= 0:
            raise AssertionError(f"{item_id} stayed {item.state}: {item.error}")
        await service.changes.wait(seen, min(left, 0.1))


async def wait_bytes(
    service: DownloadService, item_id: str, at_least: int, within_s: float = 15.0
) -> DownloadItem:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within_s
    while True:
        seen = service.changes.version
        item = service.get(item_id)
        if item.bytes_done >= at_least:
            return item
        if loop.time() > deadline:
            raise AssertionError(f"{item_id} has {item.bytes_done} bytes, not {at_least}")
        await service.changes.wait(seen, 0.1)
