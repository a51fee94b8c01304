"""Helpers the tests share, written once: a clock tests move by hand, the CLI run as a process,
and a daemon serving a tiny model for a module's tests."""
