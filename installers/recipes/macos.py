"""macOS: sign the .app, put it in a .dmg with hdiutil, notarise and staple it.

Signing and notarisation run only when their environment variables name an identity and
a notary profile; without them the .dmg is built unsigned and a note says so.
  ROUNDHOUSE_MAC_SIGN_IDENTITY  "Developer ID Application: Name (TEAMID)", in the keychain
  ROUNDHOUSE_NOTARY_PROFILE     a profile saved with `xcrun notarytool store-credentials`
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from recipes.common import INSTALLERS, arch, run, tool, version

ENV_IDENTITY = "ROUNDHOUSE_MAC_SIGN_IDENTITY"
ENV_NOTARY = "ROUNDHOUSE_NOTARY_PROFILE"
ENTITLEMENTS = INSTALLERS / "macos" / "entitlements.plist"
XCODE_HINT = "install Xcode's command line tools (`xcode-select --install`)"


def sign_app(app: Path, identity: str) -> None:
    """Sign every binary in the bundle, then the bundle, with the hardened runtime."""
    codesign = tool("codesign", XCODE_HINT)
    run(
        [
            codesign,
            "--force",
            "--deep",
            "--timestamp",
            "--options",
            "runtime",
            "--entitlements",
            str(ENTITLEMENTS),
            "--sign",
            identity,
            str(app),
        ],
        what="codesign the app",
    )
    run(
        [codesign, "--verify", "--deep", "--strict", "--verbose=2", str(app)],
        what="check the signature",
    )


def make_dmg(app: Path, target: Path) -> Path:
    """A compressed disk image holding the app and a link to /Applications to drag it to."""
    hdiutil = tool("hdiutil", "hdiutil ships with macOS: build the .dmg on a Mac")
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="roundhouse-dmg-") as tmp:
        staging = Path(tmp) / "Roundhouse"
        staging.mkdir()
        # symlinks=True keeps the framework links inside the bundle (and its signature).
        shutil.copytree(app, staging / app.name, symlinks=True)
        (staging / "Applications").symlink_to("/Applications")
        run(
            [
                hdiutil,
                "create",
                "-volname",
                f"Roundhouse {version()}",
                "-srcfolder",
                str(staging),
                "-fs",
                "HFS+",
                "-format",
                "UDZO",
                "-ov",
                str(target),
            ],
            what="hdiutil",
        )
    return target


def notarise(dmg: Path, profile: str) -> None:
    """Send the .dmg to Apple's notary service, wait for its verdict, staple the ticket."""
    xcrun = tool("xcrun", XCODE_HINT)
    run(
        [xcrun, "notarytool", "submit", str(dmg), "--keychain-profile", profile, "--wait"],
        what="notarise",
    )
    run([xcrun, "stapler", "staple", str(dmg)], what="staple the notarisation ticket")
    run([xcrun, "stapler", "validate", str(dmg)], what="check the stapled ticket")


def package(app: Path, dist: Path) -> list[Path]:
    """dist/Roundhouse-<version>-macos-<arch>.dmg, signed and notarised when configured."""
    identity = os.environ.get(ENV_IDENTITY, "").strip()
    profile = os.environ.get(ENV_NOTARY, "").strip()
    if identity:
        sign_app(app, identity)
    else:
        print(f"note: {ENV_IDENTITY} is not set: the app is not signed, and Gatekeeper will")
        print("      refuse it on other Macs until it is (right-click > Open works for testing).")
    dmg = make_dmg(app, dist / f"Roundhouse-{version()}-macos-{arch()}.dmg")
    if identity:
        codesign = tool("codesign", XCODE_HINT)
        run([codesign, "--force", "--timestamp", "--sign", identity, str(dmg)], what="sign dmg")
    if identity and profile:
        notarise(dmg, profile)
    elif identity:
        print(f"note: {ENV_NOTARY} is not set: the .dmg is signed but not notarised.")
    else:
        print("note: notarisation needs a signed app: skipped.")
    return [dmg]
