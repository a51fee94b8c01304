"""Which client APIs an instance serves itself: the catalog's word, corrected by a 404."""

from __future__ import annotations

from roundhouse.api.engines import EngineId, NativeApi
from roundhouse.api.instances import InstanceInfo
from roundhouse.core.engines.catalog import load_catalog
from roundhouse.core.gateway.remote import PEER_PATHS, is_peer


def native_api(engine: EngineId, api: str) -> NativeApi | None:
    """The catalog's entry for `api` on `engine`, None where the engine does not serve it."""
    return next((n for n in load_catalog().spec(engine).native_apis if n.api == api), None)


class NativeApis:
    """Passes a request through where the catalog says the engine serves its API, until the
    instance answers 404 there (a build older than the catalog's `since`): from then on,
    for as long as that process runs, its requests are translated."""

    def __init__(self) -> None:
        # (instance id, pid, start time, api): one process of one instance.
        self._missing: set[tuple[str, int | None, float, str]] = set()

    def path(self, info: InstanceInfo, api: str) -> str | None:
        """The engine path to pass `api` through to, or None to translate."""
        if is_peer(info):
            # A paired machine's gateway: it passes through or translates for its engine.
            return PEER_PATHS.get(api)
        native = native_api(info.engine, api)
        if native is None or self._key(info, api) in self._missing:
            return None
        return native.path

    def missing(self, info: InstanceInfo, api: str) -> None:
        """The instance answered 404 on `api`'s path: translate for it from now on."""
        self._missing.add(self._key(info, api))

    @staticmethod
    def _key(info: InstanceInfo, api: str) -> tuple[str, int | None, float, str]:
        return (info.id, info.pid, info.started_at, api)
