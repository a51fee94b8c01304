"""`pip install roundhouse` serves without Qt: the app's packages are the `gui` extra (ADR 35)."""

from __future__ import annotations

import re
import subprocess
import sys
import zipfile
from email.parser import Parser
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
QT = {"pyside6", "pyside6-essentials", "pyside6-addons", "shiboken6", "pyqtgraph", "qasync"}


def test_the_wheel_needs_no_qt_unless_the_gui_extra_is_asked(tmp_path: Path) -> None:
    build = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q"]
    subprocess.run([*build, "-w", str(tmp_path), str(ROOT)], check=True, timeout=300)
    (wheel,) = tmp_path.glob("roundhouse-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        (name,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        metadata = Parser().parsestr(archive.read(name).decode("utf-8"))
    assert "gui" in metadata.get_all("Provides-Extra", [])
    required = [Requirement(r) for r in metadata.get_all("Requires-Dist", [])]

    def wanted(extras: set[str]) -> set[str]:
        return {
            canonicalize_name(r.name)
            for r in required
            if r.marker is None
            or any(r.marker.evaluate({"extra": extra}) for extra in extras or {""})
        }

    assert wanted(set()) & QT == set(), "a plain install must not pull in Qt"
    assert {"pyside6-essentials", "pyqtgraph", "qasync"} <= wanted({"gui"})
    # The daemon's own needs stay required.
    assert {"fastapi", "uvicorn", "keyring"} <= wanted(set())


def test_the_installers_lock_still_carries_the_app() -> None:
    lock = (ROOT / "installers" / "requirements.lock").read_text(encoding="utf-8")
    pinned = {canonicalize_name(m) for m in re.findall(r"^([A-Za-z0-9._-]+)==", lock, re.M)}
    assert {"pyside6-essentials", "pyqtgraph", "qasync"} <= pinned
