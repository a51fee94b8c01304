"""The global key on Wayland: no program may grab keys there, so the words say how to bind
the desktop's own shortcut to `roundhouse quick-chat`."""

from __future__ import annotations

from roundhouse.api.shortcut import Shortcut


def bind_it_yourself(shortcut: Shortcut) -> str:
    """What to do on a Wayland desktop, where the app cannot hold the key itself."""
    return (
        f"On Wayland a program cannot take {shortcut} for the whole desktop. Bind it in your "
        "desktop's keyboard settings to the command `roundhouse quick-chat` (GNOME: Settings › "
        "Keyboard › Keyboard Shortcuts › Custom Shortcuts; KDE Plasma: System Settings › "
        "Shortcuts › Add Command); it opens quick chat in the running app, or starts the app "
        f"with it. Inside Roundhouse's windows {shortcut} works as it is."
    )
