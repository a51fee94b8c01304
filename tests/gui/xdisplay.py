"""An X display of the tests' own (Xvfb), a plain window of another program focused on it, and
xdotool to press keys there: the global quick chat key's tests."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

SCREEN = "1024x768x24"
# A window of another program: Tk, in a process of its own, named so xdotool finds it.
OTHER_APP = "other-app"
_TK_WINDOW = textwrap.dedent(
    f"""
    import tkinter
    root = tkinter.Tk()
    root.title({OTHER_APP!r})
    root.geometry("300x200+10+10")
    tkinter.Entry(root).pack()
    root.mainloop()
    """
)


def need(tool: str) -> str:
    path = shutil.which(tool)
    if path is None:
        # Not a skip: CI installs it (.ci/apt-packages.txt), and a missing part fails the run.
        pytest.fail(f"{tool} is not installed: run .ci/setup (it installs the apt packages)")
    return path


@contextmanager
def xvfb() -> Iterator[str]:
    """A fresh Xvfb on a free display number; its name (":N")."""
    read, write = os.pipe()
    server = subprocess.Popen(
        [need("Xvfb"), "-displayfd", str(write), "-nolisten", "tcp", "-screen", "0", SCREEN],
        pass_fds=(write,),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    os.close(write)
    try:
        with os.fdopen(read) as answer:
            number = answer.readline().strip()
        assert number, "Xvfb did not say its display number"
        yield f":{number}"
    finally:
        server.terminate()
        server.wait(10)


def xdotool(display: str, *args: str) -> str:
    done = subprocess.run(
        [need("xdotool"), *args],
        env={**os.environ, "DISPLAY": display},
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 0, f"xdotool {' '.join(args)}: {done.stderr}"
    return done.stdout.strip()


@contextmanager
def other_window_focused(display: str) -> Iterator[subprocess.Popen[bytes]]:
    """Another program's window, shown and holding the keyboard focus."""
    env = {**os.environ, "DISPLAY": display}
    window = subprocess.Popen([sys.executable, "-c", _TK_WINDOW], env=env)
    try:
        found = xdotool(display, "search", "--sync", "--name", f"^{OTHER_APP}$")
        xdotool(display, "windowfocus", "--sync", found.split()[0])
        deadline = time.monotonic() + 10
        while xdotool(display, "getwindowfocus", "getwindowname") != OTHER_APP:
            assert time.monotonic() < deadline, "the other window did not take the focus"
            time.sleep(0.1)
        yield window
    finally:
        window.terminate()
        window.wait(10)


def focused_window_name(display: str) -> str:
    return xdotool(display, "getwindowfocus", "getwindowname")
