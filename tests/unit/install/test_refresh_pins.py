"""installers/refresh_engine_pins.py writes what the installer reads: full pins where a
platform resolves, the engine's own packages with their hashes where it does not. The index
and uv are replaced here (the real run needs the network); the reader and planner are real."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from roundhouse.api.engines import EngineId
from roundhouse.api.installs import HashCheck
from roundhouse.core.engines.install.pins import read_pins
from roundhouse.core.engines.install.venvs import plan_python_engine

SCRIPT = Path(__file__).resolve().parents[3] / "installers" / "refresh_engine_pins.py"
HASHES = ("a" * 64, "b" * 64)


@pytest.fixture
def script(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    spec = importlib.util.spec_from_file_location("refresh_engine_pins", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    # Its dataclasses look their module up by name.
    monkeypatch.setitem(sys.modules, spec.name, module)
    spec.loader.exec_module(module)
    return module


def test_each_platform_is_resolved_alone_and_one_that_fails_pins_the_engine_alone(
    script: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[tuple[str, str | None]] = []

    def release(name: str, version: str | None) -> object:
        asked.append((name, version))
        return script.Release(name, version or "1.2.3", ">=3.12", HASHES)

    compiled: list[tuple[list[str], str]] = []

    def compile_lock(
        uv: str, requirements: list[str], python: str, index: str, output: Path
    ) -> str | None:
        compiled.append((requirements, python))
        if "darwin" in requirements[0]:
            return "cause: mlx has no wheels with a matching platform tag"
        pinned = [r.split(" ;")[0].replace("[cpu]", "") for r in requirements]
        output.write_text(
            "".join(f"{p} \\\n    --hash=sha256:{HASHES[0]}\n    # via -r x\n" for p in pinned)
            + f"mlx-cpu==1.2.3 --hash=sha256:{HASHES[1]}\n",
            encoding="utf-8",
        )
        return None

    monkeypatch.setattr(script, "release", release)
    monkeypatch.setattr(script, "compile_lock", compile_lock)
    script.engine_pins("uv", "mlx", {"mlx-lm": "1.0.0"}, "https://index.example", tmp_path)

    # The held version, else the newest; the engine's own Python floor where it is higher.
    assert ("mlx-lm", "1.0.0") in asked and ("mlx", None) in asked
    assert {python for _, python in compiled} == {"3.12"}
    linux_wanted = next(r for r, _ in compiled if "x86_64" in r[0])
    assert linux_wanted == [
        "mlx-lm==1.0.0 ; sys_platform == 'linux' and platform_machine == 'x86_64'",
        "mlx[cpu]==1.2.3 ; sys_platform == 'linux' and platform_machine == 'x86_64'",
    ]
    assert any("platform_machine == 'aarch64'" in r[0] for r, _ in compiled)

    linux = read_pins(tmp_path / "mlx" / "linux-x86_64.txt")
    assert linux.coverage == HashCheck.ALL and linux.versions_of("mlx-lm") == ["1.0.0"]
    darwin = read_pins(tmp_path / "mlx" / "darwin-arm64.txt")
    assert darwin.coverage == HashCheck.TOP_LEVEL
    assert darwin.why == "cause: mlx has no wheels with a matching platform tag"
    assert [(p.requirement(), p.hashes) for p in darwin.pins] == [("mlx-lm==1.0.0", HASHES)]

    plan = plan_python_engine(EngineId.MLX, pins_dir=tmp_path, system="Darwin", machine="arm64")
    assert plan.hash_check == HashCheck.TOP_LEVEL
    assert plan.warning is not None and "(cause: mlx has no wheels" in plan.warning


def test_python_floor_and_requirement_names(script: ModuleType) -> None:
    assert script.python_floor("") == "3.11"
    assert script.python_floor(">=3.9") == "3.11"
    assert script.python_floor(">=3.12,<3.15") == "3.12"
    assert script.split_extras("mlx[cpu]") == ("mlx", "[cpu]")
    with pytest.raises(script.RefreshError, match="is not `name\\[extras\\]`"):
        script.split_extras("mlx>=1")
    assert script.main(["--hold", "vllm"]) == 2
    assert script.main(["--engine", "ollama"]) == 2
