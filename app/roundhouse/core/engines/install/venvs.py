"""Python engines (mlx-lm, vLLM, SGLang) in a virtual environment of their own, made with pip."""

from __future__ import annotations

import asyncio
import contextlib
import os
import platform
import re
import shutil
import subprocess
import sys
import threading
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import psutil

from roundhouse.api.engines import EngineCatalog, EngineId
from roundhouse.api.installs import (
    HashCheck,
    InstallProgress,
    InstallStage,
    ManagedVenv,
    ProgressCallback,
)
from roundhouse.core.engines.catalog import load_catalog, platform_for, platforms_in_words
from roundhouse.core.engines.install.errors import HashMismatchError, InstallError, PipError
from roundhouse.core.engines.install.hints import pip_requirements
from roundhouse.core.engines.install.layout import VENVS_DIR, venv_python
from roundhouse.core.engines.install.locks import BusyLock
from roundhouse.core.engines.install.pins import (
    PinFile,
    PinsError,
    default_pins_dir,
    pins_path,
    read_pins,
)
from roundhouse.core.errors import InvalidInputError, NotFoundError
from roundhouse.core.hardware.host import normalize_arch

TAIL_LINES = 20
_OS_WORDS = {"Darwin": "macOS", "Linux": "Linux", "Windows": "Windows"}
_VERSION = re.compile(r"^[0-9][A-Za-z0-9.+!_-]{0,62}$")
# What pip prints when hash-checking mode refuses something (pip 8 and later).
_MISMATCH = "DO NOT MATCH THE HASHES"
_UNPINNED = frozenset(
    (
        "Hashes are required in --require-hashes mode",
        "In --require-hashes mode, all requirements must have their versions pinned",
    )
)
_PIP_SIGNALS = (_MISMATCH, *_UNPINNED)
# Environment that would make the new interpreter look at someone else's packages.
_DROPPED_ENV = ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "__PYVENV_LAUNCHER__")
_VERSION_PROBE = "import importlib.metadata as m, sys; print(m.version(sys.argv[1]))"


def venv_dir(engines_dir: Path, engine: EngineId) -> Path:
    return engines_dir / VENVS_DIR / engine.value


def managed_python(engines_dir: Path, engine: EngineId) -> Path | None:
    """The managed environment's interpreter, when the environment exists."""
    python = Path(venv_python(venv_dir(engines_dir, engine), platform.system()))
    return python if python.is_file() else None


@dataclass(frozen=True)
class PipPlan:
    """What install_python_engine runs for an engine: which versions, and what pip checks."""

    engine: EngineId
    title: str
    package: str
    # The version asked for or pinned (more than one where Python versions differ); empty:
    # the newest on the package index.
    versions: tuple[str, ...]
    hash_check: HashCheck
    # The arguments of each `pip install`, run in this order.
    runs: tuple[tuple[str, ...], ...]
    summary: str
    # Said in the install's output before pip starts, when not every file is checked.
    warning: str | None = None


def plan_python_engine(
    engine: EngineId,
    *,
    version: str | None = None,
    unverified: bool = False,
    pins_dir: Path | None = None,
    catalog: EngineCatalog | None = None,
    system: str | None = None,
    machine: str | None = None,
) -> PipPlan:
    """How to install `engine` here: the versions this release pins for the platform, with
    the hashes of their files (`pins`); another `version`, or the newest with no version, only
    when `unverified` allows it, and then nothing is checked (ADR 23).

    `pins_dir` defaults to $ROUNDHOUSE_ENGINE_PINS, else the pins shipped in resources.
    """
    spec = (catalog or load_catalog()).spec(engine)
    system = system or platform.system()
    machine = machine or platform.machine()
    if not spec.python_package:
        raise InvalidInputError(f"{spec.title} is not a Python package; pip cannot install it.")
    found = platform_for(spec, system, machine)
    if found is None:
        raise InvalidInputError(
            f"{spec.title} does not run on {system} {machine}; "
            f"it runs on {platforms_in_words(spec)}."
        )
    where = f"{_OS_WORDS.get(found.os, found.os)} {normalize_arch(machine)}"
    package = spec.python_package
    if version is not None:
        version = version.strip().removeprefix("==").removeprefix("v")
        if not _VERSION.match(version):
            raise InvalidInputError(
                f"{version!r} is not a version of {package}; versions look like 0.10.1."
            )
    path = pins_path(pins_dir or default_pins_dir(), engine, system, machine)
    if not path.is_file() and not unverified:
        raise PinsError(
            f"This Roundhouse has no pinned versions of {spec.title} for {where} ({path} is "
            "missing), so nothing pip downloads could be checked. Reinstall Roundhouse, or "
            f"allow an unverified install (roundhouse engines install {engine.value} "
            "--unverified)."
        )
    pins = read_pins(path) if path.is_file() else None
    pinned = pins.versions_of(package) if pins is not None else []
    if pins is not None and not pinned:
        raise PinsError(f"The engine pins {path} do not pin {package}. Reinstall Roundhouse.")
    if pins is not None and ((version is None and not unverified) or version in pinned):
        return _pinned_plan(spec.title, engine, package, pins, where)
    if not unverified:
        shown = " or ".join(pinned)
        raise InvalidInputError(
            f"{package} {version} is not the version this Roundhouse release pins for "
            f"{where} ({shown}): only pinned versions are checked against known hashes. "
            f"Leave out the version to install {shown}, or allow an unverified install "
            f"(roundhouse engines install {engine.value} --version {version} --unverified) to "
            "get it from the package index without any check."
        )
    wanted = pip_requirements(spec, system)
    if version is not None:
        wanted = [f"{package}=={version}" if r == package else r for r in wanted]
    asked = f"{package} {version}" if version else f"the newest {package} on the package index"
    instead = f"the pinned {' or '.join(pinned)}" if pinned else f"pins (none for {where})"
    warning = (
        f"Warning: {asked} is installed instead of {instead}, NOT verified: pip installs it "
        "and its dependencies without checking any hash."
    )
    return PipPlan(
        engine=engine,
        title=spec.title,
        package=package,
        versions=(version,) if version else (),
        hash_check=HashCheck.NONE,
        runs=(tuple(wanted),),
        summary=f"{asked}, asked for instead of {instead}: not verified, no hash is checked.",
        warning=warning,
    )


def _pinned_plan(title: str, engine: EngineId, package: str, pins: PinFile, where: str) -> PipPlan:
    versions = tuple(pins.versions_of(package))
    what = f"{package} {' or '.join(versions)}"
    # Wheels only: building a source distribution would run code, and fetch build tools,
    # that no pinned hash covers.
    checked = ("--require-hashes", "--only-binary=:all:")
    if pins.coverage == HashCheck.ALL:
        return PipPlan(
            engine=engine,
            title=title,
            package=package,
            versions=versions,
            hash_check=HashCheck.ALL,
            runs=((*checked, "-r", str(pins.path)),),
            summary=(
                f"{what} as pinned by this release for {where}: pip checks every file it "
                "downloads, dependencies included, against the pinned sha256 hashes."
            ),
        )
    why = f" ({pins.why})" if pins.why else ""
    return PipPlan(
        engine=engine,
        title=title,
        package=package,
        versions=versions,
        hash_check=HashCheck.TOP_LEVEL,
        # The engine's own files, checked; then its dependencies, which pip resolves as usual.
        runs=(
            (*checked, "--no-deps", "-r", str(pins.path)),
            tuple(p.requirement() for p in pins.pins),
        ),
        summary=(
            f"{what} as pinned by this release for {where}: its own files are checked against "
            "the pinned sha256 hashes, its dependencies are not."
        ),
        warning=(
            f"Warning: the dependencies of {what} are not hash-pinned for {where}{why}: pip "
            "installs them from the package index without checking their hashes."
        ),
    )


async def install_python_engine(
    engine: EngineId,
    engines_dir: Path,
    *,
    plan: PipPlan | None = None,
    python: str | None = None,
    pip_args: Sequence[str] = (),
    catalog: EngineCatalog | None = None,
    on_progress: ProgressCallback | None = None,
    env: Mapping[str, str] | None = None,
) -> ManagedVenv:
    """Create `<engines_dir>/venvs/<engine>/` with `python -m venv` (if missing) and pip
    install the engine into it as `plan` says (default: the pinned versions, every file
    checked), streaming pip's output line by line.

    `python` makes the environment (default: the interpreter running Roundhouse);
    `pip_args` go to each `pip install` as they are (`--no-index --find-links DIR` to stay
    offline, an index URL). An environment created by this call is deleted again if
    anything fails or the call is cancelled; an existing one is left as pip leaves it.
    """
    plan = plan or plan_python_engine(engine, catalog=catalog)
    if plan.engine != engine:
        raise InvalidInputError(f"That install plan is for {plan.engine.value}, not {engine}.")
    system = platform.system()
    base = python or _default_python()
    folder = venv_dir(engines_dir, engine)
    venv_py = Path(venv_python(folder, system))
    report = _reporter(engine, on_progress)
    child_env = _child_env(env)
    with BusyLock(engines_dir / VENVS_DIR / f".{engine.value}.lock", plan.title):
        fresh = managed_python(engines_dir, engine) is None
        try:
            if fresh:
                await asyncio.to_thread(shutil.rmtree, folder, True)
                report(InstallStage.CREATING_VENV, f"Creating a Python environment in {folder}")
                await _create(base, folder, child_env, report)
            if plan.warning:
                report(InstallStage.PIP, plan.warning, line=plan.warning)
            for arguments in plan.runs:
                await _pip_install(venv_py, [*pip_args, *arguments], plan, child_env, report)
            version = await _version(venv_py, plan.package, child_env)
        except BaseException:
            if fresh:
                await asyncio.shield(asyncio.to_thread(shutil.rmtree, folder, True))
            raise
    unchecked = {
        HashCheck.ALL: "",
        HashCheck.TOP_LEVEL: "; its dependencies were not hash-checked",
        HashCheck.NONE: "; nothing was hash-checked",
    }[plan.hash_check]
    report(
        InstallStage.DONE,
        f"{plan.title} {version or ''} is installed in {folder}".replace("  ", " ") + unchecked,
    )
    return ManagedVenv(
        engine=engine,
        venv_dir=str(folder),
        python=str(venv_py),
        package=plan.package,
        version=version,
        hash_check=plan.hash_check,
    )


async def _pip_install(
    venv_py: Path,
    arguments: Sequence[str],
    plan: PipPlan,
    env: Mapping[str, str],
    report: Callable[..., None],
) -> None:
    report(InstallStage.PIP, f"pip install {' '.join(arguments)}")
    argv = [
        str(venv_py),
        "-m",
        "pip",
        "install",
        "--disable-pip-version-check",
        "--no-input",
        "--progress-bar",
        "off",
        *arguments,
    ]
    said: set[str] = set()

    def each(line: str) -> None:
        said.update(signal for signal in _PIP_SIGNALS if signal in line)
        report(InstallStage.PIP, line, line=line)

    code, tail = await run_streaming(argv, env, each)
    if code == 0:
        return
    what = f"{plan.package} {' or '.join(plan.versions)}".strip()
    if _MISMATCH in said:
        raise HashMismatchError(
            f"pip refused a file for {plan.title}: it does not match the sha256 hash this "
            "Roundhouse release pins for it, so nothing from it was installed. The package "
            "index, a mirror or a proxy served another file than the one released: try again "
            "later or on another network, and check the index set in pip's configuration "
            "(PIP_INDEX_URL, pip.conf).",
            tail,
        )
    if said & _UNPINNED:
        raise PipError(
            f"pip needs a package for {plan.title} that its pins do not cover (pip's lines "
            "name it): this Python version probably needs other dependencies than the ones "
            "pinned. Make the environment with another Python 3 (3.11 or 3.12), or allow an "
            "unverified install.",
            tail,
        )
    raise PipError(
        f"pip could not install {what} for {plan.title} (exit {code}). Check the network "
        "connection and that this Python version is supported, then try again.",
        tail,
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
