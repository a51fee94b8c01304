"""Run the stand-ins under the real engines' command lines (`vllm serve`, `ollama serve`, ...).

A process scan that looks for engines by command line sees, for example,
`/venv/bin/python /tmp/x/vllm serve org/model --port N`, exactly what pip's `vllm` console
script shows, or `python -m sglang.launch_server ...` from a stub package that runs the
stand-in. The matcher under test is the real one; only the program behind the name differs.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import TypeVar

from tests.fakes.ollama import REPO_ROOT, OllamaStandin
from tests.fakes.openai_engines import EngineStandin

S = TypeVar("S", bound=OllamaStandin)

_SCRIPT = """\
#!{python}
import sys
sys.path.insert(0, {root!r})
from {package}.__main__ import main
sys.exit(main([{prefix}*sys.argv[1:]]))
"""


def console_script(folder: Path, name: str, package: str, personality: str | None) -> Path:
    """An executable `folder/name` that runs the stand-in in `package` (like pip's scripts)."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / name
    prefix = f"{personality!r}, " if personality else ""
    script.write_text(
        _SCRIPT.format(python=sys.executable, root=str(REPO_ROOT), package=package, prefix=prefix)
    )
    script.chmod(0o755)
    return script


def module_stub(folder: Path, module: str, personality: str) -> Path:
    """A package under `folder` so that `python -m <module>` runs the engine stand-in."""
    *packages, leaf = module.split(".")
    where = folder
    for package in packages:
        where = where / package
        where.mkdir(parents=True, exist_ok=True)
        (where / "__init__.py").touch()
    body = _SCRIPT.split("\n", 1)[1].format(
        root=str(REPO_ROOT), package="tests.fakes.openai_engines", prefix=f"{personality!r}, "
    )
    (where / f"{leaf}.py").write_text(body)
    return folder


def _popen(argv: list[str], log: Path, env: dict[str, str] | None) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        return subprocess.Popen(
            argv,
            cwd=REPO_ROOT,
            env={**os.environ, **(env or {})},
            stdout=out,
            stderr=out,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )


def start_vllm_serve(
    state: Path, port: int, model: str, *flags: str, wait: bool = True
) -> EngineStandin:
    """`vllm serve MODEL --host 127.0.0.1 --port PORT FLAGS`, ready (/health 200) if `wait`."""
    state.mkdir(parents=True, exist_ok=True)
    script = console_script(state / "bin", "vllm", "tests.fakes.openai_engines", "vllm")
    argv = [str(script), "serve", model, "--host", "127.0.0.1", "--port", str(port), *flags]
    log = state / "vllm.log"
    standin = EngineStandin(_popen(argv, log, None), "127.0.0.1", port, state, log, "vllm")
    return _ready(standin) if wait else standin


def start_sglang_module(state: Path, port: int, model: str, *flags: str) -> EngineStandin:
    """`python -m sglang.launch_server --model-path MODEL --host ... --port PORT`, ready."""
    state.mkdir(parents=True, exist_ok=True)
    stubs = module_stub(state / "stubs", "sglang.launch_server", "sglang")
    argv = [sys.executable, "-m", "sglang.launch_server", "--model-path", model]
    argv += ["--host", "127.0.0.1", "--port", str(port), *flags]
    log = state / "sglang.log"
    proc = _popen(argv, log, {"PYTHONPATH": str(stubs)})
    return _ready(EngineStandin(proc, "127.0.0.1", port, state, log, "sglang"))


def start_ollama_serve(state: Path, port: int) -> OllamaStandin:
    """`ollama serve` (the Ollama stand-in) bound by OLLAMA_HOST, ready."""
    state.mkdir(parents=True, exist_ok=True)
    script = console_script(state / "bin", "ollama", "tests.fakes.ollama", None)
    argv = [str(script), "serve", "--state", str(state)]
    log = state / "standin.log"
    proc = _popen(argv, log, {"OLLAMA_HOST": f"127.0.0.1:{port}"})
    return _ready(OllamaStandin(proc, "127.0.0.1", port, state, log))


def _ready(standin: S) -> S:
    try:
        standin.wait_ready()
    except BaseException:
        standin.stop()
        raise
    return standin
