"""The pins a release ships for the Python engines, how they are read, and what each request
plans: the pinned versions checked, another version refused unless unverified."""

from __future__ import annotations

import platform
import sys
from pathlib import Path
from typing import Any

import pytest

from roundhouse.api.engines import EngineId
from roundhouse.api.installs import HashCheck, InstallRequest
from roundhouse.core.engines.catalog import load_catalog
from roundhouse.core.engines.install.jobs import PYTHON_ENGINES, InstallJobs
from roundhouse.core.engines.install.pins import (
    PINS_ENV,
    PinsError,
    default_pins_dir,
    pins_path,
    platform_key,
    read_pins,
)
from roundhouse.core.engines.install.venvs import PipPlan, plan_python_engine
from roundhouse.core.errors import InvalidInputError

HASH_A = "a" * 64
HASH_B = "b" * 64
MACHINE = {"arm64": "arm64", "x86_64": "x86_64"}


def _write(folder: Path, text: str, engine: str = "vllm", key: str = "linux-x86_64") -> Path:
    path = folder / engine / f"{key}.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_every_platform_of_every_python_engine_has_full_pins_of_one_version() -> None:
    catalog = load_catalog()
    for engine in PYTHON_ENGINES:
        spec = catalog.spec(engine)
        assert spec.python_package is not None
        versions = set()
        for place in spec.platforms:
            path = pins_path(default_pins_dir(), engine, place.os, MACHINE[place.arch])
            pins = read_pins(path)
            assert pins.coverage == HashCheck.ALL, path
            pinned = pins.versions_of(spec.python_package)
            assert len(pinned) == 1, (path, pinned)
            versions.update(pinned)
            # Hash-checking needs every line pinned with ==, each with at least one hash.
            assert all(p.version and p.hashes for p in pins.pins)
        assert len(versions) == 1, f"{engine.value}: one version on every platform"


def test_a_pins_file_is_read_as_pip_reads_it(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "# Roundhouse engine pins: a test.\n"
        "# pins: top-level\n"
        "# why: nothing resolves here\n"
        "vLLM==0.33.0 ; sys_platform == 'linux' \\\n"
        f"    --hash=sha256:{HASH_A} \\\n"
        f"    --hash=sha256:{HASH_B}\n"
        "    # via -r (the pins)\n"
        "\n"
        f"mlx[cpu]==0.1 --hash=sha256:{HASH_A}  # a comment\n",
    )
    pins = read_pins(path)
    assert (pins.coverage, pins.why) == (HashCheck.TOP_LEVEL, "nothing resolves here")
    first, second = pins.pins
    assert (first.key, first.version, first.hashes) == ("vllm", "0.33.0", (HASH_A, HASH_B))
    assert first.requirement() == "vLLM==0.33.0 ; sys_platform == 'linux'"
    assert second.requirement() == "mlx[cpu]==0.1"
    assert pins.versions_of("VLLM") == ["0.33.0"]


@pytest.mark.parametrize(
    ("text", "words"),
    [
        (f"vllm==1 --hash=sha256:{HASH_A}\n", "no `# pins: all` or `# pins: top-level` line"),
        ("# pins: all\n", "it pins no package"),
        ("# pins: all\nvllm==1\n", "line 2: vllm has no valid sha256 hash"),
        (f"# pins: all\nvllm>=1 --hash=sha256:{HASH_A}\n", "line 2: 'vllm>=1' is not"),
        ("# pins: all\nvllm==1 --hash=sha256:abc\n", "vllm has no valid sha256 hash"),
        (
            "# pins: all\n--index-url http://evil.example/simple\n"
            f"vllm==1 --hash=sha256:{HASH_A}\n",
            "line 2: only `name==version --hash=sha256:...` lines belong there",
        ),
        (
            f"# pins: all\nvllm==1 --index-url=http://evil.example --hash=sha256:{HASH_A}\n",
            "only `name==version",
        ),
        (
            f"# pins: all\nvllm==1 --hash=sha256:{HASH_A} --hash=md5:0\n",
            "no valid sha256 hash",
        ),
    ],
)
def test_a_damaged_pins_file_is_refused_with_the_line(
    tmp_path: Path, text: str, words: str
) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(PinsError) as refused:
        read_pins(path)
    assert words in refused.value.detail
    assert str(path) in refused.value.detail and "Reinstall Roundhouse" in refused.value.detail


def _pins(tmp_path: Path, coverage: str = "all") -> Path:
    _write(
        tmp_path,
        f"# pins: {coverage}\n"
        f"vllm==0.33.0 --hash=sha256:{HASH_A}\n"
        f"torch==2.9.0 --hash=sha256:{HASH_B}\n",
    )
    return tmp_path


def _plan(tmp_path: Path, **kwargs: Any) -> PipPlan:
    return plan_python_engine(
        EngineId.VLLM, pins_dir=tmp_path, system="Linux", machine="x86_64", **kwargs
    )


def test_the_pinned_version_is_planned_with_every_file_checked(tmp_path: Path) -> None:
    pins = _pins(tmp_path)
    plan = plan_python_engine(EngineId.VLLM, pins_dir=pins, system="Linux", machine="AMD64")
    path = str(pins / "vllm" / "linux-x86_64.txt")
    assert plan.runs == (("--require-hashes", "--only-binary=:all:", "-r", path),)
    assert (plan.versions, plan.hash_check, plan.warning) == (("0.33.0",), HashCheck.ALL, None)
    assert plan.summary == (
        "vllm 0.33.0 as pinned by this release for Linux x86_64: pip checks every file it "
        "downloads, dependencies included, against the pinned sha256 hashes."
    )
    # Asking for the pinned version, in any spelling, is the same plan.
    for asked in ("0.33.0", "v0.33.0", "==0.33.0", " 0.33.0 "):
        same = plan_python_engine(
            EngineId.VLLM, version=asked, pins_dir=pins, system="Linux", machine="x86_64"
        )
        assert same.runs == plan.runs
    # With unverified too: what can be checked is checked.
    assert _plan(pins, version="0.33.0", unverified=True).hash_check == HashCheck.ALL


def test_pins_of_the_engine_alone_run_pip_twice_and_warn(tmp_path: Path) -> None:
    plan = _plan(_pins(tmp_path, "top-level"))
    assert plan.hash_check == HashCheck.TOP_LEVEL
    assert plan.runs[0][-3:] == ("--no-deps", "-r", str(tmp_path / "vllm" / "linux-x86_64.txt"))
    assert plan.runs[0][:2] == ("--require-hashes", "--only-binary=:all:")
    assert plan.runs[1] == ("vllm==0.33.0", "torch==2.9.0")
    assert plan.warning is not None and "not hash-pinned for Linux x86_64" in plan.warning


def test_another_version_is_refused_unless_unverified(tmp_path: Path) -> None:
    pins = _pins(tmp_path)
    with pytest.raises(InvalidInputError) as refused:
        _plan(pins, version="0.30.1")
    assert refused.value.detail == (
        "vllm 0.30.1 is not the version this Roundhouse release pins for Linux x86_64 "
        "(0.33.0): only pinned versions are checked against known hashes. Leave out the "
        "version to install 0.33.0, or allow an unverified install (roundhouse engines "
        "install vllm --version 0.30.1 --unverified) to get it from the package index "
        "without any check."
    )
    plan = _plan(pins, version="0.30.1", unverified=True)
    assert (plan.hash_check, plan.runs, plan.versions) == (
        HashCheck.NONE,
        (("vllm==0.30.1",),),
        ("0.30.1",),
    )
    assert plan.warning == (
        "Warning: vllm 0.30.1 is installed instead of the pinned 0.33.0, NOT verified: pip "
        "installs it and its dependencies without checking any hash."
    )
    newest = _plan(pins, unverified=True)
    assert (newest.runs, newest.versions) == ((("vllm",),), ())
    assert newest.summary.startswith("the newest vllm on the package index, asked for instead")


@pytest.mark.parametrize(
    "version", ["0.1 --index-url http://evil.example", "../x", "", "1.0;rm", "x" * 70]
)
def test_a_version_that_is_not_one_is_refused(tmp_path: Path, version: str) -> None:
    with pytest.raises(InvalidInputError, match="is not a version of vllm"):
        _plan(_pins(tmp_path), version=version, unverified=True)


def test_missing_pins_are_refused_unless_unverified(tmp_path: Path) -> None:
    with pytest.raises(PinsError) as refused:
        _plan(tmp_path)
    assert "no pinned versions of vLLM for Linux x86_64" in refused.value.detail
    assert "roundhouse engines install vllm --unverified" in refused.value.detail
    plan = _plan(tmp_path, unverified=True)
    assert plan.hash_check == HashCheck.NONE
    assert "instead of pins (none for Linux x86_64)" in plan.summary


def test_the_pins_folder_comes_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(PINS_ENV, str(_pins(tmp_path)))
    assert default_pins_dir() == tmp_path
    plan = plan_python_engine(EngineId.VLLM, system="Linux", machine="x86_64")
    assert plan.runs[0][-1] == str(tmp_path / "vllm" / "linux-x86_64.txt")
    monkeypatch.delenv(PINS_ENV)
    assert default_pins_dir().parts[-3:] == ("resources", "engines", "pins")


def test_an_engine_that_does_not_run_here_is_refused_first(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="does not run on Darwin arm64"):
        plan_python_engine(EngineId.VLLM, pins_dir=tmp_path, system="Darwin", machine="arm64")
    with pytest.raises(InvalidInputError, match="not a Python package"):
        plan_python_engine(EngineId.OLLAMA, pins_dir=tmp_path)


@pytest.mark.skipif(sys.platform != "linux", reason="vLLM runs on Linux")
def test_the_daemon_refuses_an_unpinned_version_before_any_job_starts(tmp_path: Path) -> None:
    key = platform_key(platform.system(), platform.machine())
    _write(tmp_path, f"# pins: all\nvllm==0.33.0 --hash=sha256:{HASH_A}\n", key=key)

    async def never() -> object:
        raise AssertionError("nothing may be asked of the machine")

    jobs = InstallJobs(tmp_path / "engines", never, never, pins_dir=tmp_path)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match=r"vllm 0\.30\.1 is not the version"):
        jobs.start(EngineId.VLLM, InstallRequest(version="0.30.1"))
    with pytest.raises(InvalidInputError, match="chosen by its release tag"):
        jobs.start(EngineId.LLAMA_CPP, InstallRequest(version="1.0"))
    assert jobs.all() == []
    assert not (tmp_path / "engines").exists()
