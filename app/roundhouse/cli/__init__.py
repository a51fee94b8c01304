"""The `roundhouse` command line: a client of the daemon, and the way to run it."""
