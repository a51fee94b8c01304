"""Tests that run real third-party engine binaries."""
