#!/bin/sh
# Remove what install.sh added, after stopping the daemon that runs from this folder.
# Settings, models and chats stay where they are; delete this folder to remove the app.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
binary="$here/roundhouse"
data="${XDG_DATA_HOME:-$HOME/.local/share}"
apps="$data/applications"
icons="$data/icons/hicolor"
link="$HOME/.local/bin/roundhouse"
autostart="${XDG_CONFIG_HOME:-$HOME/.config}/autostart/roundhouse.desktop"

# First the daemon (and the engines it supervises): it runs this folder's files. The same
# home as the app: ROUNDHOUSE_HOME when set, else the default one.
if [ -x "$binary" ] && "$binary" status >/dev/null 2>&1; then
    if ! "$binary" stop; then
        echo "uninstall.sh: the daemon did not stop; stop it with \`$binary stop\` and run this again." >&2
        exit 1
    fi
fi

# Start at login, where Roundhouse wrote it (its entry carries X-Roundhouse-Autostart).
if [ -f "$autostart" ] && grep -q '^X-Roundhouse-Autostart=true' "$autostart"; then
    rm -f "$autostart"
fi
rm -f "$apps/roundhouse.desktop"
for icon in "$icons"/*/apps/roundhouse.png "$icons/scalable/apps/roundhouse.svg"; do
    if [ -f "$icon" ]; then
        rm -f "$icon"
    fi
done
if [ -L "$link" ] && [ "$(readlink "$link")" = "$binary" ]; then
    rm -f "$link"
fi
if command -v update-desktop-database >/dev/null 2>&1; then
    update-desktop-database -q "$apps" 2>/dev/null || true
fi
echo "Removed Roundhouse from the application menu. Delete $here to remove the app itself."
