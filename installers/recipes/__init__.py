"""The steps of installers/build.py: icons, PyInstaller, and one packager per OS."""
