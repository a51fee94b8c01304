"""Roundhouse on this system: starting at login, and the check for a newer release.

Floor 1 of roundhouse.core, beside hardware, knowledge and chat (none imports another): it
may use infra and core.errors only.
"""
