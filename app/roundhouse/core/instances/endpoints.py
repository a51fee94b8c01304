"""OpenAI-compatible endpoints the user added (LM Studio, Jan, a remote machine); keys in the
keyring, never in the file."""

from __future__ import annotations

import hashlib
import json
import threading
from pathlib import Path

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError

from roundhouse.base.files import write_atomic
from roundhouse.core.errors import SettingsError

ENDPOINTS_FILE = "endpoints.json"


class SavedEndpoint(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    url: str
    name: str
    has_key: bool = False

    @property
    def id(self) -> str:
        return endpoint_id(self.url)

    @property
    def secret_name(self) -> str:
        return endpoint_secret_name(self.url)


def endpoint_secret_name(url: str) -> str:
    """The keyring entry that holds the API key of the endpoint at `url`."""
    return f"endpoint:{url}"


_ENDPOINTS = TypeAdapter(list[SavedEndpoint])


def endpoint_id(url: str) -> str:
    """A stable instance id for an attached URL: the same across scans and restarts."""
    return "x" + hashlib.sha256(url.encode()).hexdigest()[:11]


class EndpointStore:
    """The endpoints in `config_dir/endpoints.json`, rewritten atomically on each change."""

    def __init__(self, config_dir: Path) -> None:
        self.path = config_dir / ENDPOINTS_FILE
        self._lock = threading.Lock()

    def load(self) -> list[SavedEndpoint]:
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return []
        try:
            return _ENDPOINTS.validate_python(json.loads(raw))
        except (ValueError, ValidationError) as exc:
            raise SettingsError(
                f"The endpoints file {self.path} cannot be read ({exc.__class__.__name__}). "
                "Fix it or move it away and add the endpoints again."
            ) from exc

    def save(self, endpoint: SavedEndpoint) -> None:
        with self._lock:
            kept = [e for e in self.load() if e.url != endpoint.url]
            write_atomic(self.path, _ENDPOINTS.dump_json([*kept, endpoint], indent=2))

    def remove(self, url: str) -> None:
        with self._lock:
            kept = [e for e in self.load() if e.url != url]
            write_atomic(self.path, _ENDPOINTS.dump_json(kept, indent=2))
