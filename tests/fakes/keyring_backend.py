"""A keyring backend kept in a JSON file, for daemon processes in tests
(PYTHON_KEYRING_BACKEND=tests.fakes.keyring_backend.FileKeyring, ROUNDHOUSE_TEST_KEYRING=path)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from keyring.backend import KeyringBackend


class FileKeyring(KeyringBackend):
    priority = 1  # type: ignore[assignment]

    @property
    def _path(self) -> Path:
        return Path(os.environ["ROUNDHOUSE_TEST_KEYRING"])

    def _load(self) -> dict[str, str]:
        try:
            data: dict[str, str] = json.loads(self._path.read_text(encoding="utf-8"))
            return data
        except FileNotFoundError:
            return {}

    def get_password(self, service: str, username: str) -> str | None:
        return self._load().get(f"{service}\0{username}")

    def set_password(self, service: str, username: str, password: str) -> None:
        data = self._load()
        data[f"{service}\0{username}"] = password
        self._path.write_text(json.dumps(data), encoding="utf-8")

    def delete_password(self, service: str, username: str) -> None:
        data = self._load()
        data.pop(f"{service}\0{username}", None)
        self._path.write_text(json.dumps(data), encoding="utf-8")
