"""A machine replayed from recorded outputs, so every platform's parsing runs anywhere."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from roundhouse.core.hardware.host import RegistryValue

_KEY_LINE = re.compile(r"^(HKEY_[A-Z_]+|HKLM)\\(.*)$")


class RecordedHost:
    """A HostReader answering from a folder of recordings.

    The folder holds `host.json` (system, machine, os_version, cpu_count, commands,
    processor_features, registry_dump) and `fs/`, a tree mirroring the absolute paths the
    inventory reads (fs/proc/cpuinfo, fs/sys/class/drm/...). A command's output is either
    inline ({"stdout": ...}) or a file beside host.json ({"file": ...}); an unrecorded
    command answers None, as a missing tool does.
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        spec: dict[str, Any] = json.loads((folder / "host.json").read_text(encoding="utf-8"))
        self.system: str = spec["system"]
        self.machine: str = spec["machine"]
        self.os_version: str = spec.get("os_version", self.system)
        self._commands: dict[str, dict[str, str]] = spec.get("commands", {})
        self._features: dict[str, bool] = spec.get("processor_features", {})
        self._cpu_count: dict[str, int] = spec.get("cpu_count", {})
        dump = spec.get("registry_dump")
        text = (folder / dump).read_text(encoding="utf-8") if dump else ""
        self._registry = parse_reg_query(text)
        self.calls: list[str] = []

    def run(self, argv: Sequence[str], timeout: float = 5.0) -> str | None:
        line = " ".join(argv)
        self.calls.append(line)
        entry = self._commands.get(line)
        if entry is None:
            return None
        if "file" in entry:
            return (self.folder / entry["file"]).read_text(encoding="utf-8")
        return entry.get("stdout")

    def read_text(self, path: str) -> str | None:
        try:
            return self._fs(path).read_text(encoding="utf-8")
        except OSError:
            return None

    def list_dir(self, path: str) -> list[str] | None:
        try:
            return sorted(p.name for p in self._fs(path).iterdir())
        except OSError:
            return None

    def registry_subkeys(self, key: str) -> list[str] | None:
        prefix = _norm_key(key) + "\\"
        if not any(k.startswith(prefix) or k == prefix[:-1] for k in self._registry):
            return None
        names = {k[len(prefix) :].split("\\")[0] for k in self._registry if k.startswith(prefix)}
        return sorted(names)

    def registry_values(self, key: str) -> dict[str, RegistryValue] | None:
        return self._registry.get(_norm_key(key))

    def processor_feature(self, feature: int) -> bool | None:
        return self._features.get(str(feature))

    def cpu_count(self, logical: bool) -> int | None:
        return self._cpu_count.get("logical" if logical else "physical")

    def _fs(self, path: str) -> Path:
        return self.folder / "fs" / path.lstrip("/")


def _norm_key(key: str) -> str:
    hive, _, rest = key.partition("\\")
    if hive.upper() in ("HKLM", "HKEY_LOCAL_MACHINE"):
        hive = "HKLM"
    return f"{hive}\\{rest}".rstrip("\\").lower()


def parse_reg_query(text: str) -> dict[str, dict[str, RegistryValue]]:
    """`reg query KEY /s` output as {lower-cased key: {value name: value}}."""
    keys: dict[str, dict[str, RegistryValue]] = {}
    current: dict[str, RegistryValue] | None = None
    for raw in text.splitlines():
        line = raw.rstrip()
        match = _KEY_LINE.match(line)
        if match:
            current = keys.setdefault(_norm_key(line), {})
            continue
        if current is None or not line.startswith("    "):
            continue
        # reg.exe separates name, type and data by four spaces; names hold single spaces.
        parts = re.split(r" {4}", line.strip(), maxsplit=2)
        if len(parts) < 2:
            continue
        name, kind = parts[0], parts[1]
        data = parts[2] if len(parts) == 3 else ""
        current[name] = _reg_value(kind, data)
    return keys


def _reg_value(kind: str, data: str) -> RegistryValue:
    if kind in ("REG_DWORD", "REG_QWORD"):
        return int(data, 16) if data.lower().startswith("0x") else int(data or "0")
    if kind == "REG_BINARY":
        return bytes.fromhex(data.replace(" ", ""))
    return data
