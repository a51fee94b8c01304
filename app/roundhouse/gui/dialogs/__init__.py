"""Dialogs of the main window: starting an engine, following its log."""
