"""Search and model pages through the real huggingface_hub client against the fake Hub."""

from __future__ import annotations

import asyncio
import hashlib
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from roundhouse.api.hub import HubModelKind, HubSearchRequest, HubSort
from roundhouse.core.errors import InvalidInputError, NotFoundError
from roundhouse.core.models.hub import (
    GatedModelError,
    HubService,
    HubTokenStore,
    HubUnavailableError,
)
from roundhouse.core.models.hub.errors import HubUnreachableError, unreachable_error
from tests.fakes.hub.build import (
    ACCESS_TOKEN,
    GATED_REPO,
    GGUF_REPO,
    HF_REPO,
    MLX_REPO,
    PRIVATE_REPO,
)


def hub_at(url: str, token: str | None = None, timeout_s: float = 20.0) -> HubService:
    return HubService(url, NoKeyringTokens(token), timeout_s=timeout_s)


class NoKeyringTokens(HubTokenStore):
    """The token lookup with the keyring left out (token tests cover the keyring)."""

    def __init__(self, token: str | None) -> None:
        super().__init__(lambda: token)
        self._value = token

    def token(self) -> str | None:
        return self._value


def search(url: str, token: str | None = None, **request: object) -> list[str]:
    found = asyncio.run(hub_at(url, token).search(HubSearchRequest.model_validate(request)))
    return [m.id for m in found.models]


def test_search_every_kind_sorted_by_downloads(fake_hub_url: str) -> None:
    found = asyncio.run(hub_at(fake_hub_url).search(HubSearchRequest(query="tiny")))
    by_id = {m.id: m for m in found.models}
    assert list(by_id) == [HF_REPO, GGUF_REPO, MLX_REPO, GATED_REPO]  # 9000, 5000, 700, 300
    assert by_id[GGUF_REPO].kinds == [HubModelKind.GGUF]
    assert by_id[MLX_REPO].kinds == [HubModelKind.MLX]
    assert by_id[HF_REPO].kinds == [HubModelKind.SAFETENSORS]
    assert by_id[GATED_REPO].gated and not by_id[GGUF_REPO].gated
    assert by_id[GGUF_REPO].downloads == 5000 and by_id[GGUF_REPO].likes == 40
    assert by_id[GGUF_REPO].parameter_count and by_id[HF_REPO].parameter_count
    assert by_id[GGUF_REPO].author == "roundhouse-test"
    assert by_id[GGUF_REPO].updated is not None and by_id[GGUF_REPO].updated.day == 10


def test_search_sorts_by_likes_and_recency(fake_hub_url: str) -> None:
    assert search(fake_hub_url, sort=HubSort.LIKES) == [MLX_REPO, GGUF_REPO, HF_REPO, GATED_REPO]
    assert search(fake_hub_url, sort=HubSort.UPDATED) == [
        MLX_REPO,  # day 20
        GATED_REPO,  # 15
        GGUF_REPO,  # 10
        HF_REPO,  # 3
    ]


def test_search_filters_by_kind_text_author_and_limit(fake_hub_url: str) -> None:
    assert search(fake_hub_url, kinds=["gguf"]) == [GGUF_REPO, GATED_REPO]
    assert search(fake_hub_url, kinds=["mlx"]) == [MLX_REPO]
    assert search(fake_hub_url, kinds=["safetensors"]) == [HF_REPO]  # MLX listed as MLX
    assert search(fake_hub_url, query="gated") == [GATED_REPO]
    assert search(fake_hub_url, author="mlx-community") == [MLX_REPO]
    assert search(fake_hub_url, limit=2) == [HF_REPO, GGUF_REPO]
    assert search(fake_hub_url, query="no-such-model") == []


def test_private_repos_show_with_a_token_that_opens_them(fake_hub_url: str) -> None:
    assert PRIVATE_REPO not in search(fake_hub_url, kinds=["gguf"])
    assert PRIVATE_REPO in search(fake_hub_url, ACCESS_TOKEN, kinds=["gguf"])


def test_model_page_groups_files_by_quantization(fake_hub_url: str, fake_hub_repos: Path) -> None:
    page = asyncio.run(hub_at(fake_hub_url).details(GGUF_REPO))
    assert page.commit is not None and len(page.commit) == 40
    assert page.summary == "A tiny random model generated for Roundhouse's tests."
    assert page.license == "apache-2.0"
    assert page.base_models == [HF_REPO]
    assert page.kinds == [HubModelKind.GGUF]
    assert (page.architecture, page.context_length) == ("llama", 2048)
    assert page.parameter_count and page.parameter_count > 0
    names = [g.name for g in page.groups]
    assert sorted(names) == ["F16", "Q4_K_M", "Q8_0"]
    split = next(g for g in page.groups if g.name == "F16")
    assert split.shards == 2
    assert [f.path for f in split.files] == [
        "tiny-llama-F16-00001-of-00002.gguf",
        "tiny-llama-F16-00002-of-00002.gguf",
    ]
    for group in page.groups:
        assert group.size == sum(f.size for f in group.files)
        for f in group.files:
            data = (fake_hub_repos / GGUF_REPO / f.path).read_bytes()
            assert f.size == len(data)
            assert f.sha256 == hashlib.sha256(data).hexdigest()
    assert page.groups == sorted(page.groups, key=lambda g: (g.size, g.name))
    assert page.total_size >= sum(g.size for g in page.groups)


def test_model_pages_of_mlx_and_safetensors_repos(fake_hub_url: str) -> None:
    mlx = asyncio.run(hub_at(fake_hub_url).details(MLX_REPO))
    (group,) = mlx.groups
    assert (group.kind, group.name, group.quantization) == (HubModelKind.MLX, "MLX 4bit", "4bit")
    assert "model.safetensors" in [f.path for f in group.files]
    assert "config.json" in [f.path for f in group.files]
    assert "README.md" not in [f.path for f in group.files]
    plain = asyncio.run(hub_at(fake_hub_url).details(HF_REPO))
    (weights,) = plain.groups
    assert weights.kind is HubModelKind.SAFETENSORS
    assert plain.architecture == "llama"


def test_gated_repo_needs_a_token_and_says_how(fake_hub_url: str) -> None:
    with pytest.raises(GatedModelError) as caught:
        asyncio.run(hub_at(fake_hub_url).details(GATED_REPO))
    assert f"{fake_hub_url}/{GATED_REPO}" in caught.value.detail
    assert "accept its license" in caught.value.detail
    page = asyncio.run(hub_at(fake_hub_url, ACCESS_TOKEN).details(GATED_REPO))
    assert page.gated and [g.name for g in page.groups] == ["Q4_K_M"]


def test_missing_private_and_malformed_names(fake_hub_url: str) -> None:
    hub = hub_at(fake_hub_url)
    with pytest.raises(NotFoundError, match="No model named nobody/nothing on Hugging Face"):
        asyncio.run(hub.details("nobody/nothing"))
    with pytest.raises(NotFoundError, match="No model named"):
        asyncio.run(hub.details(PRIVATE_REPO))
    assert asyncio.run(hub_at(fake_hub_url, ACCESS_TOKEN).details(PRIVATE_REPO)).private
    with pytest.raises(NotFoundError, match="has no revision 'v9'"):
        asyncio.run(hub.details(GGUF_REPO, "v9"))
    with pytest.raises(InvalidInputError, match="owner/name"):
        asyncio.run(hub.details("a/b/c"))
    with pytest.raises(InvalidInputError):
        asyncio.run(hub.details("  "))


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class SlowHub(BaseHTTPRequestHandler):
    """Answers every listing with no models, 2 s late."""

    def do_GET(self) -> None:
        time.sleep(2.0)
        body = b"[]"
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def slow_hub_url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), SlowHub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_an_unreachable_hub_is_said_in_words() -> None:
    url = f"http://127.0.0.1:{closed_port()}"
    with pytest.raises(HubUnreachableError, match="refused the connection") as caught:
        asyncio.run(hub_at(url).details(GGUF_REPO))
    assert "Errno" not in caught.value.detail
    assert caught.value.title == "Hugging Face cannot be reached"


def test_a_search_with_no_connection_fails_at_once_not_at_the_deadline() -> None:
    # huggingface_hub retries a refused listing for ~25 s; the look beside the call does not.
    hub = hub_at(f"http://127.0.0.1:{closed_port()}", timeout_s=15.0)
    started = time.monotonic()
    with pytest.raises(HubUnreachableError) as caught:
        asyncio.run(hub.search(HubSearchRequest(kinds=["gguf"])))
    assert time.monotonic() - started < 2.0
    assert "Errno" not in str(caught.value)
    hub.close()


def test_a_failed_name_lookup_is_no_internet_connection() -> None:
    try:
        socket.getaddrinfo("roundhouse-test.invalid", 443)
    except socket.gaierror as lookup:
        # As huggingface_hub raises it: its HTTP library's error, the lookup's as the cause.
        wrapped = OSError("[Errno -2] Name or service not known")
        wrapped.__cause__ = lookup
        error = unreachable_error(wrapped, "https://huggingface.co", "owner/model")
    else:
        pytest.skip("this resolver answers for .invalid names")
    assert error is not None and error.title == "No internet connection"
    assert error.detail.startswith("Hugging Face (huggingface.co) could not be looked up")
    assert "no internet connection" in error.detail
    assert "Errno" not in error.detail and "owner/model" in error.detail
    # A slow answer is not a missing connection.
    assert unreachable_error(TimeoutError("timed out")) is None


def test_a_hub_that_answers_too_late_is_given_up_at_the_deadline(slow_hub_url: str) -> None:
    # huggingface_hub retries a listing for ~25 s when the network is down; the service
    # stops waiting at its deadline and says so.
    hub = hub_at(slow_hub_url, timeout_s=0.5)
    started = time.monotonic()
    with pytest.raises(HubUnavailableError, match=r"did not answer within 0\.5 s"):
        asyncio.run(hub.search(HubSearchRequest(kinds=["gguf"])))
    assert time.monotonic() - started < 1.8
    hub.close()
