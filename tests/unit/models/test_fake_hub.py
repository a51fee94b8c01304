"""The real huggingface_hub client (and plain httpx) against the fake Hub run as a process."""

from __future__ import annotations

import hashlib
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import gguf
import httpx
import pytest
from huggingface_hub import HfApi, hf_hub_download, snapshot_download
from huggingface_hub.errors import (
    EntryNotFoundError,
    GatedRepoError,
    HfHubHTTPError,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)
from huggingface_hub.hf_api import RepoFile, RepoFolder

from tests.fakes.hub import ControlError, HubStandin, running_hub, start_hub
from tests.fakes.hub.build import (
    ACCESS_TOKEN,
    GATED_REPO,
    GGUF_REPO,
    HF_REPO,
    MLX_REPO,
    NO_ACCESS_TOKEN,
    OTHER_REPO,
    PRIVATE_REPO,
)
from tests.fakes.hub.catalog import git_blob_sha1
from tests.processes import assert_nothing_left

# fake_hub, fake_hub_repos (tests/conftest.py): a session-wide fake Hub, reset per test.
Q8 = "tiny-llama-Q8_0.gguf"


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def api(hub: HubStandin, token: str | bool = False) -> HfApi:
    return HfApi(endpoint=hub.base_url, token=token)


def download(
    hub: HubStandin, cache: Path, repo: str = GGUF_REPO, name: str = Q8, **kw: Any
) -> Path:
    kw.setdefault("token", False)
    return Path(hf_hub_download(repo, name, endpoint=hub.base_url, cache_dir=cache, **kw))


def test_list_models_search_filter_sort(fake_hub: HubStandin) -> None:
    hf = api(fake_hub)
    assert {m.id for m in hf.list_models(search="LLAMA")} == {
        GGUF_REPO,
        HF_REPO,
        MLX_REPO,
        GATED_REPO,
    }
    assert [m.id for m in hf.list_models(filter="gguf", sort="downloads")] == [
        GGUF_REPO,
        GATED_REPO,
    ]
    assert [m.id for m in hf.list_models(filter=["mlx", "text-generation"])] == [MLX_REPO]
    assert [m.id for m in hf.list_models(filter="safetensors", sort="likes")] == [MLX_REPO, HF_REPO]
    newest = [m.id for m in hf.list_models(sort="last_modified", limit=2)]
    assert newest == [MLX_REPO, GATED_REPO]
    assert [m.id for m in hf.list_models(author="other-org")] == [OTHER_REPO]
    assert PRIVATE_REPO not in {m.id for m in hf.list_models()}
    assert PRIVATE_REPO in {m.id for m in api(fake_hub, ACCESS_TOKEN).list_models()}
    found = {m.id: m for m in hf.list_models(search="tiny-llama", expand=["gguf", "safetensors"])}
    gguf, safetensors = found[GGUF_REPO].gguf, found[HF_REPO].safetensors
    assert gguf is not None and gguf["architecture"] == "llama"
    assert safetensors is not None and safetensors.total > 0
    assert found[HF_REPO].downloads is None  # only the expanded fields come back
    carded = next(iter(hf.list_models(search="tiny-embedder", cardData=True)))
    assert carded.card_data is not None and carded.card_data.license == "mit"
    with pytest.raises(HfHubHTTPError) as bad:
        list(hf.list_models(expand=["nonsense"]))  # type: ignore[list-item]
    assert bad.value.response.status_code == 400


def test_list_models_follows_link_pages(fake_hub: HubStandin) -> None:
    fake_hub.set_settings(page_size=2)
    models = list(api(fake_hub).list_models(full=True))
    assert len(models) == 5 and all(m.sha and m.siblings for m in models)
    pages = [r for r in fake_hub.requests() if r["path"] == "/api/models"]
    assert len(pages) == 3 and "cursor=" in pages[-1]["query"]


def test_model_info_with_files_metadata(fake_hub: HubStandin, fake_hub_repos: Path) -> None:
    hf = api(fake_hub)
    info = hf.model_info(GGUF_REPO, files_metadata=True)
    siblings = {s.rfilename: s for s in info.siblings or []}
    assert set(siblings) == {p.name for p in (fake_hub_repos / GGUF_REPO).iterdir()}
    q8 = siblings[Q8]
    assert q8.lfs is not None and q8.lfs.sha256 == sha256(fake_hub_repos / GGUF_REPO / Q8)
    assert q8.size == (fake_hub_repos / GGUF_REPO / Q8).stat().st_size
    readme = siblings["README.md"]
    assert readme.lfs is None
    assert readme.blob_id == git_blob_sha1((fake_hub_repos / GGUF_REPO / "README.md").read_bytes())
    assert info.card_data is not None and info.card_data.license == "apache-2.0"
    assert info.card_data.base_model == HF_REPO and info.pipeline_tag == "text-generation"
    assert info.gguf is not None and info.gguf["context_length"] == 2048
    assert hf.model_info(GGUF_REPO, revision=info.sha).sha == info.sha
    assert hf.model_info(GATED_REPO).gated == "manual"
    mlx = hf.model_info(MLX_REPO, expand=["config", "library_name"])
    assert mlx.config is not None and mlx.config["quantization"]["bits"] == 4
    assert mlx.library_name == "mlx" and mlx.siblings is None
    st = hf.model_info(HF_REPO).safetensors
    assert st is not None and st.total == st.parameters["F32"] > 0


def test_repo_tree_pages_folders_and_paths_info(tmp_path: Path) -> None:
    repo = tmp_path / "org" / "nested"
    (repo / "sub" / "deeper").mkdir(parents=True)
    for name in ("a.txt", "sub/b.txt", "sub/deeper/c.gguf", "z.txt"):
        (repo / name).write_text(name)
    with running_hub(tmp_path, "--tree-page-size", "2") as hub:
        hf = api(hub)
        top = list(hf.list_repo_tree("org/nested"))
        assert [(type(e), e.path) for e in top] == [
            (RepoFolder, "sub"), (RepoFile, "a.txt"), (RepoFile, "z.txt"),
        ]  # fmt: skip
        deep = [e.path for e in hf.list_repo_tree("org/nested", recursive=True)]
        assert deep == ["sub", "sub/deeper", "a.txt", "sub/b.txt", "sub/deeper/c.gguf", "z.txt"]
        inside = list(hf.list_repo_tree("org/nested", path_in_repo="sub/deeper", expand=True))
        assert len(inside) == 1 and isinstance(inside[0], RepoFile)
        assert inside[0].lfs is not None and inside[0].last_commit is not None
        assert len([r for r in hub.requests() if "/tree/" in r["path"]]) >= 4  # paged by 2
        with pytest.raises(EntryNotFoundError):
            list(hf.list_repo_tree("org/nested", path_in_repo="nope"))
        info = hf.get_paths_info("org/nested", ["a.txt", "sub", "missing"])
        assert [(type(e), e.path) for e in info] == [(RepoFile, "a.txt"), (RepoFolder, "sub")]


def test_built_ggufs_carry_their_quantization_and_split(fake_hub_repos: Path) -> None:
    folder = fake_hub_repos / GGUF_REPO
    q8 = gguf.GGUFReader(folder / Q8).get_field("general.file_type")
    assert q8 is not None and q8.contents() == gguf.LlamaFileType.MOSTLY_Q8_0
    shards = [gguf.GGUFReader(folder / f"tiny-llama-F16-0000{i}-of-00002.gguf") for i in (1, 2)]
    counts = [r.get_field("split.count") for r in shards]
    assert all(c is not None and c.contents() == 2 for c in counts)
    whole = gguf.GGUFReader(folder / Q8)
    assert sum(len(r.tensors) for r in shards) == len(whole.tensors)


def test_hf_hub_download_through_the_cdn_redirect(fake_hub: HubStandin, tmp_path: Path) -> None:
    path = download(fake_hub, tmp_path, token=ACCESS_TOKEN)
    expected = api(fake_hub).model_info(GGUF_REPO, files_metadata=True)
    lfs = next(s.lfs for s in expected.siblings or [] if s.rfilename == Q8)
    assert lfs is not None and sha256(path) == lfs.sha256
    repo_dir = tmp_path / f"models--{GGUF_REPO.replace('/', '--')}"
    assert path == repo_dir / "snapshots" / str(expected.sha) / Q8 and path.is_symlink()
    assert path.resolve() == (repo_dir / "blobs" / lfs.sha256).resolve()
    assert (repo_dir / "refs" / "main").read_text() == expected.sha
    head = [r for r in fake_hub.requests("hub") if r["method"] == "HEAD"]
    assert head[-1]["status"] == 302
    cdn = fake_hub.requests("cdn")
    assert [r["status"] for r in cdn] == [200] and cdn[0]["sent"] == lfs.size
    assert "Authorization" not in cdn[0]["headers"]  # the token stays on the Hub


def test_snapshot_download_of_a_small_repo(
    fake_hub: HubStandin, fake_hub_repos: Path, tmp_path: Path
) -> None:
    folder = Path(
        snapshot_download(HF_REPO, endpoint=fake_hub.base_url, cache_dir=tmp_path, token=False)
    )
    source = fake_hub_repos / HF_REPO
    assert sorted(p.name for p in folder.iterdir()) == sorted(p.name for p in source.iterdir())
    for name in ("model.safetensors", "config.json", "README.md"):
        assert (folder / name).read_bytes() == (source / name).read_bytes()


def test_errors_map_to_huggingface_hub_exceptions(fake_hub: HubStandin, tmp_path: Path) -> None:
    hf = api(fake_hub)
    with pytest.raises(RepositoryNotFoundError):
        hf.model_info("roundhouse-test/no-such-model")
    with pytest.raises(RepositoryNotFoundError):
        hf.model_info(PRIVATE_REPO)
    with pytest.raises(RepositoryNotFoundError):
        api(fake_hub, NO_ACCESS_TOKEN).model_info(PRIVATE_REPO)
    assert api(fake_hub, ACCESS_TOKEN).model_info(PRIVATE_REPO).private is True
    with pytest.raises(RevisionNotFoundError):
        hf.model_info(GGUF_REPO, revision="v9")
    with pytest.raises(RevisionNotFoundError):
        download(fake_hub, tmp_path, revision="v9")
    with pytest.raises(EntryNotFoundError):
        download(fake_hub, tmp_path, name="missing.gguf")
    with pytest.raises(GatedRepoError) as no_token:
        download(fake_hub, tmp_path, repo=GATED_REPO, name="tiny-llama-Q4_K_M.gguf")
    assert no_token.value.response.status_code == 401
    with pytest.raises(GatedRepoError) as no_access:
        download(fake_hub, tmp_path, repo=GATED_REPO, name="README.md", token=NO_ACCESS_TOKEN)
    assert no_access.value.response.status_code == 403
    opened = download(fake_hub, tmp_path, repo=GATED_REPO, name="README.md", token=ACCESS_TOKEN)
    assert opened.read_text().startswith("---\n")
    with pytest.raises(HfHubHTTPError) as bad_token:
        api(fake_hub, "hf_unknown").model_info(GGUF_REPO)
    assert bad_token.value.response.status_code == 401
    assert api(fake_hub, ACCESS_TOKEN).whoami()["name"] == "roundhouse-tester"


def resolve_url(hub: HubStandin, name: str = Q8, repo: str = GGUF_REPO) -> str:
    return hub.resolve_url(repo, name)


def test_range_requests_and_headers(fake_hub: HubStandin, fake_hub_repos: Path) -> None:
    data = (fake_hub_repos / GGUF_REPO / Q8).read_bytes()
    with httpx.Client(follow_redirects=True, timeout=10) as client:
        head = client.head(resolve_url(fake_hub), follow_redirects=False)
        assert head.status_code == 302 and head.headers["X-Repo-Commit"]
        assert head.headers["X-Linked-Size"] == str(len(data))
        assert head.headers["X-Linked-Etag"] == f'"{hashlib.sha256(data).hexdigest()}"'
        assert head.headers["Location"].startswith(fake_hub.cdn_url)
        part = client.get(resolve_url(fake_hub), headers={"Range": "bytes=100-199"})
        assert part.status_code == 206 and part.content == data[100:200]
        assert part.headers["Content-Range"] == f"bytes 100-199/{len(data)}"
        tail = client.get(resolve_url(fake_hub), headers={"Range": f"bytes={len(data) - 10}-"})
        assert tail.status_code == 206 and tail.content == data[-10:]
        suffix = client.get(resolve_url(fake_hub), headers={"Range": "bytes=-5"})
        assert suffix.content == data[-5:]
        beyond = client.get(resolve_url(fake_hub), headers={"Range": f"bytes={len(data)}-"})
        assert (
            beyond.status_code == 416 and beyond.headers["Content-Range"] == f"bytes */{len(data)}"
        )
        stale = {"Range": "bytes=0-9", "If-Range": '"not-the-etag"'}
        assert client.get(resolve_url(fake_hub), headers=stale).content == data
        small = client.head(resolve_url(fake_hub, "README.md"))
        readme = (fake_hub_repos / GGUF_REPO / "README.md").read_bytes()
        assert small.status_code == 200 and small.headers["ETag"] == f'"{git_blob_sha1(readme)}"'
        assert small.headers["Content-Length"] == str(len(readme))
        assert small.headers["Accept-Ranges"] == "bytes"
    ranges = [r["headers"].get("Range") for r in fake_hub.requests("cdn")]
    assert "bytes=100-199" in ranges


def test_parallel_range_downloads(fake_hub: HubStandin, fake_hub_repos: Path) -> None:
    data = (fake_hub_repos / GGUF_REPO / Q8).read_bytes()
    step = len(data) // 8 + 1
    starts = list(range(0, len(data), step))

    def fetch(start: int) -> bytes:
        end = min(start + step, len(data)) - 1
        headers = {"Range": f"bytes={start}-{end}"}
        reply = httpx.get(resolve_url(fake_hub), headers=headers, follow_redirects=True)
        assert reply.status_code == 206
        return reply.content

    with ThreadPoolExecutor(8) as pool:
        assert b"".join(pool.map(fetch, starts)) == data


def test_lfs_files_served_directly_when_redirects_are_off(
    fake_hub: HubStandin, fake_hub_repos: Path, tmp_path: Path
) -> None:
    fake_hub.set_settings(redirect_lfs=False)
    head = httpx.head(resolve_url(fake_hub))
    assert head.status_code == 200
    assert head.headers["ETag"] == f'"{sha256(fake_hub_repos / GGUF_REPO / Q8)}"'
    path = download(fake_hub, tmp_path)
    assert fake_hub.requests("cdn") == [] and sha256(path) == head.headers["ETag"].strip('"')


def test_fault_corrupt_keeps_size_and_breaks_sha256(
    fake_hub: HubStandin, fake_hub_repos: Path, tmp_path: Path
) -> None:
    fake_hub.set_faults({"path": Q8, "corrupt": True})
    path = download(fake_hub, tmp_path)
    original = fake_hub_repos / GGUF_REPO / Q8
    assert path.stat().st_size == original.stat().st_size and sha256(path) != sha256(original)
    diff = [
        i
        for i, (a, b) in enumerate(zip(path.read_bytes(), original.read_bytes(), strict=True))
        if a != b
    ]
    assert diff == [original.stat().st_size // 2]


def test_fault_drop_cuts_the_body_once_and_the_client_retries(
    fake_hub: HubStandin, fake_hub_repos: Path, tmp_path: Path
) -> None:
    fake_hub.set_faults({"repo": GGUF_REPO, "path": "*.gguf", "drop_after": 65536, "times": 1})
    path = download(fake_hub, tmp_path)
    assert sha256(path) == sha256(fake_hub_repos / GGUF_REPO / Q8)
    # huggingface_hub keeps nothing under 10 MiB from a cut body, so it starts over.
    cdn = fake_hub.requests("cdn")
    assert [(r["status"], r["sent"]) for r in cdn] == [(200, 65536), (200, path.stat().st_size)]
    assert fake_hub.control("GET", "faults") == []  # used up


def test_fault_stall_throttle_ignore_range_and_status(
    fake_hub: HubStandin, fake_hub_repos: Path
) -> None:
    data = (fake_hub_repos / GGUF_REPO / Q8).read_bytes()
    url = resolve_url(fake_hub)
    with httpx.Client(follow_redirects=True) as client:
        fake_hub.set_faults({"path": Q8, "stall_after": 1000, "stall_s": 1.0, "times": 1})
        with pytest.raises(httpx.ReadTimeout):
            client.get(url, timeout=httpx.Timeout(5, read=0.3))
        fake_hub.set_faults({"path": Q8, "throttle_bps": 400_000})
        began = time.monotonic()
        slow = client.get(url, headers={"Range": "bytes=0-99999"}, timeout=10)
        assert slow.content == data[:100_000] and time.monotonic() - began >= 0.2
        fake_hub.set_faults({"path": Q8, "ignore_range": True})
        whole = client.get(url, headers={"Range": "bytes=0-9"}, timeout=10)
        assert whole.status_code == 200 and whole.content == data
        fake_hub.set_faults({"path": Q8, "status": 503, "times": 1})
        assert client.get(url, timeout=10).status_code == 503
        assert client.get(url, timeout=10).status_code == 200
    with pytest.raises(ControlError, match="unknown fault keys"):
        fake_hub.set_faults({"path": Q8, "explode": True})


def test_process_starts_on_free_ports_and_stops_cleanly(tmp_path: Path) -> None:
    (tmp_path / "org" / "m").mkdir(parents=True)
    (tmp_path / "org" / "m" / "x.txt").write_text("x")
    hub = start_hub(tmp_path)
    try:
        assert hub.base_url != hub.cdn_url
        assert hub.control("GET", "health")["repos"] == ["org/m"]
        (tmp_path / "org" / "n").mkdir()
        (tmp_path / "org" / "n" / "y.txt").write_text("y")
        hub.reload()
        assert sorted(m.id for m in api(hub).list_models()) == ["org/m", "org/n"]
    finally:
        assert hub.stop() == 0, hub.log_text()
    assert_nothing_left(hub.proc.pid, hub.proc.pid)
