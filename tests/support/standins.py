"""Stand-ins set up where the daemon looks for the real engines (a `vllm` program on PATH,
an `sglang` package in a chosen Python), a daemon that finds them, and the file keyring the
gateway key and tokens go to in tests."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from roundhouse.api.settings import Settings
from roundhouse.base.paths import resolve_home
from roundhouse.core.infra.settings import save_settings
from tests.daemon_process import DaemonProcess, running_daemon, start_daemon
from tests.fakes.launchers import start_ollama_serve
from tests.fakes.ollama import REPO_ROOT, OllamaStandin
from tests.fakes.openai_engines.server import SGLANG_VERSION
from tests.processes import free_port


def keyring_env(folder: Path) -> dict[str, str]:
    """An environment whose keyring is a file in `folder` (not the user's own)."""
    return {
        "PYTHON_KEYRING_BACKEND": "tests.fakes.keyring_backend.FileKeyring",
        "ROUNDHOUSE_TEST_KEYRING": str(folder / "keyring.json"),
    }


_SCRIPT = """\
#!{python}
import sys
sys.path.insert(0, {root!r})
from {package}.__main__ import main
sys.exit(main([{head}*sys.argv[1:]{tail}]))
"""


def program(folder: Path, name: str, package: str, head: str = "", tail: str = "") -> Path:
    """An executable `folder/name` running a stand-in's main, like a pip console script."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / name
    root = str(REPO_ROOT)
    text = _SCRIPT.format(python=sys.executable, root=root, package=package, head=head, tail=tail)
    script.write_text(text)
    script.chmod(0o755)
    return script


def vllm_standin(folder: Path) -> Path:
    """A `vllm` program in `folder` that runs the vLLM stand-in, found on PATH as vLLM is."""
    return program(folder, "vllm", "tests.fakes.openai_engines", head="'vllm', ")


def sglang_python(folder: Path) -> str:
    """A Python environment with an `sglang` distribution whose `launch_server` runs the
    stand-in: what detection looks for in a chosen Python. Only the standard library and
    the repository are needed, and the guard replaces PYTHONPATH, so the package sits in
    the environment's own site-packages."""
    venv = folder / "sglang-env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    )
    package = site / "sglang"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "launch_server.py").write_text(
        textwrap.dedent(f"""\
            import sys
            sys.path.insert(0, {str(REPO_ROOT)!r})
            from tests.fakes.openai_engines.__main__ import main
            sys.exit(main(["sglang", *sys.argv[1:]]))
            """)
    )
    info = site / f"sglang-{SGLANG_VERSION}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: sglang\nVersion: {SGLANG_VERSION}\n"
    )
    (info / "RECORD").write_text(
        "sglang/__init__.py,,\nsglang/launch_server.py,,\n"
        f"sglang-{SGLANG_VERSION}.dist-info/METADATA,,\n"
    )
    return str(python)


@contextmanager
def daemon_with(root: Path, settings: Settings, path_dirs: list[Path]) -> Iterator[DaemonProcess]:
    """A daemon under `root` with `settings`, finding programs in `path_dirs` first."""
    home = resolve_home(root)
    home.ensure()
    save_settings(home.settings_file, settings)
    path = ":".join([*map(str, path_dirs), "/usr/bin", "/bin"])
    with running_daemon(root, env={"PATH": path}) as daemon:
        yield daemon


@contextmanager
def ollama_attached(folder: Path) -> Iterator[tuple[DaemonProcess, OllamaStandin]]:
    """`ollama serve`'s stand-in on a free port and a daemon under `folder` whose OLLAMA_HOST
    names it; both stopped after."""
    standin = start_ollama_serve(folder / "ollama", free_port())
    daemon = start_daemon(folder / "home", env={"OLLAMA_HOST": f"127.0.0.1:{standin.port}"})
    try:
        yield daemon, standin
    finally:
        daemon.stop(timeout=60)
        standin.stop()
