"""What the fake Hub's serving threads share: the catalog, settings, faults and the log."""

from __future__ import annotations

import threading
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any

from tests.fakes.hub.catalog import Catalog, load_catalog
from tests.fakes.hub.faults import FaultBook, RequestLog


@dataclass(frozen=True)
class Settings:
    """Switchable at run time through `POST /_fake/settings`."""

    redirect_lfs: bool = True  # LFS files: 302 to the CDN listener (else served directly)
    page_size: int = 1000  # /api/models page size (the Hub's cap)
    tree_page_size: int = 1000  # /tree page size (the Hub's cap)

    def updated(self, data: object) -> Settings:
        if not isinstance(data, dict):
            raise ValueError("settings are a JSON object")
        known = {f.name: f.type for f in fields(self)}
        unknown = set(data) - set(known)
        if unknown:
            raise ValueError(f"unknown settings {sorted(unknown)}; known: {sorted(known)}")
        new = replace(self, **data)
        if new.page_size < 1 or new.tree_page_size < 1:
            raise ValueError("page sizes must be at least 1")
        return new

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


class HubState:
    def __init__(self, root: Path, settings: Settings, tokens: dict[str, set[str]]) -> None:
        self.root = root
        self.initial_settings = settings
        self.settings = settings
        self.extra_tokens = tokens
        self.faults = FaultBook()
        self.log = RequestLog()
        self.cdn_port = 0
        self._lock = threading.Lock()
        self.catalog = self._load()

    def _load(self) -> Catalog:
        catalog = load_catalog(self.root)
        for token, grants in self.extra_tokens.items():
            catalog.tokens.setdefault(token, set()).update(grants)
        return catalog

    def reload(self) -> None:
        """Rescan the repos folder (tests may add or change files between requests)."""
        catalog = self._load()
        with self._lock:
            self.catalog = catalog

    def reset(self) -> None:
        """Back to how the process started: no faults, an empty log, the initial settings."""
        self.faults.replace([])
        self.log.clear()
        self.settings = self.initial_settings
