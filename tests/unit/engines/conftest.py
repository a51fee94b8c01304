"""A fake machine for engine detection, answering from recorded tool outputs."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from roundhouse.api.engines import EngineCatalog
from roundhouse.core.engines.catalog import load_catalog

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "engines"


def recorded(name: str) -> str:
    """A recorded tool output from tests/fixtures/engines."""
    return (FIXTURES / name).read_text(encoding="utf-8")


def catalog() -> EngineCatalog:
    return load_catalog()


class FakeHost:
    """An EngineHost with files, a PATH, commands and Python environments given by the test.

    `files` maps a path to its text (console scripts start with their #! line); `commands`
    maps an argv to its output; `packages` maps (python, distribution) to what the package
    probe would print: a version, or None when the package is not installed.
    """

    def __init__(
        self,
        system: str,
        machine: str,
        *,
        env: Mapping[str, str] | None = None,
        files: Mapping[str, str] | None = None,
        commands: Mapping[tuple[str, ...], str] | None = None,
        packages: Mapping[tuple[str, str], str | None] | None = None,
        modules_missing: Sequence[str] = (),
    ) -> None:
        self.system = system
        self.machine = machine
        self.env: Mapping[str, str] = dict(env or {})
        self.files = dict(files or {})
        self.commands = dict(commands or {})
        self.packages = dict(packages or {})
        self.modules_missing = set(modules_missing)
        self.calls: list[tuple[str, ...]] = []

    @property
    def _sep(self) -> str:
        return "\\" if self.system == "Windows" else "/"

    def which(self, name: str) -> str | None:
        dirs = self.env.get("PATH", "").split(";" if self.system == "Windows" else ":")
        suffixes = [".exe", ""] if self.system == "Windows" else [""]
        for folder in filter(None, dirs):
            for suffix in suffixes:
                path = folder.rstrip("\\/") + self._sep + name + suffix
                if path in self.files:
                    return path
        return None

    def is_file(self, path: str) -> bool:
        return path in self.files

    def list_dir(self, path: str) -> list[str] | None:
        prefix = path.rstrip("\\/") + self._sep
        names = {p[len(prefix) :].split(self._sep)[0] for p in self.files if p.startswith(prefix)}
        return sorted(names) or None

    def first_line(self, path: str) -> str | None:
        text = self.files.get(path)
        return text.splitlines()[0] if text else None

    def run(self, argv: Sequence[str], timeout: float = 15.0) -> str | None:
        self.calls.append(tuple(argv))
        if len(argv) == 5 and argv[1] == "-c":
            python, _, _, dist, module = argv
            if not any(p == python for p, _ in self.packages):
                return None
            version = self.packages.get((python, dist))
            if version is None:
                return json.dumps({"installed": False})
            has = module not in self.modules_missing
            return json.dumps({"installed": True, "version": version, "module": has})
        return self.commands.get(tuple(argv))
