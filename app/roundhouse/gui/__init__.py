"""The desktop app: a Qt client of the daemon's API (windows, pages, tray, charts)."""
