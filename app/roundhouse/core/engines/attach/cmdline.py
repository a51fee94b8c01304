"""Engine server command lines: recognise them (`ollama serve`, ...), redact their secrets."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from roundhouse.api.engines import EngineCatalog, EngineId, LaunchStyle

_PYTHON = re.compile(r"^python(\d+(\.\d+)*)?[tw]?(-dbg)?$", re.IGNORECASE)
# Interpreter options that take a value (python -X dev -m module).
_PYTHON_VALUE_OPTIONS = {"-X", "-W", "--check-hash-based-pycs"}
_SECRET_SUFFIXES = ("api-key", "apikey", "token", "secret", "password", "passwd", "access-key")


@dataclass(frozen=True)
class ProcessPattern:
    """A command line that runs an engine's server.

    `program` is the executable's or script's file name without .exe/.py (`llama-server`,
    `vllm`), `module` what `python -m` runs; `subcommand` must be the first argument after
    either (`ollama serve`, not `ollama run`).
    """

    engine: EngineId
    program: str | None = None
    module: str | None = None
    subcommand: str | None = None


# Executables that are servers only with a subcommand; the catalog names the executables.
_SUBCOMMANDS = {"ollama": "serve", "vllm": "serve"}
# Newer mlx-lm also serves as `mlx_lm server` and `python -m mlx_lm server`; exo, which the
# catalog only attaches to, runs as its `exo` script (uv run exo, its app) or `python -m exo`.
_EXTRA_PATTERNS = (
    ProcessPattern(EngineId.MLX, program="mlx_lm", subcommand="server"),
    ProcessPattern(EngineId.MLX, module="mlx_lm", subcommand="server"),
    ProcessPattern(EngineId.EXO, program="exo"),
    ProcessPattern(EngineId.EXO, module="exo"),
)


def process_patterns(catalog: EngineCatalog) -> tuple[ProcessPattern, ...]:
    """The command lines of every engine the catalog runs, and exo's (other attach-only
    entries have none)."""
    patterns: list[ProcessPattern] = []
    for spec in catalog.engines:
        if spec.launch == LaunchStyle.ATTACH:
            continue
        for exe in spec.executables:
            patterns.append(ProcessPattern(spec.id, program=exe, subcommand=_SUBCOMMANDS.get(exe)))
        patterns += [ProcessPattern(spec.id, module=module) for module in spec.python_modules]
    return (*patterns, *_EXTRA_PATTERNS)


def _file_name(path: str) -> str:
    name = re.split(r"[\\/]", path)[-1]
    for suffix in (".exe", ".py"):
        if name.lower().endswith(suffix):
            return name[: -len(suffix)]
    return name


def _invocation(argv: Sequence[str]) -> tuple[str | None, str | None, Sequence[str]]:
    """(program or script, module, the arguments after it) of a command line."""
    if not argv:
        return None, None, ()
    first = _file_name(argv[0])
    if not _PYTHON.match(first):
        return first, None, argv[1:]
    i = 1
    while i < len(argv):
        arg = argv[i]
        if arg == "-m":
            return None, (argv[i + 1] if i + 1 < len(argv) else None), argv[i + 2 :]
        if arg.startswith("-m"):
            return None, arg[2:], argv[i + 1 :]
        if arg.startswith("-c"):
            return None, None, ()
        if arg in _PYTHON_VALUE_OPTIONS:
            i += 2
            continue
        if arg.startswith("-"):
            i += 1
            continue
        return _file_name(arg), None, argv[i + 1 :]
    return None, None, ()


def match_cmdline(argv: Sequence[str], patterns: Iterable[ProcessPattern]) -> ProcessPattern | None:
    """The first pattern whose engine this command line runs, or None."""
    program, module, rest = _invocation(argv)
    for pattern in patterns:
        if pattern.program is not None and pattern.program != program:
            continue
        if pattern.module is not None and pattern.module != module:
            continue
        if pattern.program is None and pattern.module is None:
            continue
        if pattern.subcommand is not None and (not rest or rest[0] != pattern.subcommand):
            continue
        return pattern
    return None


def _is_secret_flag(arg: str) -> bool:
    if not arg.startswith("-"):
        return False
    flag = arg.lstrip("-").split("=", 1)[0].lower().replace("_", "-")
    return flag.endswith(_SECRET_SUFFIXES)


def redact_cmdline(argv: Sequence[str]) -> list[str]:
    """The command line with the value of every secret flag (`--api-key X`) shown as ***."""
    out: list[str] = []
    hide_next = False
    for arg in argv:
        if hide_next:
            out.append("***")
            hide_next = False
        elif _is_secret_flag(arg) and "=" in arg:
            out.append(arg.split("=", 1)[0] + "=***")
        else:
            out.append(arg)
            hide_next = _is_secret_flag(arg)
    return out


def flag_value(argv: Sequence[str], *names: str) -> str | None:
    """The value of the first of `names` given (`--port 8080` or `--port=8080`), or None."""
    for i, arg in enumerate(argv):
        for name in names:
            if arg == name and i + 1 < len(argv):
                return argv[i + 1]
            if arg.startswith(name + "="):
                return arg.split("=", 1)[1]
    return None
