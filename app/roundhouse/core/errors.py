"""Typed errors the core raises; the server maps each to a problem response."""

from __future__ import annotations


class RoundhouseError(Exception):
    """Base of every error meant to reach the user in words."""

    title = "Roundhouse error"
    status = 500

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


class InvalidInputError(RoundhouseError):
    title = "Invalid input"
    status = 422


class NotFoundError(RoundhouseError):
    title = "Not found"
    status = 404


class ConflictError(RoundhouseError):
    title = "Conflict"
    status = 409


class SettingsError(RoundhouseError):
    """The settings file cannot be read: the message says which file and what to do."""

    title = "Settings file is invalid"
    status = 500


class ServiceUnavailableError(RoundhouseError):
    """A part of the daemon could not start: the message says why and what to do."""

    title = "Unavailable"
    status = 503
