"""Typed request and response schemas shared by the daemon and its clients."""
