#!/bin/sh
# Add Roundhouse, run from this folder, to this user's application menu (no root needed):
# the .desktop file and the icons go to ~/.local/share, a `roundhouse` link to ~/.local/bin.
# Run it again after moving the folder; uninstall.sh removes what it added.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
binary="$here/roundhouse"
data="${XDG_DATA_HOME:-$HOME/.local/share}"
apps="$data/applications"
icons="$data/icons/hicolor"
bin_dir="$HOME/.local/bin"

if [ ! -x "$binary" ]; then
    echo "install.sh: $binary is missing: run this script from the unpacked Roundhouse folder." >&2
    exit 1
fi

# The Exec key's quoting (Desktop Entry Specification): the path in double quotes with
# \ " ` $ escaped, then every \ escaped once more as the key is a string, % doubled.
quoted=$(printf '%s' "$binary" | sed -e 's/[\\"`$]/\\&/g')
exec_value=$(printf '"%s"' "$quoted" | sed -e 's/\\/\\\\/g' -e 's/%/%%/g')

mkdir -p "$apps"
desktop_tmp="$apps/.roundhouse.desktop.tmp"
while IFS= read -r line; do
    case $line in
        Exec=*) printf 'Exec=%s\n' "$exec_value" ;;
        *) printf '%s\n' "$line" ;;
    esac
done <"$here/roundhouse.desktop" >"$desktop_tmp"
mv -f "$desktop_tmp" "$apps/roundhouse.desktop"

for png in "$here"/icons/roundhouse-*.png; do
    size=${png##*/roundhouse-}
    size=${size%.png}
    mkdir -p "$icons/${size}x${size}/apps"
    cp -f "$png" "$icons/${size}x${size}/apps/roundhouse.png"
done
mkdir -p "$icons/scalable/apps"
cp -f "$here/icons/roundhouse.svg" "$icons/scalable/apps/roundhouse.svg"

# The command line: a link in ~/.local/bin, unless something else already has the name.
link="$bin_dir/roundhouse"
if [ -L "$link" ] || [ ! -e "$link" ]; then
    mkdir -p "$bin_dir"
    ln -sfn "$binary" "$link"
    echo "Linked $link to $binary."
else
    echo "Left $link alone (it is not a link of ours): run $binary for the command line."
fi

# Menus refresh on their own on most desktops; these make the rest notice at once.
if command -v update-desktop-database >/dev/null 2>&1; then
    update-desktop-database -q "$apps" || true
fi
if command -v gtk-update-icon-cache >/dev/null 2>&1; then
    gtk-update-icon-cache -q -t "$icons" || true
fi
echo "Roundhouse is in your application menu ($apps/roundhouse.desktop)."
