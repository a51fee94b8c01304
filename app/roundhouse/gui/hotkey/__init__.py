"""The global quick chat key: one module per OS (X11, Windows, macOS, Wayland) behind one
controller that follows the settings."""
