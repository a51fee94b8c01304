"""docs/cli.md is generated from the CLI: it must be current and name every command and option."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import click
import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "docs" / "gen_cli_reference.py"
REFERENCE = REPO / "docs" / "cli.md"
HEADING = re.compile(r"^#{2,6} `(roundhouse[^`]*)`$", re.MULTILINE)


@pytest.fixture(scope="module")
def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_cli_reference", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_script(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
        check=False,
    )


def test_the_committed_reference_matches_the_cli() -> None:
    result = run_script("--check")
    assert result.returncode == 0, result.stderr


def sections(text: str) -> dict[str, str]:
    """Each command's part of the reference, by its command path."""
    found = list(HEADING.finditer(text))
    ends = [match.start() for match in found[1:]] + [len(text)]
    return {match.group(1): text[match.end() : end] for match, end in zip(found, ends, strict=True)}


def test_every_command_and_option_has_its_section(generator: ModuleType) -> None:
    by_command = sections(REFERENCE.read_text(encoding="utf-8"))
    root = generator.root_command()
    contexts = list(generator.walk(root, click.Context(root, info_name="roundhouse")))
    paths = [ctx.command_path for ctx in contexts]
    # Every command once, nothing left over from a command that is gone, in the walk's order.
    assert list(by_command) == paths
    assert {"roundhouse engines start", "roundhouse models pull", "roundhouse serve"} <= set(paths)
    for ctx in contexts:
        section = by_command[ctx.command_path]
        assert f"{ctx.command_path} [OPTIONS]" in section, ctx.command_path
        for param in ctx.command.params:
            if isinstance(param, click.Option) and not param.hidden:
                for name in param.opts:
                    assert f"`{name}`" in section, (ctx.command_path, name)
            elif isinstance(param, click.Argument):
                assert f"`{param.human_readable_name}`" in section, ctx.command_path


def test_the_reference_says_what_an_option_takes(generator: ModuleType) -> None:
    start = sections(generator.render())["roundhouse engines start"]
    assert "| `--port` | integer from 1 to 65535 |" in start
    assert "| `--host` | text | `127.0.0.1` |" in start
    assert "| `--flash-attn` | one of `on`, `off`, `auto` |" in start
    assert "`ENGINE` | one of `llama.cpp`, `ollama`, `mlx`, `vllm`, `sglang`" in start


def test_check_fails_on_a_stale_file_and_passes_once_regenerated(tmp_path: Path) -> None:
    stale = tmp_path / "cli.md"
    current = REFERENCE.read_text(encoding="utf-8")
    stale.write_text(current.replace("### `roundhouse engines start`", "### `gone`"), "utf-8")

    result = run_script("--check", "--output", str(stale))
    assert result.returncode == 1
    assert "is out of date" in result.stderr
    assert "python docs/gen_cli_reference.py" in result.stderr

    assert run_script("--output", str(stale)).returncode == 0
    assert run_script("--check", "--output", str(stale)).returncode == 0
