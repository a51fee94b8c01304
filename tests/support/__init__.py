"""Helpers the tests share, written once: a clock tests move by hand (clock), the CLI run as a
process (cli), a daemon serving ready instances for a module's tests (serving), and the
engine stand-ins set up where the daemon finds the real engines, with a file keyring
(standins)."""
