"""A Python without Qt: on PYTHONPATH, `import PySide6` (pyqtgraph, qasync) raises ImportError.

It stands for a server where `pip install roundhouse` brought no Qt packages and no display
libraries. Each import tried is appended to $ROUNDHOUSE_TEST_QT_TRIES when that is set, so a
test can tell that a command never even reached for Qt.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from pathlib import Path
from types import ModuleType

BLOCKED = frozenset({"PySide6", "shiboken6", "pyqtgraph", "qasync"})


class _NoQt:
    """A meta path finder ahead of all others that refuses the Qt packages."""

    def find_spec(
        self, name: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        top = name.split(".")[0]
        if top not in BLOCKED:
            return None
        tries = os.environ.get("ROUNDHOUSE_TEST_QT_TRIES")
        if tries:
            with Path(tries).open("a", encoding="utf-8") as log:
                log.write(f"{name} (pid {os.getpid()})\n")
        raise ModuleNotFoundError(f"No module named {top!r}", name=top)


sys.meta_path.insert(0, _NoQt())
