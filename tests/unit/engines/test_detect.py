"""Finding engines on recorded macOS, Windows and Linux machines."""

from __future__ import annotations

from roundhouse.api.engines import EngineId, FoundBy, SupportLevel
from roundhouse.core.engines.detect import PACKAGE_PROBE, detect_engine, detect_engines
from tests.unit.engines.conftest import FakeHost, catalog, recorded

MAC_PATH = "/usr/bin:/bin:/usr/sbin:/sbin"  # a GUI app's PATH: no Homebrew in it
OLLAMA_APP = "/Applications/Ollama.app/Contents/Resources/ollama"


def mac_m3() -> FakeHost:
    return FakeHost(
        "Darwin",
        "arm64",
        env={"PATH": MAC_PATH, "HOME": "/Users/анна"},
        files={"/opt/homebrew/bin/llama-server": "", OLLAMA_APP: ""},
        commands={
            ("/opt/homebrew/bin/llama-server", "--version"): recorded(
                "llama-server-version-macos-arm64.txt"
            ),
            (OLLAMA_APP, "--version"): recorded("ollama-version-server-running.txt"),
        },
    )


def test_macos_homebrew_llama_server_and_the_ollama_app() -> None:
    result = detect_engines(mac_m3(), catalog())
    by_id = {hit.id: hit for hit in result.found}
    llama = by_id[EngineId.LLAMA_CPP]
    assert (llama.path, llama.found_by, llama.where) == (
        "/opt/homebrew/bin/llama-server",
        FoundBy.INSTALL_PLACE,
        "Homebrew",
    )
    assert llama.version == "0.4.1-dev"
    ollama = by_id[EngineId.OLLAMA]
    assert (ollama.path, ollama.where, ollama.version) == (OLLAMA_APP, "Ollama.app", "0.12.1")
    assert ollama.notes == ["An Ollama server is already running."]
    missing = {m.id: m.why for m in result.missing}
    assert "no Python environment was chosen" in missing[EngineId.MLX]
    assert "does not run on Darwin arm64; it runs on Linux x86_64" in missing[EngineId.VLLM]
    assert set(missing) == {EngineId.MLX, EngineId.VLLM, EngineId.SGLANG}


def test_path_comes_before_the_usual_places_and_duplicates_collapse() -> None:
    host = mac_m3()
    host.env = {"PATH": "/opt/homebrew/bin:" + MAC_PATH, "HOME": "/Users/анна"}
    hits, missing = detect_engine(host, catalog().spec(EngineId.LLAMA_CPP))
    assert missing is None
    assert [(h.path, h.found_by) for h in hits] == [
        ("/opt/homebrew/bin/llama-server", FoundBy.PATH)
    ]


def test_windows_ollama_in_localappdata() -> None:
    exe = "C:\\Users\\Дмитрий\\AppData\\Local\\Programs\\Ollama\\ollama.exe"
    host = FakeHost(
        "Windows",
        "AMD64",
        env={
            "PATH": "C:\\Windows\\system32;C:\\Windows",
            "LOCALAPPDATA": "C:\\Users\\Дмитрий\\AppData\\Local",
            "USERPROFILE": "C:\\Users\\Дмитрий",
        },
        files={exe: ""},
        commands={(exe, "--version"): recorded("ollama-version-windows-no-server.txt")},
    )
    hits, missing = detect_engine(host, catalog().spec(EngineId.OLLAMA))
    assert missing is None
    assert [(h.path, h.where, h.version, h.notes) for h in hits] == [
        (exe, "Ollama for Windows", "0.4.2", [])
    ]


def test_windows_llama_server_on_path_with_its_exe_suffix() -> None:
    exe = "D:\\llama 模型\\llama-server.exe"
    host = FakeHost(
        "Windows",
        "AMD64",
        env={"PATH": "D:\\llama 模型"},
        files={exe: ""},
        commands={(exe, "--version"): recorded("llama-server-version-windows-cuda.txt")},
    )
    hits, _ = detect_engine(host, catalog().spec(EngineId.LLAMA_CPP))
    assert [(h.path, h.found_by, h.version) for h in hits] == [(exe, FoundBy.PATH, "b4291")]


def test_linux_path_and_a_python_module_in_a_venv() -> None:
    venv_python = "/home/user/проекты/venv/bin/python"
    host = FakeHost(
        "Linux",
        "x86_64",
        env={"PATH": "/usr/local/bin:/usr/bin", "HOME": "/home/user"},
        files={"/usr/bin/ollama": "", "/usr/local/bin/llama-server": ""},
        commands={
            ("/usr/bin/ollama", "--version"): recorded("ollama-version-old-server.txt"),
            ("/usr/local/bin/llama-server", "--version"): recorded(
                "llama-server-version-linux-old.txt"
            ),
        },
        packages={(venv_python, "vllm"): "0.10.1.1", (venv_python, "mlx-lm"): "0.32.2"},
    )
    result = detect_engines(host, catalog(), pythons=[venv_python])
    by_id = {hit.id: hit for hit in result.found}
    assert by_id[EngineId.LLAMA_CPP].version == "b3871"
    assert by_id[EngineId.LLAMA_CPP].found_by == FoundBy.PATH
    assert by_id[EngineId.OLLAMA].version == "0.9.0"
    assert "another version (0.5.7)" in by_id[EngineId.OLLAMA].notes[0]
    vllm = by_id[EngineId.VLLM]
    assert (vllm.python, vllm.module, vllm.version, vllm.path) == (
        venv_python,
        "vllm.entrypoints.openai.api_server",
        "0.10.1.1",
        None,
    )
    mlx = by_id[EngineId.MLX]
    assert mlx.support == SupportLevel.EXPERIMENTAL and mlx.notes == ["mlx[cpu]: CPU only"]
    missing = {m.id: m.why for m in result.missing}
    assert missing == {
        EngineId.SGLANG: f"SGLang was not found: sglang is not installed in {venv_python}."
    }
    probe = next(c for c in host.calls if c[0] == venv_python and c[3] == "vllm")
    assert probe == (venv_python, "-c", PACKAGE_PROBE, "vllm", "vllm.entrypoints.openai.api_server")


def test_a_console_script_is_versioned_through_its_interpreter() -> None:
    venv_python = "/opt/vllm/bin/python3"
    host = FakeHost(
        "Linux",
        "x86_64",
        env={"PATH": "/opt/vllm/bin"},
        files={"/opt/vllm/bin/vllm": f"#!{venv_python}\n# -*- coding: utf-8 -*-\n"},
        packages={(venv_python, "vllm"): "0.11.0"},
    )
    hits, _ = detect_engine(host, catalog().spec(EngineId.VLLM))
    assert [(h.path, h.version, h.found_by) for h in hits] == [
        ("/opt/vllm/bin/vllm", "0.11.0", FoundBy.PATH)
    ]
    # Found from the metadata: `vllm --version` (which imports torch) never ran.
    assert ("/opt/vllm/bin/vllm", "--version") not in host.calls


def test_roundhouse_managed_llama_cpp_newest_first() -> None:
    managed = "/home/user/.local/share/roundhouse/engines"
    old = f"{managed}/llama.cpp/b5000/llama-server"
    new = f"{managed}/llama.cpp/b10000/bin/llama-server"
    host = FakeHost(
        "Linux",
        "x86_64",
        env={"PATH": "/usr/bin"},
        files={old: "", new: ""},
        commands={(new, "--version"): recorded("llama-server-version-linux-sdist.txt")},
    )
    hits, _ = detect_engine(host, catalog().spec(EngineId.LLAMA_CPP), managed_dir=managed)
    assert [(h.path, h.found_by, h.where) for h in hits] == [
        (new, FoundBy.MANAGED, "Roundhouse's engines folder (b10000)"),
        (old, FoundBy.MANAGED, "Roundhouse's engines folder (b5000)"),
    ]
    # The old one does not answer --version: found, with a note saying why it may fail.
    assert hits[0].version == "0.5.0-dev"
    assert hits[1].version is None and "did not answer" in hits[1].notes[0]


def test_a_python_that_does_not_run_or_lacks_the_module_is_explained() -> None:
    good = "/srv/venv/bin/python"
    host = FakeHost(
        "Linux",
        "x86_64",
        env={"PATH": "/usr/bin"},
        packages={(good, "sglang"): "0.5.3"},
        modules_missing=["sglang.launch_server"],
    )
    hits, missing = detect_engine(
        host, catalog().spec(EngineId.SGLANG), pythons=["/gone/python", good]
    )
    assert hits == [] and missing is not None
    assert missing.why == (
        "SGLang was not found: /gone/python did not run; "
        f"sglang 0.5.3 in {good} lacks the module sglang.launch_server."
    )
    assert missing.looked_in == ["Python /gone/python", f"Python {good}"]


def test_nothing_installed_never_raises_and_says_where_it_looked() -> None:
    host = FakeHost("Linux", "aarch64", env={})
    result = detect_engines(host, catalog())
    assert result.found == []
    llama = next(m for m in result.missing if m.id == EngineId.LLAMA_CPP)
    assert "PATH (llama-server)" in llama.looked_in
    assert "/usr/local/bin (/usr/local/bin/llama-server)" in llama.looked_in
    assert EngineId.OPENAI_COMPATIBLE not in {m.id for m in result.missing}


def test_a_place_whose_variable_is_unset_is_skipped() -> None:
    host = FakeHost("Windows", "AMD64", env={"PATH": ""})
    hits, missing = detect_engine(host, catalog().spec(EngineId.OLLAMA))
    assert hits == [] and missing is not None
    assert missing.looked_in == ["PATH (ollama)"]
