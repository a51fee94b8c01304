"""A GitHub-shaped release API and download host, in a thread, with failure modes on demand.

Serves `GET /repos/ggml-org/llama.cpp/releases[/latest|/tags/<tag>]` and the assets at
`/repos/ggml-org/llama.cpp/releases/download/<tag>/<name>`, which redirect to `/cdn/...` as
GitHub's do. Downloads honour `Range: bytes=N-` (206), unless told to ignore it. Every
request is logged with its headers so tests can assert what the client sent.
"""

from __future__ import annotations

import contextlib
import hashlib
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from urllib.parse import unquote, urlsplit

from tests.fakes.http_plumbing import Logged, StandinHandler, ThreadedStandin
from tests.fakes.releases import archives

API_PREFIX = "/repos/ggml-org/llama.cpp/releases"
CHUNK = 16 * 1024


@dataclass
class FakeRelease:
    tag: str
    files: dict[str, bytes]
    # Names whose listing carries no digest (old releases).
    no_digest: set[str] = field(default_factory=set)


@dataclass
class Modes:
    """Failure modes; the per-name ones apply to downloads of that asset."""

    corrupt: set[str] = field(default_factory=set)  # one byte flipped, same size
    wrong_size: set[str] = field(default_factory=set)  # served longer than listed
    drop_after: dict[str, int] = field(default_factory=dict)  # cut once after N bytes
    ignore_range: bool = False
    delay_per_chunk_s: float = 0.0
    rate_limited: bool = False


def default_releases() -> list[FakeRelease]:
    """An older and a newer release, each with real llama.cpp asset names."""
    out = []
    for tag in ("b6000", "b6100"):
        files = {
            f"llama-{tag}-bin-ubuntu-x64.tar.gz": archives.linux_release(tag),
            f"llama-{tag}-bin-ubuntu-vulkan-x64.tar.gz": archives.linux_release(tag),
            f"llama-{tag}-bin-ubuntu-arm64.tar.gz": archives.linux_release(tag),
            f"llama-{tag}-bin-macos-arm64.tar.gz": archives.linux_release(tag),
            f"llama-{tag}-bin-win-cpu-x64.zip": archives.windows_zip(tag),
            f"llama-{tag}-bin-win-cuda-12.4-x64.zip": archives.windows_zip(tag, "ggml-cuda.dll"),
            "cudart-llama-bin-win-cuda-12.4-x64.zip": archives.cudart_zip("12.4"),
        }
        out.append(FakeRelease(tag, files))
    return out


class ReleaseServer(ThreadedStandin):
    """`with ReleaseServer() as server:` serves on 127.0.0.1; `server.releases_url` is the
    base URL to give the installer."""

    def __init__(self, releases: list[FakeRelease] | None = None) -> None:
        self.releases = releases if releases is not None else default_releases()
        self.modes = Modes()
        self.log: list[Logged] = []
        self._serve(_make_handler(self))

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def releases_url(self) -> str:
        return self.base_url + API_PREFIX

    def downloads(self, name: str) -> list[Logged]:
        """Requests that fetched the asset's bytes (after the redirect)."""
        return [e for e in self.log if e.path.startswith("/cdn/") and e.path.endswith("/" + name)]

    def release(self, tag: str | None) -> FakeRelease | None:
        if tag is None:
            return self.releases[-1]
        return next((r for r in self.releases if r.tag == tag), None)

    def listing(self, release: FakeRelease) -> dict[str, object]:
        assets = []
        download = f"{self.base_url}{API_PREFIX}/download"
        for i, (name, data) in enumerate(release.files.items()):
            asset: dict[str, object] = {
                "id": 1000 + i,
                "name": name,
                "label": "",
                "content_type": "application/zip" if name.endswith(".zip") else "application/gzip",
                "state": "uploaded",
                "size": len(data),
                "digest": None
                if name in release.no_digest
                else "sha256:" + hashlib.sha256(data).hexdigest(),
                "download_count": 7,
                "browser_download_url": f"{download}/{release.tag}/{name}",
            }
            assets.append(asset)
        return {
            "tag_name": release.tag,
            "name": release.tag,
            "draft": False,
            "prerelease": False,
            "published_at": "2026-05-01T12:00:00Z",
            "html_url": f"https://github.com/ggml-org/llama.cpp/releases/tag/{release.tag}",
            "assets": assets,
        }


def _make_handler(server: ReleaseServer) -> type[StandinHandler]:
    class Handler(StandinHandler):
        def log_message(self, format: str, *args: object) -> None:
            return  # quiet

        def do_GET(self) -> None:
            path = unquote(urlsplit(self.path).path)
            server.record(Logged("GET", path, {k.lower(): v for k, v in self.headers.items()}))
            if server.modes.rate_limited and path.startswith(API_PREFIX):
                self.send_response(403)
                self.send_header("x-ratelimit-remaining", "0")
                self.send_header("x-ratelimit-reset", str(int(time.time()) + 600))
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")
                return
            if path == API_PREFIX:
                body = [server.listing(r) for r in reversed(server.releases)]
                return self.send_json(200, body)
            if path == API_PREFIX + "/latest":
                return self._release(server.release(None))
            if path.startswith(API_PREFIX + "/tags/"):
                return self._release(server.release(path.rsplit("/", 1)[1]))
            if path.startswith(API_PREFIX + "/download/"):
                tag, name = path.split("/")[-2:]
                self.send_response(302)
                self.send_header("Location", f"/cdn/{tag}/{name}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return None
            if path.startswith("/cdn/"):
                return self._asset(*path.split("/")[-2:])
            return self.send_json(404, {"message": "Not Found"})

        def _release(self, release: FakeRelease | None) -> None:
            if release is None:
                return self.send_json(404, {"message": "Not Found"})
            return self.send_json(200, server.listing(release))

        def _asset(self, tag: str, name: str) -> None:
            release = server.release(tag)
            if release is None or name not in release.files:
                return self.send_json(404, {"message": "Not Found"})
            data = release.files[name]
            modes = server.modes
            if name in modes.corrupt:
                data = data[:-1] + bytes([data[-1] ^ 0xFF])
            if name in modes.wrong_size:
                data = data + b"\0" * 1000
            start = self._range_start()
            if start is not None and start >= len(data):
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{len(data)}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return None
            if start is None:
                self.send_response(200)
                start = 0
            else:
                self.send_response(206)
                self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(len(data) - start))
            self.send_header("Accept-Ranges", "bytes")
            self.end_headers()
            cut = modes.drop_after.pop(name, None)
            sent = start
            for offset in range(start, len(data), CHUNK):
                piece = data[offset : offset + CHUNK]
                if cut is not None and sent + len(piece) > cut:
                    self.wfile.write(piece[: max(0, cut - sent)])
                    self.wfile.flush()
                    self._drop()
                    return None
                self.wfile.write(piece)
                sent += len(piece)
                if modes.delay_per_chunk_s:
                    self.wfile.flush()
                    time.sleep(modes.delay_per_chunk_s)
            return None

        def _range_start(self) -> int | None:
            header = self.headers.get("Range")
            if not header or server.modes.ignore_range:
                return None
            unit, _, spec = header.partition("=")
            first = spec.split("-")[0]
            return int(first) if unit.strip() == "bytes" and first.isdigit() else None

        def _drop(self) -> None:
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)

    return Handler


@contextlib.contextmanager
def serving(releases: list[FakeRelease] | None = None) -> Iterator[ReleaseServer]:
    with ReleaseServer(releases) as server:
        yield server
