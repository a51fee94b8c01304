"""Python engines (mlx-lm, vLLM, SGLang) in a virtual environment of their own, made with pip."""

from __future__ import annotations

import asyncio
import contextlib
import os
import platform
import shutil
import subprocess
import sys
import threading
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import psutil

from roundhouse.api.engines import EngineCatalog, EngineId
from roundhouse.api.installs import (
    InstallProgress,
    InstallStage,
    ManagedVenv,
    ProgressCallback,
)
from roundhouse.core.engines.catalog import load_catalog, platform_for, platforms_in_words
from roundhouse.core.engines.install.errors import InstallError, PipError
from roundhouse.core.engines.install.hints import pip_requirements
from roundhouse.core.engines.install.layout import VENVS_DIR, venv_python
from roundhouse.core.engines.install.locks import BusyLock
from roundhouse.core.errors import InvalidInputError, NotFoundError

TAIL_LINES = 20
# Environment that would make the new interpreter look at someone else's packages.
_DROPPED_ENV = ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "__PYVENV_LAUNCHER__")
_VERSION_PROBE = "import importlib.metadata as m, sys; print(m.version(sys.argv[1]))"


def venv_dir(engines_dir: Path, engine: EngineId) -> Path:
    return engines_dir / VENVS_DIR / engine.value


def managed_python(engines_dir: Path, engine: EngineId) -> Path | None:
    """The managed environment's interpreter, when the environment exists."""
    python = Path(venv_python(venv_dir(engines_dir, engine), platform.system()))
    return python if python.is_file() else None


async def install_python_engine(
    engine: EngineId,
    engines_dir: Path,
    *,
    python: str | None = None,
    packages: Sequence[str] | None = None,
    pip_args: Sequence[str] = (),
    catalog: EngineCatalog | None = None,
    on_progress: ProgressCallback | None = None,
    env: Mapping[str, str] | None = None,
) -> ManagedVenv:
    """Create `<engines_dir>/venvs/<engine>/` with `python -m venv` (if missing) and pip
    install the engine's packages into it, streaming pip's output line by line.

    `python` makes the environment (default: the interpreter running Roundhouse);
    `packages` replaces the catalog's requirements; `pip_args` go to `pip install` as they
    are (`--no-index --find-links DIR` to stay offline, `--upgrade`, an index URL). An
    environment created by this call is deleted again if anything fails or the call is
    cancelled; an existing one is left as pip leaves it.
    """
    catalog = catalog or load_catalog()
    spec = catalog.spec(engine)
    system = platform.system()
    if not spec.python_package:
        raise InvalidInputError(f"{spec.title} is not a Python package; pip cannot install it.")
    if platform_for(spec, system, platform.machine()) is None:
        raise InvalidInputError(
            f"{spec.title} does not run on {system} {platform.machine()}; "
            f"it runs on {platforms_in_words(spec)}."
        )
    wanted = list(packages) if packages is not None else pip_requirements(spec, system)
    base = python or _default_python()
    folder = venv_dir(engines_dir, engine)
    venv_py = Path(venv_python(folder, system))
    report = _reporter(engine, on_progress)
    child_env = _child_env(env)
    with BusyLock(engines_dir / VENVS_DIR / f".{engine.value}.lock", spec.title):
        fresh = managed_python(engines_dir, engine) is None
        try:
            if fresh:
                await asyncio.to_thread(shutil.rmtree, folder, True)
                report(InstallStage.CREATING_VENV, f"Creating a Python environment in {folder}")
                await _create(base, folder, child_env, report)
            report(InstallStage.PIP, f"pip install {' '.join(wanted)}")
            argv = [
                str(venv_py),
                "-m",
                "pip",
                "install",
                "--disable-pip-version-check",
                "--no-input",
                "--progress-bar",
                "off",
                *pip_args,
                *wanted,
            ]
            code, tail = await run_streaming(
                argv, child_env, lambda line: report(InstallStage.PIP, line, line=line)
            )
            if code != 0:
                raise PipError(
                    f"pip could not install {' '.join(wanted)} for {spec.title} (exit {code}). "
                    "Check the package name, the network connection and that this Python "
                    "version is supported, then try again.",
                    tail,
                )
            version = await _version(venv_py, spec.python_package, child_env)
        except BaseException:
            if fresh:
                await asyncio.shield(asyncio.to_thread(shutil.rmtree, folder, True))
            raise
    report(InstallStage.DONE, f"{spec.title} {version or ''} is installed in {folder}".strip())
    return ManagedVenv(
        engine=engine,
        venv_dir=str(folder),
        python=str(venv_py),
        package=spec.python_package,
        version=version,
    )


async def remove_python_engine(engine: EngineId, engines_dir: Path) -> None:
    """Delete the engine's managed environment (stop instances that run from it first)."""
    folder = venv_dir(engines_dir, engine)
    with BusyLock(engines_dir / VENVS_DIR / f".{engine.value}.lock", engine.value):
        if not folder.is_dir():
            raise NotFoundError(f"{engine.value} has no environment in {folder}.")
        await asyncio.to_thread(shutil.rmtree, folder)


async def run_streaming(
    argv: Sequence[str],
    env: Mapping[str, str],
    on_line: Callable[[str], None],
) -> tuple[int, list[str]]:
    """Run `argv`, calling `on_line` with each line of stdout and stderr as it comes; returns
    the exit code and the last lines. Cancelling kills the process and its children.

    Popen and a reader thread rather than asyncio's subprocesses, which some loops lack
    (ADR 7).
    """
    loop = asyncio.get_running_loop()
    popen = await asyncio.to_thread(_spawn, argv, env)
    lines: asyncio.Queue[bytes | None] = asyncio.Queue()

    def pump() -> None:
        assert popen.stdout is not None
        try:
            for raw in iter(popen.stdout.readline, b""):
                loop.call_soon_threadsafe(lines.put_nowait, raw)
        finally:
            with contextlib.suppress(RuntimeError):  # the loop is gone: nobody listens
                loop.call_soon_threadsafe(lines.put_nowait, None)

    threading.Thread(target=pump, name=f"pip-output-{popen.pid}", daemon=True).start()
    tail: deque[str] = deque(maxlen=TAIL_LINES)
    try:
        while (raw := await lines.get()) is not None:
            line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
            tail.append(line)
            on_line(line)
        code = await asyncio.to_thread(popen.wait)
    except BaseException:
        # pip and venv start children of their own (ensurepip, build backends): end them all,
        # or they keep writing into a folder that is about to be deleted.
        await asyncio.shield(asyncio.to_thread(_kill_tree, popen))
        raise
    finally:
        if popen.stdout is not None:
            popen.stdout.close()
    return code, list(tail)


def _spawn(argv: Sequence[str], env: Mapping[str, str]) -> subprocess.Popen[bytes]:
    windows = sys.platform == "win32"
    try:
        return subprocess.Popen(
            list(argv),  # a list, never a shell
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=dict(env),
            creationflags=getattr(subprocess, "CREATE_NO_WINDOW", 0) if windows else 0,
        )
    except OSError as exc:
        raise InvalidInputError(
            f"{argv[0]} cannot be run ({exc.strerror or exc}); choose a Python 3 interpreter."
        ) from exc


def _kill_tree(popen: subprocess.Popen[bytes]) -> None:
    try:
        children = psutil.Process(popen.pid).children(recursive=True)
    except psutil.Error:
        children = []
    with contextlib.suppress(OSError):
        popen.kill()
    for proc in children:
        with contextlib.suppress(psutil.Error):
            proc.kill()
    psutil.wait_procs(children, timeout=5)
    popen.wait()


async def _create(
    python: str,
    folder: Path,
    env: Mapping[str, str],
    report: Callable[..., None],
) -> None:
    folder.parent.mkdir(parents=True, exist_ok=True)

    def each(line: str) -> None:
        report(InstallStage.CREATING_VENV, line, line=line)

    code, tail = await run_streaming([python, "-m", "venv", str(folder)], env, each)
    if code != 0:
        raise InstallError(
            f"{python} could not create a virtual environment in {folder} (exit {code}). "
            "Choose another Python 3 interpreter (on Debian and Ubuntu, install python3-venv)."
            + ("\nLast lines:\n" + "\n".join(tail) if tail else "")
        )


async def _version(python: Path, package: str, env: Mapping[str, str]) -> str | None:
    lines: list[str] = []
    code, _ = await run_streaming([str(python), "-c", _VERSION_PROBE, package], env, lines.append)
    return lines[-1].strip() if code == 0 and lines else None


def _reporter(engine: EngineId, on_progress: ProgressCallback | None) -> Callable[..., None]:
    def report(stage: InstallStage, message: str, **fields: object) -> None:
        if on_progress is not None:
            on_progress(
                InstallProgress.model_validate(
                    {"engine": engine, "stage": stage, "message": message, **fields}
                )
            )

    return report


def _default_python() -> str:
    # A frozen app's sys.executable is the app itself, not an interpreter.
    if getattr(sys, "frozen", False) or not sys.executable:
        raise InvalidInputError(
            "Roundhouse runs as an app bundle: choose a Python 3 interpreter to create the "
            "engine's environment with."
        )
    return sys.executable


def _child_env(extra: Mapping[str, str] | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _DROPPED_ENV}
    env.update(extra or {})
    env.update({"PYTHONUNBUFFERED": "1", "PYTHONIOENCODING": "utf-8", "PIP_NO_INPUT": "1"})
    return env
