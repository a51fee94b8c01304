"""The frozen app's entry point: the same `roundhouse` command as the wheel's script."""

import os
import sys


def _child_environment() -> None:
    """Give the programs this process starts the user's environment, not the bundle's.

    PyInstaller's bootloader points LD_LIBRARY_PATH at the bundle (keeping the user's value
    in LD_LIBRARY_PATH_ORIG) and sets _PYI_* variables for itself. The engines the daemon
    starts (llama-server, a venv's Python) would load the bundle's libstdc++ and OpenSSL,
    and a copy of this app started as the daemon would take itself for the bootloader's
    child. This process's own libraries are loaded already: the loader read the path at
    start-up, so changing it here touches only the children.
    """
    if not getattr(sys, "frozen", False):
        return
    for name in [name for name in os.environ if name.startswith("_PYI_")]:
        del os.environ[name]
    for var in ("LD_LIBRARY_PATH", "LIBPATH"):  # LIBPATH: AIX's name for the same
        original = os.environ.pop(f"{var}_ORIG", None)
        if original is not None:
            os.environ[var] = original
        elif var in os.environ:
            del os.environ[var]


if __name__ == "__main__":
    _child_environment()
    from roundhouse.cli.launch import main

    main()
