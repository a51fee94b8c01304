"""The pinned llama.cpp `llama-server` and `rpc-server` used by tests: where cached, how built."""

# Stdlib only: .ci/build-llama-server may run this before the venv has anything else.

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

# The single pin: the sdist that carries llama.cpp's sources (MIT; in vendor/llama.cpp).
SDIST_NAME = "llama-cpp-python"
SDIST_VERSION = "0.3.36"
SDIST_FILENAME = f"llama_cpp_python-{SDIST_VERSION}.tar.gz"
SDIST_SHA256 = "832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e"
SOURCE_SUBDIR = f"llama_cpp_python-{SDIST_VERSION}/vendor/llama.cpp"
CACHE_KEY = f"{SDIST_NAME}-{SDIST_VERSION}"

ENV_BINARY = "ROUNDHOUSE_LLAMA_SERVER"
ENV_CACHE = "ROUNDHOUSE_TEST_CACHE"
ENV_SDIST = "ROUNDHOUSE_LLAMA_SDIST"

# GGML_NATIVE off: ggml then targets x86-64-v3 (AVX2/FMA) instead of this exact CPU, so a
# cache restored on another runner cannot die of SIGILL. Static libs keep the binary
# self-contained; OpenMP off drops the libgomp dependency (ggml has its own thread pool).
# The UI and OpenSSL are off because the tests need neither and the build has no network.
# GGML_RPC on: the split across machines (ADR 36) runs rpc-server beside llama-server.
CMAKE_OPTIONS = (
    "-DCMAKE_BUILD_TYPE=Release",
    "-DBUILD_SHARED_LIBS=OFF",
    "-DGGML_NATIVE=OFF",
    "-DGGML_OPENMP=OFF",
    "-DLLAMA_CURL=OFF",
    "-DLLAMA_OPENSSL=OFF",
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
    "-DLLAMA_BUILD_TOOLS=ON",
    "-DLLAMA_BUILD_SERVER=ON",
    "-DLLAMA_BUILD_UI=OFF",
    "-DLLAMA_USE_PREBUILT_UI=OFF",
    "-DGGML_RPC=ON",
)
# Every binary the tests run, built and cached together: a cache missing one is rebuilt.
# This llama.cpp names its RPC worker ggml-rpc-server (older releases: rpc-server).
RPC_SERVER = "ggml-rpc-server"
TARGETS = ("llama-server", RPC_SERVER)


def cache_root() -> Path:
    """The test cache folder (ROUNDHOUSE_TEST_CACHE or ~/.cache/roundhouse-tests)."""
    env = os.environ.get(ENV_CACHE)
    return Path(env) if env else Path.home() / ".cache" / "roundhouse-tests"


def server_root() -> Path:
    return cache_root() / "llama-server"


def install_dir() -> Path:
    return server_root() / CACHE_KEY


def cached_binary() -> Path:
    return install_dir() / "bin" / "llama-server"


def cached_rpc_server() -> Path:
    return install_dir() / "bin" / RPC_SERVER


def _build_info() -> str:
    return f"{SDIST_FILENAME} sha256 {SDIST_SHA256}\n" + "\n".join(CMAKE_OPTIONS) + "\n"


def cache_complete() -> bool:
    """True when the cached build has every target, runs, and was built with these options.

    A cache from before rpc-server (CI's warm cache) fails this and is rebuilt.
    """
    info = install_dir() / "BUILD-INFO.txt"
    try:
        same_options = info.read_text(encoding="utf-8") == _build_info()
    except OSError:
        return False
    bin_dir = install_dir() / "bin"
    return (
        same_options
        and all((bin_dir / name).is_file() for name in TARGETS)
        and binary_runs(cached_binary())
    )


def binary_runs(binary: Path) -> bool:
    """True when `binary --version` exits 0 (a present but broken binary does not count)."""
    if not binary.is_file() or not os.access(binary, os.X_OK):
        return False
    try:
        done = subprocess.run(
            [str(binary), "--version"], capture_output=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def find_llama_server() -> Path | None:
    """The llama-server to test against: ROUNDHOUSE_LLAMA_SERVER, else the cached build."""
    env = os.environ.get(ENV_BINARY)
    if env:
        path = Path(env)
        return path if path.is_file() else None
    binary = cached_binary()
    return binary if binary.is_file() else None


def find_rpc_server() -> Path | None:
    """The rpc-server to test against: beside ROUNDHOUSE_LLAMA_SERVER, else the cached build."""
    env = os.environ.get(ENV_BINARY)
    if env:
        path = Path(env).with_name(RPC_SERVER)
        return path if path.is_file() else None
    binary = cached_rpc_server()
    return binary if binary.is_file() else None


def _log(message: str) -> None:
    print(f"[build-llama-server] {message}", flush=True)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _checked(path: Path) -> Path | None:
    if not path.is_file():
        return None
    actual = _sha256(path)
    if actual != SDIST_SHA256:
        _log(f"ignoring {path}: sha256 {actual} is not the pinned {SDIST_SHA256}")
        return None
    return path


def obtain_sdist() -> Path:
    """The pinned sdist: ROUNDHOUSE_LLAMA_SDIST, else the cache, else `pip download` into it."""
    env = os.environ.get(ENV_SDIST)
    if env:
        found = _checked(Path(env))
        if found:
            _log(f"using sdist {found} ({ENV_SDIST})")
            return found
    sdist_dir = server_root() / "sdist"
    cached = _checked(sdist_dir / SDIST_FILENAME)
    if cached:
        _log(f"using cached sdist {cached}")
        return cached
    sdist_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=sdist_dir, prefix=".download-") as tmp:
        _log(f"downloading {SDIST_NAME}=={SDIST_VERSION} from PyPI")
        pip = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps"]
        spec = f"{SDIST_NAME}=={SDIST_VERSION}"
        subprocess.run([*pip, "--no-binary", ":all:", spec, "-d", tmp], check=True)
        downloaded = _checked(Path(tmp) / SDIST_FILENAME)
        if downloaded is None:
            raise SystemExit(f"pip did not download the pinned {SDIST_FILENAME}")
        # Rename inside one folder: a killed download never leaves a partial sdist behind.
        target = sdist_dir / SDIST_FILENAME
        downloaded.replace(target)
    return target


def _extract_sources(sdist: Path, dest: Path) -> Path:
    prefix = SOURCE_SUBDIR + "/"
    with tarfile.open(sdist) as tar:
        members = [m for m in tar.getmembers() if m.name.startswith(prefix)]
        tar.extractall(dest, members=members, filter="data")
    return dest / SOURCE_SUBDIR


@contextlib.contextmanager
def _build_lock() -> Iterator[None]:
    # Two concurrent runs (xdist, two terminals) must not build into the same cache.
    server_root().mkdir(parents=True, exist_ok=True)
    with (server_root() / ".lock").open("w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _remove_stale_temp_dirs() -> None:
    # Left by killed builds; safe to delete because we hold the build lock.
    for stale in server_root().glob(".build-*"):
        shutil.rmtree(stale, ignore_errors=True)


def build(*, jobs: int | None = None, force: bool = False) -> Path:
    """Build llama-server and rpc-server into the cache unless complete there; return the former."""
    start = time.monotonic()
    target = cached_binary()
    if not force and cache_complete():
        _log(f"cached and working: {target} ({time.monotonic() - start:.1f} s)")
        return target
    with _build_lock():
        if not force and cache_complete():
            _log(f"built meanwhile by another run: {target}")
            return target
        _remove_stale_temp_dirs()
        sdist = obtain_sdist()
        work = Path(tempfile.mkdtemp(dir=server_root(), prefix=".build-"))
        try:
            _log(f"extracting llama.cpp sources into {work}")
            source = _extract_sources(sdist, work / "src")
            build_dir = work / "build"
            generator = ["-G", "Ninja"] if shutil.which("ninja") else []
            jobs = jobs or os.cpu_count() or 1
            _log("configuring: cmake " + " ".join(CMAKE_OPTIONS))
            subprocess.run(
                ["cmake", "-S", str(source), "-B", str(build_dir), *generator, *CMAKE_OPTIONS],
                check=True,
            )
            names = " ".join(TARGETS)
            _log(f"building targets {names} with {jobs} jobs (about 10 min on 2 cores)")
            compile_start = time.monotonic()
            target_args = ["--target", *TARGETS, "--config", "Release", "-j", str(jobs)]
            subprocess.run(["cmake", "--build", str(build_dir), *target_args], check=True)
            _log(f"compiled in {time.monotonic() - compile_start:.0f} s")
            stage = work / "stage"
            (stage / "bin").mkdir(parents=True)
            for name in TARGETS:
                shutil.copy2(build_dir / "bin" / name, stage / "bin" / name)
            # Shared libraries only exist if someone flips BUILD_SHARED_LIBS; keep them beside
            # the binary, where its RPATH ($ORIGIN) finds them.
            for lib in (build_dir / "bin").glob("*.so*"):
                shutil.copy2(lib, stage / "bin" / lib.name)
            (stage / "BUILD-INFO.txt").write_text(_build_info(), encoding="utf-8")
            if not binary_runs(stage / "bin" / "llama-server"):
                raise SystemExit("the freshly built llama-server does not run --version")
            # Only a complete, working install ever takes the cache's name.
            old = install_dir()
            if old.exists():
                old.rename(work / "old")
            stage.rename(old)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    _log(f"built {target} in {time.monotonic() - start:.0f} s")
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--force", action="store_true", help="rebuild even if cached")
    parser.add_argument("-j", "--jobs", type=int, default=None, help="parallel jobs (nproc)")
    parser.add_argument(
        "--print-path", action="store_true", help="print the cached binary's path and exit"
    )
    args = parser.parse_args(argv)
    # SIGTERM (CI cancelling a job) unwinds like Ctrl-C: subprocess.run kills cmake and the
    # `finally` removes the temp build folder. A SIGKILL leaves it; the next run removes it.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    if args.print_path:
        print(cached_binary())
        return 0
    binary = build(jobs=args.jobs, force=args.force)
    version = subprocess.run(
        [str(binary), "--version"], capture_output=True, text=True, check=False
    )
    _log((version.stdout + version.stderr).strip().replace("\n", " | "))
    return 0


if __name__ == "__main__":
    sys.exit(main())
