"""OpenAI-compatible endpoints the user added (LM Studio, Jan, a remote machine), keys in the
keyring, never in the file; and which engines Roundhouse did not start may serve presets."""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from pathlib import Path

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError

from roundhouse.api.engines import EngineId
from roundhouse.base.files import write_atomic
from roundhouse.core.errors import SettingsError

log = logging.getLogger(__name__)

ENDPOINTS_FILE = "endpoints.json"
# Engines Roundhouse did not start (found running, or added) that the user let serve the
# models saved presets start; by engine and URL, so another engine on that port is not.
PRESET_ROUTES_FILE = "preset_routes.json"


class SavedEndpoint(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    url: str
    name: str
    has_key: bool = False
    # What answered when it was added (exo's API, or any OpenAI-compatible server): shown
    # while it is down.
    engine: EngineId = EngineId.OPENAI_COMPATIBLE

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


class PresetRoute(BaseModel):
    """An engine Roundhouse did not start that may serve the models presets start."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    engine: EngineId
    url: str


_PRESET_ROUTES = TypeAdapter(list[PresetRoute])


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

    # -- which of them may serve preset models ------------------------------------------

    def preset_routes(self) -> frozenset[PresetRoute]:
        """The engines the user let serve preset models. A file that cannot be read lets
        none (each must then be allowed again), and says so in the log."""
        path = self.path.with_name(PRESET_ROUTES_FILE)
        try:
            return frozenset(_PRESET_ROUTES.validate_json(path.read_bytes()))
        except FileNotFoundError:
            return frozenset()
        except (OSError, ValueError) as exc:
            log.warning(
                "%s cannot be read (%s): no engine Roundhouse did not start serves preset models "
                "until allowed again",
                path,
                exc.__class__.__name__,
            )
            return frozenset()

    def allow_presets(self, route: PresetRoute, allowed: bool) -> None:
        """Let the engine at `route` serve preset models, or stop letting it."""
        with self._lock:
            kept = self.preset_routes() - {route}
            chosen = kept | {route} if allowed else kept
            ordered = sorted(chosen, key=lambda r: (r.engine.value, r.url))
            write_atomic(
                self.path.with_name(PRESET_ROUTES_FILE), _PRESET_ROUTES.dump_json(ordered, indent=2)
            )
