"""Roundhouse on this system: starting at login, and the check for a newer release. Beside
hardware, knowledge and chat on the core's second floor: it uses infra only."""
