"""What to do on Wayland when the desktop offers no global shortcuts to apps: bind the
desktop's own shortcut to `roundhouse quick-chat`, in words."""

from __future__ import annotations

from roundhouse.api.shortcut import Shortcut

BINDING_STEPS = (
    "bind it in your desktop's keyboard settings to the command `roundhouse quick-chat` "
    "(GNOME: Settings › Keyboard › Keyboard Shortcuts › Custom Shortcuts; KDE Plasma: System "
    "Settings › Shortcuts › Add Command), which opens quick chat in the running app or starts "
    "the app with it"
)


def bind_it_yourself(shortcut: Shortcut) -> str:
    """The words where the app cannot hold the key itself."""
    return (
        f"On Wayland a program cannot take {shortcut} for the whole desktop, and this desktop "
        f"offers no global shortcuts to apps: {BINDING_STEPS}. Inside Roundhouse's windows "
        f"{shortcut} works as it is."
    )


def not_bound(shortcut: Shortcut, why: str) -> str:
    """The words where the desktop's portal answered but did not bind the key."""
    return (
        f"{shortcut} was not bound: {why}. Choose the key again in Settings › Quick chat key "
        f"to be asked once more, or {BINDING_STEPS}."
    )
