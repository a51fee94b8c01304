"""Windows: sign the executables, compile the Inno Setup installer, sign the installer.

Signing runs only when ROUNDHOUSE_WIN_CERT names a code-signing certificate (.pfx);
without it the installer is built unsigned (SmartScreen warns) and a note says so.
  ROUNDHOUSE_WIN_CERT            path of the .pfx file
  ROUNDHOUSE_WIN_CERT_PASSWORD   its password (kept out of the build log)
  ROUNDHOUSE_WIN_TIMESTAMP_URL   an RFC 3161 time-stamp server (default: DigiCert's)
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from recipes.common import INSTALLERS, BuildError, arch, run, tool, version
from recipes.icons import IconSet

ENV_CERT = "ROUNDHOUSE_WIN_CERT"
ENV_PASSWORD = "ROUNDHOUSE_WIN_CERT_PASSWORD"
ENV_TIMESTAMP = "ROUNDHOUSE_WIN_TIMESTAMP_URL"
DEFAULT_TIMESTAMP = "http://timestamp.digicert.com"
ISS = INSTALLERS / "windows" / "roundhouse.iss"
EXECUTABLES = ("roundhouse.exe", "roundhousew.exe")


def _signtool_argv(files: list[Path], cert: str) -> list[str]:
    signtool = tool("signtool", "install the Windows SDK and run from its developer prompt")
    argv = [signtool, "sign", "/fd", "SHA256", "/f", cert]
    password = os.environ.get(ENV_PASSWORD, "")
    if password:
        argv += ["/p", password]
    timestamp = os.environ.get(ENV_TIMESTAMP, "").strip() or DEFAULT_TIMESTAMP
    return [*argv, "/tr", timestamp, "/td", "SHA256", *(str(f) for f in files)]


def sign(files: list[Path], cert: str) -> None:
    # run() prints the command: sign through a copy that shows no password.
    argv = _signtool_argv(files, cert)
    shown = ["***" if i and argv[i - 1] == "/p" else a for i, a in enumerate(argv)]
    print(f"== signtool: {' '.join(shown)}", flush=True)
    done = subprocess.run(argv, check=False)
    if done.returncode != 0:
        raise BuildError(f"signtool failed (exit {done.returncode}); its output is above.")


def package(frozen: Path, icons: IconSet, dist: Path) -> list[Path]:
    """dist/Roundhouse-<version>-windows-<arch>-setup.exe, signed when configured."""
    cert = os.environ.get(ENV_CERT, "").strip()
    if cert:
        sign([frozen / name for name in EXECUTABLES], cert)
    else:
        print(f"note: {ENV_CERT} is not set: the executables and the installer are not signed")
        print("      (SmartScreen will warn whoever runs them).")
    iscc = tool("iscc", "install Inno Setup 6 (winget install JRSoftware.InnoSetup)")
    dist.mkdir(parents=True, exist_ok=True)
    run(
        [
            iscc,
            "/Q",
            f"/DAppVersion={version()}",
            f"/DSourceDir={frozen}",
            f"/DOutputDir={dist}",
            f"/DIconFile={icons.ico}",
            f"/DArch={arch()}",
            str(ISS),
        ],
        what="Inno Setup",
    )
    setup = dist / f"Roundhouse-{version()}-windows-{arch()}-setup.exe"
    if not setup.is_file():
        raise BuildError(f"Inno Setup finished but {setup} is missing.")
    if cert:
        sign([setup], cert)
    return [setup]
