"""The core's ground floor: plumbing features share (SQLite files, stoppable threads, the
change counter, ports, secrets, logs, the settings file, transfers, jobs, the change feed).

Floor 0 of roundhouse.core (docs/architecture.md, "The core's floors"): it may use only
core.errors, roundhouse.api and roundhouse.base; every other floor may use it.
"""
