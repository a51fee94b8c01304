"""Detection sees what installs leave: the current build first, managed environments, hints."""

from __future__ import annotations

import pytest

from roundhouse.api.engines import EngineId, FoundBy
from roundhouse.core.engines.detect import detect_engine
from roundhouse.core.engines.install.hints import install_hint, installer_link, pip_requirements
from roundhouse.core.engines.install.layout import venv_python
from tests.unit.engines.conftest import FakeHost, catalog

MANAGED = "/home/user/.local/share/Roundhouse/engines"


def test_the_current_build_comes_first_and_unfinished_ones_are_ignored() -> None:
    base = f"{MANAGED}/llama.cpp"
    host = FakeHost(
        "Linux",
        "x86_64",
        files={
            f"{base}/b6100/llama-server": "",
            f"{base}/b6000/llama-server": "",
            # A download in progress and a removal half done: never offered.
            f"{base}/.partial-b6200/llama-server": "",
            f"{base}/.trash-b5000-1a2b3c4d/llama-server": "",
            f"{base}/current": "b6000\n",
        },
    )
    hits, _ = detect_engine(host, catalog().spec(EngineId.LLAMA_CPP), managed_dir=MANAGED)
    assert [(h.path, h.where) for h in hits] == [
        (f"{base}/b6000/llama-server", "Roundhouse's engines folder (b6000, current)"),
        (f"{base}/b6100/llama-server", "Roundhouse's engines folder (b6100)"),
    ]


def test_a_current_file_naming_a_removed_build_falls_back_to_newest_first() -> None:
    base = f"{MANAGED}/llama.cpp"
    host = FakeHost(
        "Linux",
        "x86_64",
        files={f"{base}/b6100/llama-server": "", f"{base}/current": "b5000"},
    )
    hits, _ = detect_engine(host, catalog().spec(EngineId.LLAMA_CPP), managed_dir=MANAGED)
    assert [h.where for h in hits] == ["Roundhouse's engines folder (b6100)"]


def test_a_managed_environment_is_found_before_the_chosen_pythons() -> None:
    python = f"{MANAGED}/venvs/vllm/bin/python"
    chosen = "/srv/venv/bin/python"
    host = FakeHost(
        "Linux",
        "x86_64",
        files={python: ""},
        packages={(python, "vllm"): "0.11.0", (chosen, "vllm"): "0.10.1"},
    )
    hits, _ = detect_engine(
        host, catalog().spec(EngineId.VLLM), pythons=[chosen], managed_dir=MANAGED
    )
    assert [(h.found_by, h.python, h.version, h.where) for h in hits] == [
        (FoundBy.MANAGED, python, "0.11.0", "Roundhouse's engines folder"),
        (FoundBy.PYTHON, chosen, "0.10.1", f"in {chosen}"),
    ]


def test_a_venv_interpreter_is_where_venv_puts_it() -> None:
    assert str(venv_python("C:\\Roundhouse\\venvs\\mlx", "Windows")) == (
        "C:\\Roundhouse\\venvs\\mlx\\Scripts\\python.exe"
    )
    assert str(venv_python("/r/venvs/mlx", "Darwin")) == "/r/venvs/mlx/bin/python"


def test_an_empty_managed_environment_is_explained() -> None:
    python = f"{MANAGED}/venvs/sglang/bin/python"
    host = FakeHost("Linux", "x86_64", files={python: ""}, packages={(python, "pip"): "23.2"})
    hits, missing = detect_engine(host, catalog().spec(EngineId.SGLANG), managed_dir=MANAGED)
    assert hits == [] and missing is not None
    assert missing.why == f"SGLang was not found: sglang is not installed in {python}."
    assert (
        missing.install_hint == "Roundhouse can install sglang in a Python environment of its own."
    )


@pytest.mark.parametrize(
    ("system", "machine", "hint"),
    [
        (
            "Darwin",
            "arm64",
            "Download and run Ollama for macOS: https://ollama.com/download/Ollama.dmg, then "
            "look again.",
        ),
        (
            "Windows",
            "AMD64",
            "Download and run Ollama for Windows: https://ollama.com/download/OllamaSetup.exe, "
            "then look again.",
        ),
        (
            "Linux",
            "x86_64",
            "Install it with Ollama's install script (https://ollama.com/download/linux), then "
            "look again.",
        ),
    ],
)
def test_a_missing_ollama_links_to_its_installer(system: str, machine: str, hint: str) -> None:
    hits, missing = detect_engine(FakeHost(system, machine), catalog().spec(EngineId.OLLAMA))
    assert hits == [] and missing is not None
    assert missing.install_hint == hint


def test_hints_for_what_roundhouse_installs_itself() -> None:
    cat = catalog()
    llama = cat.spec(EngineId.LLAMA_CPP)
    assert install_hint(llama, "Linux") == (
        "Roundhouse can install an official llama.cpp (llama-server) build for this machine."
    )
    assert installer_link(llama, "Linux") is None
    mlx = cat.spec(EngineId.MLX)
    assert pip_requirements(mlx, "Darwin") == ["mlx-lm"]
    assert pip_requirements(mlx, "Linux") == ["mlx-lm", "mlx[cpu]"]
    assert pip_requirements(cat.spec(EngineId.VLLM), "Linux") == ["vllm"]
    assert install_hint(cat.spec(EngineId.OPENAI_COMPATIBLE), "Linux") is None
