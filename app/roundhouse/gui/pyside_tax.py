"""Spare the app PySide6's scan of the source of every module imported after it."""

from __future__ import annotations

import linecache
import sys
from types import ModuleType


def skip_feature_source_scan() -> bool:
    """Answer PySide6's "does this module use PySide?" without reading its source.

    WORKAROUND: once PySide6 is imported, its import hook calls
    `PySide6.support.feature._mod_uses_pyside`, which runs `inspect.getsource` on every
    module imported afterwards (to know which modules may opt into `from __feature__ import
    snake_case`, PYSIDE-2029). For the app that is every module loaded after the first
    paint: httpx, pydantic, numpy, pyqtgraph... It costs about 18 MB of resident memory
    (source lines and tokenizer garbage) and start-up time. See
    https://github.com/napari/napari/issues/8584.

    Roundhouse never selects a PySide feature, so whether a module is marked "uses PySide"
    (feature 0, none) or "ignore" (-1) makes no difference to it. Returns whether the scan
    was replaced; a PySide6 without this internal simply keeps its behaviour. The lines the
    scan read before this call (enum, typing, pathlib... about 1 MB) are dropped from
    `linecache`, which reads them again if a traceback ever needs them.
    """
    feature = sys.modules.get("PySide6.support.feature")
    if feature is None or not callable(getattr(feature, "_mod_uses_pyside", None)):
        return False

    def uses_pyside(module: ModuleType) -> bool:
        return False

    feature._mod_uses_pyside = uses_pyside  # type: ignore[attr-defined]
    linecache.clearcache()
    return True
