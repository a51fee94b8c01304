"""Installing llama.cpp release builds from a GitHub-shaped stand-in: verify, resume, switch."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import httpx
import pytest

from roundhouse.api.engines import EngineId, FoundBy
from roundhouse.api.installs import (
    Backend,
    InstallPlan,
    InstallProgress,
    InstallStage,
)
from roundhouse.core.engines.catalog import load_catalog
from roundhouse.core.engines.detect import detect_engine
from roundhouse.core.engines.host import LocalEngineHost
from roundhouse.core.engines.install.errors import (
    ChecksumError,
    DownloadError,
    InstallBusyError,
    InstallError,
    UnsafeArchiveError,
)
from roundhouse.core.engines.install.layout import CURRENT_FILE, INSTALL_RECORD
from roundhouse.core.engines.install.llamacpp import install_llamacpp, plan_llamacpp_install
from roundhouse.core.engines.install.managed import ManagedBuilds
from roundhouse.core.engines.install.releases import (
    RELEASES_URL_ENV,
    fetch_release,
    list_releases,
    releases_url,
)
from roundhouse.core.errors import ConflictError, InvalidInputError, NotFoundError
from tests.fakes.releases import archives
from tests.fakes.releases.server import FakeRelease, ReleaseServer
from tests.unit.install.conftest import Events, inventory, run

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="the fake llama-server is sh")

LINUX_CPU = "llama-{tag}-bin-ubuntu-x64.tar.gz"


async def plan(server: ReleaseServer, tag: str | None = "b6000") -> InstallPlan:
    return await plan_llamacpp_install(inventory(), tag=tag, releases_url=server.releases_url)


def detect(engines_dir: Path) -> list[tuple[str | None, FoundBy, str | None, str]]:
    spec = load_catalog().spec(EngineId.LLAMA_CPP)
    host = LocalEngineHost({**os.environ, "PATH": ""})
    hits, _ = detect_engine(host, spec, managed_dir=str(engines_dir))
    return [(h.path, h.found_by, h.version, h.where) for h in hits]


def test_install_verify_unpack_detect_switch_remove(
    server: ReleaseServer, engines_dir: Path
) -> None:
    first = run(plan(server))
    asset = LINUX_CPU.format(tag="b6000")
    assert (first.tag, first.choice.asset.name, first.choice.backend) == (
        "b6000",
        asset,
        Backend.CPU,
    )
    assert first.choice.reason.startswith("CPU build: no GPU")

    events = Events()
    build = run(install_llamacpp(engines_dir, first, on_progress=events))
    folder = engines_dir / "llama.cpp" / "b6000"
    assert (build.tag, build.current, Path(build.path)) == ("b6000", True, folder)
    assert Path(build.executable) == folder / "llama-server"
    assert os.access(build.executable, os.X_OK)
    assert (folder / "libllama.so.0").is_symlink()  # the library links survive
    assert build.backend == Backend.CPU and build.asset == asset
    assert (folder / INSTALL_RECORD).is_file()
    assert sorted(p.name for p in (engines_dir / "llama.cpp").iterdir()) == [
        ".lock",
        "b6000",
        CURRENT_FILE,
    ]
    assert events.stages() == ["downloading", "verifying", "extracting", "installing", "done"]
    downloading = [e for e in events if e.stage == InstallStage.DOWNLOADING]
    assert downloading[-1].done_bytes == downloading[-1].total_bytes == first.choice.total_bytes
    assert downloading[-1].rate_bps is not None and downloading[-1].rate_bps > 0
    verifying = [e.message for e in events if e.stage == InstallStage.VERIFYING]
    assert verifying == [f"Checking {asset}", f"{asset}: size and sha256 match"]

    # Detection finds it and runs it: the fake llama-server says it is build 6000.
    assert detect(engines_dir)[0] == (
        str(folder / "llama-server"),
        FoundBy.MANAGED,
        "b6000",
        "Roundhouse's engines folder (b6000, current)",
    )

    latest = run(plan(server, tag=None))
    assert latest.tag == "b6100"
    run(install_llamacpp(engines_dir, latest))
    builds = ManagedBuilds(engines_dir)
    assert [(b.tag, b.current) for b in builds.installed()] == [("b6100", True), ("b6000", False)]
    assert [hit[2] for hit in detect(engines_dir)] == ["b6100", "b6000"]

    # Switching puts the older build first for detection.
    builds.switch("b6000")
    assert [hit[2] for hit in detect(engines_dir)] == ["b6000", "b6100"]
    assert detect(engines_dir)[0][3].endswith("(b6000, current)")

    # Installing what is there downloads nothing and only makes it current.
    fetched = len(server.downloads(asset))
    again = run(install_llamacpp(engines_dir, first, on_progress=(done := Events())))
    assert again.current and len(server.downloads(asset)) == fetched
    assert [e.message for e in done] == ["llama.cpp b6000 is already installed."]

    with pytest.raises(ConflictError, match="b6000 is the current build"):
        run(builds.remove("b6000"))
    assert run(builds.remove("b6100")) == "b6000"
    # The last build may go, current or not; then nothing is current.
    assert run(builds.remove("b6000")) is None
    assert builds.installed() == [] and not (engines_dir / "llama.cpp" / CURRENT_FILE).exists()
    with pytest.raises(NotFoundError, match="not installed"):
        builds.switch("b6000")


def test_forced_removal_of_the_current_build_makes_the_newest_current(
    server: ReleaseServer, engines_dir: Path
) -> None:
    run(install_llamacpp(engines_dir, run(plan(server, "b6000"))))
    run(install_llamacpp(engines_dir, run(plan(server, "b6100")), make_current=False))
    builds = ManagedBuilds(engines_dir)
    assert builds.current_tag() == "b6000"
    assert run(builds.remove("b6000", force=True)) == "b6100"
    assert [(b.tag, b.current) for b in builds.installed()] == [("b6100", True)]


def test_an_emptied_build_folder_is_replaced(server: ReleaseServer, engines_dir: Path) -> None:
    leftover = engines_dir / "llama.cpp" / "b6000"
    leftover.mkdir(parents=True)
    (leftover / "notes.txt").write_text("llama-server was deleted by hand")
    build = run(install_llamacpp(engines_dir, run(plan(server))))
    assert sorted(p.name for p in Path(build.path).iterdir())[-1] == "llama-server"
    assert not (leftover / "notes.txt").exists()
    assert sorted(p.name for p in (engines_dir / "llama.cpp").iterdir()) == [
        ".lock",
        "b6000",
        CURRENT_FILE,
    ]


def test_a_checksum_mismatch_installs_nothing(server: ReleaseServer, engines_dir: Path) -> None:
    the_plan = run(plan(server))
    server.modes.corrupt.add(the_plan.choice.asset.name)
    with pytest.raises(ChecksumError, match=r"does not match the release's sha256.*deleted"):
        run(install_llamacpp(engines_dir, the_plan))
    assert ManagedBuilds(engines_dir).tags() == []
    assert not (engines_dir / "llama.cpp" / "b6000").exists()
    assert not (engines_dir / "llama.cpp" / ".partial-b6000").exists()
    assert detect(engines_dir) == []


def test_a_file_of_the_wrong_size_installs_nothing(
    server: ReleaseServer, engines_dir: Path
) -> None:
    the_plan = run(plan(server))
    server.modes.wrong_size.add(the_plan.choice.asset.name)
    with pytest.raises(ChecksumError, match="the release lists"):
        run(install_llamacpp(engines_dir, the_plan))
    assert ManagedBuilds(engines_dir).tags() == []
    assert not (engines_dir / "llama.cpp" / ".partial-b6000").exists()


def test_an_interrupted_download_resumes_with_range(
    server: ReleaseServer, engines_dir: Path
) -> None:
    the_plan = run(plan(server))
    name = the_plan.choice.asset.name
    server.modes.drop_after[name] = 300_000
    with pytest.raises(DownloadError, match="kept; install again to resume"):
        run(install_llamacpp(engines_dir, the_plan, attempts=1))
    part = engines_dir / "llama.cpp" / ".partial-b6000" / name
    assert part.stat().st_size == 300_000
    assert ManagedBuilds(engines_dir).tags() == []
    assert ManagedBuilds(engines_dir).partials() == ["b6000"]

    build = run(install_llamacpp(engines_dir, the_plan))
    assert build.tag == "b6000"
    requests = server.downloads(name)
    assert "range" not in requests[0].headers
    assert requests[-1].headers["range"] == "bytes=300000-"
    assert ManagedBuilds(engines_dir).partials() == []


def test_a_dropped_connection_is_retried_within_one_install(
    server: ReleaseServer, engines_dir: Path
) -> None:
    the_plan = run(plan(server))
    name = the_plan.choice.asset.name
    server.modes.drop_after[name] = 100_000
    run(install_llamacpp(engines_dir, the_plan, attempts=2))
    assert [r.headers.get("range") for r in server.downloads(name)] == [None, "bytes=100000-"]


def test_a_server_that_ignores_range_is_read_from_the_start(
    server: ReleaseServer, engines_dir: Path
) -> None:
    the_plan = run(plan(server))
    name = the_plan.choice.asset.name
    server.modes.drop_after[name] = 200_000
    with pytest.raises(DownloadError):
        run(install_llamacpp(engines_dir, the_plan, attempts=1))
    server.modes.ignore_range = True
    build = run(install_llamacpp(engines_dir, the_plan))
    assert build.tag == "b6000"
    assert server.downloads(name)[-1].headers["range"] == "bytes=200000-"


def test_cancelling_leaves_only_the_partial_folder(
    server: ReleaseServer, engines_dir: Path
) -> None:
    the_plan = run(plan(server))
    name = the_plan.choice.asset.name
    server.modes.delay_per_chunk_s = 0.02
    events = Events()

    async def start_then_cancel() -> None:
        receiving = asyncio.Event()

        def on_progress(event: InstallProgress) -> None:
            events(event)
            if (event.done_bytes or 0) > 0:
                receiving.set()

        task = asyncio.create_task(install_llamacpp(engines_dir, the_plan, on_progress=on_progress))
        await receiving.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    run(start_then_cancel())
    folder = engines_dir / "llama.cpp"
    names = sorted(p.name for p in folder.iterdir())
    assert names == [".lock", ".partial-b6000"]
    kept = (folder / ".partial-b6000" / name).stat().st_size
    assert 0 < kept < the_plan.choice.asset.size
    assert detect(engines_dir) == []

    server.modes.delay_per_chunk_s = 0.0
    run(install_llamacpp(engines_dir, the_plan))
    assert server.downloads(name)[-1].headers["range"] == f"bytes={kept}-"
    assert ManagedBuilds(engines_dir).tags() == ["b6000"]


def test_an_archive_that_climbs_out_is_refused_and_nothing_is_installed(
    tmp_path: Path, engines_dir: Path
) -> None:
    evil = archives.tar_gz(
        [
            ("llama-b1/llama-server", b"#!/bin/sh\n", 0o755),
            ("llama-b1/../../../../evil", b"x", 0o644),
        ]
    )
    release = FakeRelease("b1", {"llama-b1-bin-ubuntu-x64.tar.gz": evil})
    with ReleaseServer([release]) as server:
        the_plan = run(plan(server, "b1"))
        with pytest.raises(UnsafeArchiveError, match="climbs out of its folder"):
            run(install_llamacpp(engines_dir, the_plan))
    assert ManagedBuilds(engines_dir).tags() == []
    assert not any(p.name == "evil" for p in tmp_path.rglob("*"))


def test_an_archive_without_llama_server_is_refused(engines_dir: Path) -> None:
    empty = archives.tar_gz([("llama-b2/README", b"hello", 0o644)])
    release = FakeRelease("b2", {"llama-b2-bin-ubuntu-x64.tar.gz": empty})
    with (
        ReleaseServer([release]) as server,
        pytest.raises(InstallError, match="holds no llama-server"),
    ):
        run(install_llamacpp(engines_dir, run(plan(server, "b2"))))
    assert ManagedBuilds(engines_dir).tags() == []


def test_the_older_zip_layout_installs_its_bin_folder(engines_dir: Path) -> None:
    release = FakeRelease(
        "b4562", {"llama-b4562-bin-ubuntu-x64.zip": archives.old_linux_zip("b4562")}
    )
    with ReleaseServer([release]) as server:
        build = run(install_llamacpp(engines_dir, run(plan(server, "b4562"))))
    folder = engines_dir / "llama.cpp" / "b4562"
    assert sorted(p.name for p in folder.iterdir()) == [
        INSTALL_RECORD,
        "libggml.so",
        "llama-server",
    ]
    assert os.access(build.executable, os.X_OK)
    assert detect(engines_dir)[0][2] == "b4562"


def test_a_cuda_runtime_lands_beside_llama_server(server: ReleaseServer, engines_dir: Path) -> None:
    base = run(plan(server))
    release = base.release
    runtime = next(a for a in release.assets if a.name.startswith("cudart-"))
    choice = base.choice.model_copy(update={"extras": [runtime], "backend": Backend.CUDA})
    build = run(install_llamacpp(engines_dir, InstallPlan(release=release, choice=choice)))
    assert (Path(build.path) / "cudart64_12.dll").is_file()
    assert (Path(build.path) / "llama-server").is_file()


def test_an_asset_without_a_digest_needs_consent(engines_dir: Path) -> None:
    name = "llama-b3-bin-ubuntu-x64.tar.gz"
    release = FakeRelease("b3", {name: archives.linux_release("b3")}, no_digest={name})
    with ReleaseServer([release]) as server:
        the_plan = run(plan(server, "b3"))
        with pytest.raises(InstallError, match="no sha256"):
            run(install_llamacpp(engines_dir, the_plan))
        assert server.downloads(name) == []
        events = Events()
        run(install_llamacpp(engines_dir, the_plan, allow_unverified=True, on_progress=events))
    assert any("no sha256 to check" in e.message for e in events)
    assert ManagedBuilds(engines_dir).tags() == ["b3"]


def test_a_second_install_at_once_is_refused(server: ReleaseServer, engines_dir: Path) -> None:
    the_plan = run(plan(server))
    with ManagedBuilds(engines_dir).lock(), pytest.raises(InstallBusyError, match="wait"):
        run(install_llamacpp(engines_dir, the_plan))


def test_release_listing_errors_say_what_to_do(server: ReleaseServer) -> None:
    async def go() -> None:
        async with httpx.AsyncClient() as client:
            releases = await list_releases(client, base_url=server.releases_url, limit=5)
            assert [r.tag for r in releases] == ["b6100", "b6000"]
            assert all(a.digest and a.digest.startswith("sha256:") for a in releases[0].assets)
            with pytest.raises(NotFoundError, match="no release tagged b1;"):
                await fetch_release(client, "b1", base_url=server.releases_url)
            server.modes.rate_limited = True
            with pytest.raises(DownloadError, match="limit for this address is used up"):
                await fetch_release(client, base_url=server.releases_url)
            with pytest.raises(InvalidInputError, match=r"not a llama\.cpp release tag"):
                await fetch_release(client, "../../etc", base_url=server.releases_url)

    run(go())
    assert server.log[0].headers["accept"] == "application/vnd.github+json"


def test_the_releases_url_comes_from_the_argument_then_the_environment() -> None:
    env = {RELEASES_URL_ENV: "http://127.0.0.1:9/releases/"}
    assert releases_url(None, env) == "http://127.0.0.1:9/releases"
    assert releases_url("http://mirror/r", env) == "http://mirror/r"
    assert releases_url(None, {}) == "https://api.github.com/repos/ggml-org/llama.cpp/releases"
